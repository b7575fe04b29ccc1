// A trainer that pushes NaN gradients, through a real scheduler and server on 127.0.0.1: the
// server leaves every such push out (the sync rounds go on with the other trainer's gradients
// alone, and the weights stay finite), and once nonfinite_limit steps in a row were left out the
// scheduler drops the trainer, tells it why, and lists it in the summary; the other trainer goes
// on alone. A hostile member built from the schema (a ScriptedTrainer), not a flag of the trainer.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <future>

#include "tests/support/local_cluster.h"

namespace hetps {
namespace {

constexpr float kLr = 0.01f;
constexpr uint32_t kLimit = 3;
constexpr int kMostRounds = 5000;

std::vector<TensorInfo> Signature() {
  return {{"w", {300}, wire::DType::F32}};
}

struct Run {
  Status status;
  int rounds = 0;
};

// Pushes `gradient` for one sample every round until a push fails or `stop` says so (then 5
// rounds more); the weights received end in `weights`.
Run PushRounds(testing::ScriptedTrainer& trainer, float gradient, const std::atomic<bool>* stop,
               std::vector<float>* weights) {
  Run run;
  run.status = trainer.Setup(Signature());
  if (!run.status.ok()) return run;
  weights->assign(300, 0.0f);
  std::vector<float> grad(300, gradient);
  std::vector<float*> targets = {weights->data()};
  std::vector<const float*> grads = {grad.data()};
  run.status = trainer.client().InitWeights({weights->data()}, nullptr);
  int after_stop = 0;
  while (run.status.ok() && run.rounds < kMostRounds && !(stop != nullptr && *stop && ++after_stop > 5)) {
    auto result = trainer.client().PushPull(static_cast<uint64_t>(run.rounds), 1, grads, nullptr, targets);
    run.status = result.status();
    if (result.ok()) ++run.rounds;
  }
  return run;
}

}  // namespace

CATCH_TEST_CASE("A trainer pushing NaN is left out of every round, then dropped; the other goes on",
                "[scheduler][nonfinite]") {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 2);
  job.optimizer = DefaultOptimizerOptions(OptimizerOptions::Kind::kSgd);
  job.optimizer.lr = kLr;
  job.global_batch_size = 2;
  job.nonfinite_limit = kLimit;
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  testing::ScriptedTrainer honest(cluster.context(), cluster.scheduler_endpoint());
  testing::ScriptedTrainer hostile(cluster.context(), cluster.scheduler_endpoint());
  std::atomic<bool> hostile_done{false};
  std::vector<float> honest_weights, hostile_weights;
  auto bad = std::async(std::launch::async, [&] {
    Run run = PushRounds(hostile, std::nanf(""), nullptr, &hostile_weights);
    hostile_done = true;
    return run;
  });
  Run good = PushRounds(honest, 1.0f, &hostile_done, &honest_weights);
  Run dropped = bad.get();
  CATCH_INFO("honest: " << good.status.ToString() << " after " << good.rounds << " rounds");
  CATCH_INFO("hostile: " << dropped.status.ToString() << " after " << dropped.rounds << " rounds");
  CATCH_REQUIRE(good.status.ok());
  CATCH_CHECK(good.rounds < kMostRounds);  // it stopped because the hostile one was gone
  // The hostile trainer was told why it is out (or, if its round was refused first, that it is).
  CATCH_CHECK_FALSE(dropped.status.ok());
  CATCH_CHECK((dropped.status.message().find("dropped from the job") != std::string::npos ||
               dropped.status.message().find("not a live member") != std::string::npos));
  CATCH_CHECK(dropped.rounds >= static_cast<int>(kLimit));
  // Every round stepped on the honest trainer's gradient of 1 alone, one sample of the global
  // batch of 2: lr / 2 per round.
  const float expected = -kLr / 2 * static_cast<float>(good.rounds);
  float worst = 0;
  for (float w : honest_weights) {
    CATCH_REQUIRE(std::isfinite(w));
    worst = std::max(worst, std::abs(w - expected));
  }
  CATCH_INFO("expected " << expected << " everywhere; largest difference " << worst);
  CATCH_CHECK(worst < 1e-4f);

  cluster.Stop();
  const RunSummary& summary = cluster.summary();
  CATCH_REQUIRE(summary.dropped.size() == 1);
  CATCH_CHECK(summary.dropped[0].trainer == hostile.rank());
  CATCH_CHECK(summary.dropped[0].reason.find("left out its last") != std::string::npos);
  CATCH_CHECK(summary.dropped[0].reason.find("nonfinite_limit 3") != std::string::npos);
  CATCH_REQUIRE(summary.nonfinite_pushes.count(hostile.rank()) == 1);
  CATCH_CHECK(summary.nonfinite_pushes.at(hostile.rank()) >= kLimit);
  CATCH_CHECK(summary.nonfinite_pushes.count(honest.rank()) == 0);
  CATCH_CHECK(summary.refusals.of(Refusal::NonFinite) >= kLimit);
  const std::string json = summary.ToJson();
  CATCH_CHECK(json.find("\"dropped\"") != std::string::npos);
  CATCH_CHECK(json.find("\"nonfinite_pushes\"") != std::string::npos);
}

}  // namespace hetps
