// Balancer: splits a sync job's global batch across trainers so that their steps take equal time
// (balance: speed), so that a slow machine takes a smaller share instead of holding every round
// back.
//
// A trainer's step time is modelled as a fixed cost plus a cost per sample, t(b) = fixed +
// per_sample x b, fitted to what it reports in Progress (steps, samples and their paced seconds:
// compute and its own transfers, without the servers' hold for the round; Progress.paced_seconds).
// The fixed cost (kernel launches, copies, pushes, per-step bookkeeping) matters: with it, a
// split in proportion to samples per second is not the one that equalises step times, and
// iterating it shrinks a slow trainer's share further each time.
// The fit needs reports at different batch sizes: until a trainer has them (before the first
// rebalance), its fixed cost is taken as 0 (shares in proportion to speed); once fitted, the
// fixed cost is kept while the batch stays put, and the per-sample cost follows the reports.
//
// Reports after a trainer's first (a warm-up, ignored) add to sums that decay with a half-life of
// kHalfLifeSeconds of compute time, however often trainers report. Plain logic, owned by the
// scheduler's loop thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace hetps {

class Balancer {
 public:
  // A trainer's step time as a function of its batch.
  struct StepCost {
    double fixed_seconds = 0;
    double seconds_per_sample = 0;
    double Seconds(double batch) const { return fixed_seconds + seconds_per_sample * batch; }
  };

  // A new split is proposed only when it changes some trainer's batch by at least
  // `min_relative_change` of that batch (and by at least one sample), so that noise in the
  // measurements does not move samples back and forth, while a small share can still be corrected.
  explicit Balancer(uint32_t global_batch, double min_relative_change = 0.05);

  static constexpr double kHalfLifeSeconds = 4;
  // Batches in the memory must differ by this much (relative standard deviation) for a fit.
  static constexpr double kMinBatchSpread = 0.05;

  // Records that trainer `rank` ran `steps` steps (with data) of `samples` samples in all in
  // `compute_seconds` since its last report. Reports without samples, time or steps carry no
  // information.
  void Observe(uint32_t rank, double samples, double compute_seconds, double steps);
  // Trainer `rank`'s step-time model; none while it has no report past its warm-up.
  std::optional<StepCost> Cost(uint32_t rank) const;
  // Its samples per second over the memory; 0 while unknown.
  double Speed(uint32_t rank) const;
  // Forgets a trainer that left.
  void Forget(uint32_t rank);

  // The split over `ranks` that equalises their modelled step times (each at least 1 sample,
  // summing to the global batch) when every one of them has a model and the split changes enough
  // (see above) from `current` (rank -> batch); otherwise none.
  std::optional<std::map<uint32_t, uint32_t>> Propose(const std::vector<uint32_t>& ranks,
                                                      const std::map<uint32_t, uint32_t>& current) const;

  // `total` samples over trainers of step costs `costs` so that fixed + per_sample x batch is the
  // same for all, each at least 1 sample (a trainer whose fixed cost alone exceeds the common
  // time gets 1), rounded to whole samples by largest remainders. Needs total >= costs.size()
  // and positive per-sample costs.
  static std::vector<uint32_t> EqualTimeSplit(uint32_t total, const std::vector<StepCost>& costs);
  // Whether a trainer given `batch` samples of the global batch spends at least half its step on
  // its fixed cost for at most a tenth of the samples: every round then waits for its transfers
  // and copies for little it trains, and the others may run faster without it.
  static bool MostlyFixedCost(const StepCost& cost, uint32_t batch, uint32_t global_batch);
  // `total` samples split over `weights` in proportion (largest remainders), each at least 1.
  // Needs total >= weights.size() and positive weights.
  static std::vector<uint32_t> Split(uint32_t total, const std::vector<double>& weights);

 private:
  // Decayed, step-weighted sums over reports: x the mean batch of a report, y its mean step time.
  struct Sums {
    uint32_t reports = 0;
    double samples = 0, seconds = 0;  // for Speed
    double w = 0, x = 0, y = 0, xx = 0, xy = 0;
    std::optional<double> fixed_seconds;  // the last fit's, kept while batches do not vary
  };

  uint32_t global_batch_;
  double min_relative_change_;
  std::map<uint32_t, Sums> sums_;
};

}  // namespace hetps
