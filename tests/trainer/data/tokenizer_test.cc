// hetps-data tokenize's tokenizers: characters and bytes make train.bin and val.bin that decode
// back to the input, split at the last N %, with a vocab.json the token reader takes its
// vocabulary and id type from; uint32 ids once the vocabulary outgrows uint16; bad input is an
// error naming it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "trainer/data/dataset.h"
#include "trainer/data/token_file.h"
#include "trainer/data/tokenizer.h"
#include "trainer/data/vocab_file.h"

namespace hetps {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void WriteText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  CATCH_REQUIRE(out.good());
}

std::vector<uint32_t> Ids(const std::string& path, TokenDType dtype) {
  auto file = TokenFile::Open(path, dtype);
  CATCH_REQUIRE(file.ok());
  std::vector<uint32_t> ids;
  for (uint64_t i = 0; i < (*file)->size(); ++i) ids.push_back((*file)->At(i));
  return ids;
}

std::string Decode(const Vocabulary& vocabulary, const std::vector<uint32_t>& ids) {
  std::string text;
  for (uint32_t id : ids)
    text += vocabulary.kind == "bytes" ? std::string(1, static_cast<char>(id)) : vocabulary.tokens.at(id);
  return text;
}

std::string UnicodeText(uint32_t first, uint32_t last) {
  std::string text;
  for (uint32_t code = first; code <= last; ++code) {
    if (code >= 0xd800 && code <= 0xdfff) continue;
    if (code < 0x10000) {
      text += static_cast<char>(0xe0 | (code >> 12));
    } else {
      text += static_cast<char>(0xf0 | (code >> 18));
      text += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
    }
    text += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    text += static_cast<char>(0x80 | (code & 0x3f));
  }
  return text;
}

TokenizeOptions Options(const std::string& kind, std::vector<std::string> inputs, const std::string& out) {
  TokenizeOptions options;
  options.kind = kind;
  options.inputs = std::move(inputs);
  options.out_dir = out;
  return options;
}

}  // namespace

CATCH_TEST_CASE("Character tokens decode back to the text, the last 10 % of it in val.bin",
                "[trainer][data][tokenizer]") {
  testing::TempDir dir("tokenizer");
  const std::string a = "h\xc3\xa9llo, w\xc3\xb6rld\n";           // héllo, wörld
  const std::string b = "\xe2\x82\xac 42 \xf0\x9f\x99\x82 ok\n";  // € 42 🙂 ok
  WriteText(dir / "in/a.txt", a);
  WriteText(dir / "in/b.txt", b);
  auto report = Tokenize(Options("chars", {dir / "in/a.txt", dir / "in/b.txt"}, dir / "out"));
  CATCH_REQUIRE(report.ok());
  CATCH_CHECK(report->files == 2);
  CATCH_CHECK(report->input_bytes == a.size() + b.size());
  CATCH_CHECK(report->invalid_utf8 == 0);
  auto vocabulary = ReadVocabulary(dir / "out/vocab.json");
  CATCH_REQUIRE(vocabulary.ok());
  CATCH_CHECK(vocabulary->kind == "chars");
  CATCH_CHECK(vocabulary->dtype == TokenDType::kUInt16);
  // The characters in code point order: "\n", " ", ",", "2", "4", ... "ö", "€", "🙂".
  CATCH_REQUIRE(vocabulary->size == vocabulary->tokens.size());
  CATCH_CHECK(vocabulary->tokens.front() == "\n");
  CATCH_CHECK(vocabulary->tokens[1] == " ");
  CATCH_CHECK(vocabulary->tokens.back() == "\xf0\x9f\x99\x82");
  CATCH_CHECK(vocabulary->tokens[vocabulary->size - 2] == "\xe2\x82\xac");
  const std::vector<uint32_t> train = Ids(dir / "out/train.bin", TokenDType::kUInt16);
  const std::vector<uint32_t> val = Ids(dir / "out/val.bin", TokenDType::kUInt16);
  const uint64_t characters = 13 + 10;
  CATCH_CHECK(train.size() + val.size() == characters);
  CATCH_CHECK(val.size() == 2);  // round(23 * 10 %)
  CATCH_CHECK(vocabulary->train_tokens == train.size());
  CATCH_CHECK(vocabulary->val_tokens == val.size());
  CATCH_CHECK(Decode(*vocabulary, train) + Decode(*vocabulary, val) == a + b);
  CATCH_CHECK(Decode(*vocabulary, val) == "k\n");

  // The token reader takes the vocabulary and id type from vocab.json.
  DataOptions options;
  options.format = "tokens";
  options.train.x = "train.bin";
  options.test.x = "val.bin";
  options.context = 2;
  auto loaded = LoadDataset(options, DatasetSplit::kTrain, dir / "out");
  CATCH_REQUIRE(loaded.ok());
  CATCH_CHECK(loaded->classes == vocabulary->size);
  CATCH_CHECK(loaded->tokens->dtype() == TokenDType::kUInt16);
}

CATCH_TEST_CASE(
    "Byte tokens are the bytes themselves, and bytes that are not UTF-8 become U+FFFD as characters",
    "[trainer][data][tokenizer]") {
  testing::TempDir dir("tokenizer");
  const std::string text = std::string("caf\xe9 \xc3\xa9t\xc3", 9) + " is \x80 bad\n";
  WriteText(dir / "latin1.txt", text);
  TokenizeOptions options = Options("bytes", {dir / "latin1.txt"}, dir / "bytes");
  options.val_percent = 50;
  auto bytes = Tokenize(options);
  CATCH_REQUIRE(bytes.ok());
  CATCH_CHECK(bytes->vocabulary.size == 256);
  CATCH_CHECK(bytes->vocabulary.tokens.empty());
  std::vector<uint32_t> ids = Ids(dir / "bytes/train.bin", TokenDType::kUInt16);
  const std::vector<uint32_t> rest = Ids(dir / "bytes/val.bin", TokenDType::kUInt16);
  ids.insert(ids.end(), rest.begin(), rest.end());
  CATCH_REQUIRE(ids.size() == text.size());
  for (size_t i = 0; i < text.size(); ++i) CATCH_CHECK(ids[i] == static_cast<uint8_t>(text[i]));

  auto chars = Tokenize(Options("chars", {dir / "latin1.txt"}, dir / "chars"));
  CATCH_REQUIRE(chars.ok());
  // \xe9 alone, \xc3 cut short by a space, and a stray \x80.
  CATCH_CHECK(chars->invalid_utf8 == 3);
  CATCH_CHECK(chars->vocabulary.tokens.back() == "\xef\xbf\xbd");
}

CATCH_TEST_CASE("More than 65536 characters make uint32 ids", "[trainer][data][tokenizer]") {
  testing::TempDir dir("tokenizer");
  WriteText(dir / "wide.txt", UnicodeText(0x4000, 0x16000));  // 73,729 characters less 2,048 surrogates
  auto report = Tokenize(Options("chars", {dir / "wide.txt"}, dir / "out"));
  CATCH_REQUIRE(report.ok());
  CATCH_CHECK(report->vocabulary.size == 0x12001 - 2048);
  CATCH_CHECK(report->vocabulary.dtype == TokenDType::kUInt32);
  auto vocabulary = ReadVocabulary(dir / "out/vocab.json");
  CATCH_REQUIRE(vocabulary.ok());
  CATCH_CHECK(vocabulary->dtype == TokenDType::kUInt32);
  const std::vector<uint32_t> val = Ids(dir / "out/val.bin", TokenDType::kUInt32);
  CATCH_CHECK(val.back() == report->vocabulary.size - 1);
  CATCH_CHECK(std::filesystem::file_size(dir / "out/train.bin") == 4 * report->vocabulary.train_tokens);
}

CATCH_TEST_CASE("A directory gives its matching files in path order", "[trainer][data][tokenizer]") {
  testing::TempDir dir("tokenizer");
  WriteText(dir / "src/b/two.py", "bb\n");
  WriteText(dir / "src/a.py", "aa\n");
  WriteText(dir / "src/c.txt", "not this\n");
  WriteText(dir / "src/b/one.py", "cc\n");
  TokenizeOptions options = Options("chars", {dir / "src"}, dir / "out");
  options.include = "*.py";
  auto files = TokenizerInputs(options);
  CATCH_REQUIRE(files.ok());
  CATCH_CHECK(*files ==
              std::vector<std::string>{dir / "src/a.py", dir / "src/b/one.py", dir / "src/b/two.py"});
  options.val_percent = 30;
  auto report = Tokenize(options);
  CATCH_REQUIRE(report.ok());
  std::vector<uint32_t> ids = Ids(dir / "out/train.bin", TokenDType::kUInt16);
  const std::vector<uint32_t> rest = Ids(dir / "out/val.bin", TokenDType::kUInt16);
  CATCH_CHECK(rest.size() == 3);
  ids.insert(ids.end(), rest.begin(), rest.end());
  CATCH_CHECK(Decode(report->vocabulary, ids) == "aa\ncc\nbb\n");
}

CATCH_TEST_CASE("Missing inputs, a bad split and too little text are errors", "[trainer][data][tokenizer]") {
  testing::TempDir dir("tokenizer");
  auto missing = Tokenize(Options("chars", {dir / "nothing.txt"}, dir / "out"));
  CATCH_REQUIRE_FALSE(missing.ok());
  CATCH_CHECK(Contains(missing.status().message(), dir / "nothing.txt"));
  WriteText(dir / "short.txt", "abc");
  auto tiny = Tokenize(Options("chars", {dir / "short.txt"}, dir / "out"));
  CATCH_REQUIRE_FALSE(tiny.ok());
  CATCH_CHECK(Contains(tiny.status().message(), "holds 3 tokens: too few"));
  TokenizeOptions options = Options("chars", {dir / "short.txt"}, dir / "out");
  options.val_percent = 100;
  CATCH_CHECK(Contains(Tokenize(options).status().message(), "--val-percent"));
  CATCH_CHECK(Contains(Tokenize(Options("words", {dir / "short.txt"}, dir / "out")).status().message(),
                       "choose chars or bytes"));
  options = Options("chars", {dir.path()}, dir / "out");
  options.include = "*.md";
  CATCH_CHECK(Contains(Tokenize(options).status().message(), "no input files matching *.md"));
}

}  // namespace hetps
