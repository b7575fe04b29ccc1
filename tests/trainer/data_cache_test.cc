// The on-disk cache of served data (trainer/data_cache.h) under a trainer's DataFetcher, against a
// scheduler that serves its data on a thread of the test, through real sockets on 127.0.0.1: a
// trainer started again reads from the cache what an earlier start received and asks the scheduler
// only for the rest (the scheduler's summary counts the requests it answered); a damaged, cut
// short or foreign piece is discarded and its samples fetched again; another data set never reads
// the cache; a write that crashes at any step leaves nothing that is later trusted. Its limit:
// data_cache_eviction_test.cc.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/control_channel.h"
#include "scheduler/scheduler.h"
#include "tests/checkpoint/fault_injection_file_system.h"
#include "tests/support/scheduler_thread.h"
#include "tests/support/temp_dir.h"
#include "trainer/data_cache.h"
#include "trainer/data_fetcher.h"

namespace hetps {
namespace {

using std::chrono::seconds;
using testing::SchedulerThread;
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

// A job that serves `train` and `test` to trainers that join, each start of a trainer afresh.
SchedulerOptions ServingJob(std::shared_ptr<HostDataset> train, std::shared_ptr<HostDataset> test) {
  SchedulerOptions options;
  options.job.listen = "tcp://127.0.0.1:*";
  options.job.trainers = 8;
  options.job.data.serve = true;
  options.train_data = std::move(train);
  options.test_data = std::move(test);
  return options;
}

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

}  // namespace

CATCH_TEST_CASE(
    "A trainer started again reads the served data from its cache and asks the scheduler only for the rest",
    "[trainer][data][cache]") {
  TempDir cache("data-cache");
  zmq::context_t context(1);
  auto train = SmallSplit(kTrainSamples, kWidth);
  auto test = SmallSplit(kTestSamples, kWidth);
  SchedulerThread scheduler(ServingJob(train, test));
  CATCH_REQUIRE(scheduler.Start().ok());
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
  CATCH_CHECK(std::count_if(names.begin(), names.end(), [](const std::string& name) {
                return name.find(".piece") != std::string::npos;
              }) == 3);
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
  SchedulerThread scheduler(ServingJob(train, test));
  CATCH_REQUIRE(scheduler.Start().ok());
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
  SchedulerThread a(ServingJob(train_a, test));
  CATCH_REQUIRE(a.Start().ok());
  SchedulerThread b(ServingJob(train_b, test));
  CATCH_REQUIRE(b.Start().ok());
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

}  // namespace hetps
