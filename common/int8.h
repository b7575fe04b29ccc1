// Symmetric int8 quantisation of float32 values, one scale per run of values (a partition's frame
// on the wire, wire::DType::I8): scale = max|x| / 127, q = round(x / scale) clamped to
// [-127, 127], and x is read back as scale * q. Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hetps {

// The largest int8 magnitude used: -128 is never sent, so the range is symmetric.
constexpr int kInt8Levels = 127;

// max|in[i]| / 127 over the n values; 0 when every value is 0 (or n is 0). Non-finite values give
// a non-finite scale, which receivers refuse.
float Int8Scale(const float* in, size_t n);
// out[i] = round(in[i] / scale) (halves away from zero) clamped to [-127, 127]; every out[i] is 0
// when scale is 0. With the scale of Int8Scale, |scale * out[i] - in[i]| <= scale / 2.
void QuantizeInt8(const float* in, size_t n, float scale, int8_t* out);
// out[i] = scale * in[i].
void DequantizeInt8(const int8_t* in, size_t n, float scale, float* out);

}  // namespace hetps
