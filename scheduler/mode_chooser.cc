#include "scheduler/mode_chooser.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hetps {
namespace {

std::string Fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + middle, values.end());
  if (values.size() % 2 == 1) return values[middle];
  return (values[middle] + *std::max_element(values.begin(), values.begin() + middle)) / 2;
}

}  // namespace

ModeChooser::ModeChooser(Options options, double progress_interval_seconds)
    : options_(options), progress_interval_seconds_(progress_interval_seconds) {}

void ModeChooser::Observe(uint32_t rank, double now_seconds, double samples, double steps,
                          double paced_seconds, double compute_seconds) {
  std::deque<Report>& reports = reports_[rank];
  std::deque<Stall>& stalls = stalls_[rank];
  bool after_stall = false;
  if (!reports.empty()) {
    const double gap = now_seconds - reports.back().at;
    if (gap > options_.stall_factor * progress_interval_seconds_) {
      stalls.push_back(Stall{now_seconds, gap - progress_interval_seconds_});
      after_stall = true;
    }
  }
  while (!stalls.empty() && stalls.front().ended < now_seconds - options_.stall_memory_seconds) {
    stalls.pop_front();
  }
  reports.push_back(Report{now_seconds, samples, steps, paced_seconds, compute_seconds, after_stall});
  while (reports.size() > options_.window_reports) reports.pop_front();
}

void ModeChooser::Forget(uint32_t rank) {
  reports_.erase(rank);
  stalls_.erase(rank);
}

std::vector<ModeChooser::TrainerMeasure> ModeChooser::Measures() const {
  std::vector<TrainerMeasure> measures;
  for (const auto& [rank, reports] : reports_) {
    TrainerMeasure m;
    m.rank = rank;
    double samples = 0, steps = 0, seconds = 0, compute = 0;
    std::vector<double> speeds, steady_compute_speeds, steady_speeds;
    if (auto it = stalls_.find(rank); it != stalls_.end()) {
      for (const Stall& s : it->second)
        m.longest_stall_seconds = std::max(m.longest_stall_seconds, s.seconds);
    }
    for (const Report& r : reports) {
      if (r.seconds <= 0 || r.samples <= 0) continue;
      samples += r.samples;
      steps += r.steps;
      seconds += r.seconds;
      compute += std::min(r.compute, r.seconds);
      speeds.push_back(r.samples / r.seconds);
      if (!r.after_stall && r.compute > 0) {
        steady_compute_speeds.push_back(r.samples / std::min(r.compute, r.seconds));
        steady_speeds.push_back(r.samples / r.seconds);
      }
    }
    m.compute_samples_per_second = Median(steady_compute_speeds);
    m.steady_samples_per_second = Median(steady_speeds);
    m.reports = speeds.size();
    if (seconds > 0) {
      m.samples_per_second = samples / seconds;
      m.steps_per_second = steps / seconds;
    }
    if (options_.global_batch > 0 && steps > 0 && compute > 0) {
      const double outside_per_step = (seconds - compute) / steps;
      const double whole_batch_compute = compute / samples * options_.global_batch;
      m.transfer_share = outside_per_step / (outside_per_step + whole_batch_compute);
    }
    if (speeds.size() >= 2 && m.samples_per_second > 0) {
      double mean = 0;
      for (double s : speeds) mean += s;
      mean /= static_cast<double>(speeds.size());
      double var = 0;
      for (double s : speeds) var += (s - mean) * (s - mean);
      var /= static_cast<double>(speeds.size() - 1);
      m.variation = std::sqrt(var) / mean;
    }
    measures.push_back(m);
  }
  return measures;
}

ModeChooser::Decision ModeChooser::Decide(const std::vector<TrainerMeasure>& trainers,
                                          const Options& options) {
  Decision d;
  std::vector<const TrainerMeasure*> measured;
  for (const TrainerMeasure& t : trainers) {
    if (t.reports >= kMinReports && t.samples_per_second > 0) measured.push_back(&t);
  }
  if (measured.size() < 2) {
    d.mode = ConsistencyMode::kSync;
    d.reason =
        measured.empty() ? "no trainer measured yet" : "one trainer: nothing to wait for, nothing stale";
    return d;
  }
  const TrainerMeasure* fastest = measured[0];
  const TrainerMeasure* slowest = measured[0];
  const TrainerMeasure* most_variable = measured[0];
  double stall = 0;
  for (const TrainerMeasure* t : measured) {
    if (t->samples_per_second > fastest->samples_per_second) fastest = t;
    if (t->samples_per_second < slowest->samples_per_second) slowest = t;
    if (t->variation > most_variable->variation) most_variable = t;
    stall = std::max(stall, t->longest_stall_seconds);
  }
  const double ratio = slowest->samples_per_second / fastest->samples_per_second;
  const std::string speeds = "trainer " + std::to_string(fastest->rank) + " " +
                             Fixed(fastest->samples_per_second, 0) + " samples/s, trainer " +
                             std::to_string(slowest->rank) + " " + Fixed(slowest->samples_per_second, 0) +
                             " (ratio " + Fixed(ratio, 2) + ")";
  const std::string stalled = "a trainer stalled for " + Fixed(stall, 1) +
                              " s (the longest stall in the last " + Fixed(options.stall_memory_seconds, 0) +
                              " s)";
  const bool unsteady = stall > 0 || most_variable->variation > options.steady_variation;
  // Stalls and varying speeds need nothing async does not give: the others go on either way.
  const std::string unsteady_too =
      !unsteady ? ""
      : stall > 0
          ? "; " + stalled + ", which async lets the others run through"
          : "; trainer " + std::to_string(most_variable->rank) + "'s speed varies by " +
                Fixed(100 * most_variable->variation, 0) + "%, which async lets the others run through";
  const TrainerMeasure* least_transfers = measured[0];
  for (const TrainerMeasure* t : measured) {
    if (t->transfer_share < least_transfers->transfer_share) least_transfers = t;
  }
  // Diloco's prediction: each trainer at its compute-only speed, less the rounds' synchronisation,
  // against their paces now; both between stalls, which hold up diloco's rounds no less.
  double compute_sum = 0, steady_sum = 0;
  std::string figures;
  bool predicted = options.diloco;
  for (const TrainerMeasure* t : measured) {
    if (t->compute_samples_per_second <= 0 || t->steady_samples_per_second <= 0) predicted = false;
    compute_sum += t->compute_samples_per_second;
    steady_sum += t->steady_samples_per_second;
    figures += (figures.empty() ? "trainer " : ", trainer ") + std::to_string(t->rank) + " " +
               Fixed(t->compute_samples_per_second, 0) + " and " + Fixed(t->steady_samples_per_second, 0);
  }
  const double diloco_speed = (1 - options.diloco_sync_share) * compute_sum;
  const double speedup = predicted ? diloco_speed / steady_sum : 0;
  const std::string prediction =
      predicted
          ? "diloco would train " + Fixed(speedup, 2) +
                "x the samples/s of now (samples/s in compute alone and paced, between stalls: " + figures +
                "; (1 - " + Fixed(options.diloco_sync_share, 2) + " for its rounds' synchronisation) x " +
                Fixed(compute_sum, 0) + " = " + Fixed(diloco_speed, 0) + " against " + Fixed(steady_sum, 0) +
                " now)"
          : "";
  if (predicted && speedup >= options.diloco_min_speedup) {
    d.mode = ConsistencyMode::kDiloco;
    d.reason = prediction + ", at least auto.diloco_min_speedup " + Fixed(options.diloco_min_speedup, 2) +
               "; every per-step mode moves the model to and from every trainer at every step, diloco once "
               "a round while the next round computes";
    return d;
  }
  const std::string not_diloco = predicted ? "; " + prediction + ", below auto.diloco_min_speedup " +
                                                 Fixed(options.diloco_min_speedup, 2)
                                           : "";
  // The per-step rows, with why not diloco after their own reason.
  d = [&] {
    Decision per_step;
    if (ratio < options.sync_min_speed_ratio) {
      per_step.mode = ConsistencyMode::kAsync;
      per_step.reason =
          "far apart: " + speeds + " (below " + Fixed(options.sync_min_speed_ratio, 2) +
          "); a round would wait for the slow trainer's fixed costs for a small share of the batch, and "
          "an ssp bound would hold the others for a trainer always behind" +
          unsteady_too;
      return per_step;
    }
    if (options.async_whole) {
      const TrainerMeasure* least = least_transfers;
      if (least->transfer_share >= options.async_min_transfer_share) {
        per_step.mode = ConsistencyMode::kAsync;
        per_step.reason =
            "steps mostly transfers: of a step of the whole batch (" + std::to_string(options.global_batch) +
            " samples) at least " + Fixed(100 * least->transfer_share, 0) + "% is outside compute (trainer " +
            std::to_string(least->rank) + "); " + speeds +
            "; a sync round would pay every trainer's transfers of the model for its share of the batch, "
            "async with whole batches once per batch" +
            unsteady_too;
        return per_step;
      }
    }
    if (unsteady) {
      // Enough slack for the fastest trainer to run through the longest stall seen (or a second
      // of a varying speed) without waiting.
      const double slack_seconds = std::max(stall, 1.0);
      const double steps = std::ceil(fastest->steps_per_second * slack_seconds);
      if (stall > 0 && steps > options.max_staleness) {
        // A bound that cannot cover the stall holds the others through the rest of it, every time:
        // ssp would run at the stalling trainer's pace, as sync does.
        per_step.mode = ConsistencyMode::kAsync;
        per_step.reason = stalled + ", " + Fixed(steps, 0) +
                          " of the fastest's steps, more than an ssp bound may cover (auto.max_staleness " +
                          std::to_string(options.max_staleness) + "); " + speeds +
                          "; async lets the others go on through a stall";
        return per_step;
      }
      per_step.mode = ConsistencyMode::kSsp;
      per_step.staleness =
          static_cast<uint32_t>(std::clamp(steps, 2.0, static_cast<double>(options.max_staleness)));
      per_step.reason =
          (stall > 0 ? stalled
                     : "trainer " + std::to_string(most_variable->rank) + "'s speed varies by " +
                           Fixed(100 * most_variable->variation, 0) + "%") +
          "; " + speeds + "; bound " + std::to_string(d.staleness) + " = the fastest's steps in " +
          Fixed(slack_seconds, 1) + " s";
      return per_step;
    }
    per_step.mode = ConsistencyMode::kSync;
    per_step.reason = "steady speeds within " + Fixed(options.sync_min_speed_ratio, 2) +
                      " of each other: " + speeds +
                      "; balanced rounds lose little to waiting and nothing to staleness";
    return per_step;
  }();
  d.reason += not_diloco;
  return d;
}

}  // namespace hetps
