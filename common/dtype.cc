#include "common/dtype.h"

#include <cstring>

namespace hetps {

size_t DTypeSize(wire::DType dtype) {
  switch (dtype) {
    case wire::DType::F32:
      return 4;
    case wire::DType::F16:
    case wire::DType::BF16:
      return 2;
    case wire::DType::F64:
    case wire::DType::I64:
      return 8;
    case wire::DType::I32:
      return 4;
    case wire::DType::U8:
    case wire::DType::I8:
      return 1;
    case wire::DType::Other:
      return 0;
  }
  return 0;
}

const char* DTypeName(wire::DType dtype) {
  switch (dtype) {
    case wire::DType::F32:
      return "float32";
    case wire::DType::F16:
      return "float16";
    case wire::DType::BF16:
      return "bfloat16";
    case wire::DType::F64:
      return "float64";
    case wire::DType::I64:
      return "int64";
    case wire::DType::I32:
      return "int32";
    case wire::DType::U8:
      return "uint8";
    case wire::DType::I8:
      return "int8";
    case wire::DType::Other:
      return "other";
  }
  return "other";
}

bool IsWireFloat(wire::DType dtype) {
  return dtype == wire::DType::F32 || dtype == wire::DType::F16 || dtype == wire::DType::BF16;
}

namespace {

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Reads element i of a wire-float array as float.
template <typename Convert>
void ForEach16(const void* in, size_t n, Convert convert) {
  const auto* src = static_cast<const uint16_t*>(in);
  for (size_t i = 0; i < n; ++i) convert(i, src[i]);
}

template <float (*kToFloat)(uint16_t)>
void ScaleInto16(const void* in, size_t n, float scale, bool assign, float* __restrict out) {
  const auto* __restrict src = static_cast<const uint16_t*>(in);
  if (assign) {
    for (size_t i = 0; i < n; ++i) out[i] = scale * kToFloat(src[i]);
  } else {
    for (size_t i = 0; i < n; ++i) out[i] += scale * kToFloat(src[i]);
  }
}

}  // namespace

uint16_t FloatToBf16(float value) {
  const uint32_t bits = Bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // NaN
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float Bf16ToFloat(uint16_t bits) {
  return FromBits(static_cast<uint32_t>(bits) << 16);
}

uint16_t FloatToHalf(float value) {
  const uint32_t bits = Bits(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t x = bits & 0x7fffffffu;
  if (x >= 0x7f800000u) {  // infinity, or NaN kept quiet
    return static_cast<uint16_t>(sign | 0x7c00u | (x > 0x7f800000u ? 0x200u | ((x >> 13) & 0x3ffu) : 0));
  }
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds up to inf
  if (x >= 0x38800000u) {  // a normal float16: rebias the exponent, round the mantissa
    const uint32_t v = x - 0x38000000u;
    return static_cast<uint16_t>(sign | ((v + 0xfffu + ((v >> 13) & 1u)) >> 13));
  }
  // Below 2^-14: a subnormal float16 (or zero), mantissa = value * 2^24 rounded.
  const int exponent = static_cast<int>(x >> 23);
  const int shift = 126 - exponent;
  if (shift > 24) return sign;
  const uint32_t mantissa = (x & 0x7fffffu) | 0x800000u;
  uint32_t h = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return FromBits(sign | Bits(magnitude));
  }
  if (exponent == 31) return FromBits(sign | 0x7f800000u | (mantissa << 13));
  return FromBits(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

void PackFloats(const float* in, size_t n, wire::DType dtype, void* out) {
  auto* dst = static_cast<uint16_t*>(out);
  switch (dtype) {
    case wire::DType::BF16:
      for (size_t i = 0; i < n; ++i) dst[i] = FloatToBf16(in[i]);
      return;
    case wire::DType::F16:
      for (size_t i = 0; i < n; ++i) dst[i] = FloatToHalf(in[i]);
      return;
    default:
      std::memcpy(out, in, n * sizeof(float));
      return;
  }
}

void UnpackFloats(const void* in, size_t n, wire::DType dtype, float* out) {
  switch (dtype) {
    case wire::DType::BF16:
      ForEach16(in, n, [out](size_t i, uint16_t v) { out[i] = Bf16ToFloat(v); });
      return;
    case wire::DType::F16:
      ForEach16(in, n, [out](size_t i, uint16_t v) { out[i] = HalfToFloat(v); });
      return;
    default:
      std::memcpy(out, in, n * sizeof(float));
      return;
  }
}

void ScaleInto(const void* in, size_t n, wire::DType dtype, float scale, bool assign, float* __restrict out) {
  switch (dtype) {
    case wire::DType::BF16:
      return ScaleInto16<Bf16ToFloat>(in, n, scale, assign, out);
    case wire::DType::F16:
      return ScaleInto16<HalfToFloat>(in, n, scale, assign, out);
    case wire::DType::I8: {
      const auto* __restrict src = static_cast<const int8_t*>(in);
      if (assign) {
        for (size_t i = 0; i < n; ++i) out[i] = scale * static_cast<float>(src[i]);
      } else {
        for (size_t i = 0; i < n; ++i) out[i] += scale * static_cast<float>(src[i]);
      }
      return;
    }
    default: {
      const auto* __restrict src = static_cast<const float*>(in);
      if (assign) {
        for (size_t i = 0; i < n; ++i) out[i] = scale * src[i];
      } else {
        for (size_t i = 0; i < n; ++i) out[i] += scale * src[i];
      }
      return;
    }
  }
}

}  // namespace hetps
