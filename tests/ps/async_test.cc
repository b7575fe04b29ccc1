// Async mode end to end: every push is applied exactly once, through a real scheduler and two
// servers on 127.0.0.1, with three trainers pushing concurrently, on servers of one thread and
// of several.
#include <catch2/catch.hpp>

#include <future>

#include "tests/support/local_cluster.h"

namespace hetps {
namespace {

constexpr int kTrainers = 3;
constexpr int kPushes = 25;
constexpr float kLr = 0.01f;

std::vector<TensorInfo> Signature() {
  return {{"a", {1000}, wire::DType::F32}, {"b", {3, 5000}, wire::DType::F32}};
}

void CheckEveryPushAppliedOnce(size_t server_threads) {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kAsync, 2, kTrainers);
  job.optimizer = DefaultOptimizerOptions(OptimizerOptions::Kind::kSgd);
  job.optimizer.lr = kLr;
  job.partition_bytes = 8192;         // 9 partitions over two servers
  job.global_batch_size = kTrainers;  // each push of one sample steps by lr / kTrainers
  ServerOptions server_options;
  server_options.threads = server_threads;
  testing::LocalCluster cluster(job, server_options);
  CATCH_REQUIRE(cluster.Start().ok());

  const auto signature = Signature();
  std::vector<std::unique_ptr<testing::ScriptedTrainer>> trainers;
  for (int t = 0; t < kTrainers; ++t) {
    trainers.push_back(
        std::make_unique<testing::ScriptedTrainer>(cluster.context(), cluster.scheduler_endpoint()));
  }
  // Plain SGD adds up the pushes whatever their order: trainer r pushes the constant gradient
  // r + 1 for one sample of the global batch of 3, so the final weights are
  // -lr / 3 * pushes * (1 + 2 + 3) everywhere, exactly when every push was applied once.
  std::vector<std::future<Status>> runs;
  for (auto& trainer : trainers) {
    runs.push_back(std::async(std::launch::async, [&trainer, &signature]() -> Status {
      HETPS_RETURN_IF_ERROR(trainer->Setup(signature));
      std::vector<std::vector<float>> weights, grads;
      std::vector<float*> targets;
      std::vector<const float*> grad_data;
      for (const TensorInfo& t : signature) {
        weights.emplace_back(t.numel(), 0.0f);
        grads.emplace_back(t.numel(), static_cast<float>(trainer->rank() + 1));
      }
      for (size_t i = 0; i < signature.size(); ++i) {
        targets.push_back(weights[i].data());
        grad_data.push_back(grads[i].data());
      }
      HETPS_RETURN_IF_ERROR(
          trainer->client().InitWeights(std::vector<const float*>(targets.begin(), targets.end()), nullptr));
      for (int k = 0; k < kPushes; ++k) {
        auto result = trainer->client().PushPull(k, 1, grad_data, nullptr, targets);
        if (!result.ok()) return result.status();
      }
      return Status::Ok();
    }));
  }
  for (auto& run : runs) {
    Status status = run.get();
    CATCH_INFO(status.ToString());
    CATCH_REQUIRE(status.ok());
  }

  std::vector<std::vector<float>> final_weights;
  std::vector<float*> targets;
  for (const TensorInfo& t : signature) final_weights.emplace_back(t.numel(), 0.0f);
  for (auto& w : final_weights) targets.push_back(w.data());
  auto pulled = trainers[0]->client().Pull(0, /*latest=*/true, targets);
  CATCH_REQUIRE(pulled.ok());
  CATCH_CHECK(pulled->weight_version == kTrainers * kPushes);
  const float expected = -kLr / kTrainers * kPushes * (1 + 2 + 3);
  float worst = 0;
  for (const auto& w : final_weights) {
    for (float x : w) worst = std::max(worst, std::abs(x - expected));
  }
  CATCH_INFO("expected " << expected << " everywhere; largest difference " << worst);
  CATCH_CHECK(worst < 1e-4f);

  cluster.Stop();
  CATCH_REQUIRE(cluster.summary().server_details.size() == 2);
  for (const ServerSummary& server : cluster.summary().server_details) {
    CATCH_CHECK(server.version == kTrainers * kPushes);
    CATCH_CHECK(server.pushes == kTrainers * kPushes);
    CATCH_CHECK(server.bad_messages == 0);
  }
}

}  // namespace

CATCH_TEST_CASE("Async mode applies every push exactly once", "[ps][async]") {
  CheckEveryPushAppliedOnce(1);
}

CATCH_TEST_CASE("Async mode applies every push exactly once on servers with 3 worker threads",
                "[ps][async][threads]") {
  CheckEveryPushAppliedOnce(3);
}

}  // namespace hetps
