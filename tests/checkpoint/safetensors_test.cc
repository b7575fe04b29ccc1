// safetensors files: what the writer writes reads back bit for bit, and the reader refuses every
// kind of damaged or lying file with an error naming the file and the problem.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "checkpoint/checksum.h"
#include "checkpoint/safetensors_reader.h"
#include "checkpoint/safetensors_writer.h"
#include "tests/support/temp_dir.h"

namespace hetps {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A file whose header is `header` (padded to 8 bytes) followed by `data_bytes` bytes.
std::string FileWithHeader(const std::string& header, size_t data_bytes) {
  std::string padded = header;
  padded.append((8 - padded.size() % 8) % 8, ' ');
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>(static_cast<uint64_t>(padded.size()) >> (8 * i));
  return file + padded + std::string(data_bytes, '\x01');
}

// The error message of parsing `bytes`, which must fail.
std::string ParseError(const std::string& bytes) {
  auto parsed = SafetensorsFile::Parse(bytes, "bad.safetensors");
  CATCH_REQUIRE_FALSE(parsed.ok());
  CATCH_CHECK(parsed.status().code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(Contains(parsed.status().message(), "bad.safetensors: "));
  return parsed.status().message();
}

CATCH_TEST_CASE("A written safetensors file reads back with its tensors, shapes and metadata",
                "[checkpoint][safetensors]") {
  testing::TempDir dir("safetensors");
  const std::vector<float> weights = {1.5f, -2.25f, 3.0f, 0.0f, 1e-30f, 7.0f};
  const int64_t step = 1234567890123;
  const std::vector<TensorView> tensors = {
      {"fc.weight", "F32", {2, 3}, weights.data(), weights.size() * sizeof(float)},
      {"fc.weight.step", "I64", {}, &step, sizeof(step)},
      {"empty", "F32", {0, 4}, nullptr, 0},
  };
  auto written = WriteSafetensors(PosixFileSystem(), dir / "a.safetensors", {{"mode", "sync"}}, tensors);
  CATCH_REQUIRE(written.ok());

  auto bytes = PosixFileSystem().ReadFile(dir / "a.safetensors");
  CATCH_REQUIRE(bytes.ok());
  CATCH_CHECK(written->bytes == bytes->size());
  CATCH_CHECK(written->crc32 == Crc32(bytes->data(), bytes->size()));
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes->data(), 8);
  CATCH_CHECK(header_bytes % 8 == 0);  // the data starts 8-byte aligned

  auto file = SafetensorsFile::Read(PosixFileSystem(), dir / "a.safetensors");
  CATCH_REQUIRE(file.ok());
  CATCH_CHECK(file->metadata().at("mode") == "sync");
  CATCH_REQUIRE(file->tensors().size() == 3);
  const auto* w = file->Find("fc.weight");
  CATCH_REQUIRE(w != nullptr);
  CATCH_CHECK(w->dtype == "F32");
  CATCH_CHECK(w->shape == std::vector<int64_t>{2, 3});
  std::vector<float> back(6);
  std::memcpy(back.data(), file->data(*w), w->bytes);
  CATCH_CHECK(back == weights);
  const auto* s = file->Find("fc.weight.step");
  CATCH_REQUIRE(s != nullptr);
  CATCH_CHECK(s->shape.empty());
  int64_t step_back = 0;
  std::memcpy(&step_back, file->data(*s), sizeof(step_back));
  CATCH_CHECK(step_back == step);
  CATCH_CHECK(file->Find("empty")->elements == 0);
  CATCH_CHECK(file->Find("missing") == nullptr);
}

CATCH_TEST_CASE("The writer refuses tensors it cannot describe", "[checkpoint][safetensors]") {
  testing::TempDir dir("safetensors-writer");
  const float x[4] = {};
  auto write = [&](const std::vector<TensorView>& tensors) {
    return WriteSafetensors(PosixFileSystem(), dir / "w.safetensors", {}, tensors).status();
  };
  CATCH_CHECK(Contains(write({{"a", "F32", {3}, x, 16}}).message(), "tensor a holds 16 bytes"));
  CATCH_CHECK(Contains(write({{"a", "F33", {4}, x, 16}}).message(), "unknown dtype 'F33'"));
  CATCH_CHECK(
      Contains(write({{"a", "F32", {4}, x, 16}, {"a", "F32", {4}, x, 16}}).message(), "listed twice"));
  CATCH_CHECK(Contains(write({{"__metadata__", "F32", {4}, x, 16}}).message(), "not a tensor name"));
}

CATCH_TEST_CASE("Every truncation of a file is refused, naming the file", "[checkpoint][safetensors]") {
  testing::TempDir dir("safetensors-truncated");
  const std::vector<float> weights(40, 0.5f);
  CATCH_REQUIRE(WriteSafetensors(PosixFileSystem(), dir / "t.safetensors", {{"k", "v"}},
                                 {{"w", "F32", {40}, weights.data(), 160}})
                    .ok());
  const std::string whole = *PosixFileSystem().ReadFile(dir / "t.safetensors");
  for (size_t n = 0; n < whole.size(); ++n) {
    CATCH_INFO("first " << n << " bytes");
    ParseError(whole.substr(0, n));
  }
  CATCH_CHECK(SafetensorsFile::Parse(whole, "t").ok());
}

CATCH_TEST_CASE("A header that lies is refused with the reason", "[checkpoint][safetensors]") {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  CATCH_REQUIRE(SafetensorsFile::Parse(FileWithHeader(ok, 8), "ok").ok());

  std::string huge(8, '\xff');
  CATCH_CHECK(Contains(ParseError(huge + "{}"), "more than the format's limit"));
  std::string beyond = FileWithHeader(ok, 8);
  beyond[0] = static_cast<char>(beyond[0] + 64);
  CATCH_CHECK(Contains(ParseError(beyond), "only"));
  CATCH_CHECK(Contains(ParseError(FileWithHeader("[1,2]", 0)), "not a JSON object"));
  CATCH_CHECK(Contains(ParseError(FileWithHeader(R"({"a":)", 0)), "not valid JSON"));
  CATCH_CHECK(Contains(ParseError(FileWithHeader("{\"a\xff\":1}", 0)), "not valid JSON"));
  CATCH_CHECK(Contains(ParseError(FileWithHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                                 R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                                 8)),
                       "names 'a' twice"));
  CATCH_CHECK(
      Contains(ParseError(FileWithHeader(R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", 8)),
               "tensor 'a': unknown dtype 'Q7'"));
  CATCH_CHECK(
      Contains(ParseError(FileWithHeader(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8)),
               "not a non-negative integer"));
  CATCH_CHECK(
      Contains(ParseError(FileWithHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8)),
               "not a range within the 8 bytes"));
  CATCH_CHECK(
      Contains(ParseError(FileWithHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)),
               "not a range"));
  CATCH_CHECK(Contains(
      ParseError(FileWithHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", 8)), "needs 4"));
  CATCH_CHECK(Contains(
      ParseError(FileWithHeader(
          R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", 8)),
      "more than the file holds"));
  CATCH_CHECK(Contains(ParseError(FileWithHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                                 12)),
                       "tensors 'a' and 'b' overlap"));
  CATCH_CHECK(
      Contains(ParseError(FileWithHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)),
               "bytes 0..4 of the data belong to no tensor"));
  CATCH_CHECK(Contains(ParseError(FileWithHeader(ok, 12)), "trailing bytes"));
  CATCH_CHECK(Contains(
      ParseError(FileWithHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8)),
      "unknown field 'x'"));
  CATCH_CHECK(
      Contains(ParseError(FileWithHeader(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8)), "no dtype"));
  CATCH_CHECK(
      Contains(ParseError(FileWithHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8)),
               "not a pair"));
  CATCH_CHECK(Contains(ParseError(FileWithHeader(R"({"__metadata__":{"k":1}})", 0)), "'k' is not a string"));
  CATCH_CHECK(
      Contains(ParseError(FileWithHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8.5]}})", 8)),
               "not a range"));
}

}  // namespace
}  // namespace hetps
