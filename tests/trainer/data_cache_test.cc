// The on-disk cache of served data (trainer/data_cache.h) under a trainer's DataFetcher, against a
// scheduler that serves its data on a thread of the test, through real sockets on 127.0.0.1: a
// trainer started again reads from the cache what an earlier start received and asks the scheduler
// only for the rest (the scheduler's summary counts the requests it answered); a damaged, cut
// short or foreign piece is discarded and its samples fetched again; another data set never reads
// the cache; a write that crashes at any step leaves nothing that is later trusted; the cache stays
// within its limit by evicting whole data sets, least recently used first, never one in use.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/control_channel.h"
#include "scheduler/scheduler.h"
#include "tests/checkpoint/fault_injection_file_system.h"
#include "tests/support/temp_dir.h"
#include "trainer/data_cache.h"
#include "trainer/data_fetcher.h"

namespace hetps {
namespace {

using std::chrono::seconds;
using testing::TempDir;

constexpr int64_t kWidth = 100000;  // bytes per sample: 41 samples fill a 4 MiB reply
constexpr int64_t kTrainSamples = 100;
constexpr int64_t kTestSamples = 7;
constexpr uint64_t kSampleBytes = kWidth + 8;  // and an int64 label

// A split of `samples` samples of `width` bytes each: byte j of sample i is (i * step + j) % 251;
// label i % 3.
std::shared_ptr<HostDataset> SmallSplit(int64_t samples, int64_t width, int64_t step = 7) {
  auto data = std::make_shared<HostDataset>();
  data->samples = samples;
  data->sample_shape = {width};
  data->features.resize(static_cast<size_t>(samples * width));
  for (int64_t i = 0; i < samples * width; ++i)
    data->features[i] = static_cast<uint8_t>(((i / width) * step + i % width) % 251);
  for (int64_t i = 0; i < samples; ++i) data->class_targets.push_back(i % 3);
  data->classes = 3;
  data->divide_by = 255;
  return data;
}

// A scheduler that serves `train` and `test`, running on a thread until Stop().
class ServingScheduler {
 public:
  ServingScheduler(zmq::context_t& context, std::shared_ptr<HostDataset> train,
                   std::shared_ptr<HostDataset> test) {
    SchedulerOptions options;
    options.job.listen = "tcp://127.0.0.1:*";
    options.job.trainers = 8;  // each start of a trainer joins afresh
    options.job.data.serve = true;
    options.progress_out = nullptr;
    options.train_data = std::move(train);
    options.test_data = std::move(test);
    options.stop = &stop_;
    scheduler_ = std::make_unique<Scheduler>(context, options);
    CATCH_REQUIRE(scheduler_->Start().ok());
    loop_ = std::thread([this] { (void)scheduler_->Run(); });
  }
  ~ServingScheduler() { Stop(); }

  const std::string& endpoint() const { return scheduler_->endpoint(); }
  // Ends the job; its summary.
  const RunSummary& Stop() {
    stop_ = true;
    if (loop_.joinable()) loop_.join();
    return scheduler_->summary();
  }

 private:
  std::atomic<bool> stop_{false};
  std::unique_ptr<Scheduler> scheduler_;
  std::thread loop_;
};

// One start of a trainer without the data: joins the scheduler and creates its DataFetcher, which
// reads the cache under `cache_root` (empty: none).
struct ServedTrainer {
  ServedTrainer(zmq::context_t& context, const std::string& scheduler, const std::string& cache_root,
                FileSystem* fs = nullptr) {
    ControlChannel::Options control_options;
    control_options.scheduler = scheduler;
    control = std::make_unique<ControlChannel>(context, control_options, &sender);
    ControlChannel::JoinInfo info;
    info.role = wire::Role::Trainer;
    info.device = "cpu";
    auto accepted = control->Join(info);
    CATCH_REQUIRE(accepted.ok());
    const wire::DataLayout* layout = accepted->body<wire::JoinAccepted>()->job()->served();
    CATCH_REQUIRE(layout != nullptr);
    DataFetcher::Options options;
    options.request_timeout = std::chrono::milliseconds(5000);
    options.cache_root = cache_root;
    options.fs = fs;
    auto created = DataFetcher::Create(*layout, control.get(), &sender, options);
    CATCH_REQUIRE(created.ok());
    fetcher = std::move(*created);
  }

  Sender sender{wire::Role::Trainer};
  std::unique_ptr<ControlChannel> control;
  std::unique_ptr<DataFetcher> fetcher;
};

// The samples of `got` are those of `want`, byte for byte, labels too.
void CheckSameData(const HostDataset& got, const HostDataset& want) {
  CATCH_REQUIRE(got.samples == want.samples);
  const size_t bytes = want.sample_bytes();
  int64_t differing = -1;
  for (int64_t i = 0; i < want.samples && differing < 0; ++i) {
    if (std::memcmp(got.features.data() + i * bytes, want.features.data() + i * bytes, bytes) != 0 ||
        got.class_targets[i] != want.class_targets[i]) {
      differing = i;
    }
  }
  CATCH_INFO("the first sample that differs (-1: none)");
  CATCH_CHECK(differing == -1);
}

std::vector<std::string> Pieces(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// The first name in `dir` that starts with `prefix`.
std::string PieceStartingWith(const std::string& dir, const std::string& prefix) {
  for (const std::string& name : Pieces(dir)) {
    if (name.rfind(prefix, 0) == 0) return dir + "/" + name;
  }
  CATCH_FAIL("no piece " << prefix << "* in " << dir);
  return "";
}

// The pid of a process that has ended (a child, reaped).
pid_t EndedProcess() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

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
  const std::vector<std::string> names = Pieces(dir);
  return std::count_if(names.begin(), names.end(),
                       [](const std::string& name) { return name.find(".piece") != std::string::npos; });
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
    "A trainer started again reads the served data from its cache and asks the scheduler only for the rest",
    "[trainer][data][cache]") {
  TempDir cache("data-cache");
  zmq::context_t context(1);
  auto train = SmallSplit(kTrainSamples, kWidth);
  auto test = SmallSplit(kTestSamples, kWidth);
  ServingScheduler scheduler(context, train, test);
  std::string dir;
  {
    // The first start trains the first 60 samples (41 + 19 in two replies) and holds the test split.
    ServedTrainer first(context, scheduler.endpoint(), cache.path());
    CATCH_CHECK(first.fetcher->cached(DatasetSplit::kTrain).samples == 0);
    std::vector<int64_t> some(60);
    for (int64_t i = 0; i < 60; ++i) some[i] = i;
    CATCH_REQUIRE(first.fetcher->Ensure(DatasetSplit::kTrain, some.data(), some.size()).ok());
    CATCH_REQUIRE(first.fetcher->EnsureAll(DatasetSplit::kTest).ok());
    CATCH_CHECK(first.fetcher->requests() == 3);
    dir = first.fetcher->cache_dir();
  }
  CATCH_CHECK(dir.rfind(cache.path() + "/crc32-", 0) == 0);
  // Three pieces and the data set's stamp of its last use.
  const std::vector<std::string> names = Pieces(dir);
  CATCH_CHECK(names.size() == 4);
  CATCH_CHECK(CountPieces(dir) == 3);
  CATCH_CHECK(std::count(names.begin(), names.end(), kDataSetStampName) == 1);
  for (const std::string& name : names) CATCH_CHECK(name.find(".tmp-") == std::string::npos);

  // The second start reads those 67 samples from disk and asks for the 40 it never had: one reply.
  ServedTrainer second(context, scheduler.endpoint(), cache.path());
  CATCH_CHECK(second.fetcher->cached(DatasetSplit::kTrain).samples == 60);
  CATCH_CHECK(second.fetcher->cached(DatasetSplit::kTest).samples == kTestSamples);
  CATCH_CHECK(second.fetcher->cached(DatasetSplit::kTrain).discarded == 0);
  CATCH_REQUIRE(second.fetcher->EnsureAll(DatasetSplit::kTest).ok());
  CATCH_REQUIRE(second.fetcher->EnsureAll(DatasetSplit::kTrain).ok());
  CATCH_CHECK(second.fetcher->requests() == 1);
  CheckSameData(*second.fetcher->train(), *train);
  CheckSameData(*second.fetcher->test(), *test);

  // A third start has everything on disk and sends no request at all.
  ServedTrainer third(context, scheduler.endpoint(), cache.path());
  CATCH_REQUIRE(third.fetcher->EnsureAll(DatasetSplit::kTest).ok());
  CATCH_REQUIRE(third.fetcher->EnsureAll(DatasetSplit::kTrain).ok());
  CATCH_CHECK(third.fetcher->requests() == 0);
  CheckSameData(*third.fetcher->train(), *train);

  // Without a cache every start asks for everything.
  ServedTrainer uncached(context, scheduler.endpoint(), "");
  CATCH_CHECK(uncached.fetcher->cache_dir().empty());
  CATCH_REQUIRE(uncached.fetcher->EnsureAll(DatasetSplit::kTrain).ok());
  CATCH_CHECK(uncached.fetcher->requests() == 3);

  // The scheduler's own count: every sample once to the cached starts, and the uncached one's.
  const RunSummary& summary = scheduler.Stop();
  CATCH_CHECK(summary.served_requests == 3 + 1 + 3);
  CATCH_CHECK(summary.served_bytes == (kTrainSamples + kTestSamples + kTrainSamples) * kSampleBytes);
}

CATCH_TEST_CASE(
    "A damaged, cut short or misplaced cache piece is discarded and its samples are fetched again",
    "[trainer][data][cache]") {
  TempDir cache("data-cache");
  zmq::context_t context(1);
  auto train = SmallSplit(kTrainSamples, kWidth);
  auto test = SmallSplit(kTestSamples, kWidth);
  ServingScheduler scheduler(context, train, test);
  std::string dir;
  {
    ServedTrainer first(context, scheduler.endpoint(), cache.path());
    CATCH_REQUIRE(first.fetcher->EnsureAll(DatasetSplit::kTrain).ok());  // pieces of 41, 41 and 18
    CATCH_REQUIRE(first.fetcher->EnsureAll(DatasetSplit::kTest).ok());
    CATCH_CHECK(first.fetcher->requests() == 4);
    dir = first.fetcher->cache_dir();
  }
  // One byte of a sample changed, as a failing disk would.
  const std::string damaged = PieceStartingWith(dir, "train-0-41-");
  {
    std::fstream file(damaged, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(20 * kWidth);
    const char byte = static_cast<char>(file.get());
    file.seekp(20 * kWidth);
    file.put(static_cast<char>(byte ^ 0x5a));
  }
  // Cut short, as a copy that ran out of disk would be.
  const std::string cut = PieceStartingWith(dir, "train-41-41-");
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) / 2);
  // The test split's piece under a training piece's name.
  const std::string misplaced = dir + "/train-90-7-00000000.piece";
  std::filesystem::copy_file(PieceStartingWith(dir, "test-"), misplaced);
  // A write that a crashed process did not finish, and one that a running one is still doing.
  const std::string abandoned =
      dir + "/train-82-18-0badf00d.piece.tmp-" + std::to_string(EndedProcess()) + "-0";
  const std::string in_progress =
      dir + "/train-82-18-0badf00d.piece.tmp-" + std::to_string(::getpid()) + "-9";
  std::ofstream(abandoned) << "half a piece";
  std::ofstream(in_progress) << "half a piece";

  ServedTrainer second(context, scheduler.endpoint(), cache.path());
  const DataCache::LoadCounts read = second.fetcher->cached(DatasetSplit::kTrain);
  CATCH_CHECK(read.discarded == 3);
  CATCH_CHECK(read.samples == 18);
  CATCH_CHECK(second.fetcher->cached(DatasetSplit::kTest).samples == kTestSamples);
  CATCH_CHECK_FALSE(std::filesystem::exists(damaged));
  CATCH_CHECK_FALSE(std::filesystem::exists(cut));
  CATCH_CHECK_FALSE(std::filesystem::exists(misplaced));
  CATCH_CHECK_FALSE(std::filesystem::exists(abandoned));
  CATCH_CHECK(std::filesystem::exists(in_progress));
  // The 82 samples of the two discarded pieces come again, in two replies.
  CATCH_REQUIRE(second.fetcher->EnsureAll(DatasetSplit::kTrain).ok());
  CATCH_CHECK(second.fetcher->requests() == 2);
  CheckSameData(*second.fetcher->train(), *train);

  // They are cached again: the next start reads all of it.
  ServedTrainer third(context, scheduler.endpoint(), cache.path());
  CATCH_CHECK(third.fetcher->cached(DatasetSplit::kTrain).samples == kTrainSamples);
  CATCH_CHECK(third.fetcher->cached(DatasetSplit::kTrain).discarded == 0);
  CATCH_REQUIRE(third.fetcher->EnsureAll(DatasetSplit::kTrain).ok());
  CATCH_CHECK(third.fetcher->requests() == 0);
  CheckSameData(*third.fetcher->train(), *train);
  CATCH_CHECK(scheduler.Stop().served_requests == 4 + 2);
}

CATCH_TEST_CASE("Another data set never reads the cache of the first, even from a piece copied into its own",
                "[trainer][data][cache]") {
  TempDir cache("data-cache");
  zmq::context_t context(1);
  // The same shapes and labels; other bytes.
  auto train_a = SmallSplit(kTrainSamples, kWidth, 7);
  auto train_b = SmallSplit(kTrainSamples, kWidth, 11);
  auto test = SmallSplit(kTestSamples, kWidth);
  ServingScheduler a(context, train_a, test);
  ServingScheduler b(context, train_b, test);
  std::string dir_a;
  {
    ServedTrainer trainer(context, a.endpoint(), cache.path());
    CATCH_REQUIRE(trainer.fetcher->EnsureAll(DatasetSplit::kTrain).ok());
    dir_a = trainer.fetcher->cache_dir();
  }
  std::string dir_b;
  {
    ServedTrainer trainer(context, b.endpoint(), cache.path());
    dir_b = trainer.fetcher->cache_dir();
    CATCH_CHECK(dir_b != dir_a);
    CATCH_CHECK(trainer.fetcher->cached(DatasetSplit::kTrain).samples == 0);
    CATCH_REQUIRE(trainer.fetcher->EnsureAll(DatasetSplit::kTrain).ok());
    CATCH_CHECK(trainer.fetcher->requests() == 3);
    CheckSameData(*trainer.fetcher->train(), *train_b);
  }
  // A piece of A's data set under a name that sorts before B's own pieces.
  std::filesystem::copy_file(PieceStartingWith(dir_a, "train-0-41-"), dir_b + "/train-0-41-.piece");
  ServedTrainer again(context, b.endpoint(), cache.path());
  CATCH_CHECK(again.fetcher->cached(DatasetSplit::kTrain).discarded == 1);
  CATCH_CHECK(again.fetcher->cached(DatasetSplit::kTrain).samples == kTrainSamples);
  CATCH_REQUIRE(again.fetcher->EnsureAll(DatasetSplit::kTrain).ok());
  CATCH_CHECK(again.fetcher->requests() == 0);
  CheckSameData(*again.fetcher->train(), *train_b);
  CATCH_CHECK(b.Stop().served_requests == 3);
  CATCH_CHECK(a.Stop().served_requests == 3);
}

CATCH_TEST_CASE("A cache piece whose write crashes at any step is never read back damaged",
                "[trainer][data][cache]") {
  auto data = SmallSplit(10, 16);
  const std::vector<uint64_t> indices = {3, 1, 4};
  std::vector<uint8_t> features, targets;
  for (uint64_t i : indices) {
    features.insert(features.end(), data->features.begin() + i * 16, data->features.begin() + (i + 1) * 16);
    const int64_t label = data->class_targets[i];
    const auto* bytes = reinterpret_cast<const uint8_t*>(&label);
    targets.insert(targets.end(), bytes, bytes + 8);
  }
  const std::string checksum = "crc32:0123456789abcdef";
  for (bool power_loss : {false, true}) {
    for (int64_t crash_at = 0; crash_at <= 8; ++crash_at) {
      CATCH_CAPTURE(power_loss, crash_at);
      TempDir root("data-cache-crash");
      testing::FaultInjectionFileSystem fs(PosixFileSystem());
      auto cache = DataCache::Open(fs, root.path(), checksum);
      CATCH_REQUIRE(cache.ok());
      fs.ResetCount();
      fs.CrashAtOperation(crash_at);
      const Status stored = (*cache)->Store(DatasetSplit::kTrain, indices, features.data(), features.size(),
                                            targets.data(), targets.size());
      if (power_loss) CATCH_REQUIRE(fs.DropUnsyncedChanges().ok());
      fs.CrashAtOperation(-1);

      auto reopened = DataCache::Open(PosixFileSystem(), root.path(), checksum);
      CATCH_REQUIRE(reopened.ok());
      auto loaded = SmallSplit(10, 16);
      std::fill(loaded->features.begin(), loaded->features.end(), 0);
      std::fill(loaded->class_targets.begin(), loaded->class_targets.end(), 0);
      std::vector<bool> present(10, false);
      const DataCache::LoadCounts counts = (*reopened)->Load(DatasetSplit::kTrain, *loaded, present);
      // Either the whole piece or none of it; whatever is read is the data written.
      CATCH_CHECK((counts.samples == 0 || counts.samples == 3));
      if (stored.ok() && !power_loss) CATCH_CHECK(counts.samples == 3);
      for (uint64_t i = 0; i < 10; ++i) {
        if (!present[i]) continue;
        CATCH_CHECK(std::memcmp(loaded->features.data() + i * 16, data->features.data() + i * 16, 16) == 0);
        CATCH_CHECK(loaded->class_targets[i] == data->class_targets[i]);
      }
    }
  }
}

CATCH_TEST_CASE("The cache's directory is named by hex digits only, under XDG_CACHE_HOME or ~/.cache",
                "[trainer][data][cache]") {
  CATCH_CHECK(DefaultDataCacheRoot("/x/cache", "/home/u") == "/x/cache/hetps/data");
  CATCH_CHECK(DefaultDataCacheRoot("relative", "/home/u") == "/home/u/.cache/hetps/data");
  CATCH_CHECK(DefaultDataCacheRoot(nullptr, "/home/u") == "/home/u/.cache/hetps/data");
  CATCH_CHECK(DefaultDataCacheRoot(nullptr, nullptr).empty());

  TempDir root("data-cache-names");
  for (const std::string bad : {"crc32:../../../etc/pas", "crc32:0123456789ABCDEF", "crc32:0123",
                                "md5:0123456789abcdef", "crc32:0123456789abcdef/"}) {
    auto opened = DataCache::Open(PosixFileSystem(), root.path(), bad);
    CATCH_CAPTURE(bad);
    CATCH_REQUIRE_FALSE(opened.ok());
    CATCH_CHECK(opened.status().message().find("is not crc32: and 16 hex digits") != std::string::npos);
  }
  CATCH_CHECK(Pieces(root.path()).empty());
  auto opened = DataCache::Open(PosixFileSystem(), root / "a/b", "crc32:0123456789abcdef");
  CATCH_REQUIRE(opened.ok());
  CATCH_CHECK((*opened)->dir() == root / "a/b/crc32-0123456789abcdef");
  CATCH_CHECK(std::filesystem::is_directory((*opened)->dir()));
}

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
  auto data = SmallSplit(24, 16);
  std::vector<bool> present(24, false);
  CATCH_CHECK((*reopened)->Load(DatasetSplit::kTrain, *data, present).samples == 15);
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
