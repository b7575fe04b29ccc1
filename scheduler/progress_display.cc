#include "scheduler/progress_display.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace hetps {

bool IsTerminal(std::FILE* stream) {
  return ::isatty(::fileno(stream)) == 1;
}

ProgressDisplay::ProgressDisplay(std::FILE* out, bool in_place, std::chrono::milliseconds plain_interval)
    : out_(out), in_place_(in_place), plain_interval_(plain_interval) {}

void ProgressDisplay::Erase() {
  // Move to the first line of the block and clear it and everything below.
  if (drawn_ > 0) std::fprintf(out_, "\x1b[%zuF\x1b[J", drawn_);
  drawn_ = 0;
}

void ProgressDisplay::Show(const std::vector<std::string>& lines, bool force) {
  if (out_ == nullptr) return;
  last_lines_ = lines;
  if (in_place_) {
    Erase();
    for (const std::string& line : lines) std::fprintf(out_, "%s\n", line.c_str());
    drawn_ = lines.size();
    std::fflush(out_);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (!force && last_plain_ && now - *last_plain_ < plain_interval_) return;
  last_plain_ = now;
  for (const std::string& line : lines) std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

void ProgressDisplay::Note(const std::string& line) {
  if (out_ == nullptr) return;
  if (in_place_) {
    Erase();
    std::fprintf(out_, "%s\n", line.c_str());
    for (const std::string& l : last_lines_) std::fprintf(out_, "%s\n", l.c_str());
    drawn_ = last_lines_.size();
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

std::string WithThousands(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string FormatDuration(double seconds) {
  const auto total = static_cast<long>(std::max(0.0, seconds));
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof(text), "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  } else {
    std::snprintf(text, sizeof(text), "%ld:%02ld", total / 60, total % 60);
  }
  return text;
}

std::vector<std::string> ProgressLines(const JobView& job, const std::vector<const Member*>& trainers) {
  uint64_t samples = 0;
  uint64_t max_clock = 0;
  uint32_t epoch = 0;
  double rate = 0;
  bool working = false;
  double loss_sum = 0;
  int loss_count = 0;
  for (const Member* t : trainers) {
    samples += t->progress.samples;
    max_clock = std::max(max_clock, t->progress.clock);
    epoch = std::max(epoch, t->progress.epoch);
    if (t->alive && !t->done) {
      rate += t->progress.samples_per_second;
      working = true;
    }
    if (t->progress.clock > 0 && t->alive) {
      loss_sum += t->progress.loss;
      ++loss_count;
    }
  }
  // Once no trainer is working, the rate of the job so far rather than a misleading zero.
  if (!working && samples > 0 && job.elapsed_seconds > 0) rate = samples / job.elapsed_seconds;
  const double total = static_cast<double>(job.samples_per_epoch) * std::max<uint32_t>(job.epochs, 1);
  const double fraction =
      total > 0 ? std::min(1.0, (samples + static_cast<double>(job.samples_before)) / total) : 0.0;
  const int width = 24;
  const int filled = static_cast<int>(std::lround(fraction * width));
  std::string bar = "[" + std::string(filled, '#') + std::string(width - filled, '.') + "]";

  std::vector<std::string> lines;
  char text[512];
  std::snprintf(text, sizeof(text), "%s %s | epoch %u/%u %s %3.0f%% | %s elapsed | %s", job.mode.c_str(),
                job.model.c_str(), std::min(epoch + 1, std::max(job.epochs, 1u)), job.epochs, bar.c_str(),
                fraction * 100, FormatDuration(job.elapsed_seconds).c_str(), job.phase.c_str());
  lines.push_back(text);
  const char* clock_name = job.rounds ? "round" : "step";
  std::snprintf(text, sizeof(text), "  all trainers  %s %7s  samples %10s  %9s samples/s  loss %s",
                clock_name, WithThousands(max_clock).c_str(), WithThousands(samples).c_str(),
                WithThousands(static_cast<uint64_t>(rate)).c_str(),
                loss_count ? std::to_string(loss_sum / loss_count).substr(0, 6).c_str() : "-");
  lines.push_back(text);
  if (!job.detail.empty()) lines.push_back("  " + job.detail);
  for (const Member* t : trainers) {
    const char* state = !t->alive ? " (dead)" : t->done ? " (done)" : "";
    // diloco: the inner steps of its last round pushed, where sync shows the batch per step.
    const std::string per_step = job.rounds
                                     ? std::to_string(t->progress.last_round_inner_steps) + " inner steps"
                                     : "batch " + std::to_string(t->progress.batch_size);
    std::snprintf(
        text, sizeof(text), "  trainer %-4u  %s %7s  samples %10s  %9s samples/s  loss %s  %s  %s%s", t->rank,
        clock_name, WithThousands(t->progress.clock).c_str(), WithThousands(t->progress.samples).c_str(),
        WithThousands(static_cast<uint64_t>(t->progress.samples_per_second)).c_str(),
        t->progress.clock ? std::to_string(t->progress.loss).substr(0, 6).c_str() : "-", per_step.c_str(),
        t->device.c_str(), state);
    lines.push_back(text);
  }
  return lines;
}

}  // namespace hetps
