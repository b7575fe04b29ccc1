#include "scheduler/report_checks.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "common/seconds_histogram.h"

namespace hetps {
namespace {

Status Implausible(const char* what, const std::string& value, const std::string& allowed) {
  return Status::InvalidArgument(std::string(what) + " " + value + " is implausible for this job; allowed " +
                                 allowed);
}

Status CheckCount(const char* what, uint64_t value, uint64_t max) {
  if (value <= max) return Status::Ok();
  return Implausible(what, std::to_string(value), "0.." + std::to_string(max));
}

// Rates (samples per second) and durations (seconds) alike: no machine trains a billion samples
// a second, and no report covers 30 years. Beyond it, the scheduler's casts of them to counts
// (a checkpoint's round, the display's figures) would overflow.
constexpr double kMostPlausible = 1e9;

Status CheckRate(const char* what, double value) {
  if (std::isfinite(value) && value >= 0 && value <= kMostPlausible) return Status::Ok();
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return Implausible(what, text, "a number in [0, 1e9]");
}

std::string Seconds(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

Status CheckSeconds(const std::string& what, const wire::SecondsHistogram* histogram) {
  if (histogram == nullptr) return Status::Ok();  // a server of an older build
  const auto* counts = histogram->counts();
  const size_t buckets = counts == nullptr ? 0 : counts->size();
  if (buckets > kSecondsBuckets) {
    return Implausible((what + ".counts").c_str(), std::to_string(buckets) + " buckets",
                       "at most " + std::to_string(kSecondsBuckets));
  }
  // The sum lies between the durations' buckets' lower and upper bounds, summed over them.
  uint64_t total = 0;
  double lowest = 0, highest = 0;
  for (size_t i = 0; i < buckets; ++i) {
    const uint64_t n = counts->Get(i);
    if (total + n < total) {
      return Implausible((what + ".counts").c_str(), "totalling more than 2^64 - 1", "fewer in all");
    }
    total += n;
    lowest += static_cast<double>(n) * (i == 0 ? 0.0 : kSecondsBucketBounds[i - 1]);
    highest +=
        static_cast<double>(n) * (i + 1 < kSecondsBuckets ? kSecondsBucketBounds[i] : kMaxReportedSeconds);
  }
  const double sum = histogram->sum();
  // Rounding in the server's running sum: a relative slack far above it, far below any lie.
  constexpr double kSlack = 1e-6;
  if (std::isfinite(sum) && sum >= 0 && sum >= lowest * (1 - kSlack) &&
      sum <= highest * (1 + kSlack) + 1e-9) {
    return Status::Ok();
  }
  return Implausible((what + ".sum").c_str(), Seconds(sum),
                     Seconds(lowest) + ".." + Seconds(highest) + " seconds for its " + std::to_string(total) +
                         " durations' buckets");
}

}  // namespace

ReportBounds BoundsOf(const JobOptions& job, uint64_t samples_per_epoch) {
  ReportBounds bounds;
  bounds.epochs = job.epochs;
  bounds.samples_per_epoch = samples_per_epoch;
  bounds.global_batch_size = job.global_batch_size;
  return bounds;
}

Status CheckProgress(const wire::Progress& p, const ReportBounds& bounds) {
  HETPS_RETURN_IF_ERROR(CheckCount("Progress.epoch", p.epoch(), bounds.epochs));
  HETPS_RETURN_IF_ERROR(CheckCount("Progress.samples", p.samples(), bounds.max_samples()));
  HETPS_RETURN_IF_ERROR(CheckCount("Progress.clock", p.clock(), bounds.max_clock()));
  HETPS_RETURN_IF_ERROR(CheckCount("Progress.batch_size", p.batch_size(), bounds.global_batch_size));
  HETPS_RETURN_IF_ERROR(CheckRate("Progress.samples_per_second", p.samples_per_second()));
  HETPS_RETURN_IF_ERROR(CheckRate("Progress.compute_samples_per_second", p.compute_samples_per_second()));
  // The balancer's inputs: samples and steps timed since the last report, and their seconds.
  HETPS_RETURN_IF_ERROR(CheckCount("Progress.timed_samples", p.timed_samples(), bounds.max_samples()));
  HETPS_RETURN_IF_ERROR(CheckCount("Progress.timed_steps", p.timed_steps(), bounds.max_clock()));
  HETPS_RETURN_IF_ERROR(CheckRate("Progress.timed_seconds", p.timed_seconds()));
  HETPS_RETURN_IF_ERROR(CheckRate("Progress.paced_seconds", p.paced_seconds()));
  // Totals shown on the status page and in /metrics.
  HETPS_RETURN_IF_ERROR(CheckRate("Progress.step_seconds", p.step_seconds()));
  HETPS_RETURN_IF_ERROR(CheckRate("Progress.wait_seconds", p.wait_seconds()));
  // The loss may be NaN or infinite: a diverging model reports it honestly.
  return Status::Ok();
}

Status CheckDone(const wire::Done& done, const ReportBounds& bounds) {
  HETPS_RETURN_IF_ERROR(CheckCount("Done.samples", done.samples(), bounds.max_samples()));
  return CheckCount("Done.clock", done.clock(), bounds.max_clock());
}

Status CheckEvalReport(const wire::EvalReport& report, const ReportBounds& bounds) {
  HETPS_RETURN_IF_ERROR(CheckCount("EvalReport.epoch", report.epoch(), bounds.epochs));
  const double accuracy = report.test_accuracy();
  if (!(accuracy >= 0 && accuracy <= 1)) {
    return Implausible("EvalReport.test_accuracy", std::to_string(accuracy), "0..1");
  }
  // R² is at most 1; a diverged model may report NaN or any negative value.
  if (report.r_squared() > 1 + 1e-9) {
    return Implausible("EvalReport.r_squared", std::to_string(report.r_squared()), "at most 1");
  }
  return Status::Ok();
}

Status CheckServerStats(const wire::ServerStats& stats) {
  HETPS_RETURN_IF_ERROR(CheckSeconds("ServerStats.round_seconds", stats.round_seconds()));
  return CheckSeconds("ServerStats.apply_seconds", stats.apply_seconds());
}

}  // namespace hetps
