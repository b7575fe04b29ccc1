// Plausibility checks of what members report to the scheduler (progress, Done, evaluations, the
// servers' statistics), made before any figure is used: a counter beyond what the job can
// produce, a negative or non-finite rate, an accuracy outside [0, 1], or a histogram whose sum
// its buckets cannot hold is refused instead of reaching arithmetic that would overflow, divide
// by it or loop on it. Pure functions; callable from any thread.
#pragma once

#include <cstdint>

#include "common/job_config.h"
#include "common/status.h"
#include "messages_generated.h"

namespace hetps {

// What a job can produce, against which reports are checked.
struct ReportBounds {
  uint32_t epochs = 1;
  uint64_t samples_per_epoch = 0;  // after max_train_samples
  uint32_t global_batch_size = 1;

  // samples_per_epoch x epochs: no trainer can train more.
  uint64_t max_samples() const { return samples_per_epoch * epochs; }
  // Steps cannot outnumber samples plus one empty round per epoch, and a slack for the rounds of
  // a trainer that waits at an epoch's end.
  uint64_t max_clock() const { return max_samples() + 2ull * epochs + 2; }
};

ReportBounds BoundsOf(const JobOptions& job, uint64_t samples_per_epoch);

// InvalidArgument naming the field and its value when a report is implausible.
Status CheckProgress(const wire::Progress& progress, const ReportBounds& bounds);
Status CheckDone(const wire::Done& done, const ReportBounds& bounds);
Status CheckEvalReport(const wire::EvalReport& report, const ReportBounds& bounds);
// The round and apply seconds of a server's heartbeat or Goodbye: no more buckets than
// common/seconds_histogram.h has, counts whose total does not overflow, and a sum that is finite
// and lies where the counted durations' buckets put it (the last bucket's durations at most
// kMaxReportedSeconds each).
Status CheckServerStats(const wire::ServerStats& stats);

// No round or optimizer pass of a live job takes longer than this: a week.
inline constexpr double kMaxReportedSeconds = 7 * 24 * 3600.0;

}  // namespace hetps
