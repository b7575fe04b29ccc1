#include "common/permutation.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

namespace hetps {
namespace {

CATCH_TEST_CASE("SplitMix64 matches the reference sequence", "[common][permutation]") {
  // The first outputs of Vigna's splitmix64.c for seed 1234567, computed independently.
  const std::vector<uint64_t> expected = {
      0x599ed017fb08fc85ULL, 0x2c73f08458540fa5ULL, 0x883ebce5a3f27c77ULL, 0x3fbef740e9177b3fULL,
      0xe3b8346708cb5ecdULL, 0x6c4f7dbc989944f6ULL, 0x9734aed70f5d5e85ULL, 0x46793dd6f7df31b1ULL,
  };
  SplitMix64 rng(1234567);
  for (size_t i = 0; i < expected.size(); ++i) {
    CATCH_INFO("output " << i);
    CATCH_CHECK(rng.Next() == expected[i]);
  }
}

CATCH_TEST_CASE("An epoch permutation holds every index exactly once", "[common][permutation]") {
  for (uint64_t n : {0ull, 1ull, 2ull, 3ull, 10ull, 1000ull, 60000ull}) {
    CATCH_INFO("n " << n);
    const std::vector<int64_t> order = EpochPermutation(n, 42, 3);
    CATCH_REQUIRE(order.size() == n);
    std::vector<int> seen(n, 0);
    for (int64_t index : order) {
      CATCH_REQUIRE(index >= 0);
      CATCH_REQUIRE(static_cast<uint64_t>(index) < n);
      ++seen[index];
    }
    for (uint64_t i = 0; i < n; ++i) CATCH_REQUIRE(seen[i] == 1);
  }
}

CATCH_TEST_CASE("An epoch permutation depends only on seed and epoch", "[common][permutation]") {
  const uint64_t n = 5000;
  CATCH_CHECK(EpochPermutation(n, 7, 0) == EpochPermutation(n, 7, 0));
  CATCH_CHECK(EpochPermutation(n, 7, 4) == EpochPermutation(n, 7, 4));

  std::vector<std::vector<int64_t>> distinct;
  for (uint64_t seed : {1ull, 2ull, 7ull, 1234567ull}) {
    for (uint32_t epoch = 0; epoch < 5; ++epoch) distinct.push_back(EpochPermutation(n, seed, epoch));
  }
  for (size_t a = 0; a < distinct.size(); ++a) {
    for (size_t b = a + 1; b < distinct.size(); ++b) {
      CATCH_INFO("permutations " << a << " and " << b);
      CATCH_CHECK(distinct[a] != distinct[b]);
    }
  }
  // Shuffled, not the identity.
  std::vector<int64_t> identity(n);
  for (uint64_t i = 0; i < n; ++i) identity[i] = static_cast<int64_t>(i);
  CATCH_CHECK(EpochPermutation(n, 7, 0) != identity);
}

CATCH_TEST_CASE("A known seed and epoch give a fixed order on every machine", "[common][permutation]") {
  // Fisher-Yates over SplitMix64 with the seed mixed as seed * 0x100000001b3 + epoch + 1; the
  // values were computed independently of this code.
  CATCH_CHECK(EpochPermutation(10, 1, 0) == std::vector<int64_t>{2, 3, 6, 8, 5, 0, 4, 1, 9, 7});
  CATCH_CHECK(EpochPermutation(10, 42, 3) == std::vector<int64_t>{7, 1, 4, 9, 3, 6, 2, 0, 5, 8});
}

CATCH_TEST_CASE("Below stays in range and is roughly uniform", "[common][permutation]") {
  SplitMix64 rng(99);
  for (uint64_t bound : {1ull, 2ull, 3ull, 7ull, 1000ull, (1ull << 63) + 1, ~0ull}) {
    for (int i = 0; i < 1000; ++i) CATCH_REQUIRE(rng.Below(bound) < bound);
  }
  CATCH_CHECK(SplitMix64(5).Below(1) == 0);

  // 100,000 draws over 10 buckets: chi-square with 9 degrees of freedom. Its 99.99th percentile
  // is about 33.7; 60 leaves a wide margin, and the seed is fixed, so this cannot flake.
  const uint64_t buckets = 10;
  const int draws = 100000;
  std::vector<int> counts(buckets, 0);
  for (int i = 0; i < draws; ++i) ++counts[rng.Below(buckets)];
  const double expected = static_cast<double>(draws) / buckets;
  double chi_square = 0;
  for (int count : counts) chi_square += (count - expected) * (count - expected) / expected;
  CATCH_INFO("chi-square " << chi_square);
  CATCH_CHECK(chi_square < 60.0);

  // A bound just above half the range would show modulo bias: with plain `% bound` the lower
  // half would get five eighths of the draws instead of half.
  const uint64_t big = (1ull << 63) + (1ull << 62);
  int low = 0;
  for (int i = 0; i < 20000; ++i) low += rng.Below(big) < big / 2 ? 1 : 0;
  CATCH_CHECK(low > 9000);
  CATCH_CHECK(low < 11000);
}

}  // namespace
}  // namespace hetps
