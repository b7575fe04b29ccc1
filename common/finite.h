// Whether tensor bytes on the wire hold only finite numbers: the check a server makes of every
// pushed gradient before it may touch the weights (docs/errors.md, "nonfinite"). Pure functions;
// safe from any thread.
#pragma once

#include <cstddef>
#include <optional>

#include "messages_generated.h"

namespace hetps {

// The index of the first element among n elements of `dtype` (a wire float: F32, BF16 or F16) at
// `data` that is a NaN, an infinity or larger in magnitude than `largest` (finite, >= 0; float16
// elements are compared with it as far as float16 can hold it), or none. Other dtypes have no
// such values: none. Reads the bits (with the sign cleared they compare as magnitudes do, and NaN
// and infinity above every finite value), a block at a time, at about the speed of a memory copy.
std::optional<size_t> FirstBeyond(const void* data, size_t n, wire::DType dtype, float largest);
// FirstBeyond with the largest finite float: the first NaN or infinity.
std::optional<size_t> FirstNonFinite(const void* data, size_t n, wire::DType dtype);

}  // namespace hetps
