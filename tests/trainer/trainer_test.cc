// The training loop of trainer/trainer.h through a real scheduler and server on 127.0.0.1:
// several epochs, evaluations after each, every sample of every epoch trained once.
#include <catch2/catch.hpp>

#include <future>

#include "tests/support/local_cluster.h"
#include "trainer/trainer.h"

namespace hetps {
namespace {

RunSummary RunJob(ConsistencyMode mode, uint32_t trainers, uint32_t epochs, uint64_t samples) {
  JobOptions job = testing::TestJob("mlp", mode, 1, trainers);
  job.epochs = epochs;
  job.max_train_samples = samples;
  job.chunk_samples = 128;
  job.global_batch_size = 48;  // not a multiple of 128, so batches straddle chunks
  job.optimizer.lr = 0.02;
  job.optimizer.momentum = 0.9;
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  std::vector<std::future<Status>> runs;
  for (uint32_t t = 0; t < trainers; ++t) {
    runs.push_back(std::async(std::launch::async, [&cluster] {
      TrainerOptions options;
      options.scheduler = cluster.scheduler_endpoint();
      options.device = "cpu";
      return Trainer(cluster.context(), options).Run();
    }));
  }
  Status status = cluster.WaitForJob(std::chrono::seconds(300));
  CATCH_INFO(status.ToString());
  CATCH_REQUIRE(status.ok());
  for (auto& run : runs) {
    Status trainer_status = run.get();
    CATCH_INFO(trainer_status.ToString());
    CATCH_CHECK(trainer_status.ok());
  }
  return cluster.summary();
}

void CheckEpochs(const RunSummary& summary, uint32_t epochs, uint64_t samples) {
  CATCH_CHECK(summary.ok);
  CATCH_CHECK(summary.samples_completed == epochs * samples);
  uint64_t trained = 0;
  for (const TrainerSummary& t : summary.trainer_details) trained += t.samples;
  CATCH_CHECK(trained == epochs * samples);
  CATCH_REQUIRE(summary.evaluations.size() == epochs);
  for (uint32_t e = 0; e < epochs; ++e) {
    CATCH_CHECK(summary.evaluations[e].epoch == e);
    CATCH_CHECK(summary.evaluations[e].final == (e + 1 == epochs));
    CATCH_CHECK(summary.evaluations[e].test_samples == 10000);
  }
  // Training helps: the last evaluation beats chance clearly, and the weights moved on.
  CATCH_CHECK(summary.evaluations.back().test_accuracy > 0.6);
  CATCH_CHECK(summary.evaluations.back().weight_version > summary.evaluations.front().weight_version);
  CATCH_CHECK(summary.final_test_accuracy == summary.evaluations.back().test_accuracy);
}

}  // namespace

CATCH_TEST_CASE("A sync job of three epochs evaluates after each and trains every sample once",
                "[trainer][sync]") {
  const RunSummary summary = RunJob(ConsistencyMode::kSync, 2, 3, 3000);
  CheckEpochs(summary, 3, 3000);
  // Lock-step: both trainers took the same number of steps.
  CATCH_REQUIRE(summary.trainer_details.size() == 2);
  CATCH_CHECK(summary.trainer_details[0].steps == summary.trainer_details[1].steps);
}

CATCH_TEST_CASE("An async job of three epochs with three trainers trains every sample once",
                "[trainer][async]") {
  const RunSummary summary = RunJob(ConsistencyMode::kAsync, 3, 3, 3000);
  CheckEpochs(summary, 3, 3000);
  uint64_t steps = 0;
  for (const TrainerSummary& t : summary.trainer_details) steps += t.steps;
  CATCH_CHECK(summary.weight_version == steps);  // async: one update per push
}

}  // namespace hetps
