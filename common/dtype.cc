#include "common/dtype.h"

namespace hetps {

size_t DTypeSize(wire::DType dtype) {
  switch (dtype) {
    case wire::DType::F32: return 4;
    case wire::DType::F16: return 2;
    case wire::DType::BF16: return 2;
    case wire::DType::F64: return 8;
    case wire::DType::I64: return 8;
    case wire::DType::I32: return 4;
    case wire::DType::U8: return 1;
    case wire::DType::Other: return 0;
  }
  return 0;
}

const char* DTypeName(wire::DType dtype) {
  switch (dtype) {
    case wire::DType::F32: return "float32";
    case wire::DType::F16: return "float16";
    case wire::DType::BF16: return "bfloat16";
    case wire::DType::F64: return "float64";
    case wire::DType::I64: return "int64";
    case wire::DType::I32: return "int32";
    case wire::DType::U8: return "uint8";
    case wire::DType::Other: return "other";
  }
  return "other";
}

}  // namespace hetps
