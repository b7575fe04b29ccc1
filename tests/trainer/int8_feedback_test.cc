// Error feedback for int8 pseudo-gradients: what a partition's rounding loses in one round is
// sent in later ones. Over many rounds the sum of the values the servers read back (scale * q)
// equals the sum of the exact values less the last residual, which is at most half the latest
// scale per element; without feedback a value below half a step is never sent at all.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "common/int8.h"
#include "trainer/int8_feedback.h"

namespace hetps {

CATCH_TEST_CASE(
    "With error feedback, the sum of the int8 values sent over many rounds stays within half the "
    "latest scale of the sum of the exact pseudo-gradients, per element",
    "[trainer][int8]") {
  constexpr size_t kLength = 257;
  constexpr int kRounds = 500;
  Int8Feedback feedback({kLength, 3});
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<double> exact_sum(kLength, 0.0), sent_sum(kLength, 0.0);
  std::vector<float> x(kLength);
  std::vector<int8_t> q(kLength);
  float scale = 0;
  for (int round = 0; round < kRounds; ++round) {
    // Pseudo-gradients whose size changes from round to round, with a bias that rounding alone
    // would keep losing.
    const float size = 0.01f * (1 + round % 7);
    for (size_t i = 0; i < kLength; ++i) x[i] = size * (normal(rng) + 0.3f);
    scale = feedback.Encode(0, x.data(), q.data());
    for (size_t i = 0; i < kLength; ++i) {
      exact_sum[i] += x[i];
      sent_sum[i] += static_cast<double>(scale) * q[i];
      CATCH_REQUIRE(std::abs(q[i]) <= kInt8Levels);
    }
  }
  const std::vector<float>& residual = feedback.residual(0);
  for (size_t i = 0; i < kLength; ++i) {
    CATCH_INFO("element " << i << ": exact " << exact_sum[i] << ", sent " << sent_sum[i] << ", scale "
                          << scale);
    // What is still owed is the residual (up to float rounding over the rounds) ...
    CATCH_CHECK(std::abs(exact_sum[i] - sent_sum[i] - residual[i]) < 1e-4);
    // ... and the residual is within half a step of the latest scale.
    CATCH_CHECK(std::abs(residual[i]) <= 0.5 * scale * (1 + 1e-5));
    CATCH_CHECK(std::abs(exact_sum[i] - sent_sum[i]) <= 0.5 * scale + 1e-4);
  }
  // The other partition was never encoded: its residual is still zero.
  CATCH_CHECK(feedback.residual(1) == std::vector<float>(3, 0.0f));
}

CATCH_TEST_CASE("A value below half a step is sent through its residual, where rounding alone drops it",
                "[trainer][int8]") {
  // Scale 1 / 127 (about 0.0079): 0.003 rounds to 0 every time without feedback.
  const std::vector<float> x = {1.0f, 0.003f};
  Int8Feedback feedback({2});
  std::vector<int8_t> q(2);
  double sent = 0, without = 0;
  for (int round = 0; round < 100; ++round) {
    const float scale = feedback.Encode(0, x.data(), q.data());
    sent += static_cast<double>(scale) * q[1];
    std::vector<int8_t> plain(2);
    QuantizeInt8(x.data(), 2, Int8Scale(x.data(), 2), plain.data());
    without += static_cast<double>(Int8Scale(x.data(), 2)) * plain[1];
  }
  CATCH_CHECK(without == 0.0);
  CATCH_CHECK(std::abs(sent - 0.3) <= 0.5 / 127 + 1e-5);
}

CATCH_TEST_CASE("Zeros send zeros with scale 0 and leave no residual; Reset forgets the residuals",
                "[trainer][int8]") {
  Int8Feedback feedback({4});
  std::vector<int8_t> q(4, 9);
  const std::vector<float> zeros(4, 0.0f);
  CATCH_CHECK(feedback.Encode(0, zeros.data(), q.data()) == 0.0f);
  CATCH_CHECK(q == std::vector<int8_t>(4, 0));
  CATCH_CHECK(feedback.residual(0) == zeros);
  // All equal: sent exactly (127 steps of |c| / 127), nearly nothing left over.
  const std::vector<float> same(4, -0.25f);
  const float scale = feedback.Encode(0, same.data(), q.data());
  CATCH_CHECK(q == std::vector<int8_t>(4, -127));
  for (float r : feedback.residual(0)) CATCH_CHECK(std::abs(r) <= 1e-7f);
  const std::vector<float> mixed = {0.5f, 0.001f, -0.2f, 0.0f};
  feedback.Encode(0, mixed.data(), q.data());
  CATCH_CHECK(scale > 0);
  feedback.Reset();
  CATCH_CHECK(feedback.residual(0) == zeros);
}

}  // namespace hetps
