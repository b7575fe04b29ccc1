// Liveness by progress, through a real scheduler and server on 127.0.0.1: a trainer whose
// heartbeats go on while it pushes nothing (a wedged device, a hostile member) holds a sync
// round; past stall_floor_s (its pace unmeasured) the round goes on without it, and the second
// time it is dropped from the job, told why; a trainer that stalls once is left out of that round
// only, its late push applied nowhere, and goes on; a slow trainer is never taken for a stalled
// one; an evaluation a trainer does not report in time goes to another trainer, and the second
// time the trainer is dropped. Members built from the schema (ScriptedTrainer), not flags of the
// trainer.
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

// Says Done, then answers evaluation requests (with a final report of 100 test samples) when
// `answers`, or leaves them unanswered, until the job ends or `stop`; the requests it received.
int EvaluateUntilEnd(testing::ScriptedTrainer& trainer, bool answers, const std::atomic<bool>& stop) {
  ControlChannel& control = trainer.control();
  flatbuffers::FlatBufferBuilder done(64);
  auto done_body = wire::CreateDone(done, 0, 0);
  CATCH_REQUIRE(control.Send(trainer.sender().Seal(done, wire::Body::Done, done_body.Union())).ok());
  int requests = 0;
  while (!stop && !control.shutdown() && control.Check().ok()) {
    control.WaitForInbox(std::chrono::milliseconds(20));
    while (auto message = control.TakeInbox()) {
      if (message->kind() != wire::Body::EvalRequest) continue;
      const wire::EvalRequest& request = *message->body<wire::EvalRequest>();
      ++requests;
      if (!answers) continue;
      flatbuffers::FlatBufferBuilder fbb(128);
      auto body = wire::CreateEvalReport(fbb, request.epoch(), request.final(), 0, 0.5, 0.5, 100);
      CATCH_REQUIRE(control.Send(trainer.sender().Seal(fbb, wire::Body::EvalReport, body.Union())).ok());
    }
  }
  return requests;
}

}  // namespace

CATCH_TEST_CASE("An evaluation a trainer leaves unanswered goes to another, and a second time drops it",
                "[scheduler][stall]") {
  // A floor of 1 s and a factor of 2: with the test set's size unknown, 2 s.
  JobOptions job = StallJob(1);
  job.stall_pace_factor = 2;
  {
    testing::LocalCluster cluster(job);
    CATCH_REQUIRE(cluster.Start().ok());
    testing::ScriptedTrainer a(cluster.context(), cluster.scheduler_endpoint());
    testing::ScriptedTrainer b(cluster.context(), cluster.scheduler_endpoint());
    auto joined = std::async(std::launch::async, [&] { return a.Setup(Signature()); });
    CATCH_REQUIRE(b.Setup(Signature()).ok());
    CATCH_REQUIRE(joined.get().ok());
    // The lowest rank is asked first: it stays silent, the other answers.
    testing::ScriptedTrainer& silent = a.rank() < b.rank() ? a : b;
    testing::ScriptedTrainer& answering = a.rank() < b.rank() ? b : a;
    std::atomic<bool> stop{false};
    auto quiet = std::async(std::launch::async, [&] { return EvaluateUntilEnd(silent, false, stop); });
    const int answered = EvaluateUntilEnd(answering, true, stop);
    const Status ended = cluster.WaitForJob(std::chrono::seconds(30));
    stop = true;
    CATCH_CHECK(quiet.get() == 1);
    CATCH_CHECK(answered == 1);
    CATCH_CHECK(ended.ok());
    const RunSummary& summary = cluster.summary();
    CATCH_REQUIRE(summary.stalls.size() == 1);
    CATCH_CHECK(summary.stalls[0].trainer == silent.rank());
    CATCH_CHECK(summary.stalls[0].held == "evaluation");
    CATCH_CHECK(summary.stalls[0].limit_seconds == Approx(2.0));
    CATCH_CHECK(summary.stalls[0].waited_seconds > 2.0);
    CATCH_CHECK_FALSE(summary.stalls[0].dropped);
    CATCH_CHECK(summary.dropped.empty());
    CATCH_REQUIRE(summary.evaluations.size() == 1);
    CATCH_CHECK(summary.evaluations[0].final);
  }
  // A trainer alone is asked again, and dropped the second time: the job ends, failed, and says why.
  job.trainers = 1;
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  testing::ScriptedTrainer alone(cluster.context(), cluster.scheduler_endpoint());
  CATCH_REQUIRE(alone.Setup(Signature()).ok());
  std::atomic<bool> stop{false};
  CATCH_CHECK(EvaluateUntilEnd(alone, false, stop) == 2);
  const auto notice = alone.control().shutdown();
  CATCH_REQUIRE(notice.has_value());
  CATCH_CHECK(notice->reason.find("it did not report the final evaluation within 2.0 s") !=
              std::string::npos);
  CATCH_CHECK_FALSE(cluster.WaitForJob(std::chrono::seconds(30)).ok());
  const RunSummary& summary = cluster.summary();
  CATCH_REQUIRE(summary.stalls.size() == 2);
  CATCH_CHECK(summary.stalls[1].dropped);
  CATCH_REQUIRE(summary.dropped.size() == 1);
  CATCH_CHECK(summary.dropped[0].reason.find("held the job a second time") != std::string::npos);
}

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
