#include "trainer/data/idx.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "trainer/data/gz_reader.h"

namespace hetps {
namespace {

uint32_t BigEndian32(const unsigned char* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         uint32_t{bytes[3]};
}

std::string Hex32(uint32_t value) {
  char text[11];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

// Bytes per element of an IDX type code; 0 for an unknown code.
size_t ElementBytes(uint8_t code) {
  switch (code) {
    case 0x08:
    case 0x09:
      return 1;
    case 0x0B:
      return 2;
    case 0x0C:
    case 0x0D:
      return 4;
    case 0x0E:
      return 8;
    default:
      return 0;
  }
}

// Element `i` of `array` as a double.
double ElementAt(const IdxArray& array, int64_t i) {
  const uint8_t* p = array.bytes.data();
  switch (array.type_code) {
    case 0x08:
      return p[i];
    case 0x09:
      return static_cast<int8_t>(p[i]);
    case 0x0B: {
      int16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case 0x0C: {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case 0x0D: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    default: {
      double v;
      std::memcpy(&v, p + 8 * i, 8);
      return v;
    }
  }
}

void SwapToHost(IdxArray* array) {
  const size_t width = ElementBytes(array->type_code);
  uint16_t probe = 1;
  const bool little = *reinterpret_cast<uint8_t*>(&probe) == 1;
  if (width == 1 || !little) return;
  for (size_t at = 0; at + width <= array->bytes.size(); at += width) {
    for (size_t k = 0; k < width / 2; ++k) std::swap(array->bytes[at + k], array->bytes[at + width - 1 - k]);
  }
}

}  // namespace

Result<IdxArray> ReadIdx(const std::string& path, const std::string& what, const ReadLimits& limits,
                         const std::string& missing_hint) {
  HETPS_ASSIGN_OR_RETURN(GzReader reader, GzReader::Open(path, missing_hint));
  unsigned char magic_bytes[4];
  HETPS_RETURN_IF_ERROR(reader.ReadExactly(magic_bytes, sizeof(magic_bytes), "IDX magic number"));
  const uint32_t magic = BigEndian32(magic_bytes);
  IdxArray array;
  array.type_code = magic_bytes[2];
  const size_t width = ElementBytes(array.type_code);
  const int dims = magic_bytes[3];
  if (magic_bytes[0] != 0 || magic_bytes[1] != 0 || width == 0 || dims == 0) {
    return reader.Error(
        "wrong IDX magic number " + Hex32(magic) +
        " (expected 0x0000TTDD: a type TT of 08, 09, 0B, 0C, 0D or 0E and DD dimensions); is it an "
        "IDX file of " +
        what + "?");
  }
  std::vector<unsigned char> sizes(4 * static_cast<size_t>(dims));
  HETPS_RETURN_IF_ERROR(reader.ReadExactly(sizes.data(), sizes.size(), "IDX dimension sizes"));
  uint64_t elements = 1;
  bool overflow = false;
  for (int i = 0; i < dims; ++i) {
    const uint32_t size = BigEndian32(sizes.data() + 4 * i);
    array.dims.push_back(size);
    if (size != 0 && elements > (uint64_t{1} << 62) / size) overflow = true;
    elements *= size;
  }
  if (overflow || elements > (uint64_t{1} << 62) / width) {
    return reader.Error("its header announces more elements than any memory holds");
  }
  const uint64_t bytes = elements * width;
  HETPS_RETURN_IF_ERROR(CheckFitsInMemory(path, bytes, limits));
  array.bytes.resize(bytes);
  std::string payload = std::to_string(array.dims[0]) + " " + what;
  HETPS_RETURN_IF_ERROR(reader.ReadExactly(array.bytes.data(), bytes, "data for " + payload));
  HETPS_RETURN_IF_ERROR(reader.ExpectEnd(payload));
  SwapToHost(&array);
  return array;
}

Result<HostDataset> LoadIdx(const DataOptions& options, const std::string& x_path, const std::string& y_path,
                            uint32_t classes, const ReadLimits& limits, const std::string& missing_hint) {
  HETPS_ASSIGN_OR_RETURN(IdxArray x, ReadIdx(x_path, "images", limits, missing_hint));
  if (x.dims.size() < 2) {
    return Status::InvalidArgument(x_path + ": holds " + std::to_string(x.dims.size()) +
                                   " dimension; features need at least 2 (samples, then each sample's)" +
                                   " - is it a labels file?");
  }
  HETPS_ASSIGN_OR_RETURN(IdxArray y, ReadIdx(y_path, "labels", limits, missing_hint));
  if (y.dims.size() > (options.float_targets ? 2u : 1u)) {
    return Status::InvalidArgument(y_path + ": labels must have " +
                                   (options.float_targets ? "1 or 2 dimensions" : "1 dimension") +
                                   ", this has " + std::to_string(y.dims.size()));
  }
  if (x.dims[0] != y.dims[0]) {
    return Status::InvalidArgument(x_path + " holds " + std::to_string(x.dims[0]) + " images but " + y_path +
                                   " holds " + std::to_string(y.dims[0]) + " labels");
  }
  HostDataset data;
  data.source = x_path + " and " + y_path;
  data.samples = x.dims[0];
  data.sample_shape.assign(x.dims.begin() + 1, x.dims.end());
  // Images of H x W become one channel, [1, H, W], as convolutions expect.
  if (data.sample_shape.size() == 2) data.sample_shape.insert(data.sample_shape.begin(), 1);
  if (x.type_code == 0x08) {
    data.feature_type = FeatureType::kUInt8;
    data.features = std::move(x.bytes);
  } else {
    data.feature_type = FeatureType::kFloat32;
    const int64_t count = static_cast<int64_t>(x.bytes.size() / ElementBytes(x.type_code));
    HETPS_RETURN_IF_ERROR(CheckFitsInMemory(x_path, static_cast<uint64_t>(count) * 4, limits));
    data.features.resize(static_cast<size_t>(count) * 4);
    auto* out = reinterpret_cast<float*>(data.features.data());
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(ElementAt(x, i));
  }
  const int64_t labels = static_cast<int64_t>(y.bytes.size() / ElementBytes(y.type_code));
  data.float_targets = options.float_targets;
  if (options.float_targets) {
    data.target_width = y.dims.size() == 2 ? y.dims[1] : 1;
    data.float_targets_values.resize(static_cast<size_t>(labels));
    for (int64_t i = 0; i < labels; ++i) data.float_targets_values[i] = static_cast<float>(ElementAt(y, i));
  } else {
    data.class_targets.resize(static_cast<size_t>(labels));
    for (int64_t i = 0; i < labels; ++i) {
      const double value = ElementAt(y, i);
      if (value != std::floor(value) || std::abs(value) > 9e15) {
        return Status::InvalidArgument(y_path + ": label " + std::to_string(value) + " at index " +
                                       std::to_string(i) + " is not a whole number (targets: class)");
      }
      data.class_targets[i] = static_cast<int64_t>(value);
    }
  }
  HETPS_RETURN_IF_ERROR(FinishDataset(
      options, classes, y_path, [](int64_t i) { return "index " + std::to_string(i); }, &data));
  return data;
}

}  // namespace hetps
