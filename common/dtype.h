// Element types of tensors and of tensor bytes on the wire (wire::DType), with their sizes and
// names, and the conversions between float32 and the 16-bit wire types (bfloat16, IEEE float16)
// used to compress gradients and weights in flight. Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "messages_generated.h"

namespace hetps {

// Bytes per element; 0 for wire::DType::Other.
size_t DTypeSize(wire::DType dtype);
// "float32", "float16", "bfloat16", "float64", "int64", "int32", "uint8", "int8", "other".
const char* DTypeName(wire::DType dtype);

// Whether tensors may travel as `dtype`: F32, F16 or BF16.
bool IsWireFloat(wire::DType dtype);

// float32 <-> bfloat16 / float16, rounding to nearest, ties to even. NaN stays NaN (quiet),
// infinities stay infinite; float16 overflows to infinity above 65504 and keeps subnormals.
uint16_t FloatToBf16(float value);
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);
float HalfToFloat(uint16_t bits);

// Writes n floats as `dtype` (a wire float) into `out`, n * DTypeSize(dtype) bytes.
void PackFloats(const float* in, size_t n, wire::DType dtype, void* out);
// Reads n elements of `dtype` (a wire float) from `in` into floats.
void UnpackFloats(const void* in, size_t n, wire::DType dtype, float* out);
// out[i] = scale * in[i] (when `assign`) or out[i] += scale * in[i], in one pass, `in` being n
// elements of `dtype`: a wire float, or I8, whose integers the caller's `scale` multiplies (fold
// the frame's own scale into it, common/int8.h).
void ScaleInto(const void* in, size_t n, wire::DType dtype, float scale, bool assign, float* out);

}  // namespace hetps
