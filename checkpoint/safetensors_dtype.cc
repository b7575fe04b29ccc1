#include "checkpoint/safetensors_dtype.h"

#include <map>

namespace hetps {

size_t SafetensorsDTypeSize(const std::string& dtype) {
  static const std::map<std::string, size_t> kSizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8},
  };
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

std::string SafetensorsDType(wire::DType dtype) {
  switch (dtype) {
    case wire::DType::F32:
      return "F32";
    case wire::DType::F16:
      return "F16";
    case wire::DType::BF16:
      return "BF16";
    case wire::DType::F64:
      return "F64";
    case wire::DType::I64:
      return "I64";
    case wire::DType::I32:
      return "I32";
    case wire::DType::U8:
      return "U8";
    default:
      return "";
  }
}

}  // namespace hetps
