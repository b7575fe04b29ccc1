#include "common/finite.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "common/dtype.h"

namespace hetps {
namespace {

// With the sign cleared, a float's bits compare as its magnitude does, and NaN and infinity lie
// above every finite value. A block's largest magnitude is a reduction the compiler vectorises;
// only a block that fails is searched element by element.
template <typename Bits>
std::optional<size_t> FirstAbove(const void* data, size_t n, Bits magnitude_mask, Bits limit) {
  constexpr size_t kBlock = 4096;
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const size_t end = std::min(n, begin + kBlock);
    Bits largest = 0;
    for (size_t i = begin; i < end; ++i) {
      Bits bits;
      std::memcpy(&bits, bytes + i * sizeof(Bits), sizeof(Bits));
      largest = std::max<Bits>(largest, bits & magnitude_mask);
    }
    if (largest <= limit) continue;
    for (size_t i = begin; i < end; ++i) {
      Bits bits;
      std::memcpy(&bits, bytes + i * sizeof(Bits), sizeof(Bits));
      if ((bits & magnitude_mask) > limit) return i;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<size_t> FirstBeyond(const void* data, size_t n, wire::DType dtype, float largest) {
  uint32_t largest_bits;
  std::memcpy(&largest_bits, &largest, sizeof(largest_bits));
  largest_bits &= 0x7fffffffu;
  switch (dtype) {
    case wire::DType::F32:
      return FirstAbove<uint32_t>(data, n, 0x7fffffffu, largest_bits);
    case wire::DType::BF16:  // the upper half of a float32's bits
      return FirstAbove<uint16_t>(data, n, 0x7fff, static_cast<uint16_t>(largest_bits >> 16));
    case wire::DType::F16: {
      constexpr uint16_t kLargestHalf = 0x7bff;  // 65504
      const uint16_t limit =
          largest >= 65504.0f ? kLargestHalf : std::min<uint16_t>(kLargestHalf, FloatToHalf(largest));
      return FirstAbove<uint16_t>(data, n, 0x7fff, limit);
    }
    default:
      return std::nullopt;
  }
}

std::optional<size_t> FirstNonFinite(const void* data, size_t n, wire::DType dtype) {
  return FirstBeyond(data, n, dtype, std::numeric_limits<float>::max());
}

}  // namespace hetps
