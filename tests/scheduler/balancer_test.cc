// Balancer: splitting a global batch by measured speed — exact sums, the warm-up, the moving
// average, and when a new split is worth sending.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

#include "scheduler/balancer.h"

namespace hetps {

CATCH_TEST_CASE("Split gives every trainer at least one sample and adds up to the total",
                "[scheduler][balancer]") {
  CATCH_CHECK(Balancer::Split(64, {3, 1}) == std::vector<uint32_t>{48, 16});
  CATCH_CHECK(Balancer::Split(10, {1, 1, 1}) == std::vector<uint32_t>{4, 3, 3});
  CATCH_CHECK(Balancer::Split(3, {100, 1, 1}) == std::vector<uint32_t>{1, 1, 1});
  CATCH_CHECK(Balancer::Split(64, {1000, 1}) == std::vector<uint32_t>{63, 1});
  for (uint32_t total : {5u, 64u, 97u, 1000u}) {
    const std::vector<double> weights = {0.7, 2.9, 1.3, 0.1};
    const auto split = Balancer::Split(total, weights);
    CATCH_CHECK(std::accumulate(split.begin(), split.end(), 0u) == total);
    for (size_t i = 0; i < split.size(); ++i) {
      CATCH_CHECK(split[i] >= 1);
      // Within one sample of the exact share of what is left after everyone's first sample.
      const double exact = 1 + (total - 4.0) * weights[i] / 5.0;
      CATCH_CHECK(std::abs(split[i] - exact) < 1.0 + 1e-9);
    }
  }
}

CATCH_TEST_CASE("A split is proposed once every trainer has reported past its warm-up",
                "[scheduler][balancer]") {
  Balancer balancer(64);
  const std::map<uint32_t, uint32_t> even = {{0, 32}, {1, 32}};
  balancer.Observe(0, 5000, 1);  // warm-up reports are ignored, however far off
  balancer.Observe(1, 10, 1);
  CATCH_CHECK_FALSE(balancer.Propose({0, 1}, even).has_value());
  balancer.Observe(0, 3000, 1);
  CATCH_CHECK_FALSE(balancer.Propose({0, 1}, even).has_value());  // trainer 1 still warming up
  balancer.Observe(1, 0, 1);                                      // these carry no information
  balancer.Observe(1, 100, 0);
  balancer.Observe(1, std::numeric_limits<double>::quiet_NaN(), 1);
  CATCH_CHECK_FALSE(balancer.Propose({0, 1}, even).has_value());
  CATCH_CHECK(balancer.Speed(1) == 0);
  balancer.Observe(1, 1000, 1);
  CATCH_CHECK(balancer.Speed(1) == Approx(1000));
  auto split = balancer.Propose({0, 1}, even);
  CATCH_REQUIRE(split.has_value());
  CATCH_CHECK(*split == std::map<uint32_t, uint32_t>{{0, 48}, {1, 16}});

  CATCH_SECTION("after a half-life of compute time, the old speed counts half") {
    constexpr double kHalfLife = Balancer::kHalfLifeSeconds;
    balancer.Observe(1, 3000 * kHalfLife, kHalfLife);  // now as fast as trainer 0
    CATCH_CHECK(balancer.Speed(1) == Approx((1000 * 0.5 + 3000 * kHalfLife) / (0.5 + kHalfLife)));
    split = balancer.Propose({0, 1}, *split);
    CATCH_REQUIRE(split.has_value());
    CATCH_CHECK(*split == std::map<uint32_t, uint32_t>{{0, 33}, {1, 31}});
  }
  CATCH_SECTION("a short report counts for its short time, not as a whole report") {
    balancer.Observe(1, 10, 0.001);  // 10,000 samples/s, for a millisecond
    CATCH_CHECK(balancer.Speed(1) == Approx(1009).margin(1));
  }
  CATCH_SECTION("a split is proposed when it changes some trainer's batch by 5% of it") {
    CATCH_CHECK_FALSE(balancer.Propose({0, 1}, *split).has_value());
    CATCH_CHECK(balancer.Propose({0, 1}, {{0, 47}, {1, 17}}).has_value());  // 17 -> 16: 6%
  }
  CATCH_SECTION("a trainer that left is forgotten; the others share the whole batch") {
    balancer.Forget(1);
    CATCH_CHECK_FALSE(balancer.Propose({0, 1}, *split).has_value());
    split = balancer.Propose({0}, {{0, 48}});
    CATCH_REQUIRE(split.has_value());
    CATCH_CHECK(*split == std::map<uint32_t, uint32_t>{{0, 64}});
  }
}

CATCH_TEST_CASE("A small share is corrected even when few samples of the global batch move",
                "[scheduler][balancer]") {
  Balancer balancer(512);
  for (int report = 0; report < 2; ++report) {  // the first is the warm-up
    balancer.Observe(0, 4000, 1);
    balancer.Observe(1, 1000, 1);
  }
  // 4 : 1 is 409 : 103. From 432 : 80 only 23 of 512 samples move, but the slow trainer's batch
  // grows by 29%; from 412 : 100 by 3%, which is noise.
  auto split = balancer.Propose({0, 1}, {{0, 432}, {1, 80}});
  CATCH_REQUIRE(split.has_value());
  CATCH_CHECK(*split == std::map<uint32_t, uint32_t>{{0, 409}, {1, 103}});
  CATCH_CHECK_FALSE(balancer.Propose({0, 1}, {{0, 412}, {1, 100}}).has_value());
}

}  // namespace hetps
