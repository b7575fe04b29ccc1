#include "trainer/data/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <vector>

namespace hetps {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned bytes, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned bytes, 1 dimension
// Far above Fashion-MNIST's 60000, low enough that a corrupt count cannot make us allocate
// gigabytes before the read finds out that the file is short.
constexpr int64_t kMaxSamples = int64_t{1} << 20;
// gzread takes an unsigned length; large calls keep the 47 MB of training pixels to a few dozen
// calls, and the 1 MiB input buffer keeps read(2) calls large as well.
constexpr unsigned kReadChunkBytes = 16u << 20;
constexpr unsigned kGzInputBufferBytes = 1u << 20;

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzHandle = std::unique_ptr<gzFile_s, GzCloser>;

// One open file plus its path, so that every error can name it.
struct GzReader {
  GzHandle handle;
  std::string path;

  // zlib's message without the "<path>: " it puts in front, since ours names the path already.
  std::string ZlibMessage(int* errnum) const {
    std::string message = gzerror(handle.get(), errnum);
    const std::string prefix = path + ": ";
    if (message.compare(0, prefix.size(), prefix) == 0) message.erase(0, prefix.size());
    return message;
  }

  Status Error(const std::string& problem) const { return Status::InvalidArgument(path + ": " + problem); }

  // The zlib error behind a failed or short read, or Ok when there is none.
  Status ZlibError(const std::string& during) const {
    int errnum = Z_OK;
    const std::string message = ZlibMessage(&errnum);
    if (errnum == Z_ERRNO) {
      return Status::IoError(path + ": reading " + during + ": " + std::strerror(errno));
    }
    if (errnum != Z_OK) {
      return Error("corrupt gzip data while reading " + during + ": " + message);
    }
    return Status::Ok();
  }

  // Reads exactly `bytes` bytes or explains why not.
  Status ReadExactly(void* destination, size_t bytes, const std::string& what) {
    auto* out = static_cast<unsigned char*>(destination);
    size_t got = 0;
    while (got < bytes) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes - got, kReadChunkBytes));
      const int n = gzread(handle.get(), out + got, chunk);
      if (n < 0) return ZlibError(what);
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    if (got == bytes) return Status::Ok();
    return Truncated(bytes, got, what);
  }

  // A short read: the file ended early, or the operating system failed us part way.
  Status Truncated(size_t expected_bytes, size_t got_bytes, const std::string& what) const {
    int errnum = Z_OK;
    const std::string message = ZlibMessage(&errnum);
    if (errnum == Z_ERRNO) return ZlibError(what);
    std::string problem = "truncated: expected " + std::to_string(expected_bytes) + " bytes of " + what +
                          ", got " + std::to_string(got_bytes);
    if (errnum != Z_OK) problem += " (" + message + ")";
    return Error(problem);
  }

  // Reading past the payload also makes zlib check the gzip trailer's CRC and length, which
  // catches corruption that would otherwise go unnoticed in the pixels.
  Status ExpectEnd(const std::string& payload) {
    unsigned char extra = 0;
    const int n = gzread(handle.get(), &extra, 1);
    if (n > 0) return Error("unexpected data after " + payload);
    if (n < 0) return ZlibError("the end of the file");
    int errnum = Z_OK;
    const std::string message = ZlibMessage(&errnum);
    if (errnum != Z_OK) return Error("damaged gzip trailer: " + message);
    return Status::Ok();
  }
};

std::string MissingFileMessage(const std::string& path) {
  return "missing Fashion-MNIST file " + path +
         " (install it with `apt-get install dataset-fashion-mnist`, or pass --data-dir with the "
         "directory that holds it)";
}

Result<GzReader> OpenGz(const std::string& path) {
  // A failed stat (e.g. no permission on the directory) is left for gzopen to report with errno.
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) {
    return Status::NotFound(MissingFileMessage(path));
  }
  GzHandle handle(gzopen(path.c_str(), "rb"));
  if (!handle) {
    return Status::IoError(path + ": cannot open: " + std::strerror(errno));
  }
  gzbuffer(handle.get(), kGzInputBufferBytes);
  return GzReader{std::move(handle), path};
}

uint32_t BigEndian32(const unsigned char* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         uint32_t{bytes[3]};
}

std::string Hex32(uint32_t value) {
  char text[11];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

// Reads the magic number and the `dims.size()` dimension sizes that open every IDX file. The magic
// is checked before the sizes are read, so that a file of the other kind is reported as such even
// when it is shorter than the header expected here.
Status ReadIdxHeader(GzReader& reader, uint32_t expected_magic, const char* kind,
                     std::vector<int64_t>* dims) {
  unsigned char magic_bytes[4];
  const int n = gzread(reader.handle.get(), magic_bytes, sizeof(magic_bytes));
  // zlib passes non-gzip input through unchanged; only after a read can it tell.
  if (gzdirect(reader.handle.get())) {
    return reader.Error("not a gzip file (expected gzipped IDX " + std::string(kind) + ")");
  }
  if (n < 0) return reader.ZlibError("the IDX magic number");
  if (static_cast<size_t>(n) < sizeof(magic_bytes)) {
    return reader.Truncated(sizeof(magic_bytes), static_cast<size_t>(n), "IDX magic number");
  }
  const uint32_t magic = BigEndian32(magic_bytes);
  if (magic != expected_magic) {
    return reader.Error("wrong IDX magic number " + Hex32(magic) + ", expected " + Hex32(expected_magic) +
                        " (" + kind + ")");
  }
  std::vector<unsigned char> sizes(4 * dims->size());
  HETPS_RETURN_IF_ERROR(reader.ReadExactly(sizes.data(), sizes.size(), "IDX dimension sizes"));
  for (size_t i = 0; i < dims->size(); ++i) (*dims)[i] = BigEndian32(sizes.data() + 4 * i);
  if ((*dims)[0] > kMaxSamples) {
    return reader.Error("implausible sample count " + std::to_string((*dims)[0]) + " (at most " +
                        std::to_string(kMaxSamples) + ")");
  }
  return Status::Ok();
}

Result<torch::Tensor> LoadImages(const std::string& path) {
  HETPS_ASSIGN_OR_RETURN(GzReader reader, OpenGz(path));
  std::vector<int64_t> dims(3);
  HETPS_RETURN_IF_ERROR(ReadIdxHeader(reader, kImagesMagic, "unsigned-byte images", &dims));
  if (dims[1] != kFashionMnistImageSide || dims[2] != kFashionMnistImageSide) {
    return reader.Error("wrong dimensions: expected 28x28 images, got " + std::to_string(dims[1]) + "x" +
                        std::to_string(dims[2]));
  }
  torch::Tensor images = torch::empty(dims, torch::kUInt8);
  HETPS_RETURN_IF_ERROR(reader.ReadExactly(images.data_ptr<uint8_t>(), static_cast<size_t>(images.numel()),
                                           "pixel data for " + std::to_string(dims[0]) + " images"));
  HETPS_RETURN_IF_ERROR(reader.ExpectEnd(std::to_string(dims[0]) + " images"));
  return images;
}

Result<torch::Tensor> LoadLabels(const std::string& path) {
  HETPS_ASSIGN_OR_RETURN(GzReader reader, OpenGz(path));
  std::vector<int64_t> dims(1);
  HETPS_RETURN_IF_ERROR(ReadIdxHeader(reader, kLabelsMagic, "unsigned-byte labels", &dims));
  torch::Tensor labels = torch::empty(dims, torch::kUInt8);
  const uint8_t* values = labels.data_ptr<uint8_t>();
  HETPS_RETURN_IF_ERROR(
      reader.ReadExactly(labels.data_ptr<uint8_t>(), dims[0], std::to_string(dims[0]) + " labels"));
  HETPS_RETURN_IF_ERROR(reader.ExpectEnd(std::to_string(dims[0]) + " labels"));
  for (int64_t i = 0; i < dims[0]; ++i) {
    if (values[i] >= kFashionMnistClasses) {
      return reader.Error("label " + std::to_string(values[i]) + " at index " + std::to_string(i) +
                          " is out of range 0..9");
    }
  }
  return labels.to(torch::kInt64);
}

}  // namespace

const char* DatasetSplitName(DatasetSplit split) {
  return split == DatasetSplit::kTrain ? "train" : "test";
}

int64_t Dataset::size() const {
  return labels.defined() ? labels.size(0) : 0;
}

Result<Dataset> LoadFashionMnist(const std::string& dir, DatasetSplit split) {
  const std::string prefix = split == DatasetSplit::kTrain ? "train" : "t10k";
  const std::filesystem::path base(dir);
  const std::string images_path = (base / (prefix + "-images-idx3-ubyte.gz")).string();
  const std::string labels_path = (base / (prefix + "-labels-idx1-ubyte.gz")).string();

  Dataset data;
  HETPS_ASSIGN_OR_RETURN(data.images, LoadImages(images_path));
  HETPS_ASSIGN_OR_RETURN(data.labels, LoadLabels(labels_path));
  if (data.images.size(0) != data.labels.size(0)) {
    return Status::InvalidArgument("Fashion-MNIST " + std::string(DatasetSplitName(split)) +
                                   " split: " + images_path + " holds " +
                                   std::to_string(data.images.size(0)) + " images but " + labels_path +
                                   " holds " + std::to_string(data.labels.size(0)) + " labels");
  }
  return data;
}

Batch MakeBatch(const Dataset& data, const int64_t* indices, size_t count, torch::Device device) {
  HETPS_CHECK(data.images.defined() && data.labels.defined()) << "MakeBatch on an empty Dataset";
  const int64_t size = data.size();
  torch::Tensor index = torch::empty({static_cast<int64_t>(count)}, torch::kInt64);
  int64_t* index_values = index.data_ptr<int64_t>();
  for (size_t i = 0; i < count; ++i) {
    HETPS_CHECK(indices[i] >= 0 && indices[i] < size)
        << "sample index " << indices[i] << " outside [0, " << size << ")";
    index_values[i] = indices[i];
  }

  // Gather and move the bytes first: a uint8 batch is a quarter of the float one to copy to an
  // accelerator, and the conversion then runs where the batch will be used.
  torch::Tensor pixels = data.images.index_select(0, index).to(device);
  constexpr double kScale = 1.0 / (255.0 * kFashionMnistPixelStd);
  constexpr double kOffset = kFashionMnistPixelMean / kFashionMnistPixelStd;
  Batch batch;
  batch.input = pixels.to(torch::kFloat)
                    .mul_(kScale)
                    .sub_(kOffset)
                    .view({static_cast<int64_t>(count), 1, kFashionMnistImageSide, kFashionMnistImageSide});
  batch.target = data.labels.index_select(0, index).to(device);
  return batch;
}

}  // namespace hetps
