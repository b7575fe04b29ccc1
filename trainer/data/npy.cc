#include "trainer/data/npy.h"

#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace hetps {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

Result<File> OpenFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return Status::NotFound("missing data file " + path);
  File file(std::fopen(path.c_str(), "rb"));
  if (!file) return Status::IoError(path + ": cannot open: " + std::strerror(errno));
  return file;
}

// Where an array's bytes come from: a plain stretch of a file, or a deflated one (.npz).
class ByteStream {
 public:
  ByteStream(std::FILE* file, std::string name, uint64_t length, bool deflated)
      : file_(file), name_(std::move(name)), left_(length), deflated_(deflated) {
    if (deflated_) {
      std::memset(&z_, 0, sizeof(z_));
      inflateInit2(&z_, -15);  // raw deflate, as zip stores it
      input_.resize(1 << 20);
    }
  }
  ~ByteStream() {
    if (deflated_) inflateEnd(&z_);
  }

  Status Read(void* destination, size_t bytes, const std::string& what) {
    if (!deflated_) {
      if (bytes > left_) return Truncated(bytes, left_, what);
      const size_t got = std::fread(destination, 1, bytes, file_);
      left_ -= got;
      if (got != bytes) return Truncated(bytes, got, what);
      return Status::Ok();
    }
    z_.next_out = static_cast<Bytef*>(destination);
    size_t produced = 0;
    while (produced < bytes) {
      if (z_.avail_in == 0 && left_ > 0) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(left_, input_.size()));
        const size_t got = std::fread(input_.data(), 1, want, file_);
        if (got == 0) return Truncated(bytes, produced, what);
        left_ -= got;
        z_.next_in = input_.data();
        z_.avail_in = static_cast<uInt>(got);
      }
      const size_t step = std::min<size_t>(bytes - produced, 1u << 30);
      z_.avail_out = static_cast<uInt>(step);
      const int rc = inflate(&z_, Z_NO_FLUSH);
      produced += step - z_.avail_out;
      if (rc == Z_STREAM_END) break;
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return Status::InvalidArgument(name_ + ": corrupt compressed data while reading " + what);
      }
      if (rc == Z_BUF_ERROR && z_.avail_in == 0 && left_ == 0) break;
    }
    if (produced != bytes) return Truncated(bytes, produced, what);
    return Status::Ok();
  }

 private:
  Status Truncated(size_t expected, size_t got, const std::string& what) const {
    return Status::InvalidArgument(name_ + ": truncated: expected " + std::to_string(expected) +
                                   " bytes of " + what + ", got " + std::to_string(got));
  }

  std::FILE* file_;
  std::string name_;
  uint64_t left_;
  bool deflated_;
  z_stream z_{};
  std::vector<Bytef> input_;
};

// The value of 'key' in the header's Python dict literal, as text.
std::string HeaderValue(const std::string& header, const std::string& key) {
  const size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return "";
  size_t start = header.find(':', at);
  if (start == std::string::npos) return "";
  ++start;
  while (start < header.size() && header[start] == ' ') ++start;
  if (start >= header.size()) return "";
  size_t end;
  if (header[start] == '(') {
    end = header.find(')', start);
    if (end != std::string::npos) ++end;
  } else if (header[start] == '\'') {
    end = header.find('\'', start + 1);
    if (end != std::string::npos) ++end;
  } else {
    end = header.find_first_of(",}", start);
  }
  if (end == std::string::npos) return "";
  return header.substr(start, end - start);
}

// The array's kind, width and shape, without its bytes; `data_offset`: where they start.
Result<NpyArray> ParseNpyHeader(ByteStream& in, const std::string& name, uint64_t* data_offset) {
  unsigned char preamble[8];
  HETPS_RETURN_IF_ERROR(in.Read(preamble, sizeof(preamble), "the NPY magic string"));
  if (std::memcmp(preamble, "\x93NUMPY", 6) != 0) {
    return Status::InvalidArgument(name + ": wrong magic: not a NumPy .npy array (expected \\x93NUMPY)");
  }
  const int major = preamble[6];
  uint64_t header_length = 0;
  if (major == 1) {
    unsigned char bytes[2];
    HETPS_RETURN_IF_ERROR(in.Read(bytes, 2, "the NPY header length"));
    header_length = bytes[0] | (bytes[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char bytes[4];
    HETPS_RETURN_IF_ERROR(in.Read(bytes, 4, "the NPY header length"));
    header_length = bytes[0] | (bytes[1] << 8) | (bytes[2] << 16) | (uint64_t{bytes[3]} << 24);
  } else {
    return Status::InvalidArgument(name + ": NPY format version " + std::to_string(major) +
                                   " is not supported");
  }
  if (header_length > (1u << 20)) return Status::InvalidArgument(name + ": implausible NPY header length");
  std::string header(header_length, '\0');
  HETPS_RETURN_IF_ERROR(in.Read(header.data(), header.size(), "the NPY header"));
  *data_offset = sizeof(preamble) + (major == 1 ? 2 : 4) + header_length;

  NpyArray array;
  const std::string descr = HeaderValue(header, "descr");
  if (descr.size() < 5 || descr.front() != '\'' || descr.back() != '\'') {
    return Status::InvalidArgument(name + ": NPY header without a simple 'descr': " + header);
  }
  const char order = descr[1];
  array.kind = descr[2];
  array.width = static_cast<size_t>(std::atoi(descr.substr(3, descr.size() - 4).c_str()));
  const bool known = (array.kind == 'u' || array.kind == 'i')
                         ? (array.width == 1 || array.width == 2 || array.width == 4 || array.width == 8)
                     : array.kind == 'f' ? (array.width == 4 || array.width == 8)
                     : array.kind == 'b' ? array.width == 1
                                         : false;
  if (!known) {
    return Status::InvalidArgument(name + ": dtype " + descr +
                                   " is not supported (bool, int8..int64, uint8..uint64, float32, float64)");
  }
  if (order == '>' && array.width > 1) {
    return Status::InvalidArgument(name + ": big-endian dtype " + descr +
                                   " is not supported; save it little-endian");
  }
  if (HeaderValue(header, "fortran_order") != "False") {
    return Status::InvalidArgument(name +
                                   ": a Fortran-order array; save it in C order (numpy.ascontiguousarray)");
  }
  const std::string shape = HeaderValue(header, "shape");
  if (shape.size() < 2 || shape.front() != '(')
    return Status::InvalidArgument(name + ": NPY header without a shape");
  uint64_t elements = 1;
  size_t at = 1;
  while (at < shape.size()) {
    while (at < shape.size() && (shape[at] == ' ' || shape[at] == ',' || shape[at] == ')')) ++at;
    if (at >= shape.size()) break;
    char* end = nullptr;
    const long long dim = std::strtoll(shape.c_str() + at, &end, 10);
    if (end == shape.c_str() + at || dim < 0)
      return Status::InvalidArgument(name + ": bad NPY shape " + shape);
    array.shape.push_back(dim);
    if (dim != 0 && elements > (uint64_t{1} << 60) / static_cast<uint64_t>(dim)) {
      return Status::InvalidArgument(name + ": its shape " + shape +
                                     " is more elements than any memory holds");
    }
    elements *= static_cast<uint64_t>(dim);
    at = static_cast<size_t>(end - shape.c_str());
  }
  if (array.shape.empty())
    return Status::InvalidArgument(name + ": a 0-dimensional array; expected one per sample");
  return array;
}

Result<NpyArray> ParseNpy(ByteStream& in, const std::string& name, const ReadLimits& limits) {
  uint64_t data_offset = 0;
  HETPS_ASSIGN_OR_RETURN(NpyArray array, ParseNpyHeader(in, name, &data_offset));
  uint64_t elements = 1;
  for (int64_t dim : array.shape) elements *= static_cast<uint64_t>(dim);
  HETPS_RETURN_IF_ERROR(CheckFitsInMemory(name, elements * array.width, limits));
  array.bytes.resize(elements * array.width);
  HETPS_RETURN_IF_ERROR(in.Read(array.bytes.data(), array.bytes.size(),
                                "data for " + std::to_string(array.shape[0]) + " samples"));
  return array;
}

uint32_t Le32(const unsigned char* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t{p[3]} << 24);
}
uint16_t Le16(const unsigned char* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

}  // namespace

double NpyArray::At(int64_t i) const {
  const uint8_t* p = bytes.data() + static_cast<size_t>(i) * width;
  auto load = [p](auto value) {
    std::memcpy(&value, p, sizeof(value));
    return static_cast<double>(value);
  };
  switch (kind) {
    case 'f':
      return width == 4 ? load(float{}) : load(double{});
    case 'i':
      return width == 1   ? load(int8_t{})
             : width == 2 ? load(int16_t{})
             : width == 4 ? load(int32_t{})
                          : load(int64_t{});
    default:
      return width == 1   ? load(uint8_t{})
             : width == 2 ? load(uint16_t{})
             : width == 4 ? load(uint32_t{})
                          : load(uint64_t{});
  }
}

Result<NpyArray> ReadNpy(const std::string& path, const ReadLimits& limits) {
  HETPS_ASSIGN_OR_RETURN(File file, OpenFile(path));
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  ByteStream in(file.get(), path, ec ? UINT64_MAX : size, /*deflated=*/false);
  HETPS_ASSIGN_OR_RETURN(NpyArray array, ParseNpy(in, path, limits));
  if (std::fgetc(file.get()) != EOF) {
    return Status::InvalidArgument(path + ": unexpected data after the array's " +
                                   std::to_string(array.bytes.size()) + " bytes");
  }
  return array;
}

Result<NpyArray> ReadNpyHeader(const std::string& path, uint64_t* data_offset) {
  HETPS_ASSIGN_OR_RETURN(File file, OpenFile(path));
  ByteStream in(file.get(), path, UINT64_MAX, /*deflated=*/false);
  return ParseNpyHeader(in, path, data_offset);
}

Result<NpyArray> ReadNpzMember(const std::string& path, const std::string& name, const ReadLimits& limits) {
  HETPS_ASSIGN_OR_RETURN(File file, OpenFile(path));
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec || size < 22) return Status::InvalidArgument(path + ": not an .npz (zip) archive: too short");
  // The end-of-central-directory record lies in the last 64 KiB + 22 bytes.
  const uint64_t tail = std::min<uint64_t>(size, 65557);
  std::vector<unsigned char> end(tail);
  std::fseek(file.get(), static_cast<long>(size - tail), SEEK_SET);
  if (std::fread(end.data(), 1, tail, file.get()) != tail) return Status::IoError(path + ": cannot read");
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(tail) - 22; i >= 0; --i) {
    if (Le32(end.data() + i) == 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return Status::InvalidArgument(path + ": wrong magic: not an .npz (zip) archive");
  const uint16_t entries = Le16(end.data() + eocd + 10);
  const uint32_t directory_bytes = Le32(end.data() + eocd + 12);
  const uint32_t directory_offset = Le32(end.data() + eocd + 16);
  if (directory_offset == 0xffffffffu || uint64_t{directory_offset} + directory_bytes > size) {
    return Status::InvalidArgument(
        path + ": a zip64 or damaged archive (its central directory lies beyond the file)");
  }
  std::vector<unsigned char> directory(directory_bytes);
  std::fseek(file.get(), static_cast<long>(directory_offset), SEEK_SET);
  if (std::fread(directory.data(), 1, directory_bytes, file.get()) != directory_bytes) {
    return Status::IoError(path + ": cannot read its central directory");
  }
  const std::string wanted = name + ".npy";
  std::string names;
  size_t at = 0;
  for (uint16_t i = 0; i < entries && at + 46 <= directory.size(); ++i) {
    const unsigned char* entry = directory.data() + at;
    if (Le32(entry) != 0x02014b50) break;
    const uint16_t method = Le16(entry + 10);
    const uint32_t compressed = Le32(entry + 20);
    const uint16_t name_length = Le16(entry + 28);
    const uint16_t extra_length = Le16(entry + 30);
    const uint16_t comment_length = Le16(entry + 32);
    const uint32_t local_offset = Le32(entry + 42);
    if (at + 46 + name_length > directory.size()) break;
    const std::string entry_name(reinterpret_cast<const char*>(entry + 46), name_length);
    at += 46 + name_length + extra_length + comment_length;
    names += (names.empty() ? "" : ", ") + entry_name;
    if (entry_name != wanted) continue;
    if (compressed == 0xffffffffu || local_offset == 0xffffffffu) {
      return Status::InvalidArgument(path + ": " + wanted + " is stored as zip64, which is not supported");
    }
    if (method != 0 && method != 8) {
      return Status::InvalidArgument(path + ": " + wanted + " uses zip compression method " +
                                     std::to_string(method) + "; only stored and deflate are supported");
    }
    unsigned char local[30];
    std::fseek(file.get(), static_cast<long>(local_offset), SEEK_SET);
    if (std::fread(local, 1, sizeof(local), file.get()) != sizeof(local) || Le32(local) != 0x04034b50) {
      return Status::InvalidArgument(path + ": damaged archive: no local header for " + wanted);
    }
    std::fseek(file.get(), static_cast<long>(local_offset) + 30 + Le16(local + 26) + Le16(local + 28),
               SEEK_SET);
    ByteStream in(file.get(), path + " (" + wanted + ")", compressed, method == 8);
    return ParseNpy(in, path + " (" + wanted + ")", limits);
  }
  return Status::InvalidArgument(path + ": holds no array '" + name +
                                 "' (it holds: " + (names.empty() ? std::string("nothing") : names) +
                                 "); save it with numpy.savez(path, x=features, y=labels)");
}

Result<HostDataset> LoadNpy(const DataOptions& options, const std::string& x_path, const std::string& y_path,
                            uint32_t classes, const ReadLimits& limits) {
  const bool archive = y_path.empty();
  HETPS_ASSIGN_OR_RETURN(NpyArray x, archive ? ReadNpzMember(x_path, "x", limits) : ReadNpy(x_path, limits));
  HETPS_ASSIGN_OR_RETURN(NpyArray y, archive ? ReadNpzMember(x_path, "y", limits) : ReadNpy(y_path, limits));
  const std::string x_name = archive ? x_path + " (x)" : x_path;
  const std::string y_name = archive ? x_path + " (y)" : y_path;
  if (x.shape.size() < 2) {
    return Status::InvalidArgument(x_name +
                                   ": x must have a sample dimension and at least one more, e.g. [N, 784]");
  }
  if (y.shape.size() > (options.float_targets ? 2u : 1u)) {
    return Status::InvalidArgument(y_name + ": y must be [N]" +
                                   std::string(options.float_targets ? " or [N, k]" : "") + ", this has " +
                                   std::to_string(y.shape.size()) + " dimensions");
  }
  if (x.shape[0] != y.shape[0]) {
    return Status::InvalidArgument("x and y differ in length: " + x_name + " holds " +
                                   std::to_string(x.shape[0]) + " samples but " + y_name + " holds " +
                                   std::to_string(y.shape[0]));
  }
  HostDataset data;
  data.source = archive ? x_path : x_path + " and " + y_path;
  data.samples = x.shape[0];
  data.sample_shape.assign(x.shape.begin() + 1, x.shape.end());
  const int64_t elements = static_cast<int64_t>(x.bytes.size() / x.width);
  if (x.kind == 'u' && x.width == 1) {
    data.feature_type = FeatureType::kUInt8;
    data.features = std::move(x.bytes);
  } else {
    data.feature_type = FeatureType::kFloat32;
    if (x.kind == 'f' && x.width == 4) {
      data.features = std::move(x.bytes);
    } else {
      HETPS_RETURN_IF_ERROR(CheckFitsInMemory(x_name, static_cast<uint64_t>(elements) * 4, limits));
      data.features.resize(static_cast<size_t>(elements) * 4);
      auto* out = reinterpret_cast<float*>(data.features.data());
      for (int64_t i = 0; i < elements; ++i) out[i] = static_cast<float>(x.At(i));
    }
  }
  const int64_t labels = static_cast<int64_t>(y.bytes.size() / y.width);
  data.float_targets = options.float_targets;
  if (options.float_targets) {
    data.target_width = y.shape.size() == 2 ? y.shape[1] : 1;
    data.float_targets_values.resize(static_cast<size_t>(labels));
    for (int64_t i = 0; i < labels; ++i) data.float_targets_values[i] = static_cast<float>(y.At(i));
  } else {
    data.class_targets.resize(static_cast<size_t>(labels));
    for (int64_t i = 0; i < labels; ++i) {
      const double value = y.At(i);
      if (value != std::floor(value) || std::abs(value) > 9e15) {
        return Status::InvalidArgument(
            y_name + ": label " + std::to_string(value) + " at index " + std::to_string(i) +
            " is not a whole number (targets: class; say targets: float for regression)");
      }
      data.class_targets[i] = static_cast<int64_t>(value);
    }
  }
  HETPS_RETURN_IF_ERROR(FinishDataset(
      options, classes, y_name, [](int64_t i) { return "index " + std::to_string(i); }, &data));
  return data;
}

}  // namespace hetps
