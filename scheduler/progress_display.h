// ProgressDisplay: the scheduler's live view of a job on stdout.
//
// On a terminal it redraws a block of lines in place (ANSI cursor movement); otherwise it prints
// the block as plain lines, at most once per `plain_interval`, so logs stay readable. The
// scheduler's loop thread owns it.
#pragma once

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/membership.h"

namespace hetps {

class ProgressDisplay {
 public:
  // `in_place`: redraw on a terminal. Use IsTerminal(stdout) to decide. A null `out` shows
  // nothing.
  ProgressDisplay(std::FILE* out, bool in_place, std::chrono::milliseconds plain_interval);

  // Shows `lines`. Plain output skips the call when the last print is younger than the interval,
  // unless `force`.
  void Show(const std::vector<std::string>& lines, bool force = false);

  // Prints a line that stays (e.g. an evaluation result) above the live block.
  void Note(const std::string& line);

  bool in_place() const { return in_place_; }

 private:
  void Erase();

  std::FILE* out_;
  bool in_place_;
  std::chrono::milliseconds plain_interval_;
  std::optional<std::chrono::steady_clock::time_point> last_plain_;  // none before the first
  std::vector<std::string> last_lines_;
  size_t drawn_ = 0;  // lines of the live block currently on screen
};

bool IsTerminal(std::FILE* stream);

// What the live block shows about the job as a whole.
struct JobView {
  std::string mode;
  std::string model;
  uint32_t epochs = 0;
  uint32_t servers = 0;
  uint64_t samples_per_epoch = 0;
  uint64_t samples_before = 0;  // trained before this run (a resumed job: at its checkpoint)
  double elapsed_seconds = 0;
  std::string phase;    // "waiting for members", "training", ...
  std::string detail;   // a line of mode-specific figures (e.g. staleness); empty: none
  bool rounds = false;  // diloco: clocks count rounds, and each trainer shows its inner steps
};

// The lines of the live block: one for the job and its totals, one per trainer.
std::vector<std::string> ProgressLines(const JobView& job, const std::vector<const Member*>& trainers);

// "12,345"
std::string WithThousands(uint64_t value);
// "1:05" / "1:02:03"
std::string FormatDuration(double seconds);

}  // namespace hetps
