// Balancer: splits a sync job's global batch across trainers in proportion to their measured
// speed (balance: speed), so that a slow machine takes a smaller share instead of holding every
// round back.
//
// Speeds are samples per second of each trainer's own step time (compute, without waiting for
// the round), as trainers report them in Progress. A trainer's first report is a warm-up and is
// ignored; later ones feed an exponential moving average. Plain logic, owned by the scheduler's
// loop thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace hetps {

class Balancer {
 public:
  // `min_change`: a new split is proposed only when at least this many samples of the global batch
  // change trainer (at least 1).
  Balancer(uint32_t global_batch, uint32_t min_change);

  // Records a speed report of trainer `rank` (samples/s; reports of 0 carry no information).
  void Observe(uint32_t rank, double samples_per_second);
  // Forgets a trainer that left.
  void Forget(uint32_t rank);

  // The split in proportion to speed over `ranks` (each at least 1 sample, summing to the global
  // batch) when every one of them has a measured speed and at least min_change samples move
  // from `current` (rank -> batch); otherwise none.
  std::optional<std::map<uint32_t, uint32_t>> Propose(const std::vector<uint32_t>& ranks,
                                                      const std::map<uint32_t, uint32_t>& current) const;

  // `total` samples split over `weights` in proportion (largest remainders), each at least 1.
  // Needs total >= weights.size() and positive weights.
  static std::vector<uint32_t> Split(uint32_t total, const std::vector<double>& weights);

 private:
  struct Speed {
    uint32_t reports = 0;
    double average = 0;
  };

  uint32_t global_batch_;
  uint32_t min_change_;
  std::map<uint32_t, Speed> speeds_;
};

}  // namespace hetps
