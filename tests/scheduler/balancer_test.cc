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
  Balancer balancer(64, 2);
  const std::map<uint32_t, uint32_t> even = {{0, 32}, {1, 32}};
  balancer.Observe(0, 5000);  // warm-up reports are ignored, however far off
  balancer.Observe(1, 10);
  CATCH_CHECK_FALSE(balancer.Propose({0, 1}, even).has_value());
  balancer.Observe(0, 3000);
  CATCH_CHECK_FALSE(balancer.Propose({0, 1}, even).has_value());  // trainer 1 still warming up
  balancer.Observe(1, 0);                                          // carries no information
  balancer.Observe(1, std::numeric_limits<double>::quiet_NaN());
  CATCH_CHECK_FALSE(balancer.Propose({0, 1}, even).has_value());
  balancer.Observe(1, 1000);
  auto split = balancer.Propose({0, 1}, even);
  CATCH_REQUIRE(split.has_value());
  CATCH_CHECK(*split == std::map<uint32_t, uint32_t>{{0, 48}, {1, 16}});

  CATCH_SECTION("later reports move the average halfway") {
    balancer.Observe(1, 3000);  // average 2000: now as fast as trainer 0 is not, 3000 vs 2000
    split = balancer.Propose({0, 1}, *split);
    CATCH_REQUIRE(split.has_value());
    CATCH_CHECK(*split == std::map<uint32_t, uint32_t>{{0, 38}, {1, 26}});
  }
  CATCH_SECTION("a split too close to the current one is not proposed") {
    CATCH_CHECK_FALSE(balancer.Propose({0, 1}, {{0, 47}, {1, 17}}).has_value());
    CATCH_CHECK(balancer.Propose({0, 1}, {{0, 46}, {1, 18}}).has_value());
  }
  CATCH_SECTION("a trainer that left is forgotten; the others share the whole batch") {
    balancer.Forget(1);
    CATCH_CHECK_FALSE(balancer.Propose({0, 1}, *split).has_value());
    split = balancer.Propose({0}, {{0, 48}});
    CATCH_REQUIRE(split.has_value());
    CATCH_CHECK(*split == std::map<uint32_t, uint32_t>{{0, 64}});
  }
}

}  // namespace hetps
