// Liveness by progress, through a real scheduler and server on 127.0.0.1: a trainer whose
// heartbeats go on while it pushes nothing (a wedged device, a hostile member) holds a sync
// round; past stall_floor_s (its pace unmeasured) the round goes on without it, and the second
// time it is dropped from the job, told why; a trainer that stalls once is left out of that round
// only, its late push applied nowhere, and goes on; a slow trainer is never taken for a stalled
// one. Members built from the schema (ScriptedTrainer), not flags of the trainer.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <future>
#include <thread>

#include "tests/support/local_cluster.h"

namespace hetps {
namespace {

constexpr float kLr = 0.01f;

std::vector<TensorInfo> Signature() {
  return {{"w", {300}, wire::DType::F32}};
}

JobOptions StallJob(uint32_t floor_s) {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 2);
  job.optimizer = DefaultOptimizerOptions(OptimizerOptions::Kind::kSgd);
  job.optimizer.lr = kLr;
  job.global_batch_size = 2;
  job.stall_floor_s = floor_s;
  job.stall_pace_factor = 10;
  return job;
}

struct Run {
  Status status;
  int rounds = 0;
  std::vector<float> weights;
};

// Pushes `gradient` for one sample in each of `rounds` rounds, waiting `pause(round)` before
// each push; the weights of the last reply end in `weights`.
Run PushRounds(testing::ScriptedTrainer& trainer, float gradient, int rounds,
               const std::function<std::chrono::milliseconds(int)>& pause) {
  Run run;
  run.status = trainer.Setup(Signature());
  if (!run.status.ok()) return run;
  run.weights.assign(300, 0.0f);
  std::vector<float> grad(300, gradient);
  std::vector<float*> targets = {run.weights.data()};
  std::vector<const float*> grads = {grad.data()};
  run.status = trainer.client().InitWeights({run.weights.data()}, nullptr);
  while (run.status.ok() && run.rounds < rounds) {
    std::this_thread::sleep_for(pause(run.rounds));
    auto result = trainer.client().PushPull(static_cast<uint64_t>(run.rounds), 1, grads, nullptr, targets);
    run.status = result.status();
    if (result.ok()) ++run.rounds;
  }
  return run;
}

auto NoPause() {
  return [](int) { return std::chrono::milliseconds(0); };
}

// Every weight of `run` is `expected`.
void CheckWeights(const Run& run, float expected) {
  float worst = 0;
  for (float w : run.weights) worst = std::max(worst, std::abs(w - expected));
  CATCH_INFO("expected " << expected << " everywhere; largest difference " << worst);
  CATCH_CHECK(worst < 1e-4f);
}

}  // namespace

CATCH_TEST_CASE("A trainer that heartbeats and never pushes is left out of a round, then dropped",
                "[scheduler][stall]") {
  testing::LocalCluster cluster(StallJob(1));
  CATCH_REQUIRE(cluster.Start().ok());
  testing::ScriptedTrainer honest(cluster.context(), cluster.scheduler_endpoint());
  testing::ScriptedTrainer wedged(cluster.context(), cluster.scheduler_endpoint());
  std::atomic<bool> finished{false};
  auto hold = std::async(std::launch::async, [&] {
    Status setup = wedged.Setup(Signature());
    // Its control channel heartbeats; it never pushes, until it is told to stop.
    while (setup.ok() && !finished && !wedged.control().shutdown()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return setup;
  });
  const auto started = std::chrono::steady_clock::now();
  Run good = PushRounds(honest, 1.0f, 20, NoPause());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  finished = true;
  CATCH_REQUIRE(hold.get().ok());
  CATCH_INFO("honest: " << good.status.ToString() << " after " << good.rounds << " rounds, " << seconds
                        << " s");
  CATCH_REQUIRE(good.status.ok());
  CATCH_CHECK(good.rounds == 20);
  CATCH_CHECK(seconds < 30);  // two floors of 1 s, and the reports' intervals
  // Every round stepped on the honest trainer's sample alone: half the global batch.
  CheckWeights(good, -kLr / 2 * 20);
  const auto notice = wedged.control().shutdown();
  CATCH_REQUIRE(notice.has_value());
  CATCH_CHECK(notice->reason.find("dropped from the job: it held the job a second time") !=
              std::string::npos);

  cluster.Stop();
  const RunSummary& summary = cluster.summary();
  CATCH_REQUIRE(summary.stalls.size() == 2);
  CATCH_CHECK(summary.stalls[0].trainer == wedged.rank());
  CATCH_CHECK(summary.stalls[0].step == 0);
  CATCH_CHECK_FALSE(summary.stalls[0].dropped);
  CATCH_CHECK(summary.stalls[1].step == 1);
  CATCH_CHECK(summary.stalls[1].dropped);
  CATCH_CHECK(summary.stalls[0].waited_seconds > 1.0);
  CATCH_REQUIRE(summary.dropped.size() == 1);
  CATCH_CHECK(summary.dropped[0].trainer == wedged.rank());
  CATCH_CHECK(summary.dropped[0].reason.find("waited") != std::string::npos);
  CATCH_CHECK(summary.ToJson().find("\"stalls\"") != std::string::npos);
}

CATCH_TEST_CASE(
    "A trainer that stalls once is left out of that round, its late push not applied, and goes on",
    "[scheduler][stall]") {
  testing::LocalCluster cluster(StallJob(3));
  CATCH_REQUIRE(cluster.Start().ok());
  testing::ScriptedTrainer honest(cluster.context(), cluster.scheduler_endpoint());
  testing::ScriptedTrainer stalls(cluster.context(), cluster.scheduler_endpoint());
  // 4.5 s before its step 5: past the floor of 3 s once, but not a second time (the honest
  // trainer's step 6 waits for it from when round 5 went on, about 3 s in).
  auto late = std::async(std::launch::async, [&] {
    return PushRounds(stalls, 3.0f, 10,
                      [](int round) { return std::chrono::milliseconds(round == 5 ? 4500 : 0); });
  });
  Run good = PushRounds(honest, 1.0f, 10, NoPause());
  Run slow = late.get();
  CATCH_INFO("honest: " << good.status.ToString() << "; stalled once: " << slow.status.ToString());
  CATCH_REQUIRE(good.status.ok());
  CATCH_REQUIRE(slow.status.ok());
  CATCH_CHECK(good.rounds == 10);
  CATCH_CHECK(slow.rounds == 10);
  // Nine rounds of both (mean gradient 2, the whole global batch) and round 5 of the honest one
  // alone (gradient 1, half the batch): the late gradient of 3 went nowhere.
  CheckWeights(good, -kLr * (9 * 2.0f + 0.5f));
  CheckWeights(slow, -kLr * (9 * 2.0f + 0.5f));

  cluster.Stop();
  const RunSummary& summary = cluster.summary();
  CATCH_REQUIRE(summary.stalls.size() == 1);
  CATCH_CHECK(summary.stalls[0].trainer == stalls.rank());
  CATCH_CHECK(summary.stalls[0].step == 5);
  CATCH_CHECK_FALSE(summary.stalls[0].dropped);
  CATCH_CHECK(summary.dropped.empty());
  CATCH_CHECK(summary.refusals.of(Refusal::Late) == 1);
}

CATCH_TEST_CASE("A slow trainer is not taken for a stalled one", "[scheduler][stall]") {
  testing::LocalCluster cluster(StallJob(1));
  CATCH_REQUIRE(cluster.Start().ok());
  testing::ScriptedTrainer fast(cluster.context(), cluster.scheduler_endpoint());
  testing::ScriptedTrainer slow(cluster.context(), cluster.scheduler_endpoint());
  auto slow_run = std::async(std::launch::async, [&] {
    return PushRounds(slow, 1.0f, 12, [](int) { return std::chrono::milliseconds(400); });
  });
  Run good = PushRounds(fast, 1.0f, 12, NoPause());
  CATCH_REQUIRE(slow_run.get().status.ok());
  CATCH_REQUIRE(good.status.ok());
  CheckWeights(good, -kLr * 12);
  cluster.Stop();
  CATCH_CHECK(cluster.summary().stalls.empty());
  CATCH_CHECK(cluster.summary().dropped.empty());
}

}  // namespace hetps
