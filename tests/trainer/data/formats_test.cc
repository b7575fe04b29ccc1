// The readers of trainer/data/: Fashion-MNIST written by the test as CSV, NPY and NPZ gives the
// same batches as the IDX files bit for bit, float targets load as floats, and every malformed
// input is an error naming the file and the line or index.
#include <torch/torch.h>

#include <zlib.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/data/tensor_dataset.h"

namespace hetps {
namespace {

constexpr char kDataDir[] = "/usr/share/datasets/fashion-mnist";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  CATCH_REQUIRE(out.good());
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (int64_t dim : shape) text += std::to_string(dim) + ", ";
  return text + ")";
}

// An .npy file's bytes: version 1.0 header padded to 64 bytes, then the raw little-endian data.
std::string Npy(const std::string& descr, const std::vector<int64_t>& shape, const void* data, size_t bytes,
                bool fortran = false) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + ShapeText(shape) + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(data), bytes);
  return out;
}

void Le(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// A zip archive as numpy.savez (stored) or numpy.savez_compressed (deflate) writes it.
std::string Zip(const std::vector<std::pair<std::string, std::string>>& entries, bool compress) {
  std::string out, directory;
  for (const auto& [name, data] : entries) {
    std::string stored = data;
    if (compress) {
      z_stream z{};
      deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
      stored.resize(deflateBound(&z, data.size()));
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
      z.avail_in = static_cast<uInt>(data.size());
      z.next_out = reinterpret_cast<Bytef*>(stored.data());
      z.avail_out = static_cast<uInt>(stored.size());
      CATCH_REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
      stored.resize(z.total_out);
      deflateEnd(&z);
    }
    const uint32_t crc =
        crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
    const uint64_t offset = out.size();
    Le(&out, 0x04034b50, 4);
    Le(&out, 20, 2);
    Le(&out, 0, 2);
    Le(&out, compress ? 8 : 0, 2);
    Le(&out, 0, 4);
    Le(&out, crc, 4);
    Le(&out, stored.size(), 4);
    Le(&out, data.size(), 4);
    Le(&out, name.size(), 2);
    Le(&out, 0, 2);
    out += name;
    out += stored;
    Le(&directory, 0x02014b50, 4);
    Le(&directory, 20, 2);
    Le(&directory, 20, 2);
    Le(&directory, 0, 2);
    Le(&directory, compress ? 8 : 0, 2);
    Le(&directory, 0, 4);
    Le(&directory, crc, 4);
    Le(&directory, stored.size(), 4);
    Le(&directory, data.size(), 4);
    Le(&directory, name.size(), 2);
    Le(&directory, 0, 2);
    Le(&directory, 0, 2);
    Le(&directory, 0, 2);
    Le(&directory, 0, 2);
    Le(&directory, 0, 4);
    Le(&directory, offset, 4);
    directory += name;
  }
  const uint64_t directory_offset = out.size();
  out += directory;
  Le(&out, 0x06054b50, 4);
  Le(&out, 0, 4);
  Le(&out, entries.size(), 2);
  Le(&out, entries.size(), 2);
  Le(&out, directory.size(), 4);
  Le(&out, directory_offset, 4);
  Le(&out, 0, 2);
  return out;
}

// The built-in split, and its pixels and labels as plain vectors.
struct Reference {
  Dataset data;
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;
};

const Reference& TestSplit() {
  static const Reference kReference = [] {
    Result<Dataset> loaded = LoadFashionMnist(kDataDir, DatasetSplit::kTest);
    CATCH_REQUIRE(loaded.ok());
    Reference r{*loaded, {}, {}};
    const auto* p = r.data.features.data_ptr<uint8_t>();
    r.pixels.assign(p, p + r.data.features.numel());
    const auto* l = r.data.targets.data_ptr<int64_t>();
    r.labels.assign(l, l + r.data.size());
    return r;
  }();
  return kReference;
}

// Fashion-MNIST's normalisation, in every format alike.
DataOptions Normalised(const std::string& format) {
  DataOptions options = FashionMnistOptions(kDataDir);
  options.format = format;
  options.sample_shape = {1, 28, 28};
  return options;
}

void WriteCsv(const std::string& path, bool header, bool label_last) {
  const Reference& r = TestSplit();
  std::string text;
  text.reserve(r.pixels.size() * 4);
  if (header) {
    if (!label_last) text += "label";
    for (int i = 0; i < 784; ++i) text += std::string(text.empty() ? "" : ",") + "pixel" + std::to_string(i);
    if (label_last) text += ",label";
    text += "\n";
  }
  for (size_t s = 0; s < r.labels.size(); ++s) {
    if (!label_last) text += std::to_string(r.labels[s]) + ",";
    for (size_t i = 0; i < 784; ++i) {
      text += std::to_string(r.pixels[s * 784 + i]);
      if (i < 783) text += ',';
    }
    if (label_last) text += "," + std::to_string(r.labels[s]);
    text += (s % 2 == 0) ? "\r\n" : "\n";
  }
  WriteFile(path, text);
}

// Every sample of `a` and `b`, in batches of a scrambled order, compared bit for bit.
void CheckSameBatches(const Dataset& a, const Dataset& b) {
  CATCH_REQUIRE(a.size() == b.size());
  std::vector<int64_t> order(static_cast<size_t>(a.size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>((i * 7919) % order.size());
  for (size_t start = 0; start < order.size(); start += 1000) {
    const size_t count = std::min<size_t>(1000, order.size() - start);
    const Batch x = MakeBatch(a, order.data() + start, count, torch::kCPU);
    const Batch y = MakeBatch(b, order.data() + start, count, torch::kCPU);
    CATCH_REQUIRE(x.input.sizes() == y.input.sizes());
    CATCH_REQUIRE(x.input.dtype() == y.input.dtype());
    CATCH_REQUIRE(std::memcmp(x.input.data_ptr(), y.input.data_ptr(), x.input.nbytes()) == 0);
    CATCH_REQUIRE(x.target.dtype() == y.target.dtype());
    CATCH_REQUIRE(x.target.equal(y.target));
  }
}

Status ErrorOf(const DataOptions& options, DatasetSplit split = DatasetSplit::kTrain, uint32_t classes = 0,
               ReadLimits limits = {}) {
  Result<HostDataset> loaded = LoadDataset(options, split, "", classes, limits);
  CATCH_REQUIRE_FALSE(loaded.ok());
  CATCH_INFO(loaded.status().message());
  return loaded.status();
}

DataOptions CsvOptions(const std::string& path) {
  DataOptions options;
  options.format = "csv";
  options.train = {path, ""};
  options.test = {path, ""};
  return options;
}

}  // namespace

CATCH_TEST_CASE("Fashion-MNIST as CSV, NPY and NPZ gives the IDX batches bit for bit", "[trainer][data]") {
  testing::TempDir dir("formats");
  const Reference& r = TestSplit();

  DataOptions idx = Normalised("idx");
  Result<Dataset> from_idx = LoadTensorDataset(idx, DatasetSplit::kTest, "");
  CATCH_REQUIRE(from_idx.ok());
  CATCH_CHECK(from_idx->features.sizes() == torch::IntArrayRef({10000, 1, 28, 28}));
  CheckSameBatches(r.data, *from_idx);

  CATCH_SECTION("CSV, label first, no header") {
    WriteCsv(dir / "test.csv", false, false);
    DataOptions csv = Normalised("csv");
    csv.test = {dir / "test.csv", ""};
    Result<Dataset> from_csv = LoadTensorDataset(csv, DatasetSplit::kTest, "");
    CATCH_REQUIRE(from_csv.ok());
    CATCH_CHECK(from_csv->features.dtype() == torch::kFloat);
    CheckSameBatches(r.data, *from_csv);
  }
  CATCH_SECTION("CSV, a header line and the label last, read relative to the data directory") {
    WriteCsv(dir / "test.csv", true, true);
    DataOptions csv = Normalised("csv");
    csv.test = {"test.csv", ""};
    csv.header = true;
    csv.label_column = -1;
    Result<Dataset> from_csv = LoadTensorDataset(csv, DatasetSplit::kTest, dir.path());
    CATCH_REQUIRE(from_csv.ok());
    CheckSameBatches(r.data, *from_csv);
  }
  CATCH_SECTION("NPY: uint8 x [N, 28, 28] and int64 y") {
    WriteFile(dir / "x.npy", Npy("|u1", {10000, 28, 28}, r.pixels.data(), r.pixels.size()));
    WriteFile(dir / "y.npy", Npy("<i8", {10000}, r.labels.data(), r.labels.size() * 8));
    DataOptions npy = Normalised("npy");
    npy.test = {dir / "x.npy", dir / "y.npy"};
    Result<Dataset> from_npy = LoadTensorDataset(npy, DatasetSplit::kTest, "");
    CATCH_REQUIRE(from_npy.ok());
    CATCH_CHECK(from_npy->features.dtype() == torch::kUInt8);
    CheckSameBatches(r.data, *from_npy);
  }
  CATCH_SECTION("NPY: float32 x [N, 784] reshaped by sample_shape, uint8 y") {
    std::vector<float> pixels(r.pixels.begin(), r.pixels.end());
    std::vector<uint8_t> labels(r.labels.begin(), r.labels.end());
    WriteFile(dir / "x.npy", Npy("<f4", {10000, 784}, pixels.data(), pixels.size() * 4));
    WriteFile(dir / "y.npy", Npy("|u1", {10000}, labels.data(), labels.size()));
    DataOptions npy = Normalised("npy");
    npy.test = {dir / "x.npy", dir / "y.npy"};
    Result<Dataset> from_npy = LoadTensorDataset(npy, DatasetSplit::kTest, "");
    CATCH_REQUIRE(from_npy.ok());
    CheckSameBatches(r.data, *from_npy);
  }
  for (bool compress : {false, true}) {
    CATCH_SECTION(compress ? "NPZ written as numpy.savez_compressed does"
                           : "NPZ written as numpy.savez does") {
      const std::string x = Npy("|u1", {10000, 28, 28}, r.pixels.data(), r.pixels.size());
      const std::string y = Npy("<i8", {10000}, r.labels.data(), r.labels.size() * 8);
      WriteFile(dir / "test.npz", Zip({{"y.npy", y}, {"x.npy", x}}, compress));
      DataOptions npz = Normalised("npy");
      npz.test = {dir / "test.npz", ""};
      Result<Dataset> from_npz = LoadTensorDataset(npz, DatasetSplit::kTest, "");
      CATCH_REQUIRE(from_npz.ok());
      CheckSameBatches(r.data, *from_npz);
    }
  }
}

CATCH_TEST_CASE("Without normalisation options byte features come in [0, 1] and float ones as they are",
                "[trainer][data]") {
  testing::TempDir dir("formats");
  WriteFile(dir / "d.csv", "1,0,255,51\n0,2.5,-1,0.25\n");
  DataOptions csv = CsvOptions(dir / "d.csv");
  Result<Dataset> loaded = LoadTensorDataset(csv, DatasetSplit::kTrain, "");
  CATCH_REQUIRE(loaded.ok());
  CATCH_CHECK(loaded->classes == 2);
  const std::vector<int64_t> rows = {0, 1};
  Batch batch = MakeBatch(*loaded, rows.data(), rows.size(), torch::kCPU);
  CATCH_CHECK(batch.input.equal(torch::tensor({0.f, 255.f, 51.f, 2.5f, -1.f, 0.25f}).view({2, 3})));

  DataOptions idx;
  idx.format = "idx";
  idx.test = {std::string(kDataDir) + "/t10k-images-idx3-ubyte.gz",
              std::string(kDataDir) + "/t10k-labels-idx1-ubyte.gz"};
  Result<Dataset> images = LoadTensorDataset(idx, DatasetSplit::kTest, "");
  CATCH_REQUIRE(images.ok());
  batch = MakeBatch(*images, rows.data(), rows.size(), torch::kCPU);
  CATCH_CHECK(batch.input.sizes() == torch::IntArrayRef({2, 1, 28, 28}));
  CATCH_CHECK(batch.input.min().item<float>() == 0.f);
  CATCH_CHECK(batch.input.max().item<float>() == 1.f);
  CATCH_CHECK(batch.target.dtype() == torch::kInt64);
}

CATCH_TEST_CASE("Float targets load as float32 for regression", "[trainer][data]") {
  testing::TempDir dir("formats");
  WriteFile(dir / "r.csv", "x1,x2,y\n0.5,1,2.25\n1,2,-3.5\n");
  DataOptions csv = CsvOptions(dir / "r.csv");
  csv.header = true;
  csv.label_column = 2;
  csv.float_targets = true;
  Result<Dataset> loaded = LoadTensorDataset(csv, DatasetSplit::kTrain, "");
  CATCH_REQUIRE(loaded.ok());
  CATCH_CHECK(loaded->targets.dtype() == torch::kFloat);
  CATCH_CHECK(loaded->targets.equal(torch::tensor({2.25f, -3.5f})));
  CATCH_CHECK(loaded->features.sizes() == torch::IntArrayRef({2, 2}));

  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<double> y = {0.5, 1.5, 2.5, 3.5};
  WriteFile(dir / "x.npy", Npy("<f4", {2, 3}, x.data(), x.size() * 4));
  WriteFile(dir / "y.npy", Npy("<f8", {2, 2}, y.data(), y.size() * 8));
  DataOptions npy;
  npy.format = "npy";
  npy.train = {dir / "x.npy", dir / "y.npy"};
  npy.float_targets = true;
  Result<Dataset> two = LoadTensorDataset(npy, DatasetSplit::kTrain, "");
  CATCH_REQUIRE(two.ok());
  CATCH_CHECK(two->targets.sizes() == torch::IntArrayRef({2, 2}));
  const std::vector<int64_t> rows = {1};
  const Batch batch = MakeBatch(*two, rows.data(), rows.size(), torch::kCPU);
  CATCH_CHECK(batch.target.equal(torch::tensor({2.5f, 3.5f}).view({1, 2})));
}

CATCH_TEST_CASE("Malformed CSV files are errors naming the file and the line", "[trainer][data]") {
  testing::TempDir dir("formats");
  const std::string path = dir / "bad.csv";
  DataOptions csv = CsvOptions(path);
  auto message_for = [&](const std::string& text) {
    WriteFile(path, text);
    const Status status = ErrorOf(csv);
    CATCH_CHECK(status.code() == Status::Code::kInvalidArgument);
    CATCH_CHECK(Contains(status.message(), path));
    return status.message();
  };
  CATCH_SECTION("a ragged row") {
    CATCH_CHECK(Contains(message_for("1,2,3\n0,4,5\n2,6\n"), path + ":3: ragged row: 2 columns, expected 3"));
  }
  CATCH_SECTION("a ragged row after a header") {
    csv.header = true;
    CATCH_CHECK(Contains(message_for("y,a,b\n1,2,3\n0,4,5,6\n"), path + ":3: ragged row: 4 columns"));
  }
  CATCH_SECTION("a value that is not a number") {
    CATCH_CHECK(Contains(message_for("1,2,3\n0,x4,5\n"), path + ":2: column 2: 'x4' is not a number"));
  }
  CATCH_SECTION("an empty field") {
    CATCH_CHECK(Contains(message_for("1,2,3\n0,,5\n"), path + ":2: column 2: '' is not a number"));
  }
  CATCH_SECTION("a header line read as data") {
    CATCH_CHECK(Contains(message_for("label,a,b\n1,2,3\n"), path + ":1: column 1: 'label' is not a number"));
  }
  CATCH_SECTION("a label that is not a whole number") {
    CATCH_CHECK(Contains(message_for("1,2,3\n0.5,4,5\n"), path + ":2: label '0.5' is not a whole number"));
  }
  CATCH_SECTION("a negative label") {
    CATCH_CHECK(Contains(message_for("1,2,3\n-1,4,5\n"), "label -1 at line 2 is negative"));
  }
  CATCH_SECTION("a label beyond the classes") {
    csv.classes = 3;
    CATCH_CHECK(Contains(message_for("1,2,3\n2,4,5\n\n7,1,1\n"), "label 7 at line 4 is out of range 0..2"));
  }
  CATCH_SECTION("an empty file") {
    CATCH_CHECK(Contains(message_for(""), "holds no samples"));
  }
  CATCH_SECTION("a label column beyond the row") {
    csv.label_column = 3;
    CATCH_CHECK(Contains(message_for("1,2,3\n"), "data.label_column 3 is outside the file's 3 columns"));
  }
  CATCH_SECTION("a sample_shape of another size") {
    csv.sample_shape = {1, 3};
    CATCH_CHECK(
        Contains(message_for("1,2,3\n"), "data.sample_shape [1, 3] holds 3 values, but each sample has 2"));
  }
}

CATCH_TEST_CASE("A test split's labels are checked against the training split's classes", "[trainer][data]") {
  testing::TempDir dir("formats");
  WriteFile(dir / "train.csv", "0,1\n1,1\n2,1\n");
  WriteFile(dir / "test.csv", "0,1\n3,1\n");
  DataOptions csv = CsvOptions(dir / "train.csv");
  csv.test = {dir / "test.csv", ""};
  Result<HostDataset> train = LoadDataset(csv, DatasetSplit::kTrain, "");
  CATCH_REQUIRE(train.ok());
  CATCH_CHECK(train->classes == 3);
  const Status status = ErrorOf(csv, DatasetSplit::kTest, train->classes);
  CATCH_CHECK(Contains(status.message(), dir / "test.csv"));
  CATCH_CHECK(Contains(status.message(), "label 3 at line 2 is out of range 0..2"));
}

CATCH_TEST_CASE("Malformed NPY and NPZ files are errors naming the file and the index", "[trainer][data]") {
  testing::TempDir dir("formats");
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<int64_t> y3 = {0, 1, 2};
  const std::vector<int64_t> y2 = {0, 1};
  DataOptions npy;
  npy.format = "npy";
  npy.train = {dir / "x.npy", dir / "y.npy"};
  WriteFile(dir / "x.npy", Npy("<f4", {2, 3}, x.data(), x.size() * 4));
  WriteFile(dir / "y.npy", Npy("<i8", {2}, y2.data(), 16));

  CATCH_SECTION("x and y of different lengths") {
    WriteFile(dir / "y.npy", Npy("<i8", {3}, y3.data(), 24));
    const std::string message = ErrorOf(npy).message();
    CATCH_CHECK(Contains(message, "x and y differ in length"));
    CATCH_CHECK(Contains(message, dir / "x.npy" + " holds 2 samples"));
    CATCH_CHECK(Contains(message, dir / "y.npy" + " holds 3"));
  }
  CATCH_SECTION("a wrong magic string") {
    WriteFile(dir / "x.npy", "PK\x03\x04 not numpy at all");
    const std::string message = ErrorOf(npy).message();
    CATCH_CHECK(Contains(message, dir / "x.npy"));
    CATCH_CHECK(Contains(message, "wrong magic: not a NumPy .npy array"));
  }
  CATCH_SECTION("a label out of range") {
    const std::vector<int64_t> bad = {0, 5};
    WriteFile(dir / "y.npy", Npy("<i8", {2}, bad.data(), 16));
    npy.classes = 2;
    CATCH_CHECK(
        Contains(ErrorOf(npy).message(), dir / "y.npy" + ": label 5 at index 1 is out of range 0..1"));
  }
  CATCH_SECTION("an array shorter than its header") {
    WriteFile(dir / "x.npy", Npy("<f4", {2, 3}, x.data(), 12));
    const std::string message = ErrorOf(npy).message();
    CATCH_CHECK(Contains(message, dir / "x.npy" + ": truncated: expected 24 bytes"));
  }
  CATCH_SECTION("a Fortran-order array") {
    WriteFile(dir / "x.npy", Npy("<f4", {2, 3}, x.data(), 24, true));
    CATCH_CHECK(Contains(ErrorOf(npy).message(), "Fortran-order"));
  }
  CATCH_SECTION("an unsupported dtype") {
    WriteFile(dir / "x.npy", Npy("<c8", {2, 3}, x.data(), 24));
    CATCH_CHECK(Contains(ErrorOf(npy).message(), "dtype '<c8' is not supported"));
  }
  CATCH_SECTION("an .npz without y") {
    npy.train = {dir / "d.npz", ""};
    WriteFile(dir / "d.npz", Zip({{"x.npy", Npy("<f4", {2, 3}, x.data(), 24)}}, false));
    const std::string message = ErrorOf(npy).message();
    CATCH_CHECK(Contains(message, dir / "d.npz" + ": holds no array 'y' (it holds: x.npy)"));
  }
  CATCH_SECTION("an .npz that is no zip") {
    npy.train = {dir / "d.npz", ""};
    WriteFile(dir / "d.npz", std::string(100, 'z'));
    CATCH_CHECK(Contains(ErrorOf(npy).message(), dir / "d.npz" + ": wrong magic: not an .npz (zip) archive"));
  }
  CATCH_SECTION("a missing file") {
    std::filesystem::remove(dir / "y.npy");
    const Status status = ErrorOf(npy);
    CATCH_CHECK(status.code() == Status::Code::kNotFound);
    CATCH_CHECK(Contains(status.message(), dir / "y.npy"));
  }
}

CATCH_TEST_CASE("Malformed IDX files are errors naming the file", "[trainer][data]") {
  testing::TempDir dir("formats");
  DataOptions idx;
  idx.format = "idx";
  idx.train = {dir / "x.idx", dir / "y.idx"};
  // Three 2x2 byte images, and labels.
  const std::string images =
      std::string("\0\0\x08\x03\0\0\0\x03\0\0\0\x02\0\0\0\x02", 16) + std::string(12, '\x07');
  WriteFile(dir / "x.idx", images);
  WriteFile(dir / "y.idx", std::string("\0\0\x08\x01\0\0\0\x03\x00\x01\x02", 11));
  CATCH_REQUIRE(LoadDataset(idx, DatasetSplit::kTrain, "").ok());

  CATCH_SECTION("a wrong magic number") {
    WriteFile(dir / "y.idx", std::string("\x01\0\x08\x01\0\0\0\x03\x00\x01\x02", 11));
    const std::string message = ErrorOf(idx).message();
    CATCH_CHECK(Contains(message, dir / "y.idx" + ": wrong IDX magic number 0x01000801"));
  }
  CATCH_SECTION("more labels than images") {
    WriteFile(dir / "y.idx", std::string("\0\0\x08\x01\0\0\0\x04\x00\x01\x02\x03", 12));
    const std::string message = ErrorOf(idx).message();
    CATCH_CHECK(
        Contains(message, dir / "x.idx" + " holds 3 images but " + dir / "y.idx" + " holds 4 labels"));
  }
  CATCH_SECTION("a label out of range") {
    idx.classes = 2;
    CATCH_CHECK(
        Contains(ErrorOf(idx).message(), dir / "y.idx" + ": label 2 at index 2 is out of range 0..1"));
  }
  CATCH_SECTION("a header announcing more than memory holds") {
    // 2^31 images of 256x256 bytes: 141 TB.
    WriteFile(dir / "x.idx", std::string("\0\0\x08\x03\x80\0\0\0\0\0\x01\0\0\0\x01\0", 16));
    const std::string message = ErrorOf(idx).message();
    CATCH_CHECK(Contains(message, dir / "x.idx" + ": too large for memory: reading it needs 1.41e+05 GB"));
    CATCH_CHECK(Contains(message, "available on this machine"));
  }
  CATCH_SECTION("a file larger than the memory budget") {
    ReadLimits limits;
    limits.memory_budget_bytes = 8;
    const std::string message = ErrorOf(idx, DatasetSplit::kTrain, 0, limits).message();
    CATCH_CHECK(Contains(message, dir / "x.idx" + ": too large for memory: reading it needs 1.2e-08 GB"));
  }
}

CATCH_TEST_CASE("A CSV file larger than the memory budget is refused before it is parsed",
                "[trainer][data]") {
  testing::TempDir dir("formats");
  WriteFile(dir / "big.csv", "1,2,3\n0,4,5\n");
  ReadLimits limits;
  limits.memory_budget_bytes = 16;
  const Status status = ErrorOf(CsvOptions(dir / "big.csv"), DatasetSplit::kTrain, 0, limits);
  CATCH_CHECK(Contains(status.message(),
                       dir / "big.csv" + ": too large for memory: reading it needs 2.4e-08 GB but only"));
}

}  // namespace hetps
