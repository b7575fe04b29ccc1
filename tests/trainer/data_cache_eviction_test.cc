// The bound on the served data's cache (hetps-trainer --data-cache-limit), with real files in
// temporary directories: opening a cache evicts other data sets least recently used first; the
// data set in use, recently used ones and what is not the cache's are never removed; a data set
// alone over the limit stops storing with one warning; a cache growing past its limit evicts an
// older one and goes on; the limit's syntax.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "trainer/data_cache.h"
#include "trainer/data_cache_eviction.h"

namespace hetps {
namespace {

using testing::TempDir;

// A data set's directory under `root` as an earlier trainer left it: one piece of `bytes` bytes
// and a stamp (empty) last written `hours_ago`; its path.
std::string OldDataSet(const std::string& root, const std::string& hex, uint64_t bytes, double hours_ago) {
  std::string dir = root + "/crc32-" + hex;
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/train-0-1-00000000.piece") << std::string(bytes, 'x');
  const std::string stamp = dir + "/" + kDataSetStampName;
  std::ofstream created(stamp);
  created.close();
  const auto ago = std::chrono::duration_cast<std::filesystem::file_time_type::duration>(
      std::chrono::duration<double, std::ratio<3600>>(hours_ago));
  std::filesystem::last_write_time(stamp, std::filesystem::file_time_type::clock::now() - ago);
  return dir;
}

Result<std::unique_ptr<DataCache>> OpenWithLimit(const std::string& root, const std::string& checksum,
                                                 uint64_t limit_bytes) {
  DataCacheOptions options;
  options.limit_bytes = limit_bytes;
  return DataCache::Open(PosixFileSystem(), root, checksum, options);
}

// One piece of `count` samples of 16 + 8 bytes, from sample `first` on.
Status StoreSmallPiece(DataCache& cache, uint64_t first, uint64_t count) {
  std::vector<uint64_t> indices;
  for (uint64_t i = 0; i < count; ++i) indices.push_back(first + i);
  const std::vector<uint8_t> features(count * 16, 7);
  const std::vector<uint8_t> targets(count * 8, 0);
  return cache.Store(DatasetSplit::kTrain, indices, features.data(), features.size(), targets.data(),
                     targets.size());
}

size_t CountPieces(const std::string& dir) {
  size_t pieces = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    pieces += entry.path().filename().string().find(".piece") != std::string::npos;
  }
  return pieces;
}

// A split of `samples` samples of 16 bytes each, all missing, to load pieces into.
HostDataset EmptySplit(int64_t samples) {
  HostDataset data;
  data.samples = samples;
  data.sample_shape = {16};
  data.features.resize(static_cast<size_t>(samples * 16));
  data.class_targets.resize(static_cast<size_t>(samples));
  data.classes = 3;
  data.divide_by = 255;
  return data;
}

// What this process writes to stderr (the log) while it lives.
class CapturedStderr {
 public:
  explicit CapturedStderr(const std::string& file) : file_(file) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~CapturedStderr() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
  }
  CapturedStderr(const CapturedStderr&) = delete;
  CapturedStderr& operator=(const CapturedStderr&) = delete;

  // The lines written so far that contain `text`.
  std::vector<std::string> LinesWith(const std::string& text) const {
    std::fflush(stderr);
    std::ifstream in(file_);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
      if (line.find(text) != std::string::npos) lines.push_back(line);
    }
    return lines;
  }

 private:
  std::string file_;
  int saved_ = -1;
};


}  // namespace

CATCH_TEST_CASE(
    "Opening a cache evicts other data sets, least recently used first, until it is within its limit",
    "[trainer][data][cache][eviction]") {
  TempDir root("data-cache-lru");
  const std::string a = OldDataSet(root.path(), "000000000000000a", 1000, 3);
  const std::string b = OldDataSet(root.path(), "000000000000000b", 1000, 5);
  const std::string c = OldDataSet(root.path(), "000000000000000c", 1000, 2);
  const std::string d = OldDataSet(root.path(), "000000000000000d", 1000, 4);
  // A piece of another data set in b leads nowhere outside it: the link goes, not what it names.
  TempDir outside("data-cache-outside");
  std::ofstream(outside / "keep") << "not the cache's";
  std::filesystem::create_directory_symlink(outside.path(), b + "/link");

  // 4000 bytes and e's stamp: making room for 3500 takes b, used longest ago, only.
  const std::string checksum = "crc32:00000000000000ee";
  auto e = OpenWithLimit(root.path(), checksum, 3500);
  CATCH_REQUIRE(e.ok());
  CATCH_CHECK_FALSE(std::filesystem::exists(b));
  CATCH_CHECK(std::filesystem::exists(outside / "keep"));
  for (const std::string& kept : {a, c, d}) CATCH_CHECK(std::filesystem::exists(kept));

  // For 2500, d goes next (4 hours ago), then the cache fits: a (3 hours) and c (2) stay.
  auto again = OpenWithLimit(root.path(), checksum, 2500);
  CATCH_REQUIRE(again.ok());
  CATCH_CHECK_FALSE(std::filesystem::exists(d));
  CATCH_CHECK(std::filesystem::exists(a));
  CATCH_CHECK(std::filesystem::exists(c));
  CATCH_CHECK(std::filesystem::exists((*again)->dir()));

  // Without a limit nothing goes.
  CATCH_REQUIRE(OpenWithLimit(root.path(), checksum, 0).ok());
  CATCH_CHECK(std::filesystem::exists(a));
  CATCH_CHECK(std::filesystem::exists(c));
}

CATCH_TEST_CASE(
    "The data set in use, those used within the hour and whatever the cache did not name are never evicted",
    "[trainer][data][cache][eviction]") {
  TempDir root("data-cache-keep");
  const std::string checksum = "crc32:00000000000000ee";
  // The data set being opened, last used long ago, and larger than everything else.
  const std::string in_use = OldDataSet(root.path(), "00000000000000ee", 3000, 10);
  const std::string recent = OldDataSet(root.path(), "0000000000000001", 1000, 0.5);
  const std::string old = OldDataSet(root.path(), "0000000000000002", 1000, 3);
  // Not the cache's: a file, directories of other names, a file and a link under a data set's name.
  std::ofstream(root / "notes.txt") << std::string(5000, 'n');
  const std::string foreign_dirs[] = {OldDataSet(root.path(), "0123456789ABCDEF", 1000, 9),
                                      OldDataSet(root.path(), "0123", 1000, 9),
                                      OldDataSet(root.path(), "0000000000000003-x", 1000, 9)};
  std::filesystem::create_directories(root / "mine/sub");
  std::ofstream(root / "mine/sub/data") << "mine";
  std::ofstream(root / "crc32-0000000000000004") << "a file";
  const std::string target = OldDataSet(root / "mine", "0000000000000005", 1000, 9);
  std::filesystem::create_directory_symlink(target, root / "crc32-0000000000000005");

  TempDir logs("data-cache-log");
  CapturedStderr log(logs / "stderr");
  auto cache = OpenWithLimit(root.path(), checksum, 100);
  CATCH_REQUIRE(cache.ok());
  CATCH_CHECK((*cache)->dir() == in_use);
  CATCH_CHECK_FALSE(std::filesystem::exists(old));
  CATCH_CHECK(log.LinesWith("data cache: evicted " + old).size() == 1);
  CATCH_CHECK(CountPieces(in_use) == 1);
  CATCH_CHECK(std::filesystem::exists(recent + "/train-0-1-00000000.piece"));
  CATCH_CHECK(std::filesystem::exists(root / "notes.txt"));
  for (const std::string& dir : foreign_dirs)
    CATCH_CHECK(std::filesystem::exists(dir + "/train-0-1-00000000.piece"));
  CATCH_CHECK(std::filesystem::exists(root / "mine/sub/data"));
  CATCH_CHECK(std::filesystem::is_regular_file(root / "crc32-0000000000000004"));
  CATCH_CHECK(std::filesystem::is_symlink(root / "crc32-0000000000000005"));
  CATCH_CHECK(std::filesystem::exists(target + "/train-0-1-00000000.piece"));
  // Opening it made it the most recently used.
  const auto stamped = std::filesystem::last_write_time(in_use + "/" + kDataSetStampName);
  CATCH_CHECK(std::filesystem::file_time_type::clock::now() - stamped < std::chrono::minutes(1));
}

CATCH_TEST_CASE(
    "A data set alone over the cache's limit stops storing with one warning and keeps what it cached",
    "[trainer][data][cache][eviction]") {
  TempDir root("data-cache-full");
  const std::string checksum = "crc32:00000000000000ee";
  // A piece of 3 samples: its header (magic, checksum, four sizes, indices), samples, CRC-32.
  const uint64_t piece_bytes = 8 + 4 + checksum.size() + 4 * 8 + 3 * 8 + 3 * (16 + 8) + 4;
  // Room for five pieces and the stamp (its text is shorter than 64 bytes), not for six.
  const uint64_t limit = 5 * piece_bytes + piece_bytes / 2 + 64;
  CATCH_REQUIRE(piece_bytes / 2 > 64);
  TempDir logs("data-cache-log");
  {
    CapturedStderr log(logs / "first-run");
    auto cache = OpenWithLimit(root.path(), checksum, limit);
    CATCH_REQUIRE(cache.ok());
    for (uint64_t piece = 0; piece < 8; ++piece) CATCH_CHECK(StoreSmallPiece(**cache, piece * 3, 3).ok());
    CATCH_CHECK(CountPieces((*cache)->dir()) == 5);
    CATCH_CHECK(log.LinesWith("(--data-cache-limit)").size() == 1);
    CATCH_CHECK(log.LinesWith("alone would hold").size() == 1);
  }
  // The next run reads the five, and stores no more, saying so once.
  CapturedStderr log(logs / "second-run");
  auto reopened = OpenWithLimit(root.path(), checksum, limit);
  CATCH_REQUIRE(reopened.ok());
  HostDataset data = EmptySplit(24);
  std::vector<bool> present(24, false);
  CATCH_CHECK((*reopened)->Load(DatasetSplit::kTrain, data, present).samples == 15);
  CATCH_CHECK(StoreSmallPiece(**reopened, 15, 3).ok());
  CATCH_CHECK(CountPieces((*reopened)->dir()) == 5);
  CATCH_CHECK(log.LinesWith("(--data-cache-limit)").size() == 1);
}

CATCH_TEST_CASE(
    "A cache that grows past its limit while storing evicts an older data set and goes on storing",
    "[trainer][data][cache][eviction]") {
  TempDir root("data-cache-grow");
  const std::string old = OldDataSet(root.path(), "0000000000000001", 1000, 2);
  const std::string checksum = "crc32:00000000000000ee";
  auto cache = OpenWithLimit(root.path(), checksum, 1600);
  CATCH_REQUIRE(cache.ok());
  CATCH_CHECK(std::filesystem::exists(old));  // 1000 bytes and a stamp fit
  for (uint64_t piece = 0; piece < 8; ++piece) CATCH_CHECK(StoreSmallPiece(**cache, piece * 3, 3).ok());
  CATCH_CHECK_FALSE(std::filesystem::exists(old));
  CATCH_CHECK(CountPieces((*cache)->dir()) == 8);
}

CATCH_TEST_CASE("The cache's limit is bytes or a whole number with K, M, G or T, and 0 or none is no limit",
                "[trainer][data][cache][eviction]") {
  const std::pair<std::string, uint64_t> good[] = {
      {"0", 0},
      {"none", 0},
      {"1", 1},
      {"4096", 4096},
      {"1K", 1024},
      {"1k", 1024},
      {"3M", uint64_t{3} << 20},
      {"20G", uint64_t{20} << 30},
      {"2T", uint64_t{2} << 40},
      {"18446744073709551615", UINT64_MAX},
      {"16777215T", uint64_t{16777215} << 40},
  };
  for (const auto& [text, bytes] : good) {
    CATCH_CAPTURE(text);
    auto parsed = ParseDataCacheLimit(text);
    CATCH_REQUIRE(parsed.ok());
    CATCH_CHECK(*parsed == bytes);
  }
  for (const std::string bad : {"", "G", "-1", "1.5G", "20GB", "20 G", " 20G", "20P", "off", "NONE",
                                "18446744073709551616", "16777216T"}) {
    CATCH_CAPTURE(bad);
    auto parsed = ParseDataCacheLimit(bad);
    CATCH_REQUIRE_FALSE(parsed.ok());
    CATCH_CHECK(parsed.status().code() == Status::Code::kInvalidArgument);
    CATCH_CHECK(parsed.status().message().find("'" + bad + "'") == 0);
  }
  CATCH_CHECK(DescribeBytes(512) == "512 bytes");
  CATCH_CHECK(DescribeBytes(uint64_t{20} << 30) == "20.0 GiB");
}

}  // namespace hetps
