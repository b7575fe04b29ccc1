// Balancer: splitting a global batch so that step times are equal — the fitted fixed and
// per-sample costs, exact sums, the warm-up, the moving average, when a new split is worth
// sending, and convergence against simulated trainers.
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
  balancer.Observe(0, 5000, 1, 1);  // warm-up reports are ignored, however far off
  balancer.Observe(1, 10, 1, 1);
  CATCH_CHECK_FALSE(balancer.Propose({0, 1}, even).has_value());
  balancer.Observe(0, 3000, 1, 1);
  CATCH_CHECK_FALSE(balancer.Propose({0, 1}, even).has_value());  // trainer 1 still warming up
  balancer.Observe(1, 0, 1, 1);                                   // these carry no information
  balancer.Observe(1, 100, 0, 1);
  balancer.Observe(1, std::numeric_limits<double>::quiet_NaN(), 1, 1);
  balancer.Observe(1, 100, 1, 0);
  CATCH_CHECK_FALSE(balancer.Propose({0, 1}, even).has_value());
  CATCH_CHECK(balancer.Speed(1) == 0);
  balancer.Observe(1, 1000, 1, 1);
  CATCH_CHECK(balancer.Speed(1) == Approx(1000));
  auto split = balancer.Propose({0, 1}, even);
  CATCH_REQUIRE(split.has_value());
  CATCH_CHECK(*split == std::map<uint32_t, uint32_t>{{0, 48}, {1, 16}});

  CATCH_SECTION("after a half-life of compute time, the old speed counts half") {
    constexpr double kHalfLife = Balancer::kHalfLifeSeconds;
    // Steps of the same batch (1000), now three times as fast: as fast as trainer 0.
    balancer.Observe(1, 3000 * kHalfLife, kHalfLife, 3 * kHalfLife);
    CATCH_CHECK(balancer.Speed(1) == Approx((1000 * 0.5 + 3000 * kHalfLife) / (0.5 + kHalfLife)));
    split = balancer.Propose({0, 1}, *split);
    CATCH_REQUIRE(split.has_value());
    CATCH_CHECK(*split == std::map<uint32_t, uint32_t>{{0, 33}, {1, 31}});
  }
  CATCH_SECTION("a short report counts for its short time, not as a whole report") {
    balancer.Observe(1, 10, 0.001, 1);  // 10,000 samples/s, for a millisecond
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
    balancer.Observe(0, 4000, 1, 1);
    balancer.Observe(1, 1000, 1, 1);
  }
  // 4 : 1 is 409.6 : 102.4. From 432 : 80 only 22 of 512 samples move, but the slow trainer's
  // batch grows by 28%; from 412 : 100 by 2%, which is noise.
  auto split = balancer.Propose({0, 1}, {{0, 432}, {1, 80}});
  CATCH_REQUIRE(split.has_value());
  CATCH_CHECK(*split == std::map<uint32_t, uint32_t>{{0, 410}, {1, 102}});
  CATCH_CHECK_FALSE(balancer.Propose({0, 1}, {{0, 412}, {1, 100}}).has_value());
}

namespace {

// A simulated trainer whose step of b samples takes fixed + per_sample x b seconds.
struct Simulated {
  Balancer::StepCost truth;
  // Reports `steps` steps of `batch` samples, with +-`noise` relative jitter on the time.
  void Report(Balancer& balancer, uint32_t rank, uint32_t batch, int steps, double noise) const {
    balancer.Observe(rank, double(batch) * steps, truth.Seconds(batch) * steps * (1 + noise), steps);
  }
};

}  // namespace

CATCH_TEST_CASE("Fixed and per-sample costs are fitted from steps at different batch sizes",
                "[scheduler][balancer]") {
  Balancer balancer(512);
  const Simulated fast{{0.010, 0.001}}, slow{{0.040, 0.004}};
  for (uint32_t batch : {256u, 256u, 300u, 200u}) {  // the first report is the warm-up
    fast.Report(balancer, 0, batch, 5, 0);
    slow.Report(balancer, 1, batch, 5, 0);
  }
  for (uint32_t rank : {0u, 1u}) {
    const Balancer::StepCost truth = rank == 0 ? fast.truth : slow.truth;
    auto cost = balancer.Cost(rank);
    CATCH_REQUIRE(cost.has_value());
    CATCH_CHECK(cost->fixed_seconds == Approx(truth.fixed_seconds).epsilon(1e-6));
    CATCH_CHECK(cost->seconds_per_sample == Approx(truth.seconds_per_sample).epsilon(1e-6));
  }
  // Equal step times: 0.01 + 0.001 x0 = 0.04 + 0.004 x1 with x0 + x1 = 512, so x1 = 96.4; a split
  // by speed at these batches would give the slow trainer 512 / 5 = 102 and so longer steps.
  auto split = balancer.Propose({0, 1}, {{0, 256}, {1, 256}});
  CATCH_REQUIRE(split.has_value());
  CATCH_CHECK(*split == std::map<uint32_t, uint32_t>{{0, 416}, {1, 96}});

  CATCH_SECTION("the fixed cost is kept while the batch stays put; the per-sample cost follows") {
    for (int report = 0; report < 40; ++report) slow.Report(balancer, 1, 96, 5, 0);  // spread gone
    const Simulated slower{{0.040, 0.008}};  // the machine slows down per sample
    for (int report = 0; report < 40; ++report) slower.Report(balancer, 1, 96, 5, 0);
    auto cost = balancer.Cost(1);
    CATCH_REQUIRE(cost.has_value());
    CATCH_CHECK(cost->fixed_seconds == Approx(0.040).epsilon(0.01));
    CATCH_CHECK(cost->seconds_per_sample == Approx(0.008).epsilon(0.01));
  }
}

CATCH_TEST_CASE("An equal-time split gives one sample to a trainer whose fixed cost alone is too long",
                "[scheduler][balancer]") {
  const std::vector<Balancer::StepCost> costs = {{0, 0.001}, {1.0, 0.001}, {0, 0.002}};
  const auto split = Balancer::EqualTimeSplit(64, costs);
  CATCH_CHECK(split == std::vector<uint32_t>{42, 1, 21});
  // Without fixed costs it is the split by speed.
  CATCH_CHECK(Balancer::EqualTimeSplit(64, {{0, 1.0 / 3000}, {0, 1.0 / 1000}}) ==
              std::vector<uint32_t>{48, 16});
  CATCH_CHECK(Balancer::EqualTimeSplit(3, {{0, 1}, {0, 1}, {0, 1}}) == std::vector<uint32_t>{1, 1, 1});
}

CATCH_TEST_CASE("Rebalancing converges to equal step times with noisy reports", "[scheduler][balancer]") {
  // A trainer 4x slower than the other, with a fixed cost worth 40 samples a step; the balancer's
  // proposals are applied as the scheduler does, with 3% noise on every report.
  const Simulated fast{{0.020, 0.0005}}, slow{{0.080, 0.002}};
  Balancer balancer(512);
  std::map<uint32_t, uint32_t> batch = {{0, 256}, {1, 256}};
  for (int round = 0; round < 60; ++round) {
    const double noise = (round % 3 - 1) * 0.03;
    fast.Report(balancer, 0, batch[0], 10, noise);
    slow.Report(balancer, 1, batch[1], 10, -noise);
    if (auto proposal = balancer.Propose({0, 1}, batch)) batch = *proposal;
  }
  // Equal times: 0.02 + 0.0005 x0 = 0.08 + 0.002 x1, x0 + x1 = 512: x1 = 78.4.
  CATCH_INFO("split " << batch[0] << " : " << batch[1]);
  CATCH_CHECK(batch[0] + batch[1] == 512);
  CATCH_CHECK(std::abs(double(batch[1]) - 78.4) <= 0.05 * 78.4);
  CATCH_CHECK(fast.truth.Seconds(batch[0]) == Approx(slow.truth.Seconds(batch[1])).epsilon(0.05));
}

CATCH_TEST_CASE("A trainer whose small share is mostly fixed cost is recognised", "[scheduler][balancer]") {
  // 32 ms of transfers and 4 ms a sample: 2 samples of 64 are a 40 ms step, 80% fixed.
  const Balancer::StepCost slow{0.032, 0.004};
  CATCH_CHECK(Balancer::MostlyFixedCost(slow, 2, 64));
  CATCH_CHECK(Balancer::MostlyFixedCost(slow, 6, 64));         // 56 ms, 57% fixed, 6 of 64
  CATCH_CHECK_FALSE(Balancer::MostlyFixedCost(slow, 7, 64));   // more than a tenth of the batch
  CATCH_CHECK_FALSE(Balancer::MostlyFixedCost(slow, 9, 512));  // 68 ms, 47% fixed
  // A share that small with little fixed cost is only a slow machine, balanced as it should be.
  CATCH_CHECK_FALSE(Balancer::MostlyFixedCost({0.002, 0.004}, 2, 64));
}

}  // namespace hetps
