// FirstBeyond / FirstNonFinite: NaN, infinities and elements beyond a bound are found wherever
// they lie (first element, the last of a block, the first of the next, the last), in float32,
// bfloat16 and float16; the largest finite values and the bound itself are not.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "common/dtype.h"
#include "common/finite.h"

namespace hetps {
namespace {

constexpr size_t kElements = 10000;  // more than two blocks of 4096
const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
const float kMax = std::numeric_limits<float>::max();

// kElements values, ordinary but for `value` at `at`, packed as `dtype`.
std::vector<unsigned char> Packed(wire::DType dtype, size_t at, float value) {
  std::vector<float> values(kElements);
  for (size_t i = 0; i < kElements; ++i) values[i] = std::sin(static_cast<float>(i)) * 3.0f;
  if (at < kElements) values[at] = value;
  std::vector<unsigned char> bytes(kElements * DTypeSize(dtype));
  PackFloats(values.data(), kElements, dtype, bytes.data());
  return bytes;
}

}  // namespace

CATCH_TEST_CASE("A NaN or an infinity is found wherever it lies, in every wire float", "[common][finite]") {
  for (wire::DType dtype : {wire::DType::F32, wire::DType::BF16, wire::DType::F16}) {
    for (size_t at : {size_t{0}, size_t{4095}, size_t{4096}, size_t{8191}, kElements - 1}) {
      for (float bad : {kNan, kInf, -kInf}) {
        CATCH_INFO(DTypeName(dtype) << ", element " << at << " = " << bad);
        auto bytes = Packed(dtype, at, bad);
        auto found = FirstNonFinite(bytes.data(), kElements, dtype);
        CATCH_REQUIRE(found.has_value());
        CATCH_CHECK(*found == at);
      }
    }
    CATCH_INFO(DTypeName(dtype));
    auto clean = Packed(dtype, kElements, 0);
    CATCH_CHECK_FALSE(FirstNonFinite(clean.data(), kElements, dtype).has_value());
    // Two at once: the first is named.
    auto two = Packed(dtype, 9000, kNan);
    PackFloats(&kInf, 1, dtype, two.data() + 5000 * DTypeSize(dtype));
    CATCH_CHECK(FirstNonFinite(two.data(), kElements, dtype) == std::optional<size_t>(5000));
  }
}

CATCH_TEST_CASE("The largest finite values pass, and the bound of FirstBeyond is inclusive",
                "[common][finite]") {
  auto largest = Packed(wire::DType::F32, 17, -kMax);
  CATCH_CHECK_FALSE(FirstNonFinite(largest.data(), kElements, wire::DType::F32).has_value());
  // float16's largest, 65504, and bfloat16's, are finite.
  auto half = Packed(wire::DType::F16, 3, 65504.0f);
  CATCH_CHECK_FALSE(FirstNonFinite(half.data(), kElements, wire::DType::F16).has_value());
  auto bf16 = Packed(wire::DType::BF16, 3, -kMax);  // rounds to bfloat16's largest or to -inf
  const float back = Bf16ToFloat(FloatToBf16(-kMax));
  CATCH_CHECK(FirstNonFinite(bf16.data(), kElements, wire::DType::BF16).has_value() == std::isinf(back));

  const float bound = std::ldexp(1.0f, 100);
  const float above = std::nextafter(bound, kInf);
  for (wire::DType dtype : {wire::DType::F32, wire::DType::BF16}) {
    CATCH_INFO(DTypeName(dtype));
    auto at_bound = Packed(dtype, 42, -bound);
    CATCH_CHECK_FALSE(FirstBeyond(at_bound.data(), kElements, dtype, bound).has_value());
    auto beyond = Packed(dtype, 42, dtype == wire::DType::F32 ? above : 2 * bound);
    CATCH_CHECK(FirstBeyond(beyond.data(), kElements, dtype, bound) == std::optional<size_t>(42));
    auto nan = Packed(dtype, 43, kNan);
    CATCH_CHECK(FirstBeyond(nan.data(), kElements, dtype, bound) == std::optional<size_t>(43));
  }
  // float16 holds nothing near 2^100: only its infinities and NaN are beyond.
  auto half_inf = Packed(wire::DType::F16, 44, kInf);
  CATCH_CHECK(FirstBeyond(half_inf.data(), kElements, wire::DType::F16, bound) == std::optional<size_t>(44));
  CATCH_CHECK_FALSE(FirstBeyond(half.data(), kElements, wire::DType::F16, bound).has_value());
  // A smaller bound applies to float16 too.
  CATCH_CHECK(FirstBeyond(half.data(), kElements, wire::DType::F16, 1000.0f) == std::optional<size_t>(3));
}

CATCH_TEST_CASE("Elements of other dtypes are never reported", "[common][finite]") {
  std::vector<unsigned char> bytes(64, 0xff);  // as float32, NaNs
  CATCH_CHECK_FALSE(FirstNonFinite(bytes.data(), bytes.size(), wire::DType::I8).has_value());
  CATCH_CHECK(FirstNonFinite(bytes.data(), 16, wire::DType::F32) == std::optional<size_t>(0));
  CATCH_CHECK_FALSE(FirstNonFinite(bytes.data(), 0, wire::DType::F32).has_value());
}

}  // namespace hetps
