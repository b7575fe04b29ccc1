// Element types of the safetensors format ("F32", "I64", ...): their sizes, and the mapping from
// the wire's dtypes. Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <string>

#include "messages_generated.h"

namespace hetps {

// Bytes per element of a safetensors dtype; 0 for a name the format does not define.
size_t SafetensorsDTypeSize(const std::string& dtype);

// The safetensors name of a wire dtype ("F32" for wire::DType::F32); empty for Other.
std::string SafetensorsDType(wire::DType dtype);

}  // namespace hetps
