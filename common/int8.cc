#include "common/int8.h"

#include <algorithm>
#include <cmath>

namespace hetps {

float Int8Scale(const float* in, size_t n) {
  float largest = 0;
  for (size_t i = 0; i < n; ++i) {
    const float magnitude = std::fabs(in[i]);
    // A NaN makes the scale NaN, so that the push is refused rather than sent as if finite.
    if (std::isnan(magnitude)) return magnitude;
    largest = std::max(largest, magnitude);
  }
  return largest / kInt8Levels;
}

void QuantizeInt8(const float* in, size_t n, float scale, int8_t* out) {
  if (!(scale > 0) || !std::isfinite(scale)) {
    std::fill(out, out + n, int8_t{0});
    return;
  }
  // Division rather than a multiply by 1 / scale: the largest value then maps to exactly 127.
  for (size_t i = 0; i < n; ++i) {
    const float level = std::round(in[i] / scale);
    out[i] = static_cast<int8_t>(
        std::clamp(level, -static_cast<float>(kInt8Levels), static_cast<float>(kInt8Levels)));
  }
}

void DequantizeInt8(const int8_t* in, size_t n, float scale, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = scale * static_cast<float>(in[i]);
}

}  // namespace hetps
