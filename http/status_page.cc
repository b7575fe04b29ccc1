#include "http/status_page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace hetps {
namespace {

constexpr size_t kMarkedPoints = 30;
constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

std::string Format(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

// A trainer well below the fastest one: the page marks it so a glance finds it.
bool Slow(const MemberStatus& m, double fastest) {
  return m.role == "trainer" && m.alive && fastest > 0 && m.samples_per_second < 0.75 * fastest;
}

void MemberTable(std::ostringstream& out, const StatusSnapshot& s) {
  double fastest = 0;
  for (const MemberStatus& m : s.members) {
    if (m.role == "trainer" && m.alive) fastest = std::max(fastest, m.samples_per_second);
  }
  out << "<table><tr><th>member</th><th>host</th><th>device</th><th>state</th><th>samples/s</th>"
         "<th>share</th><th>loss</th><th>staleness</th><th>clock gap</th><th>heard</th></tr>\n";
  for (const MemberStatus& m : s.members) {
    const bool trainer = m.role == "trainer";
    std::string css = !m.alive ? "dead" : Slow(m, fastest) ? "slow" : "";
    out << "<tr" << (css.empty() ? "" : " class=\"" + css + "\"") << "><td>" << EscapeHtml(m.role) << ' '
        << m.rank << "</td><td>" << EscapeHtml(m.host) << "</td><td>" << EscapeHtml(m.device) << "</td><td>"
        << EscapeHtml(m.state) << (css == "slow" ? " (slow)" : "") << "</td>";
    if (trainer) {
      out << "<td>" << Format("%.0f", m.samples_per_second) << "</td><td>"
          << Format("%.0f%%", 100 * m.batch_share) << "</td><td>" << Format("%.4f", m.loss)
          << "</td><td>-</td><td>" << m.clock_gap << "</td>";
    } else {
      uint64_t count = 0;
      for (uint64_t c : m.staleness_counts) count += c;
      const std::string staleness = count > 0 ? Format("%.2f", static_cast<double>(m.staleness_sum) / count) +
                                                    " (max " + std::to_string(m.staleness_max) + ")"
                                              : "-";
      out << "<td>-</td><td>-</td><td>-</td><td>" << staleness << "</td><td>" << m.max_clock_gap << "</td>";
    }
    out << "<td>" << Format("%.1f s", m.last_heard_seconds) << "</td></tr>\n";
  }
  out << "</table>\n";
}

}  // namespace

std::string EscapeHtml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string SvgPlot(const std::string& title, const std::vector<PlotSeries>& series) {
  constexpr double kWidth = 320, kHeight = 160, kLeft = 46, kBottom = 22, kTop = 8, kRight = 8;
  double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  bool any = false;
  for (const PlotSeries& line : series) {
    for (const auto& [x, y] : line.points) {
      if (!any) {
        x0 = x1 = x;
        y0 = y1 = y;
        any = true;
      }
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  std::ostringstream out;
  out << "<figure><figcaption>" << EscapeHtml(title) << "</figcaption><svg viewBox=\"0 0 " << kWidth << ' '
      << kHeight << "\" width=\"" << kWidth << "\" height=\"" << kHeight << "\" role=\"img\" aria-label=\""
      << EscapeHtml(title) << "\">";
  out << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kWidth - kLeft - kRight
      << "\" height=\"" << kHeight - kTop - kBottom << "\" fill=\"none\" stroke=\"#bbb\"/>";
  if (!any) {
    out << "<text x=\"" << kWidth / 2 << "\" y=\"" << kHeight / 2
        << "\" text-anchor=\"middle\">no data yet</text>";
  } else {
    // A flat range (one point, or a constant) is centred rather than drawn on an axis.
    if (y1 == y0) {
      const double pad = y0 != 0 ? std::abs(y0) * 0.1 : 0.5;
      y0 -= pad, y1 += pad;
    }
    if (x1 == x0) x0 -= 1, x1 += 1;
    auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * (kWidth - kLeft - kRight); };
    auto py = [&](double y) { return kHeight - kBottom - (y - y0) / (y1 - y0) * (kHeight - kTop - kBottom); };
    for (const PlotSeries& line : series) {
      // Few points (evaluations) are marked, so that a single one shows too.
      if (line.points.size() <= kMarkedPoints) {
        for (const auto& [x, y] : line.points) {
          out << "<circle cx=\"" << Format("%.1f", px(x)) << "\" cy=\"" << Format("%.1f", py(y))
              << "\" r=\"2.5\" fill=\"" << line.colour << "\"/>";
        }
      }
      if (line.points.size() < 2) continue;
      out << "<polyline fill=\"none\" stroke=\"" << line.colour << "\" stroke-width=\"1.5\" points=\"";
      for (const auto& [x, y] : line.points)
        out << Format("%.1f", px(x)) << ',' << Format("%.1f", py(y)) << ' ';
      out << "\"><title>" << EscapeHtml(line.name) << "</title></polyline>";
    }
    out << "<text x=\"" << kLeft - 3 << "\" y=\"" << kTop + 10 << "\" text-anchor=\"end\">"
        << Format("%.4g", y1) << "</text><text x=\"" << kLeft - 3 << "\" y=\"" << kHeight - kBottom
        << "\" text-anchor=\"end\">" << Format("%.4g", y0) << "</text><text x=\"" << kLeft << "\" y=\""
        << kHeight - 6 << "\">" << Format("%.0f s", x0) << "</text><text x=\"" << kWidth - kRight << "\" y=\""
        << kHeight - 6 << "\" text-anchor=\"end\">" << Format("%.0f s", x1) << "</text>";
  }
  out << "</svg><div class=\"legend\">";
  for (const PlotSeries& line : series) {
    out << "<span style=\"color:" << line.colour << "\">&#9632;</span> " << EscapeHtml(line.name) << " ";
  }
  out << "</div></figure>\n";
  return out.str();
}

std::string RenderStatusPage(const StatusSnapshot& s, bool live) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  if (live) out << "<meta http-equiv=\"refresh\" content=\"" << kStatusPageRefreshSeconds << "\">";
  out << "<title>hetps: " << EscapeHtml(s.mode) << ' ' << EscapeHtml(s.model) << ", "
      << Format("%.0f%%", 100 * s.progress_ratio) << "</title>\n<style>"
      << "body{font-family:system-ui,sans-serif;margin:1em;color:#222}"
      << "table{border-collapse:collapse;font-size:0.9em}td,th{border-bottom:1px solid #ddd;padding:3px 6px;"
         "text-align:right}td:nth-child(-n+4),th:nth-child(-n+4){text-align:left}"
      << "tr.slow{background:#fff3cd}tr.dead{background:#f8d7da;color:#777}"
      << "figure{display:inline-block;margin:0.5em 1em 0.5em 0}figcaption{font-weight:600}"
      << "svg text{font-size:10px;fill:#555}.legend{font-size:0.8em}"
      << "progress{width:16em}.failed{color:#b00}</style></head><body>\n";
  out << "<h1>hetps job: " << EscapeHtml(s.mode) << ' ' << EscapeHtml(s.model) << "</h1>\n<p>"
      << EscapeHtml(s.phase) << " &middot; epoch " << std::min(s.epoch + 1, std::max(s.epochs, 1u)) << " of "
      << s.epochs << " &middot; <progress max=\"1\" value=\"" << Format("%.4f", s.progress_ratio)
      << "\"></progress> " << Format("%.1f%%", 100 * s.progress_ratio) << " &middot; "
      << Format("%.0f samples/s", s.samples_per_second) << " &middot; " << Format("%.0f s", s.elapsed_seconds)
      << " &middot; optimizer " << EscapeHtml(s.optimizer) << " lr " << Format("%g", s.lr)
      << " &middot; global batch " << s.global_batch_size << "</p>\n";
  if (s.failed) out << "<p class=\"failed\">failed: " << EscapeHtml(s.failure) << "</p>\n";
  MemberTable(out, s);

  PlotSeries loss{"training loss", kColours[0], {}};
  PlotSeries total{"all trainers", kColours[0], {}};
  std::map<uint32_t, PlotSeries> speeds;
  for (const HistoryPoint& h : s.history) {
    loss.points.emplace_back(h.wall_seconds, h.loss);
    total.points.emplace_back(h.wall_seconds, h.samples_per_second);
    for (const auto& [rank, speed] : h.trainer_speed) {
      PlotSeries& line = speeds[rank];
      if (line.name.empty()) {
        line.name = "trainer " + std::to_string(rank);
        line.colour = kColours[(rank + 1) % (sizeof(kColours) / sizeof(kColours[0]))];
      }
      line.points.emplace_back(h.wall_seconds, speed);
    }
  }
  // A language model's evaluations are plotted as perplexity (token data, metric perplexity).
  const bool perplexity = s.metric == "perplexity";
  const char* measure = perplexity ? "test perplexity" : "test accuracy";
  PlotSeries accuracy{measure, kColours[2], {}};
  for (const EvaluationStatus& e : s.evaluations)
    accuracy.points.emplace_back(e.wall_seconds, perplexity ? e.test_perplexity : e.test_accuracy);
  std::vector<PlotSeries> speed_lines = {total};
  for (auto& [rank, line] : speeds) speed_lines.push_back(std::move(line));
  out << "<div>" << SvgPlot("training loss", {loss}) << SvgPlot(measure, {accuracy})
      << SvgPlot("samples/s", speed_lines) << "</div>\n";
  if (!s.evaluations.empty()) {
    const EvaluationStatus& e = s.evaluations.back();
    out << "<p>newest evaluation: ";
    if (perplexity) {
      out << "perplexity " << Format("%.3f", e.test_perplexity) << " ("
          << Format("%.3f", e.test_loss / std::log(2.0)) << " bits/token), next-token accuracy ";
    } else {
      out << "accuracy ";
    }
    out << Format("%.4f", e.test_accuracy) << ", loss " << Format("%.4f", e.test_loss) << " after "
        << e.samples_trained << " samples</p>\n";
  }
  out << "<p><a href=\"/status\">/status</a> (JSON) &middot; <a href=\"/metrics\">/metrics</a> "
         "(Prometheus)</p>\n"
      << "</body></html>\n";
  return out.str();
}

}  // namespace hetps
