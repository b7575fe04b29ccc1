// The sample order of a training epoch: a permutation of [0, n) that depends only on the job's
// seed and the epoch number, computed identically on every machine and compiler (std::shuffle's
// distributions are implementation-defined, so hetps uses its own generator). Pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace hetps {

// SplitMix64: a small, fast, well-mixed 64-bit generator.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in [0, bound), without modulo bias; bound > 0.
  uint64_t Below(uint64_t bound);

 private:
  uint64_t state_;
};

// Fisher-Yates permutation of [0, n) for (seed, epoch).
std::vector<int64_t> EpochPermutation(uint64_t n, uint64_t seed, uint32_t epoch);

}  // namespace hetps
