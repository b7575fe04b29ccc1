// hetps-trainer --local-steps (StepRunner::Options::local_steps, LocalSgd): a step of K batches
// takes K steps of plain SGD on the trainer's own weights and pushes their samples' mean gradient
// once. One trainer in async must then train exactly as plain SGD on every batch (and not as SGD
// on K batches' mean gradient at a time); a job with such a trainer beside others trains every
// sample once, with one push per K batches, also through the staged device path; and a job it
// does not fit (sync, auto, an optimizer other than SGD, --forward-during-pull) is refused with
// an error naming why.
#include <catch2/catch.hpp>

#include <functional>
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
constexpr uint32_t kLocalSteps = 4;
constexpr double kLr = 0.05;

// Batches k, k + 1, ..., k + count - 1 of kBatch consecutive samples each.
std::vector<int64_t> Batches(int64_t k, int64_t count) {
  std::vector<int64_t> indices(static_cast<size_t>(kBatch * count));
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = kBatch * k + static_cast<int64_t>(i);
  return indices;
}

// Plain SGD at kLr from the mlp's initial weights over `batches` batches, `per_step` at a time:
// each step on their mean gradient at the same weights, by kLr * per_step. Returns the weights.
std::vector<torch::Tensor> Sgd(const Dataset& train, int64_t batches, int64_t per_step) {
  auto built = BuildModel("mlp", 1);
  CATCH_REQUIRE(built.ok());
  Model& model = **built;
  model.train();
  for (int64_t k = 0; k < batches; k += per_step) {
    testing::MlpGradient(model, train, Batches(k, per_step));
    torch::NoGradGuard no_grad;
    for (auto& parameter : model.parameters()) {
      parameter.add_(parameter.grad(), -kLr * static_cast<double>(per_step));
    }
  }
  return testing::ModelWeights(model);
}

bool AllClose(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  return testing::AllClose(a, b, /*rtol=*/1e-4, /*atol=*/1e-6);
}
// testing::RunMlpJob; trainer t gets local_steps(t) (and the options `adjust` sets). `staged`:
// every trainer takes the GPU's data path, on the CPU through a fake copy stream.
testing::TrainersRun RunJob(ConsistencyMode mode, uint32_t trainers,
                            const std::function<void(JobOptions&)>& adjust_job,
                            const std::function<uint32_t(uint32_t)>& local_steps, bool staged = false,
                            const std::function<void(TrainerOptions&)>& adjust = nullptr) {
  testing::TrainersRun run = testing::RunMlpJob(
      mode, trainers, adjust_job,
      [&local_steps, &adjust](uint32_t t, TrainerOptions& options) {
        options.local_steps = local_steps(t);
        if (adjust) adjust(options);
      },
      staged);
  CATCH_INFO(run.job.ToString());
  CATCH_REQUIRE(run.job.ok());
  return run;
}

// The one trainer with local steps in a two-trainer run refused to start with `expected` in its error.
void CheckRefused(const testing::TrainersRun& run, Status::Code code, const std::string& expected) {
  CATCH_REQUIRE(run.trainers.size() == 2);
  CATCH_CHECK(run.trainers[0].ok());
  const Status& refused = run.trainers[1];
  CATCH_INFO(refused.ToString());
  CATCH_CHECK(refused.code() == code);
  CATCH_CHECK(refused.message().find(expected) != std::string::npos);
  CATCH_CHECK(run.summary.samples_completed == 4000);  // the other trainer trained it all
}

}  // namespace

CATCH_TEST_CASE("One trainer with local steps trains as SGD on every batch, pushing once per step",
                "[trainer][step][local]") {
  // Each push of kLocalSteps batches steps by kLr * its share of the global batch (kLocalSteps).
  testing::OneTrainerSgd rig(kBatch, kLr);
  const Status started = rig.Start();
  CATCH_INFO(started.ToString());
  CATCH_REQUIRE(started.ok());
  Model& model = *rig.joined.model;

  StepRunner::Options options;
  options.model_name = "mlp";
  options.local_steps = kLocalSteps;
  options.lr_per_sample = kLr / kBatch;
  const int steps = 5;
  {
    StepRunner runner(model, *rig.joined.buffers, rig.joined.trainer->client(), rig.train, torch::kCPU,
                      options);
    for (int k = 0; k < steps; ++k) {
      CATCH_INFO("step " << k);
      auto outcome = runner.Run(static_cast<uint64_t>(k), Batches(k * kLocalSteps, kLocalSteps));
      CATCH_REQUIRE(outcome.ok());
      CATCH_CHECK(outcome->pulled.weight_version == static_cast<uint64_t>(k + 1));  // one push per step
      CATCH_CHECK(outcome->loss > 0);
    }
    CATCH_CHECK(runner.timings().steps == static_cast<uint64_t>(steps));
  }
  const std::vector<torch::Tensor> trained = testing::ModelWeights(model);
  CATCH_CHECK(AllClose(trained, Sgd(rig.train, steps * kLocalSteps, 1)));
  // The test tells local steps apart from one step on the pushed batches' mean gradient.
  CATCH_CHECK(!AllClose(trained, Sgd(rig.train, steps * kLocalSteps, kLocalSteps)));
  rig.cluster.Stop();
}

CATCH_TEST_CASE("A job with a trainer taking local steps trains every sample once, one push per step",
                "[trainer][local]") {
  const auto check = [](const testing::TrainersRun& run) {
    CATCH_INFO(run.summary.error);
    CATCH_REQUIRE(run.trainers.size() == 2);
    CATCH_CHECK(run.trainers[0].ok());
    CATCH_CHECK(run.trainers[1].ok());
    CATCH_CHECK(run.summary.ok);
    CATCH_CHECK(run.summary.samples_completed == 4000);
    CATCH_CHECK(run.summary.final_test_accuracy > 0.6);
    CATCH_REQUIRE(run.summary.trainer_details.size() == 2);
    // The trainer with local steps pushes a step of up to kLocalSteps batches (fewer where a
    // data chunk ends); the other one batch per step.
    int local = 0, plain = 0;
    for (const TrainerSummary& t : run.summary.trainer_details) {
      CATCH_INFO("trainer " << t.rank << ": " << t.samples << " samples in " << t.steps << " steps of "
                            << t.batch_size);
      CATCH_REQUIRE(t.steps > 0);
      const double per_step = static_cast<double>(t.samples) / static_cast<double>(t.steps);
      local += per_step > 2.0 * t.batch_size;
      plain += per_step <= t.batch_size;
    }
    CATCH_CHECK(local == 1);
    CATCH_CHECK(plain == 1);
  };
  const auto second = [](uint32_t t) { return t == 1 ? kLocalSteps : 1u; };
  CATCH_SECTION("async") {
    check(RunJob(ConsistencyMode::kAsync, 2, nullptr, second));
  }
  CATCH_SECTION("async, through the staged device path, as on a GPU") {
    check(RunJob(ConsistencyMode::kAsync, 2, nullptr, second, /*staged=*/true));
  }
  CATCH_SECTION("ssp, staleness 2") {
    check(RunJob(
        ConsistencyMode::kSsp, 2, [](JobOptions& job) { job.staleness = 2; }, second));
  }
}

CATCH_TEST_CASE("Local steps are refused where the job cannot take them", "[trainer][local]") {
  const auto second = [](uint32_t t) { return t == 1 ? kLocalSteps : 1u; };
  CATCH_SECTION("sync") {
    CheckRefused(RunJob(ConsistencyMode::kSync, 2, nullptr, second), Status::Code::kInvalidArgument,
                 "--local-steps 4 needs mode async or ssp; this job's is sync");
  }
  CATCH_SECTION("an optimizer other than SGD") {
    CheckRefused(
        RunJob(
            ConsistencyMode::kAsync, 2,
            [](JobOptions& job) { job.optimizer = DefaultOptimizerOptions(OptimizerOptions::Kind::kAdam); },
            second),
        Status::Code::kInvalidArgument, "--local-steps 4 needs optimizer sgd");
  }
  CATCH_SECTION("with --forward-during-pull") {
    CheckRefused(
        RunJob(ConsistencyMode::kAsync, 2, nullptr, second, false,
               [](TrainerOptions& options) { options.forward_during_pull = options.local_steps > 1; }),
        Status::Code::kInvalidArgument, "--local-steps 4 and --forward-during-pull do not go together");
  }
}

}  // namespace hetps
