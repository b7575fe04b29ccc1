// The status page GET / serves: one self-contained HTML document (no external assets, no
// scripts) that reloads itself every few seconds, with the member table and inline SVG plots of
// loss, test accuracy and samples per second over time. Pure function; any thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "http/status_snapshot.h"

namespace hetps {

inline constexpr int kStatusPageRefreshSeconds = 3;

// `live`: the page reloads itself every kStatusPageRefreshSeconds (served); false: a record of
// the job as it ended (the run directory's status.html).
std::string RenderStatusPage(const StatusSnapshot& snapshot, bool live = true);

// `text` with &, <, >, " and ' escaped for HTML.
std::string EscapeHtml(const std::string& text);

// One line of a plot: its name, colour and points (x, y).
struct PlotSeries {
  std::string name;
  std::string colour;
  std::vector<std::pair<double, double>> points;
};

// An inline <svg> line plot of `series` with axes labelled by their ranges (a series of few
// points also gets a dot per point); a note instead when no series has a point.
std::string SvgPlot(const std::string& title, const std::vector<PlotSeries>& series);

}  // namespace hetps
