// Element types of tensors and of tensor bytes on the wire (wire::DType), with their sizes and
// names. Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <string>

#include "messages_generated.h"

namespace hetps {

// Bytes per element; 0 for wire::DType::Other.
size_t DTypeSize(wire::DType dtype);
// "float32", "float16", "bfloat16", "float64", "int64", "int32", "uint8", "other".
const char* DTypeName(wire::DType dtype);

}  // namespace hetps
