// The scheduler through real sockets on 127.0.0.1: admission (model signatures, a full job),
// the join timeout, members that stop heartbeating, and the run summary of a finished job.
#include <stdlib.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/transport.h"
#include "tests/support/local_cluster.h"
#include "trainer/trainer.h"

namespace hetps {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::vector<TensorInfo> kModel = {{"w", {4, 4}, wire::DType::F32}, {"b", {4}, wire::DType::F32}};
const std::vector<TensorInfo> kOtherModel = {{"w", {4, 5}, wire::DType::F32}, {"b", {4}, wire::DType::F32}};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A server or trainer that the test drives message by message on its own thread.
class HandMember {
 public:
  HandMember(zmq::context_t& context, const std::string& scheduler, wire::Role role) : sender_(role) {
    ControlChannel::Options options;
    options.scheduler = scheduler;
    options.connect_timeout = seconds(10);
    channel_ = std::make_unique<ControlChannel>(context, options, &sender_);
  }

  Status Join(const std::string& endpoint = "") {
    ControlChannel::JoinInfo info;
    info.role = sender_.role();
    info.endpoint = endpoint;
    info.device = "cpu";
    auto accepted = channel_->Join(info);
    return accepted.ok() ? Status::Ok() : accepted.status();
  }

  Status Register(const std::vector<TensorInfo>& signature) {
    flatbuffers::FlatBufferBuilder fbb(1024);
    auto body = wire::CreateRegisterModel(fbb, SignatureToWire(fbb, signature));
    return channel_->Send(sender_.Seal(fbb, wire::Body::RegisterModel, body.Union()));
  }

  Status Send(wire::Body empty_kind) { return channel_->Send(sender_.MakeEmpty(empty_kind)); }

  // Returns once the scheduler has handled everything this member sent before: it sends a
  // message the scheduler does not serve and waits for the refusal, which the scheduler sends
  // only after handling the earlier messages of this connection, in order.
  Status Barrier() {
    auto reply = channel_->Request(sender_.MakeEmpty(wire::Body::Ack), wire::Body::HeartbeatAck, seconds(10));
    if (!reply.ok() && Contains(reply.status().message(), "not a request the scheduler serves")) {
      return Status::Ok();
    }
    return Status::Internal("no refusal for the barrier message: " + reply.status().ToString());
  }

  // Takes messages from the inbox until one of `kind` arrives.
  std::optional<Message> WaitFor(wire::Body kind, milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      channel_->WaitForInbox(milliseconds(50));
      if (!channel_->Check().ok()) return std::nullopt;
      while (auto message = channel_->TakeInbox()) {
        if (message->kind() == kind) return message;
      }
    }
    return std::nullopt;
  }

  // Closes the connection as a crashed process would: no heartbeat, no goodbye.
  void Vanish() { channel_.reset(); }

  uint32_t rank() const { return sender_.rank(); }

 private:
  Sender sender_;
  std::unique_ptr<ControlChannel> channel_;
};

// A job whose members are declared dead after 600 ms without a heartbeat.
JobOptions QuickDeathJob(uint32_t servers, uint32_t trainers) {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, servers, trainers);
  job.heartbeat_interval_ms = 200;
  job.heartbeat_timeout_ms = 600;
  return job;
}

// A scheduler alone on a thread, for tests that bring their own (fake) servers.
class SchedulerThread {
 public:
  SchedulerThread(zmq::context_t& context, JobOptions job) {
    SchedulerOptions options;
    options.job = std::move(job);
    options.progress_out = nullptr;
    options.stop = &stop_;
    scheduler_ = std::make_unique<Scheduler>(context, options);
  }
  ~SchedulerThread() {
    stop_.store(true);
    if (result_.valid()) result_.wait();
  }

  Status Start() {
    HETPS_RETURN_IF_ERROR(scheduler_->Start());
    Scheduler* scheduler = scheduler_.get();
    result_ = std::async(std::launch::async, [scheduler] { return scheduler->Run(); });
    return Status::Ok();
  }
  const std::string& endpoint() const { return scheduler_->endpoint(); }
  bool Finished() { return result_.wait_for(milliseconds(0)) == std::future_status::ready; }
  Status Result() { return result_.get(); }

 private:
  std::atomic<bool> stop_{false};
  std::unique_ptr<Scheduler> scheduler_;
  std::future<Status> result_;
};

// A fresh directory under the system's temporary directory, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hetps-scheduler-test-XXXXXX");
    CATCH_REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& root() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

CATCH_TEST_CASE("A trainer whose model differs is refused naming the tensor, and another takes its place",
                "[scheduler][admission]") {
  testing::LocalCluster cluster(testing::TestJob("mlp", ConsistencyMode::kSync, 1, 2));
  CATCH_REQUIRE(cluster.Start().ok());
  HandMember first(cluster.context(), cluster.scheduler_endpoint(), wire::Role::Trainer);
  CATCH_REQUIRE(first.Join().ok());
  CATCH_REQUIRE(first.Register(kModel).ok());
  CATCH_REQUIRE(first.Barrier().ok());

  testing::ScriptedTrainer different(cluster.context(), cluster.scheduler_endpoint());
  Status refused = different.Setup(kOtherModel);
  CATCH_INFO(refused.ToString());
  CATCH_REQUIRE_FALSE(refused.ok());
  CATCH_CHECK(Contains(refused.message(), "differs from trainer 0's"));
  CATCH_CHECK(Contains(refused.message(), "expected w [4, 4] float32, got w [4, 5] float32"));

  // The refused trainer's place (rank 1) is free again, and the job starts with the newcomer.
  testing::ScriptedTrainer replacement(cluster.context(), cluster.scheduler_endpoint());
  auto setup = std::async(std::launch::async, [&] { return replacement.Setup(kModel); });
  auto map = first.WaitFor(wire::Body::ShardMap, milliseconds(30000));
  CATCH_REQUIRE(map.has_value());
  Status joined = setup.get();
  CATCH_INFO(joined.ToString());
  CATCH_REQUIRE(joined.ok());
  CATCH_CHECK(replacement.rank() == 1);
  CATCH_REQUIRE(replacement.map().tensors().size() == 2);
  CATCH_CHECK(replacement.map().tensors()[0].shape == std::vector<int64_t>{4, 4});
  const auto* trainers = map->body<wire::ShardMap>()->trainers();
  CATCH_REQUIRE(trainers != nullptr);
  CATCH_CHECK(std::vector<uint32_t>(trainers->begin(), trainers->end()) == std::vector<uint32_t>{0, 1});
  cluster.Stop();
}

CATCH_TEST_CASE("A trainer beyond the job's max_trainers is refused", "[scheduler][admission]") {
  testing::LocalCluster cluster(testing::TestJob("mlp", ConsistencyMode::kSync, 1, 1));
  CATCH_REQUIRE(cluster.Start().ok());
  auto check_refused = [&cluster](const std::string& expected) {
    HandMember extra(cluster.context(), cluster.scheduler_endpoint(), wire::Role::Trainer);
    const auto start = Clock::now();
    Status refused = extra.Join();
    CATCH_INFO(refused.ToString());
    CATCH_CHECK(refused.code() == Status::Code::kFailedPrecondition);
    CATCH_CHECK(Contains(refused.message(), expected));
    CATCH_CHECK(SecondsSince(start) < 5);
  };

  CATCH_SECTION("while the job gathers its members") {
    HandMember joined_only(cluster.context(), cluster.scheduler_endpoint(), wire::Role::Trainer);
    CATCH_REQUIRE(joined_only.Join().ok());
    check_refused("the job has all the trainers it takes at once (max_trainers: 1)");
  }
  CATCH_SECTION("once the job runs") {
    testing::ScriptedTrainer running(cluster.context(), cluster.scheduler_endpoint());
    Status setup = running.Setup(kModel);
    CATCH_INFO(setup.ToString());
    CATCH_REQUIRE(setup.ok());
    check_refused("the job has all the trainers it takes at once (max_trainers: 1)");
  }
  cluster.Stop();
}

CATCH_TEST_CASE("The job starts when the last server joins after every trainer has registered",
                "[scheduler][admission]") {
  zmq::context_t context(1);
  SchedulerThread scheduler(context, testing::TestJob("mlp", ConsistencyMode::kSync, 1, 1));
  CATCH_REQUIRE(scheduler.Start().ok());
  HandMember trainer(context, scheduler.endpoint(), wire::Role::Trainer);
  CATCH_REQUIRE(trainer.Join().ok());
  CATCH_REQUIRE(trainer.Register(kModel).ok());
  CATCH_REQUIRE(trainer.Barrier().ok());

  HandMember server(context, scheduler.endpoint(), wire::Role::Server);
  CATCH_REQUIRE(server.Join("tcp://127.0.0.1:9").ok());
  auto map = server.WaitFor(wire::Body::ShardMap, milliseconds(5000));
  CATCH_REQUIRE(map.has_value());
  CATCH_CHECK(map->body<wire::ShardMap>()->tensors()->size() == 2);
  // Leave as a server does, so that the scheduler does not wait for a goodbye when it stops.
  CATCH_CHECK(server.Send(wire::Body::Goodbye).ok());
}

CATCH_TEST_CASE("A job whose members do not all join fails after join_timeout_s, counting who came",
                "[scheduler][timeout]") {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 2);
  job.join_timeout_s = 1;
  const auto start = Clock::now();
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  HandMember trainer(cluster.context(), cluster.scheduler_endpoint(), wire::Role::Trainer);
  CATCH_REQUIRE(trainer.Join().ok());
  CATCH_REQUIRE(trainer.Register(kModel).ok());
  CATCH_REQUIRE(trainer.Barrier().ok());

  Status status = cluster.WaitForJob(seconds(15));
  const double waited = SecondsSince(start);
  CATCH_INFO(status.ToString());
  CATCH_REQUIRE_FALSE(status.ok());
  CATCH_CHECK(status.code() != Status::Code::kTimeout);
  CATCH_CHECK(Contains(status.message(),
                       "only 1 of 1 servers and 1 of 2 trainers joined within 1 s (join_timeout_s)"));
  CATCH_CHECK(waited >= 1.0);
  CATCH_CHECK(waited < 8.0);
  CATCH_CHECK_FALSE(cluster.summary().ok);
  CATCH_CHECK(cluster.summary().error == status.message());
  // The server that did join was told why the job ended.
  CATCH_REQUIRE(cluster.server_results().size() == 1);
  CATCH_CHECK(cluster.server_results()[0].code() == Status::Code::kAborted);
  CATCH_CHECK(Contains(cluster.server_results()[0].message(), "join_timeout_s"));
}

CATCH_TEST_CASE("The only trainer vanishing is taken out at once and fails the job",
                "[scheduler][liveness]") {
  testing::LocalCluster cluster(QuickDeathJob(1, 1));
  CATCH_REQUIRE(cluster.Start().ok());
  testing::ScriptedTrainer trainer(cluster.context(), cluster.scheduler_endpoint());
  CATCH_REQUIRE(trainer.Setup(kModel).ok());
  // The trainer's process "crashes": its connections close. (A trainer frozen with its connection
  // open is declared dead after the heartbeat timeout: trainer_dies_test.sh ... STOP.)
  trainer.Vanish();

  Status status = cluster.WaitForJob(seconds(15));
  CATCH_INFO(status.ToString());
  CATCH_REQUIRE_FALSE(status.ok());
  CATCH_CHECK(status.code() != Status::Code::kTimeout);
  CATCH_CHECK(Contains(status.message(), "every trainer has stopped; the last was trainer 0 (cpu on"));
  CATCH_CHECK(Contains(status.message(), "its connection closed"));
  CATCH_REQUIRE(cluster.summary().trainer_details.size() == 1);
  CATCH_CHECK_FALSE(cluster.summary().trainer_details[0].alive);
}

CATCH_TEST_CASE("A server vanishing during training is lost at once and, without checkpoints, fails the job",
                "[scheduler][liveness]") {
  zmq::context_t context(1);
  SchedulerThread scheduler(context, QuickDeathJob(1, 1));
  CATCH_REQUIRE(scheduler.Start().ok());
  HandMember server(context, scheduler.endpoint(), wire::Role::Server);
  CATCH_REQUIRE(server.Join("tcp://127.0.0.1:9").ok());
  testing::ScriptedTrainer trainer(context, scheduler.endpoint());
  auto setup = std::async(std::launch::async, [&] { return trainer.Setup(kModel); });
  CATCH_REQUIRE(server.WaitFor(wire::Body::ShardMap, milliseconds(10000)).has_value());
  CATCH_REQUIRE(server.Send(wire::Body::ShardReady).ok());
  Status joined = setup.get();
  CATCH_INFO(joined.ToString());
  CATCH_REQUIRE(joined.ok());

  // Training has begun. The trainer keeps heartbeating; the server's process "crashes", closing
  // its connection, which the scheduler notices without waiting for the heartbeat timeout.
  server.Vanish();
  const auto silent_since = Clock::now();
  while (!scheduler.Finished() && SecondsSince(silent_since) < 10) {
    std::this_thread::sleep_for(milliseconds(50));
    CATCH_REQUIRE(trainer.control().Check().ok());
  }
  CATCH_REQUIRE(scheduler.Finished());
  Status status = scheduler.Result();
  CATCH_INFO(status.ToString());
  CATCH_REQUIRE_FALSE(status.ok());
  CATCH_CHECK(Contains(status.message(), "server 0 ("));
  CATCH_CHECK(Contains(status.message(), "its connection closed"));
  CATCH_CHECK(Contains(status.message(), "cannot go on without its partitions"));
  // The trainer is told.
  for (const auto told = Clock::now(); !trainer.control().shutdown() && SecondsSince(told) < 5;) {
    trainer.control().WaitForInbox(milliseconds(50));
    CATCH_REQUIRE(trainer.control().Check().ok());
  }
  CATCH_REQUIRE(trainer.control().shutdown().has_value());
  CATCH_CHECK(trainer.control().shutdown()->failed);
  CATCH_CHECK(Contains(trainer.control().shutdown()->reason, "server 0"));
}

CATCH_TEST_CASE("A finished job's run summary has its figures and is written as JSON",
                "[scheduler][summary]") {
  TempDir dir;
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 1);
  job.max_train_samples = 2000;
  job.summary = dir.path("summary.json");
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  auto trainer_run = std::async(std::launch::async, [&cluster] {
    TrainerOptions options;
    options.scheduler = cluster.scheduler_endpoint();
    options.device = "cpu";
    Trainer trainer(cluster.context(), options);
    return trainer.Run();
  });
  Status status = cluster.WaitForJob(seconds(180));
  CATCH_INFO(status.ToString());
  CATCH_REQUIRE(status.ok());
  CATCH_CHECK(trainer_run.get().ok());

  const RunSummary& s = cluster.summary();
  CATCH_CHECK(s.ok);
  CATCH_CHECK(s.mode == "sync");
  CATCH_CHECK(s.model == "mlp");
  CATCH_CHECK(s.servers == 1);
  CATCH_CHECK(s.trainers == 1);
  CATCH_REQUIRE(s.trainer_details.size() == 1);
  const TrainerSummary& t = s.trainer_details[0];
  CATCH_CHECK(t.samples == 2000);
  CATCH_CHECK(t.steps * job.global_batch_size >= 2000);
  CATCH_CHECK(t.alive);
  CATCH_CHECK(s.samples_per_second > 0);
  CATCH_CHECK(s.wall_seconds >= s.train_seconds);
  CATCH_CHECK(s.final_test_accuracy > 0);
  CATCH_CHECK(s.final_test_accuracy <= 1);
  CATCH_CHECK(s.final_test_loss > 0);
  // One trainer in sync mode: one update per step with data; the last epoch ends with one round
  // in which nobody had data, which counts as a step but not as an update.
  CATCH_CHECK(s.weight_version + 1 == t.steps);
  CATCH_REQUIRE_FALSE(s.evaluations.empty());
  const Evaluation& final_eval = s.evaluations.back();
  CATCH_CHECK(final_eval.final);
  CATCH_CHECK(final_eval.test_accuracy == s.final_test_accuracy);
  CATCH_CHECK(final_eval.test_samples == 10000);
  CATCH_CHECK(final_eval.weight_version == s.weight_version);

  const std::string text = s.ToJson();
  const nlohmann::json json = nlohmann::json::parse(text);
  for (const char* key : {"mode", "servers", "trainers", "steps", "samples_per_second", "wall_seconds",
                          "final_test_loss", "final_test_accuracy", "weight_version"}) {
    CATCH_INFO(key);
    CATCH_CHECK(json.contains(key));
  }
  CATCH_CHECK(json["status"] == "ok");
  CATCH_CHECK(json["mode"] == "sync");
  CATCH_CHECK(json["steps"] == nlohmann::json::array({t.steps}));
  CATCH_CHECK(json["weight_version"] == s.weight_version);
  CATCH_CHECK(json["final_test_accuracy"].get<double>() == s.final_test_accuracy);
  // The scheduler wrote the same summary to the job's path.
  CATCH_CHECK(ReadFile(job.summary) == text);
  CATCH_CHECK_FALSE(std::filesystem::exists(job.summary + ".tmp"));
}

CATCH_TEST_CASE("WriteFileAtomically replaces a file whole or fails naming the path",
                "[scheduler][summary]") {
  TempDir dir;
  const std::string path = dir.path("out.json");
  CATCH_REQUIRE(WriteFileAtomically(path, "{\"first\": 1}\n").ok());
  CATCH_CHECK(ReadFile(path) == "{\"first\": 1}\n");
  CATCH_REQUIRE(WriteFileAtomically(path, "{}\n").ok());
  CATCH_CHECK(ReadFile(path) == "{}\n");
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.root())) {
    names.push_back(entry.path().filename().string());
  }
  CATCH_CHECK(names == std::vector<std::string>{"out.json"});

  const std::string missing = dir.path("no-such-directory/out.json");
  Status failed = WriteFileAtomically(missing, "{}\n");
  CATCH_INFO(failed.ToString());
  CATCH_CHECK(failed.code() == Status::Code::kIoError);
  CATCH_CHECK(Contains(failed.message(), missing));
  CATCH_CHECK_FALSE(std::filesystem::exists(dir.path("no-such-directory")));
}

}  // namespace hetps
