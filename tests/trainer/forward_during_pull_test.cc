// hetps-trainer --forward-during-pull (StepRunner::Options::forward_during_pull): a step returns
// once its gradients are sent, and the next step's forward runs on the weights at hand while
// the step's weights travel. One trainer in async must then train exactly as plain SGD whose
// every gradient is one step late (and not as plain SGD); the servers count that step as
// staleness; evaluations and the end of training take in the travelling weights first; and the
// modes that cannot have it (sync; ssp with staleness 0) refuse it with an error naming why.
#include <catch2/catch.hpp>

#include <functional>
#include <future>
#include <memory>
#include <vector>

#include "tests/support/local_cluster.h"
#include "tests/support/trainer_option_jobs.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/device/model_buffers.h"
#include "trainer/models/loss.h"
#include "trainer/models/models.h"
#include "trainer/step_runner.h"
#include "trainer/trainer.h"

namespace hetps {
namespace {

constexpr int64_t kBatch = 16;
constexpr double kLr = 0.05;

std::vector<int64_t> BatchOf(int64_t k) {
  std::vector<int64_t> indices(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) indices[i] = kBatch * k + i;
  return indices;
}

// Plain SGD on one model, `steps` batches, where step k's gradient is taken at the weights of
// step k - `late` (the first ones at the initial weights). Returns the final weights.
std::vector<torch::Tensor> LateSgd(const Dataset& train, int steps, int late) {
  auto built = BuildModel("mlp", 1);
  CATCH_REQUIRE(built.ok());
  Model& model = **built;
  model.train();
  std::vector<std::vector<torch::Tensor>> history{testing::ModelWeights(model)};
  for (int k = 0; k < steps; ++k) {
    const std::vector<torch::Tensor>& at = history[static_cast<size_t>(std::max(0, k - late))];
    auto parameters = model.parameters();
    {
      torch::NoGradGuard no_grad;
      for (size_t t = 0; t < parameters.size(); ++t) parameters[t].copy_(at[t]);
    }
    testing::MlpGradient(model, train, BatchOf(k));
    std::vector<torch::Tensor> next;
    for (size_t t = 0; t < parameters.size(); ++t)
      next.push_back(history.back()[t] - kLr * parameters[t].grad());
    history.push_back(std::move(next));
  }
  return history.back();
}

bool AllClose(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  return testing::AllClose(a, b, /*rtol=*/1e-5, /*atol=*/1e-6);
}

// testing::RunMlpJob; trainer t gets --forward-during-pull when `ahead(t)`. `staged`: every
// trainer takes the GPU's data path, on the CPU through a fake copy stream.
testing::TrainersRun RunJob(ConsistencyMode mode, uint32_t trainers,
                            const std::function<void(JobOptions&)>& adjust_job,
                            const std::function<bool(uint32_t)>& ahead, bool staged = false) {
  testing::TrainersRun run = testing::RunMlpJob(
      mode, trainers, adjust_job,
      [&ahead](uint32_t t, TrainerOptions& options) { options.forward_during_pull = ahead(t); }, staged);
  CATCH_INFO(run.job.ToString());
  CATCH_REQUIRE(run.job.ok());
  return run;
}

}  // namespace

CATCH_TEST_CASE("One trainer computing during the pull trains as SGD whose gradients are one step late",
                "[trainer][step][ahead]") {
  testing::OneTrainerSgd rig(kBatch, kLr);
  const Status started = rig.Start();
  CATCH_INFO(started.ToString());
  CATCH_REQUIRE(started.ok());
  Model& model = *rig.joined.model;

  StepRunner::Options options;
  options.model_name = "mlp";
  options.forward_during_pull = true;
  const int steps = 10;
  {
    StepRunner runner(model, *rig.joined.buffers, rig.joined.trainer->client(), rig.train, torch::kCPU,
                      options);
    uint64_t last_version = 0;
    for (int k = 0; k < steps; ++k) {
      CATCH_INFO("step " << k);
      auto outcome = runner.Run(static_cast<uint64_t>(k), BatchOf(k));
      CATCH_REQUIRE(outcome.ok());
      // The first step writes no weights back; each later one those that followed the one before.
      CATCH_CHECK(outcome->weights_written == (k > 0));
      if (k > 0) CATCH_CHECK(outcome->pulled.weight_version == static_cast<uint64_t>(k));
      last_version = outcome->weights_written ? outcome->pulled.weight_version : last_version;
    }
    auto drained = runner.Drain();
    CATCH_REQUIRE(drained.ok());
    CATCH_REQUIRE(drained->has_value());
    CATCH_CHECK((*drained)->weight_version == static_cast<uint64_t>(steps));
    auto again = runner.Drain();  // nothing travels any more
    CATCH_REQUIRE(again.ok());
    CATCH_CHECK(!again->has_value());
    CATCH_CHECK(runner.timings().steps == static_cast<uint64_t>(steps));
  }
  const std::vector<torch::Tensor> trained = testing::ModelWeights(model);
  CATCH_CHECK(AllClose(trained, LateSgd(rig.train, steps, /*late=*/1)));
  CATCH_CHECK(!AllClose(trained, LateSgd(rig.train, steps, /*late=*/0)));  // the test tells the two apart
  rig.cluster.Stop();
}

CATCH_TEST_CASE("A job whose trainers compute during the pull evaluates, finishes, and counts the step late",
                "[trainer][ahead]") {
  CATCH_SECTION("async, one trainer: every push after the first is exactly one version stale") {
    const testing::TrainersRun run =
        RunJob(ConsistencyMode::kAsync, 1, nullptr, [](uint32_t) { return true; });
    CATCH_INFO(run.summary.error);
    CATCH_REQUIRE(run.trainers.size() == 1);
    CATCH_CHECK(run.trainers[0].ok());
    CATCH_CHECK(run.summary.ok);
    CATCH_CHECK(run.summary.samples_completed == 4000);
    CATCH_CHECK(run.summary.staleness.pushes >= 125);  // 4,000 samples in batches of 32
    CATCH_CHECK(run.summary.staleness.max == 1);
    CATCH_CHECK(run.summary.staleness.p50 == 1);
    CATCH_CHECK(run.summary.final_test_accuracy > 0.6);
  }
  CATCH_SECTION("the same through the staged device path, as on a GPU") {
    const testing::TrainersRun run = RunJob(
        ConsistencyMode::kAsync, 1, nullptr, [](uint32_t) { return true; }, /*staged=*/true);
    CATCH_REQUIRE(run.trainers.size() == 1);
    CATCH_CHECK(run.trainers[0].ok());
    CATCH_CHECK(run.summary.ok);
    CATCH_CHECK(run.summary.samples_completed == 4000);
    CATCH_CHECK(run.summary.staleness.max == 1);
    CATCH_CHECK(run.summary.staleness.p50 == 1);
    CATCH_CHECK(run.summary.final_test_accuracy > 0.6);
  }
  CATCH_SECTION("the same without: no push is stale") {
    const testing::TrainersRun run =
        RunJob(ConsistencyMode::kAsync, 1, nullptr, [](uint32_t) { return false; });
    CATCH_CHECK(run.summary.ok);
    CATCH_CHECK(run.summary.staleness.pushes >= 125);  // 4,000 samples in batches of 32
    CATCH_CHECK(run.summary.staleness.max == 0);
  }
  CATCH_SECTION("ssp, staleness 1, two trainers, one computing during the pull") {
    const testing::TrainersRun run = RunJob(
        ConsistencyMode::kSsp, 2, [](JobOptions& job) { job.staleness = 1; },
        [](uint32_t t) { return t == 1; });
    CATCH_REQUIRE(run.trainers.size() == 2);
    CATCH_CHECK(run.trainers[0].ok());
    CATCH_CHECK(run.trainers[1].ok());
    CATCH_CHECK(run.summary.ok);
    CATCH_CHECK(run.summary.samples_completed == 4000);
    CATCH_CHECK(run.summary.final_test_accuracy > 0.6);
  }
}

CATCH_TEST_CASE("Computing during the pull is refused where the mode needs each step's weights",
                "[trainer][ahead]") {
  CATCH_SECTION("sync: the trainer refuses before its first step") {
    const testing::TrainersRun run =
        RunJob(ConsistencyMode::kSync, 2, nullptr, [](uint32_t t) { return t == 1; });
    CATCH_REQUIRE(run.trainers.size() == 2);
    CATCH_CHECK(run.trainers[0].ok());
    const Status& refused = run.trainers[1];
    CATCH_INFO(refused.ToString());
    CATCH_CHECK(refused.code() == Status::Code::kInvalidArgument);
    CATCH_CHECK(refused.message().find("--forward-during-pull needs mode async or ssp; this job's is sync") !=
                std::string::npos);
    CATCH_CHECK(run.summary.samples_completed == 4000);  // the other trainer trained it all
  }
  CATCH_SECTION("ssp with staleness 0: the server refuses the push, naming the staleness") {
    const testing::TrainersRun run = RunJob(
        ConsistencyMode::kSsp, 2, [](JobOptions& job) { job.staleness = 0; },
        [](uint32_t t) { return t == 1; });
    CATCH_REQUIRE(run.trainers.size() == 2);
    CATCH_CHECK(run.trainers[0].ok());
    const Status& refused = run.trainers[1];
    CATCH_INFO(refused.ToString());
    CATCH_CHECK(refused.message().find("needs ssp staleness of at least 1; the job's is 0") !=
                std::string::npos);
    CATCH_CHECK(run.summary.samples_completed == 4000);
  }
}

}  // namespace hetps
