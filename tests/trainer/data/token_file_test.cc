// TokenFile: raw uint16 and uint32 files and NumPy's own .npy files (written by Debian's
// /usr/bin/python3 with numpy) map to the ids written, read circularly; truncated, damaged and
// mistyped files are errors naming the file.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "trainer/data/token_file.h"

namespace hetps {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

template <typename T>
void WriteIds(const std::string& path, const std::vector<T>& ids) {
  std::ofstream out(path, std::ios::binary);
  for (T id : ids) {
    for (size_t b = 0; b < sizeof(T); ++b) out.put(static_cast<char>((id >> (8 * b)) & 0xff));
  }
  CATCH_REQUIRE(out.good());
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  CATCH_REQUIRE(out.good());
}

// numpy.save of `expression` (evaluated with numpy as np) to `path`.
void NumpySave(const std::string& path, const std::string& expression) {
  const std::string command =
      "/usr/bin/python3 -c \"import numpy as np; np.save('" + path + "', " + expression + ")\"";
  CATCH_REQUIRE(std::system(command.c_str()) == 0);
}

std::string OpenError(const std::string& path, std::optional<TokenDType> dtype) {
  auto file = TokenFile::Open(path, dtype);
  CATCH_REQUIRE_FALSE(file.ok());
  return file.status().message();
}

}  // namespace

CATCH_TEST_CASE("A raw uint16 file maps to its little-endian ids and reads past its end from its start",
                "[trainer][data][tokens]") {
  testing::TempDir dir("token_file");
  WriteIds<uint16_t>(dir / "train.bin", {7, 0, 65535, 258, 3});
  auto file = TokenFile::Open(dir / "train.bin", TokenDType::kUInt16);
  CATCH_REQUIRE(file.ok());
  CATCH_CHECK((*file)->size() == 5);
  CATCH_CHECK((*file)->dtype() == TokenDType::kUInt16);
  CATCH_CHECK((*file)->At(2) == 65535);
  CATCH_CHECK((*file)->At(3) == 258);
  std::vector<int64_t> ids(7);
  (*file)->Read(3, ids.size(), ids.data());
  CATCH_CHECK(ids == std::vector<int64_t>{258, 3, 7, 0, 65535, 258, 3});
  CATCH_CHECK((*file)->MaxToken() == 65535);
  CATCH_CHECK((*file)->FindAtOrAbove(300) == std::optional<uint64_t>(2));
  CATCH_CHECK((*file)->FindAtOrAbove(300, 3) == std::nullopt);
}

CATCH_TEST_CASE("A raw uint32 file holds ids past 65535", "[trainer][data][tokens]") {
  testing::TempDir dir("token_file");
  WriteIds<uint32_t>(dir / "train.bin", {100000, 1, 4000000000u});
  auto file = TokenFile::Open(dir / "train.bin", TokenDType::kUInt32);
  CATCH_REQUIRE(file.ok());
  CATCH_CHECK((*file)->size() == 3);
  CATCH_CHECK((*file)->At(0) == 100000);
  CATCH_CHECK((*file)->At(2) == 4000000000u);
  // The same bytes read as uint16 are twice as many ids.
  auto narrow = TokenFile::Open(dir / "train.bin", TokenDType::kUInt16);
  CATCH_REQUIRE(narrow.ok());
  CATCH_CHECK((*narrow)->size() == 6);
  CATCH_CHECK((*narrow)->At(0) == (100000 & 0xffff));
}

CATCH_TEST_CASE("A 1-D .npy of uint16 or uint32 says its own id type", "[trainer][data][tokens]") {
  testing::TempDir dir("token_file");
  NumpySave(dir / "a.npy", "np.array([5, 4, 3, 60000], dtype=np.uint16)");
  NumpySave(dir / "b.npy", "np.arange(1000, dtype=np.uint32) * 70000");
  auto a = TokenFile::Open(dir / "a.npy", std::nullopt);
  CATCH_REQUIRE(a.ok());
  CATCH_CHECK((*a)->dtype() == TokenDType::kUInt16);
  CATCH_CHECK((*a)->size() == 4);
  CATCH_CHECK((*a)->At(3) == 60000);
  auto b = TokenFile::Open(dir / "b.npy", std::nullopt);
  CATCH_REQUIRE(b.ok());
  CATCH_CHECK((*b)->dtype() == TokenDType::kUInt32);
  CATCH_CHECK((*b)->size() == 1000);
  CATCH_CHECK((*b)->At(999) == 999u * 70000u);
  CATCH_CHECK(
      Contains(OpenError(dir / "a.npy", TokenDType::kUInt32), "holds uint16 ids but data.dtype is uint32"));
}

CATCH_TEST_CASE("Truncated, empty, mistyped and missing token files are errors naming the file",
                "[trainer][data][tokens]") {
  testing::TempDir dir("token_file");
  WriteBytes(dir / "odd.bin", std::string("\x01\x00\x02", 3));
  std::string message = OpenError(dir / "odd.bin", TokenDType::kUInt16);
  CATCH_CHECK(Contains(message, dir / "odd.bin"));
  CATCH_CHECK(Contains(message, "3 bytes is not a whole number of uint16 ids"));
  WriteBytes(dir / "six.bin", std::string(6, '\0'));
  CATCH_CHECK(Contains(OpenError(dir / "six.bin", TokenDType::kUInt32), "not a whole number of uint32 ids"));
  CATCH_CHECK(Contains(OpenError(dir / "six.bin", std::nullopt), "needs its id type: set data.dtype"));
  WriteBytes(dir / "empty.bin", "");
  CATCH_CHECK(Contains(OpenError(dir / "empty.bin", TokenDType::kUInt16), "holds no token ids"));
  auto missing = TokenFile::Open(dir / "missing.bin", TokenDType::kUInt16);
  CATCH_REQUIRE_FALSE(missing.ok());
  CATCH_CHECK(missing.status().code() == Status::Code::kNotFound);
  CATCH_CHECK(Contains(missing.status().message(), dir / "missing.bin"));

  NumpySave(dir / "cut.npy", "np.arange(100, dtype=np.uint16)");
  std::string whole;
  {
    std::ifstream in(dir / "cut.npy", std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(in), {});
  }
  WriteBytes(dir / "cut.npy", whole.substr(0, whole.size() - 7));
  message = OpenError(dir / "cut.npy", std::nullopt);
  CATCH_CHECK(Contains(message, dir / "cut.npy"));
  CATCH_CHECK(Contains(message, "promises 100 ids (200 bytes) but it holds 193 bytes"));
  WriteBytes(dir / "junk.npy", "not a numpy file at all");
  CATCH_CHECK(Contains(OpenError(dir / "junk.npy", std::nullopt), "not a NumPy .npy array"));
  NumpySave(dir / "float.npy", "np.zeros(8, dtype=np.float32)");
  CATCH_CHECK(Contains(OpenError(dir / "float.npy", std::nullopt), "token ids are uint16 or uint32"));
  NumpySave(dir / "square.npy", "np.zeros((4, 4), dtype=np.uint16)");
  CATCH_CHECK(Contains(OpenError(dir / "square.npy", std::nullopt), "a 2-D array"));
}

}  // namespace hetps
