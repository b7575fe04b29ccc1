// Balancer: splits a sync job's global batch across trainers in proportion to their measured
// speed (balance: speed), so that a slow machine takes a smaller share instead of holding every
// round back.
//
// Speeds are samples per second of each trainer's own step time (compute, without waiting for
// the round), as trainers report them in Progress. A trainer's first report is a warm-up and is
// ignored; later ones add their samples and compute seconds to sums that decay with a half-life
// of kHalfLife of compute time, so a speed is the samples over the seconds of about the last
// few seconds, however often trainers report. Plain logic, owned by the scheduler's loop thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace hetps {

class Balancer {
 public:
  // A new split is proposed only when it changes some trainer's batch by at least
  // `min_relative_change` of that batch (and by at least one sample), so that noise in the
  // speeds does not move samples back and forth, while a small share can still be corrected.
  explicit Balancer(uint32_t global_batch, double min_relative_change = 0.05);

  static constexpr double kHalfLifeSeconds = 4;

  // Records that trainer `rank` computed `samples` in `compute_seconds` since its last report
  // (reports without samples or time carry no information).
  void Observe(uint32_t rank, double samples, double compute_seconds);
  // The speed used for trainer `rank`, samples/s; 0 while it is unknown.
  double Speed(uint32_t rank) const;
  // Forgets a trainer that left.
  void Forget(uint32_t rank);

  // The split in proportion to speed over `ranks` (each at least 1 sample, summing to the global
  // batch) when every one of them has a measured speed and the split changes enough (see above)
  // from `current` (rank -> batch); otherwise none.
  std::optional<std::map<uint32_t, uint32_t>> Propose(const std::vector<uint32_t>& ranks,
                                                      const std::map<uint32_t, uint32_t>& current) const;

  // `total` samples split over `weights` in proportion (largest remainders), each at least 1.
  // Needs total >= weights.size() and positive weights.
  static std::vector<uint32_t> Split(uint32_t total, const std::vector<double>& weights);

 private:
  struct Sums {
    uint32_t reports = 0;
    double samples = 0;  // decayed
    double seconds = 0;  // decayed
  };

  uint32_t global_batch_;
  double min_relative_change_;
  std::map<uint32_t, Sums> speeds_;
};

}  // namespace hetps
