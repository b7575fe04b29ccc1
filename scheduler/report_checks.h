// Plausibility checks of what members report to the scheduler (progress, Done, evaluations),
// made before any figure is used: a counter beyond what the job can produce, a negative or
// non-finite rate, or an accuracy outside [0, 1] is refused instead of reaching arithmetic that
// would overflow, divide by it or loop on it. Pure functions; callable from any thread.
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

}  // namespace hetps
