// int8 with one scale per run of values: the scale is max|x| / 127, every value comes back within
// half a step (scale / 2) of itself, the largest one exactly at +-127, and runs of zeros or of one
// repeated value survive; ScaleInto reads int8 frames as the servers sum them.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "common/int8.h"

namespace hetps {
namespace {

struct Encoded {
  float scale;
  std::vector<int8_t> q;
  std::vector<float> back;
};

Encoded Encode(const std::vector<float>& x) {
  Encoded e;
  e.scale = Int8Scale(x.data(), x.size());
  e.q.resize(x.size());
  e.back.resize(x.size());
  QuantizeInt8(x.data(), x.size(), e.scale, e.q.data());
  DequantizeInt8(e.q.data(), e.q.size(), e.scale, e.back.data());
  return e;
}

}  // namespace

CATCH_TEST_CASE("int8 values come back within half a quantisation step of themselves", "[common][int8]") {
  std::mt19937 rng(3);
  for (float spread : {1e-6f, 1e-2f, 1.0f, 1e4f}) {
    std::normal_distribution<float> normal(0.0f, spread);
    std::vector<float> x(4096);
    for (float& v : x) v = normal(rng);
    const Encoded e = Encode(x);
    float largest = 0;
    for (float v : x) largest = std::max(largest, std::fabs(v));
    CATCH_CHECK(e.scale == largest / 127);
    for (size_t i = 0; i < x.size(); ++i) {
      CATCH_INFO("spread " << spread << ", element " << i << ": " << x[i] << " came back as " << e.back[i]);
      CATCH_CHECK(std::abs(e.q[i]) <= 127);
      // Half a step, and a few float roundings of the value (x / scale and scale * q).
      CATCH_CHECK(std::fabs(e.back[i] - x[i]) <= 0.5f * e.scale + 4e-7f * std::fabs(x[i]));
      if (std::fabs(x[i]) == largest) CATCH_CHECK(std::abs(e.q[i]) == 127);
    }
  }
}

CATCH_TEST_CASE("A run of zeros has scale 0 and comes back as zeros; one repeated value as itself",
                "[common][int8]") {
  const Encoded zeros = Encode(std::vector<float>(64, 0.0f));
  CATCH_CHECK(zeros.scale == 0.0f);
  for (size_t i = 0; i < 64; ++i) {
    CATCH_CHECK(zeros.q[i] == 0);
    CATCH_CHECK(zeros.back[i] == 0.0f);
  }
  for (float value : {0.37f, -2.5e-3f, 1e20f}) {
    const Encoded same = Encode(std::vector<float>(64, value));
    CATCH_CHECK(same.scale == std::fabs(value) / 127);
    for (size_t i = 0; i < 64; ++i) {
      CATCH_CHECK(same.q[i] == (value > 0 ? 127 : -127));
      CATCH_CHECK(std::fabs(same.back[i] - value) <= 1e-6f * std::fabs(value));
    }
  }
  // An empty run, and a scale of 0 given for values that are not zero: nothing but zeros.
  CATCH_CHECK(Int8Scale(nullptr, 0) == 0.0f);
  const std::vector<float> x = {1.0f, -3.0f};
  std::vector<int8_t> q(2, 5);
  QuantizeInt8(x.data(), x.size(), 0.0f, q.data());
  CATCH_CHECK(q == std::vector<int8_t>{0, 0});
}

CATCH_TEST_CASE("A non-finite value makes the scale non-finite, which receivers refuse", "[common][int8]") {
  const std::vector<float> with_nan = {1.0f, std::nanf(""), 2.0f};
  CATCH_CHECK(std::isnan(Int8Scale(with_nan.data(), with_nan.size())));
  const std::vector<float> nan_first = {std::nanf(""), 1.0f};
  CATCH_CHECK(std::isnan(Int8Scale(nan_first.data(), nan_first.size())));
  const std::vector<float> with_inf = {1.0f, -INFINITY};
  CATCH_CHECK(std::isinf(Int8Scale(with_inf.data(), with_inf.size())));
}

CATCH_TEST_CASE("ScaleInto reads an int8 frame as the caller's scale times its integers", "[common][int8]") {
  const std::vector<int8_t> q = {-127, -1, 0, 1, 64, 127};
  const float scale = 0.125f;
  std::vector<float> out(q.size(), 0.0f);
  ScaleInto(q.data(), q.size(), wire::DType::I8, 2.0f * scale, /*assign=*/true, out.data());
  for (size_t i = 0; i < q.size(); ++i) CATCH_CHECK(out[i] == 2.0f * scale * q[i]);
  ScaleInto(q.data(), q.size(), wire::DType::I8, scale, /*assign=*/false, out.data());
  for (size_t i = 0; i < q.size(); ++i) CATCH_CHECK(out[i] == 3.0f * scale * q[i]);
  CATCH_CHECK(DTypeSize(wire::DType::I8) == 1);
  CATCH_CHECK(std::string(DTypeName(wire::DType::I8)) == "int8");
  CATCH_CHECK(!IsWireFloat(wire::DType::I8));
}

}  // namespace hetps
