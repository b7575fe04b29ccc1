#include "common/permutation.h"

#include <numeric>

namespace hetps {

uint64_t SplitMix64::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::Below(uint64_t bound) {
  // Rejects the top sliver of the range that would otherwise favour small results.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t x;
  do {
    x = Next();
  } while (x >= limit);
  return x % bound;
}

std::vector<int64_t> EpochPermutation(uint64_t n, uint64_t seed, uint32_t epoch) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  SplitMix64 rng(seed * 0x100000001b3ULL + epoch + 1);
  for (uint64_t i = n; i > 1; --i) {
    const uint64_t j = rng.Below(i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

}  // namespace hetps
