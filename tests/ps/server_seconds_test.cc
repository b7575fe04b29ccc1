// A server's round and apply seconds: the round timer on its own (when a round starts, when it
// ends), then end to end: a real scheduler and real servers on 127.0.0.1, scripted trainers
// pushing for several rounds, and the servers' seconds arriving in the scheduler's status (over
// its control socket, as hetps-status asks) and in its Prometheus text.
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "http/metrics_text.h"
#include "http/status_client.h"
#include "http/status_json.h"
#include "ps/round_timer.h"
#include "tests/support/local_cluster.h"

namespace hetps {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kRounds = 6;

bool NoneWaiting(uint64_t) {
  return false;
}

CATCH_TEST_CASE(
    "A round lasts from its first push until every partition completed it and its replies went out",
    "[ps][seconds]") {
  RoundTimer timer;
  const Clock::time_point t0 = Clock::now();
  timer.Pushed(0, t0);
  timer.Pushed(0, t0 + milliseconds(30));  // a second trainer's push: the round started already
  // Not every partition has completed round 0.
  timer.Settle(0, NoneWaiting, t0 + milliseconds(40));
  CATCH_CHECK(timer.seconds().count() == 0);
  // Completed, but a pull of step 1 still waits, then its reply is being built.
  timer.Settle(
      1, [](uint64_t step) { return step == 1; }, t0 + milliseconds(50));
  CATCH_CHECK(timer.seconds().count() == 0);
  timer.ReplyStarted(1);
  timer.Settle(1, NoneWaiting, t0 + milliseconds(60));
  CATCH_CHECK(timer.seconds().count() == 0);
  timer.ReplyDone(1);
  timer.Settle(1, NoneWaiting, t0 + milliseconds(80));
  CATCH_CHECK(timer.seconds().count() == 1);
  CATCH_CHECK(timer.seconds().sum == Approx(0.08));
  // Rounds a restore rolled back are never counted.
  timer.Pushed(1, t0 + milliseconds(100));
  timer.Forget();
  timer.Settle(5, NoneWaiting, t0 + milliseconds(200));
  CATCH_CHECK(timer.seconds().count() == 1);
}

std::vector<TensorInfo> Signature() {
  return {{"a", {1000}, wire::DType::F32}, {"b", {3, 5000}, wire::DType::F32}};
}

Status Train(testing::ScriptedTrainer& trainer) {
  const auto signature = Signature();
  HETPS_RETURN_IF_ERROR(trainer.Setup(signature));
  std::vector<std::vector<float>> weights, grads;
  std::vector<float*> targets;
  std::vector<const float*> grad_data;
  for (const TensorInfo& t : signature) {
    weights.emplace_back(t.numel(), 0.5f);
    grads.emplace_back(t.numel(), 0.25f);
  }
  for (size_t t = 0; t < signature.size(); ++t) {
    targets.push_back(weights[t].data());
    grad_data.push_back(grads[t].data());
  }
  HETPS_RETURN_IF_ERROR(
      trainer.client().InitWeights(std::vector<const float*>(targets.begin(), targets.end()), nullptr));
  auto pulled = trainer.client().Pull(0, false, targets);
  if (!pulled.ok()) return pulled.status();
  for (int round = 0; round < kRounds; ++round) {
    auto result = trainer.client().PushPull(round, 4, grad_data, nullptr, targets);
    if (!result.ok()) return result.status();
  }
  return Status::Ok();
}

// Trains kRounds with two trainers, then reads the status until every server reports
// `apply_count` applies and `round_count` rounds (or 20 s pass); the last snapshot read.
StatusSnapshot RunJob(ConsistencyMode mode, size_t server_threads, uint64_t apply_count,
                      uint64_t round_count) {
  JobOptions job = testing::TestJob("mlp", mode, 2, 2);
  job.optimizer = DefaultOptimizerOptions(OptimizerOptions::Kind::kAdam);
  job.partition_bytes = 4096;  // 16 partitions over two servers: several per worker
  job.global_batch_size = 8;
  ServerOptions server_options;
  server_options.threads = server_threads;
  testing::LocalCluster cluster(job, server_options);
  CATCH_REQUIRE(cluster.Start().ok());
  const auto start = Clock::now();
  std::vector<std::unique_ptr<testing::ScriptedTrainer>> trainers;
  std::vector<std::future<Status>> runs;
  for (int t = 0; t < 2; ++t) {
    trainers.push_back(
        std::make_unique<testing::ScriptedTrainer>(cluster.context(), cluster.scheduler_endpoint()));
    testing::ScriptedTrainer* trainer = trainers.back().get();
    runs.push_back(std::async(std::launch::async, [trainer] { return Train(*trainer); }));
  }
  for (auto& run : runs) {
    const Status trained = run.get();
    CATCH_INFO(trained.ToString());
    CATCH_REQUIRE(trained.ok());
  }
  const double trained_seconds = std::chrono::duration<double>(Clock::now() - start).count();

  StatusSnapshot snapshot;
  for (const auto deadline = Clock::now() + std::chrono::seconds(20); Clock::now() < deadline;) {
    auto json = FetchStatusOverZmq(cluster.scheduler_endpoint(), milliseconds(2000));
    CATCH_INFO(json.status().ToString());
    CATCH_REQUIRE(json.ok());
    auto parsed = ParseStatusJson(*json, "the scheduler");
    CATCH_REQUIRE(parsed.ok());
    snapshot = std::move(*parsed);
    // Every server listed (a snapshot published before they joined lists none) and counted.
    size_t listed = 0;
    bool arrived = true;
    for (const MemberStatus& m : snapshot.members) {
      if (m.role != "server") continue;
      ++listed;
      arrived = arrived && m.apply_seconds.count() == apply_count && m.round_seconds.count() == round_count;
    }
    arrived = arrived && listed == 2;
    if (arrived) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  cluster.Stop();
  CATCH_CHECK(cluster.summary().scheduler_refusals.of(Refusal::Invalid) == 0);

  size_t servers = 0;
  for (const MemberStatus& m : snapshot.members) {
    if (m.role != "server") continue;
    ++servers;
    CATCH_INFO("server " << m.rank);
    CATCH_CHECK(m.apply_seconds.count() == apply_count);
    CATCH_CHECK(m.round_seconds.count() == round_count);
    // Measured, and within what the job took (the steps of one apply may run on each thread).
    CATCH_CHECK(m.apply_seconds.sum > 0);
    CATCH_CHECK(m.apply_seconds.sum < trained_seconds * static_cast<double>(server_threads));
    if (round_count > 0) {
      CATCH_CHECK(m.round_seconds.sum > 0);
      CATCH_CHECK(m.round_seconds.sum < trained_seconds);
    } else {
      CATCH_CHECK(m.round_seconds.sum == 0);
    }
  }
  CATCH_CHECK(servers == 2);
  return snapshot;
}

}  // namespace

CATCH_TEST_CASE("Sync servers' round and apply seconds, one of each per round, reach the scheduler's status",
                "[ps][seconds][sync]") {
  const StatusSnapshot s = RunJob(ConsistencyMode::kSync, 1, kRounds, kRounds);
  const std::string text = RenderMetrics(s);
  CATCH_CHECK(text.find("hetps_server_round_seconds_count{role=\"server\",rank=\"1\"") != std::string::npos);
  CATCH_CHECK(text.find("hetps_server_apply_seconds_bucket{role=\"server\",rank=\"0\"") != std::string::npos);
  CATCH_CHECK(text.find("\"} " + std::to_string(kRounds) + "\n") != std::string::npos);
}

CATCH_TEST_CASE("Async servers with 3 worker threads report one apply per push and no rounds",
                "[ps][seconds][async][threads]") {
  RunJob(ConsistencyMode::kAsync, 3, 2 * kRounds, 0);
}

}  // namespace hetps
