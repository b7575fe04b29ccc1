#include "trainer/data/fashion_mnist.h"
#include "trainer/models/models.h"

#include <torch/torch.h>

#include <zlib.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace hetps {
namespace {

constexpr char kDataDir[] = "/usr/share/datasets/fashion-mnist";

// Both splits are loaded once for the whole test binary.
const Dataset& TrainSplit() {
  static const Dataset kData = [] {
    const auto start = std::chrono::steady_clock::now();
    Result<Dataset> loaded = LoadFashionMnist(kDataDir, DatasetSplit::kTrain);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CATCH_INFO("loading the train split took " << seconds << " s");
    CATCH_REQUIRE(loaded.ok());
    std::printf("Fashion-MNIST train split loaded in %.3f s\n", seconds);
    return std::move(loaded).value();
  }();
  return kData;
}

const Dataset& TestSplit() {
  static const Dataset kData = [] {
    Result<Dataset> loaded = LoadFashionMnist(kDataDir, DatasetSplit::kTest);
    CATCH_REQUIRE(loaded.ok());
    return std::move(loaded).value();
  }();
  return kData;
}

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hetps-mnist-XXXXXX").string();
    CATCH_REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

void WriteGz(const std::string& path, const std::vector<unsigned char>& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  CATCH_REQUIRE(file != nullptr);
  if (!bytes.empty()) {
    CATCH_REQUIRE(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) ==
                  static_cast<int>(bytes.size()));
  }
  CATCH_REQUIRE(gzclose(file) == Z_OK);
}

std::vector<unsigned char> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteFile(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  CATCH_REQUIRE(out.good());
}

void AppendBigEndian32(std::vector<unsigned char>* bytes, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes->push_back((value >> shift) & 0xff);
}

// An IDX header: the magic number then one big-endian size per dimension.
std::vector<unsigned char> IdxHeader(uint32_t magic, const std::vector<uint32_t>& dims) {
  std::vector<unsigned char> bytes;
  AppendBigEndian32(&bytes, magic);
  for (uint32_t dim : dims) AppendBigEndian32(&bytes, dim);
  return bytes;
}

// Pixel `i` of a synthetic split: hashed so that the gzip stream is about as long as the pixels
// and cutting it in half lands in the pixel data.
unsigned char PixelValue(uint32_t i) {
  return static_cast<unsigned char>((i * 2654435761u) >> 24);
}

// A well-formed pair of split files holding `count` images and the given labels.
void WriteSplit(const TempDir& dir, const std::string& prefix, const std::vector<uint8_t>& labels) {
  const uint32_t count = static_cast<uint32_t>(labels.size());
  std::vector<unsigned char> images = IdxHeader(0x803, {count, 28, 28});
  for (uint32_t i = 0; i < count * 28 * 28; ++i) images.push_back(PixelValue(i));
  WriteGz(dir.file(prefix + "-images-idx3-ubyte.gz"), images);
  std::vector<unsigned char> label_bytes = IdxHeader(0x801, {count});
  label_bytes.insert(label_bytes.end(), labels.begin(), labels.end());
  WriteGz(dir.file(prefix + "-labels-idx1-ubyte.gz"), label_bytes);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

CATCH_TEST_CASE("Fashion-MNIST train split has 60000 labelled 28x28 images", "[trainer][data]") {
  const Dataset& data = TrainSplit();
  CATCH_CHECK(data.size() == 60000);
  CATCH_CHECK(data.features.sizes() == torch::IntArrayRef({60000, 1, 28, 28}));
  CATCH_CHECK(data.features.dtype() == torch::kUInt8);
  CATCH_CHECK(data.targets.sizes() == torch::IntArrayRef({60000}));
  CATCH_CHECK(data.targets.dtype() == torch::kInt64);
  CATCH_CHECK(data.targets.min().item<int64_t>() == 0);
  CATCH_CHECK(data.targets.max().item<int64_t>() == 9);
  // Fashion-MNIST's training set is balanced: 6000 images of each class.
  torch::Tensor per_class = torch::bincount(data.targets, {}, 10);
  CATCH_CHECK(torch::all(per_class == 6000).item<bool>());
}

CATCH_TEST_CASE("Fashion-MNIST test split has 10000 images covering all ten classes", "[trainer][data]") {
  const Dataset& data = TestSplit();
  CATCH_CHECK(data.size() == 10000);
  CATCH_CHECK(data.features.sizes() == torch::IntArrayRef({10000, 1, 28, 28}));
  CATCH_CHECK(data.targets.min().item<int64_t>() == 0);
  CATCH_CHECK(data.targets.max().item<int64_t>() == 9);
  torch::Tensor per_class = torch::bincount(data.targets, {}, 10);
  CATCH_CHECK(torch::all(per_class > 0).item<bool>());
}

CATCH_TEST_CASE(
    "The training pixels' mean and standard deviation are those the built-in models standardise with",
    "[trainer][data]") {
  const Dataset& data = TrainSplit();
  std::vector<int64_t> all(static_cast<size_t>(data.size()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  const Batch batch = MakeBatch(data, all.data(), all.size(), torch::kCPU);
  const double mean = batch.input.mean().item<double>();
  const double std = batch.input.std().item<double>();
  CATCH_INFO("mean " << mean << ", std " << std);
  // A black pixel is 0 and a white one 1.
  CATCH_CHECK(batch.input.min().item<double>() == 0.0);
  CATCH_CHECK(batch.input.max().item<double>() == 1.0);
  CATCH_CHECK(std::abs(mean - kPixelMean) < 0.0005);
  CATCH_CHECK(std::abs(std - kPixelStd) < 0.0005);
}

CATCH_TEST_CASE("MakeBatch gathers the chosen samples as float pixels in [0, 1]", "[trainer][data]") {
  const Dataset& data = TrainSplit();
  const std::vector<int64_t> indices = {7, 0, 59999, 7};
  const Batch batch = MakeBatch(data, indices.data(), indices.size(), torch::kCPU);

  CATCH_REQUIRE(batch.input.sizes() == torch::IntArrayRef({4, 1, 28, 28}));
  CATCH_CHECK(batch.input.dtype() == torch::kFloat);
  CATCH_CHECK(batch.input.device() == torch::Device(torch::kCPU));
  CATCH_REQUIRE(batch.target.sizes() == torch::IntArrayRef({4}));
  CATCH_CHECK(batch.target.dtype() == torch::kInt64);

  for (size_t row = 0; row < indices.size(); ++row) {
    CATCH_CHECK(batch.target[row].item<int64_t>() == data.targets[indices[row]].item<int64_t>());
    torch::Tensor expected = data.features[indices[row]][0].to(torch::kFloat) / 255.0;
    CATCH_CHECK(torch::allclose(batch.input[row][0], expected, 1e-6, 1e-6));
  }
  CATCH_CHECK(batch.input.min().item<float>() >= 0.0f);
  CATCH_CHECK(batch.input.max().item<float>() <= 1.0f);

  const Batch empty = MakeBatch(data, indices.data(), 0, torch::kCPU);
  CATCH_CHECK(empty.input.sizes() == torch::IntArrayRef({0, 1, 28, 28}));
  CATCH_CHECK(empty.target.numel() == 0);
}

CATCH_TEST_CASE("A small well-formed split written with zlib loads back exactly", "[trainer][data]") {
  TempDir dir;
  WriteSplit(dir, "t10k", {3, 0, 9});
  Result<Dataset> loaded = LoadFashionMnist(dir.path(), DatasetSplit::kTest);
  CATCH_REQUIRE(loaded.ok());
  CATCH_CHECK(loaded->size() == 3);
  CATCH_CHECK(loaded->targets.equal(torch::tensor({3, 0, 9}, torch::kInt64)));
  CATCH_CHECK(loaded->features[1][0][0][5].item<uint8_t>() == PixelValue(784 + 5));
  CATCH_CHECK(loaded->features[2][0][27][27].item<uint8_t>() == PixelValue(3 * 784 - 1));
}

CATCH_TEST_CASE("Plain (not gzipped) IDX files load as the gzipped ones do", "[trainer][data]") {
  TempDir dir;
  WriteSplit(dir, "t10k", {3, 0, 9});
  for (const char* name : {"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    gzFile in = gzopen(dir.file(name).c_str(), "rb");
    std::vector<unsigned char> bytes(1 << 16);
    const int n = gzread(in, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(in);
    CATCH_REQUIRE(n > 0);
    bytes.resize(static_cast<size_t>(n));
    WriteFile(dir.file(name), bytes);  // the name says .gz; the reader goes by the contents
  }
  Result<Dataset> loaded = LoadFashionMnist(dir.path(), DatasetSplit::kTest);
  CATCH_REQUIRE(loaded.ok());
  CATCH_CHECK(loaded->targets.equal(torch::tensor({3, 0, 9}, torch::kInt64)));
  CATCH_CHECK(loaded->features[2][0][27][27].item<uint8_t>() == PixelValue(3 * 784 - 1));
}

CATCH_TEST_CASE("Loading from a directory without the files names the missing file", "[trainer][data]") {
  TempDir dir;
  Result<Dataset> loaded = LoadFashionMnist(dir.path(), DatasetSplit::kTrain);
  CATCH_REQUIRE_FALSE(loaded.ok());
  const std::string message = loaded.status().message();
  CATCH_INFO(message);
  CATCH_CHECK(loaded.status().code() == Status::Code::kNotFound);
  CATCH_CHECK(Contains(message, dir.file("train-images-idx3-ubyte.gz")));
  CATCH_CHECK(Contains(message, "apt-get install dataset-fashion-mnist"));
  CATCH_CHECK(Contains(message, "--data-dir"));
}

CATCH_TEST_CASE("Damaged Fashion-MNIST files give errors naming the file and the problem",
                "[trainer][data]") {
  TempDir dir;
  const std::string images = dir.file("train-images-idx3-ubyte.gz");
  const std::string labels = dir.file("train-labels-idx1-ubyte.gz");
  WriteSplit(dir, "train", {1, 2, 3, 4});

  auto error_of_train = [&]() {
    Result<Dataset> loaded = LoadFashionMnist(dir.path(), DatasetSplit::kTrain);
    CATCH_REQUIRE_FALSE(loaded.ok());
    CATCH_INFO(loaded.status().message());
    CATCH_CHECK(loaded.status().code() == Status::Code::kInvalidArgument);
    return loaded.status().message();
  };

  CATCH_SECTION("a gzip stream cut short in the pixel data") {
    const std::vector<unsigned char> whole = ReadFile(images);
    WriteFile(images, std::vector<unsigned char>(whole.begin(), whole.begin() + whole.size() / 2));
    const std::string message = error_of_train();
    CATCH_CHECK(Contains(message, images));
    CATCH_CHECK(Contains(message, "truncated: expected 3136 bytes"));
  }
  CATCH_SECTION("a gzip file whose CRC does not match its pixels") {
    std::vector<unsigned char> bytes = ReadFile(images);
    bytes[bytes.size() - 8] ^= 0xff;  // first byte of the trailer's CRC-32
    WriteFile(images, bytes);
    const std::string message = error_of_train();
    CATCH_CHECK(Contains(message, images));
    CATCH_CHECK(Contains(message, "corrupt gzip data"));
    CATCH_CHECK(Contains(message, "incorrect data check"));
  }
  CATCH_SECTION("a complete gzip file holding fewer pixels than its header promises") {
    std::vector<unsigned char> short_images = IdxHeader(0x803, {4, 28, 28});
    short_images.resize(short_images.size() + 1000, 0);
    WriteGz(images, short_images);
    const std::string message = error_of_train();
    CATCH_CHECK(Contains(message, images));
    CATCH_CHECK(Contains(message, "truncated: expected 3136 bytes of data for 4 images, got 1000"));
  }
  CATCH_SECTION("a file that is not IDX at all") {
    WriteFile(images, {'P', 'K', 3, 4, 0, 0, 0, 0});
    const std::string message = error_of_train();
    CATCH_CHECK(Contains(message, images));
    CATCH_CHECK(Contains(message, "wrong IDX magic number 0x504b0304"));
  }
  CATCH_SECTION("a labels file where the images file belongs") {
    std::filesystem::copy_file(labels, images, std::filesystem::copy_options::overwrite_existing);
    const std::string message = error_of_train();
    CATCH_CHECK(Contains(message, images));
    CATCH_CHECK(Contains(message, "holds 1 dimension; features need at least 2"));
  }
  CATCH_SECTION("images that are not 28x28") {
    std::vector<unsigned char> bytes = IdxHeader(0x803, {4, 32, 32});
    bytes.resize(bytes.size() + 4 * 32 * 32, 0);
    WriteGz(images, bytes);
    const std::string message = error_of_train();
    CATCH_CHECK(Contains(message, images));
    CATCH_CHECK(Contains(message, "expected 28x28 images"));
    CATCH_CHECK(Contains(message, "got 32x32"));
  }
  CATCH_SECTION("more labels than images") {
    std::vector<unsigned char> bytes = IdxHeader(0x801, {5});
    bytes.insert(bytes.end(), {1, 2, 3, 4, 5});
    WriteGz(labels, bytes);
    const std::string message = error_of_train();
    CATCH_CHECK(Contains(message, images));
    CATCH_CHECK(Contains(message, labels));
    CATCH_CHECK(Contains(message, "holds 4 images but"));
    CATCH_CHECK(Contains(message, "holds 5 labels"));
  }
  CATCH_SECTION("a label outside 0..9") {
    std::vector<unsigned char> bytes = IdxHeader(0x801, {4});
    bytes.insert(bytes.end(), {1, 2, 12, 4});
    WriteGz(labels, bytes);
    const std::string message = error_of_train();
    CATCH_CHECK(Contains(message, labels));
    CATCH_CHECK(Contains(message, "label 12 at index 2 is out of range 0..9"));
  }
  CATCH_SECTION("data after the last label") {
    std::vector<unsigned char> bytes = IdxHeader(0x801, {4});
    bytes.insert(bytes.end(), {1, 2, 3, 4, 5});
    WriteGz(labels, bytes);
    const std::string message = error_of_train();
    CATCH_CHECK(Contains(message, labels));
    CATCH_CHECK(Contains(message, "unexpected data after 4 labels"));
  }
}

}  // namespace hetps
