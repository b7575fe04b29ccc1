// Wire dtypes: float32 travels exactly; bfloat16 and float16 round to nearest even within their
// precision, keep special values, and the fused pack, unpack and scale loops agree with the
// element conversions.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/dtype.h"

namespace hetps {
namespace {

std::vector<float> Samples() {
  std::vector<float> values = {0.0f,      -0.0f,          1.0f,  -1.0f,     0.1f,   3.14159265f, 65504.0f,
                               -65504.0f, 6.1035156e-05f, 1e-3f, 123456.0f, 1e-30f, 3e38f};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < 5000; ++i)
    values.push_back(normal(rng) * std::pow(10.0f, static_cast<float>(i % 9 - 4)));
  return values;
}

bool SameBits(float a, float b) {
  uint32_t a_bits = 0;
  uint32_t b_bits = 0;
  std::memcpy(&a_bits, &a, sizeof(float));
  std::memcpy(&b_bits, &b, sizeof(float));
  return a_bits == b_bits;
}

}  // namespace

CATCH_TEST_CASE("float32 travels exactly", "[common][dtype]") {
  const std::vector<float> in = Samples();
  std::vector<float> wire(in.size()), out(in.size());
  PackFloats(in.data(), in.size(), wire::DType::F32, wire.data());
  UnpackFloats(wire.data(), wire.size(), wire::DType::F32, out.data());
  for (size_t i = 0; i < in.size(); ++i) CATCH_CHECK(SameBits(in[i], out[i]));
}

CATCH_TEST_CASE("bfloat16 keeps 8 significant bits, rounding to nearest even", "[common][dtype]") {
  for (float v : Samples()) {
    const float back = Bf16ToFloat(FloatToBf16(v));
    CATCH_INFO(v << " -> " << back);
    CATCH_CHECK(std::abs(back - v) <= std::abs(v) * (1.0f / 256));
    CATCH_CHECK(std::signbit(back) == std::signbit(v));
  }
  // Exactly representable values survive; ties go to the even neighbour.
  CATCH_CHECK(Bf16ToFloat(FloatToBf16(1.5f)) == 1.5f);
  CATCH_CHECK(Bf16ToFloat(FloatToBf16(1.0f + 1.0f / 256)) == 1.0f);               // tie, down
  CATCH_CHECK(Bf16ToFloat(FloatToBf16(1.0f + 3.0f / 256)) == 1.0f + 4.0f / 256);  // tie, up
  CATCH_CHECK(std::isinf(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::infinity()))));
  CATCH_CHECK(std::isnan(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits only in the low bits must not become infinity.
  float low_nan;
  const uint32_t bits = 0x7f800001u;
  std::memcpy(&low_nan, &bits, sizeof(low_nan));
  CATCH_CHECK(std::isnan(Bf16ToFloat(FloatToBf16(low_nan))));
}

CATCH_TEST_CASE("float16 keeps 11 significant bits, its range and its subnormals", "[common][dtype]") {
  for (float v : Samples()) {
    const float back = HalfToFloat(FloatToHalf(v));
    CATCH_INFO(v << " -> " << back);
    const float magnitude = std::abs(v);
    if (magnitude >= 65520.0f) {
      CATCH_CHECK(std::isinf(back));
    } else if (magnitude >= 6.103515625e-05f) {  // normal float16
      CATCH_CHECK(std::abs(back - v) <= magnitude * (1.0f / 2048));
    } else {  // subnormal: absolute error at most half of 2^-24
      CATCH_CHECK(std::abs(back - v) <= 2.98023224e-08f);
    }
    CATCH_CHECK(std::signbit(back) == std::signbit(v));
  }
  CATCH_CHECK(HalfToFloat(FloatToHalf(65504.0f)) == 65504.0f);
  CATCH_CHECK(HalfToFloat(FloatToHalf(65519.0f)) == 65504.0f);
  CATCH_CHECK(std::isinf(HalfToFloat(FloatToHalf(65520.0f))));
  CATCH_CHECK(HalfToFloat(FloatToHalf(5.9604645e-08f)) == 5.9604645e-08f);  // smallest subnormal
  CATCH_CHECK(HalfToFloat(FloatToHalf(2.9802322e-08f)) == 0.0f);            // half of it: tie, even
  CATCH_CHECK(HalfToFloat(FloatToHalf(1.0f + 1.0f / 2048)) == 1.0f);        // tie, down
  CATCH_CHECK(HalfToFloat(FloatToHalf(1.0f + 3.0f / 2048)) == 1.0f + 4.0f / 2048);
  CATCH_CHECK(std::isnan(HalfToFloat(FloatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  CATCH_CHECK(std::isinf(HalfToFloat(FloatToHalf(-std::numeric_limits<float>::infinity()))));
  // Every float16 bit pattern that is a number converts to float and back unchanged.
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    CATCH_REQUIRE(FloatToHalf(f) == h);
  }
}

CATCH_TEST_CASE("Pack, unpack and scale agree with the element conversions", "[common][dtype]") {
  const std::vector<float> in = Samples();
  for (wire::DType dtype : {wire::DType::BF16, wire::DType::F16}) {
    CATCH_INFO(DTypeName(dtype));
    std::vector<uint16_t> packed(in.size());
    PackFloats(in.data(), in.size(), dtype, packed.data());
    std::vector<float> out(in.size()), sum(in.size(), 1.0f), assigned(in.size(), 9.0f);
    UnpackFloats(packed.data(), packed.size(), dtype, out.data());
    ScaleInto(packed.data(), packed.size(), dtype, 2.0f, /*assign=*/false, sum.data());
    ScaleInto(packed.data(), packed.size(), dtype, 0.5f, /*assign=*/true, assigned.data());
    for (size_t i = 0; i < in.size(); ++i) {
      const float element =
          dtype == wire::DType::BF16 ? Bf16ToFloat(FloatToBf16(in[i])) : HalfToFloat(FloatToHalf(in[i]));
      CATCH_REQUIRE(SameBits(out[i], element));
      CATCH_REQUIRE(SameBits(sum[i], 1.0f + 2.0f * element));
      CATCH_REQUIRE(SameBits(assigned[i], 0.5f * element));
    }
  }
}

}  // namespace hetps
