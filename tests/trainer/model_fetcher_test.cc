// A trainer's side of the served model file, against a real scheduler on a thread of the test
// process: the file arrives in pieces of the job's size into the cache directory, a second fetch
// takes the cached copy without asking, a damaged cached copy is fetched again, corrupted pieces
// are asked for again, and every failure names the file, the scheduler and the problem.
#include "trainer/model_fetcher.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>

#include "checkpoint/checksum.h"
#include "scheduler/scheduler.h"
#include "tests/support/temp_dir.h"

namespace hetps {
namespace {

std::string RandomBytes(size_t size, uint32_t seed) {
  std::mt19937 random(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(random() & 0xff);
  return bytes;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The names in `dir`, sorted.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A scheduler of a job whose model is the file `model_file` (empty: the built-in default, cnn) on a thread
// of its own, and a trainer's control channel joined to it.
class Cluster {
 public:
  Cluster(const std::string& model_file, int corrupt_pieces = 0) {
    SchedulerOptions options;
    options.job.listen = "tcp://127.0.0.1:*";
    options.job.trainers = 1;
    if (!model_file.empty()) {
      options.job.model = "torchscript";
      options.job.model_file = model_file;
    }
    // Pieces of just under 1 MiB: a file of a few MiB comes in several.
    options.job.max_message_bytes = 1u << 20;
    options.job.partition_bytes = 1u << 19;
    options.corrupt_served_replies = corrupt_pieces;
    options.progress_out = nullptr;
    options.stop = &stop_;
    scheduler_ = std::make_unique<Scheduler>(context_, options);
  }
  ~Cluster() {
    control_.reset();
    stop_ = true;
    if (loop_.joinable()) loop_.join();
  }

  // Starts the scheduler and joins it as a trainer; the job's announcement of its model file.
  AnnouncedModelFile Start() {
    CATCH_REQUIRE(scheduler_->Start().ok());
    loop_ = std::thread([this] { (void)scheduler_->Run(); });
    ControlChannel::Options control_options;
    control_options.scheduler = scheduler_->endpoint();
    control_ = std::make_unique<ControlChannel>(context_, control_options, &sender_);
    ControlChannel::JoinInfo info;
    info.role = wire::Role::Trainer;
    info.device = "cpu";
    auto accepted = control_->Join(info);
    CATCH_REQUIRE(accepted.ok());
    const wire::TrainerJob* job = accepted->body<wire::JoinAccepted>()->job();
    AnnouncedModelFile file;
    if (job->model_file() != nullptr) file.path = job->model_file()->str();
    if (job->model_checksum() != nullptr) file.checksum = job->model_checksum()->str();
    file.bytes = job->model_file_bytes();
    file.piece_bytes = job->model_piece_bytes();
    return file;
  }

  ModelFetcher Fetcher(const std::string& cache_dir) {
    ModelFetcher::Options options;
    options.cache_dir = cache_dir;
    options.request_timeout = std::chrono::seconds(10);
    return ModelFetcher(control_.get(), &sender_, options);
  }
  const std::string& endpoint() const { return scheduler_->endpoint(); }
  RefusalTally refusals() const { return scheduler_->refusals(); }

 private:
  zmq::context_t context_{1};
  std::atomic<bool> stop_{false};
  std::unique_ptr<Scheduler> scheduler_;
  std::thread loop_;
  Sender sender_{wire::Role::Trainer};
  std::unique_ptr<ControlChannel> control_;
};

bool Says(const Status& status, const std::string& text) {
  CATCH_INFO(status.message());
  return status.message().find(text) != std::string::npos;
}

}  // namespace

CATCH_TEST_CASE(
    "A trainer without the model file fetches it in pieces into its cache; the next start uses the copy",
    "[trainer][model]") {
  testing::TempDir dir("model_fetcher");
  const std::string path = dir / "net.pt";
  const std::string bytes = RandomBytes((5u << 19) + 77, 1);  // 2.5 MiB and a bit: 3 pieces
  WriteFile(path, bytes);
  Cluster cluster(path);
  const AnnouncedModelFile file = cluster.Start();
  CATCH_REQUIRE(file.bytes == bytes.size());
  std::filesystem::remove(path);

  const std::string cache = dir / "cache/models";  // made on the first fetch
  const std::string expected = cache + "/" + file.checksum.substr(6) + ".pt";
  ModelFetcher first = cluster.Fetcher(cache);
  auto fetched = first.Fetch(file);
  CATCH_REQUIRE(fetched.ok());
  CATCH_CHECK(*fetched == expected);
  CATCH_CHECK_FALSE(first.used_cache());
  CATCH_CHECK(first.requests() == 3);
  CATCH_CHECK(first.bytes_received() == bytes.size());
  CATCH_CHECK(ReadFile(expected) == bytes);
  CATCH_CHECK(Entries(cache) == std::vector<std::string>{file.checksum.substr(6) + ".pt"});

  ModelFetcher second = cluster.Fetcher(cache);
  auto cached = second.Fetch(file);
  CATCH_REQUIRE(cached.ok());
  CATCH_CHECK(*cached == expected);
  CATCH_CHECK(second.used_cache());
  CATCH_CHECK(second.requests() == 0);

  // A cached copy that was changed since is not trusted: the file is fetched again over it.
  std::string damaged = bytes;
  damaged[1000] ^= 1;
  WriteFile(expected, damaged);
  ModelFetcher third = cluster.Fetcher(cache);
  auto again = third.Fetch(file);
  CATCH_REQUIRE(again.ok());
  CATCH_CHECK_FALSE(third.used_cache());
  CATCH_CHECK(third.requests() == 3);
  CATCH_CHECK(ReadFile(expected) == bytes);
  CATCH_CHECK(cluster.refusals().total() == 0);
}

CATCH_TEST_CASE(
    "Corrupted pieces of the model file are asked for again; a link that always corrupts them fails",
    "[trainer][model]") {
  testing::TempDir dir("model_fetcher");
  const std::string path = dir / "net.pt";
  const std::string bytes = RandomBytes((5u << 19) + 77, 2);
  WriteFile(path, bytes);
  {
    Cluster cluster(path, /*corrupt_pieces=*/2);
    const AnnouncedModelFile file = cluster.Start();
    ModelFetcher fetcher = cluster.Fetcher(dir / "cache");
    auto fetched = fetcher.Fetch(file);
    CATCH_REQUIRE(fetched.ok());
    CATCH_CHECK(fetcher.checksum_failures() == 2);
    CATCH_CHECK(fetcher.requests() == 5);
    CATCH_CHECK(ReadFile(*fetched) == bytes);
  }
  {
    Cluster cluster(path, /*corrupt_pieces=*/5);
    const AnnouncedModelFile file = cluster.Start();
    ModelFetcher fetcher = cluster.Fetcher(dir / "other-cache");
    auto fetched = fetcher.Fetch(file);
    CATCH_REQUIRE_FALSE(fetched.ok());
    CATCH_CHECK(fetched.status().code() == Status::Code::kInternal);
    CATCH_CHECK(
        Says(fetched.status(), "the model file " + path + " from the scheduler at " + cluster.endpoint()));
    CATCH_CHECK(Says(fetched.status(), "failed its checksum 5 times in a row"));
    CATCH_CHECK(fetcher.checksum_failures() == 5);
    // Nothing is left behind, not even the partial download.
    CATCH_CHECK(Entries(dir / "other-cache").empty());
  }
}

CATCH_TEST_CASE("Fetching the model file fails naming the file, the scheduler and the problem",
                "[trainer][model]") {
  testing::TempDir dir("model_fetcher");
  const std::string path = dir / "net.pt";
  const std::string bytes = RandomBytes(3000, 3);
  WriteFile(path, bytes);
  Cluster cluster(path);
  const AnnouncedModelFile file = cluster.Start();

  // A cache directory that cannot be made: a regular file stands in its way (as root, a directory
  // without write permission would still be writable).
  WriteFile(dir / "a-file", "x");
  ModelFetcher blocked = cluster.Fetcher(dir / "a-file/models");
  auto unwritable = blocked.Fetch(file);
  CATCH_REQUIRE_FALSE(unwritable.ok());
  CATCH_CHECK(unwritable.status().code() == Status::Code::kIoError);
  CATCH_CHECK(Says(unwritable.status(), "cannot keep the model file " + path + " from the scheduler at " +
                                            cluster.endpoint() + " in the cache directory " +
                                            dir / "a-file/models" + " (choose another with --model-cache)"));
  CATCH_CHECK(blocked.requests() == 0);

  // The scheduler refuses a request beyond its file (an announcement that does not match it).
  AnnouncedModelFile longer = file;
  longer.bytes = file.bytes + 10;
  ModelFetcher refused = cluster.Fetcher(dir / "cache");
  auto beyond = refused.Fetch(longer);
  CATCH_REQUIRE_FALSE(beyond.ok());
  CATCH_CHECK(beyond.status().code() == Status::Code::kFailedPrecondition);
  CATCH_CHECK(Says(beyond.status(), "fetching the model file " + path + " from the scheduler at " +
                                        cluster.endpoint() + ": the scheduler refused"));
  CATCH_CHECK(Says(beyond.status(), "beyond the end of the model file"));
  CATCH_CHECK(cluster.refusals().of(Refusal::Invalid) == 1);

  // Whole, the bytes have another checksum than the one announced.
  AnnouncedModelFile other = file;
  other.checksum = "crc32:00000000";
  ModelFetcher mismatch = cluster.Fetcher(dir / "cache");
  auto differs = mismatch.Fetch(other);
  CATCH_REQUIRE_FALSE(differs.ok());
  CATCH_CHECK(Says(differs.status(), "has the checksum " + file.checksum +
                                         " once whole, not the crc32:00000000 the scheduler announced"));
  CATCH_CHECK(Entries(dir / "cache").empty());

  // The checksum becomes a file name: anything but crc32:xxxxxxxx is refused before it is used.
  AnnouncedModelFile escaping = file;
  escaping.checksum = "crc32:../../x";
  auto bad_name = cluster.Fetcher(dir / "cache").Fetch(escaping);
  CATCH_REQUIRE_FALSE(bad_name.ok());
  CATCH_CHECK(bad_name.status().code() == Status::Code::kProtocol);
  AnnouncedModelFile no_pieces = file;
  no_pieces.piece_bytes = 0;
  CATCH_CHECK(cluster.Fetcher(dir / "cache").Fetch(no_pieces).status().code() == Status::Code::kProtocol);
}

CATCH_TEST_CASE("A trainer of a job without a model file is refused the scheduler's file",
                "[trainer][model]") {
  testing::TempDir dir("model_fetcher");
  Cluster cluster("");
  AnnouncedModelFile file = cluster.Start();
  CATCH_CHECK(file.bytes == 0);
  file.path = "/elsewhere/net.pt";
  file.checksum = "crc32:1a2b3c4d";
  file.bytes = 100;
  file.piece_bytes = 100;
  auto fetched = cluster.Fetcher(dir / "cache").Fetch(file);
  CATCH_REQUIRE_FALSE(fetched.ok());
  CATCH_CHECK(Says(fetched.status(),
                   "the scheduler refused ModelFilePiece request: this job trains the built-in "
                   "model cnn: it has no model file to send"));
  CATCH_CHECK(cluster.refusals().of(Refusal::Unexpected) == 1);
}

CATCH_TEST_CASE("Fetched model files are kept under XDG_CACHE_HOME, else HOME, else the working directory",
                "[trainer][model]") {
  CATCH_CHECK(DefaultModelCacheDir("/var/cache/me", "/home/me") == "/var/cache/me/hetps/models");
  // XDG's rule: a relative XDG_CACHE_HOME is ignored.
  CATCH_CHECK(DefaultModelCacheDir("relative", "/home/me") == "/home/me/.cache/hetps/models");
  CATCH_CHECK(DefaultModelCacheDir(nullptr, "/home/me") == "/home/me/.cache/hetps/models");
  CATCH_CHECK(DefaultModelCacheDir(nullptr, nullptr) == "hetps-cache/models");
}

}  // namespace hetps
