// Token data (data.format tokens): a known token file gives the exact windows and their targets
// shifted by one; the training split's window starts are reproducible from the seed, move from
// epoch to epoch and cover the whole file every epoch; the vocabulary comes from the job, from
// vocab.json or from the ids, and every id past it, like a context longer than the file, is an
// error naming the file.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "trainer/data/tensor_dataset.h"
#include "trainer/data/token_data.h"
#include "trainer/data/token_file.h"

namespace hetps {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void WriteUint16(const std::string& path, const std::vector<uint16_t>& ids) {
  std::ofstream out(path, std::ios::binary);
  for (uint16_t id : ids) {
    out.put(static_cast<char>(id & 0xff));
    out.put(static_cast<char>(id >> 8));
  }
  CATCH_REQUIRE(out.good());
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  CATCH_REQUIRE(out.good());
}

// Token ids 100, 101, ... as train.bin and test.bin (`count` of each) under `dir`.
std::vector<uint16_t> Counting(uint16_t count) {
  std::vector<uint16_t> ids(count);
  std::iota(ids.begin(), ids.end(), uint16_t{100});
  return ids;
}

DataOptions Tokens(uint32_t context) {
  DataOptions options;
  options.format = "tokens";
  options.train.x = "train.bin";
  options.test.x = "test.bin";
  options.token_dtype = "uint16";
  options.context = context;
  return options;
}

std::vector<int64_t> Row(const torch::Tensor& batch, int64_t row) {
  torch::Tensor values = batch[row].contiguous();
  return std::vector<int64_t>(values.data_ptr<int64_t>(), values.data_ptr<int64_t>() + values.numel());
}

std::string LoadError(const DataOptions& options, DatasetSplit split, const std::string& dir,
                      uint32_t vocab = 0) {
  auto loaded = LoadDataset(options, split, dir, vocab);
  CATCH_REQUIRE_FALSE(loaded.ok());
  return loaded.status().message();
}

}  // namespace

CATCH_TEST_CASE("A token file gives windows of context tokens and the same windows shifted by one as targets",
                "[trainer][data][tokens]") {
  testing::TempDir dir("token_data");
  WriteUint16(dir / "train.bin", Counting(18));
  WriteUint16(dir / "test.bin", Counting(18));
  auto train = LoadTensorDataset(Tokens(4), DatasetSplit::kTrain, dir.path());
  CATCH_REQUIRE(train.ok());
  CATCH_CHECK(train->is_tokens());
  CATCH_CHECK(train->size() == 5);     // ceil(18 / 4): every token, end to end
  CATCH_CHECK(train->classes == 118);  // no vocabulary given: the largest id + 1
  const std::vector<int64_t> starts = {0, 5, 16, 17};
  Batch batch = MakeBatch(*train, starts.data(), starts.size(), torch::kCPU);
  CATCH_CHECK(batch.input.scalar_type() == torch::kInt64);
  CATCH_CHECK(batch.target.scalar_type() == torch::kInt64);
  CATCH_CHECK(batch.input.sizes() == torch::IntArrayRef({4, 4}));
  CATCH_CHECK(batch.target.sizes() == torch::IntArrayRef({4, 4}));
  CATCH_CHECK(Row(batch.input, 0) == std::vector<int64_t>{100, 101, 102, 103});
  CATCH_CHECK(Row(batch.target, 0) == std::vector<int64_t>{101, 102, 103, 104});
  CATCH_CHECK(Row(batch.input, 1) == std::vector<int64_t>{105, 106, 107, 108});
  CATCH_CHECK(Row(batch.target, 1) == std::vector<int64_t>{106, 107, 108, 109});
  // Past the last token comes the first.
  CATCH_CHECK(Row(batch.input, 2) == std::vector<int64_t>{116, 117, 100, 101});
  CATCH_CHECK(Row(batch.target, 2) == std::vector<int64_t>{117, 100, 101, 102});
  CATCH_CHECK(Row(batch.input, 3) == std::vector<int64_t>{117, 100, 101, 102});

  auto test = LoadTensorDataset(Tokens(4), DatasetSplit::kTest, dir.path(), train->classes);
  CATCH_REQUIRE(test.ok());
  CATCH_CHECK(test->size() == 4);  // floor(17 / 4) windows, none wrapping
  const std::vector<int64_t> ordered = OrderedSampleIndices(*test, 0, test->size());
  CATCH_CHECK(ordered == std::vector<int64_t>{0, 4, 8, 12});
  batch = MakeBatch(*test, ordered.data(), ordered.size(), torch::kCPU);
  CATCH_CHECK(Row(batch.input, 3) == std::vector<int64_t>{112, 113, 114, 115});
  CATCH_CHECK(Row(batch.target, 3) == std::vector<int64_t>{113, 114, 115, 116});
}

CATCH_TEST_CASE("Training windows start where the seed and epoch say, move each epoch and cover the file",
                "[trainer][data][tokens]") {
  testing::TempDir dir("token_data");
  constexpr uint16_t kTokens = 1003;
  constexpr uint32_t kContext = 16;
  WriteUint16(dir / "train.bin", Counting(kTokens));
  auto first = LoadDataset(Tokens(kContext), DatasetSplit::kTrain, dir.path());
  auto second = LoadDataset(Tokens(kContext), DatasetSplit::kTrain, dir.path());
  CATCH_REQUIRE(first.ok());
  CATCH_REQUIRE(second.ok());
  const int64_t windows = first->samples;
  CATCH_CHECK(windows == 63);  // ceil(1003 / 16)
  std::set<int64_t> offsets;
  for (uint32_t epoch = 0; epoch < 20; ++epoch) {
    std::vector<int> covered(kTokens, 0);
    for (int64_t w = 0; w < windows; ++w) {
      const int64_t start = TrainingWindowStart(*first, 7, epoch, w);
      CATCH_REQUIRE(start == TrainingWindowStart(*second, 7, epoch, w));  // reproducible
      CATCH_REQUIRE(start >= 0);
      CATCH_REQUIRE(start < kTokens);
      for (uint32_t k = 0; k < kContext; ++k) ++covered[(start + k) % kTokens];
    }
    // Every token is in a window (as input; its successor is the target), and only the last
    // window overlaps another: 63 * 16 - 1003 = 5 tokens twice.
    int twice = 0;
    for (int count : covered) {
      CATCH_REQUIRE(count >= 1);
      CATCH_REQUIRE(count <= 2);
      twice += count == 2;
    }
    CATCH_CHECK(twice == 5);
    offsets.insert(TrainingWindowStart(*first, 7, epoch, 0) % kContext);
  }
  // The windows' boundaries move from epoch to epoch.
  CATCH_CHECK(offsets.size() >= 5);
  bool seed_matters = false;
  for (uint32_t epoch = 0; epoch < 4; ++epoch) {
    seed_matters =
        seed_matters || TrainingWindowStart(*first, 7, epoch, 0) != TrainingWindowStart(*first, 8, epoch, 0);
  }
  CATCH_CHECK(seed_matters);
}

CATCH_TEST_CASE(
    "The vocabulary comes from the job, else vocab.json, and ids past it are errors naming the file",
    "[trainer][data][tokens]") {
  testing::TempDir dir("token_data");
  std::vector<uint16_t> ids = Counting(40);
  WriteUint16(dir / "train.bin", ids);
  ids[33] = 500;
  WriteUint16(dir / "test.bin", ids);

  WriteText(dir / "vocab.json", R"({"kind": "chars", "vocab_size": 200, "dtype": "uint16"})");
  DataOptions options = Tokens(8);
  options.token_dtype.clear();  // from vocab.json
  auto train = LoadDataset(options, DatasetSplit::kTrain, dir.path());
  CATCH_REQUIRE(train.ok());
  CATCH_CHECK(train->classes == 200);
  std::string message = LoadError(options, DatasetSplit::kTest, dir.path(), train->classes);
  CATCH_CHECK(Contains(message, dir / "test.bin"));
  CATCH_CHECK(Contains(message, "token id 500 at position 33 is at or past the vocabulary of 200 ids"));

  options.vocab = 140;  // the job's vocabulary wins over vocab.json's
  auto narrowed = LoadDataset(options, DatasetSplit::kTrain, dir.path());
  CATCH_REQUIRE(narrowed.ok());
  CATCH_CHECK(narrowed->classes == 140);
  options.vocab = 130;
  message = LoadError(options, DatasetSplit::kTest, dir.path());
  CATCH_CHECK(Contains(message, "at or past the vocabulary of 130 ids (from data.vocab)"));
  options.vocab = 139;
  message = LoadError(options, DatasetSplit::kTrain, dir.path());
  CATCH_CHECK(Contains(message, "token id 139 at position 39"));

  WriteText(dir / "vocab.json", R"({"kind": "chars", "vocab_size": 100})");
  options.vocab = 0;
  options.token_dtype = "uint16";
  message = LoadError(options, DatasetSplit::kTrain, dir.path());
  CATCH_CHECK(Contains(message, "token id 100 at position 0"));
  CATCH_CHECK(Contains(message, dir / "vocab.json"));
  WriteText(dir / "vocab.json", "{not json");
  CATCH_CHECK(
      Contains(LoadError(options, DatasetSplit::kTrain, dir.path()), "vocab.json: not a JSON object"));
}

CATCH_TEST_CASE("A context longer than the token file is an error naming the file and both lengths",
                "[trainer][data][tokens]") {
  testing::TempDir dir("token_data");
  WriteUint16(dir / "train.bin", Counting(64));
  CATCH_CHECK(LoadDataset(Tokens(63), DatasetSplit::kTrain, dir.path()).ok());
  const std::string message = LoadError(Tokens(64), DatasetSplit::kTrain, dir.path());
  CATCH_CHECK(Contains(message, dir / "train.bin"));
  CATCH_CHECK(Contains(message, "holds 64 tokens, but data.context 64 needs at least 65"));
}

CATCH_TEST_CASE("A token data section needs a context and is never served", "[trainer][data][tokens]") {
  DataOptions options = Tokens(32);
  CATCH_CHECK(ValidateDataOptions(options).ok());
  options.context = 0;
  CATCH_CHECK(Contains(ValidateDataOptions(options).message(), "data.context: required with format tokens"));
  options = Tokens(32);
  options.serve = true;
  CATCH_CHECK(Contains(ValidateDataOptions(options).message(), "data.serve: format tokens is not served"));
  options = Tokens(32);
  options.classes = 10;
  CATCH_CHECK(Contains(ValidateDataOptions(options).message(), "format tokens takes train, test, dtype"));
  options = Tokens(32);
  options.train.y = "labels.bin";
  CATCH_CHECK(Contains(ValidateDataOptions(options).message(), "tokens takes one file of token ids"));
  DataOptions images;
  images.format = "npy";
  images.train.x = images.test.x = "x.npz";
  images.context = 8;
  CATCH_CHECK(Contains(ValidateDataOptions(images).message(), "for format tokens only"));
}

}  // namespace hetps
