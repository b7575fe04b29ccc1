// What hetps-status --watch makes of each attempt to read a job's status: when the job has
// ended, and the line that says so; and the screen it redraws in place on a terminal. Owned by
// hetps-status's main(); one thread.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "http/status_snapshot.h"

namespace hetps {

class StatusWatch {
 public:
  // An answer. Returns the line to end with when the scheduler says the job is over (it is
  // shutting down): "the job has finished", or "the job failed: <why>".
  std::optional<std::string> Answered(const StatusSnapshot& snapshot);

  // No answer, or an error, from `source`. The job has ended when the scheduler answered before
  // and now does not: at once after it said it was in its final evaluation, else on the second
  // attempt in a row without an answer (one may be a scheduler too busy to answer in time).
  // Returns the line to end with then; nothing while the job may still be running, or before the
  // scheduler has ever answered (the job may not have started yet).
  std::optional<std::string> NoAnswer(const Status& status, const std::string& source);

  // Whether the next attempt should come at once rather than after the interval: a first
  // attempt without an answer after answers, to tell a busy scheduler from one that is gone.
  bool RetryAtOnce() const { return answered_ && misses_ == 1; }

 private:
  bool answered_ = false;
  std::string last_phase_;
  int misses_ = 0;  // attempts without an answer in a row
};

// Draws `lines` over the previous screen: on a terminal from the top left, clearing what is left
// of each line and below the last, so that the table stays in one place; elsewhere (a pipe, a
// file) as plain lines followed by an empty one.
void DrawScreen(std::FILE* out, bool terminal, const std::vector<std::string>& lines);

}  // namespace hetps
