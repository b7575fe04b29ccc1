// Servers with worker threads against servers with one thread, end to end: a real scheduler, two
// servers and scripted trainers on 127.0.0.1 push fixed gradients for several rounds; the weights
// that come back must be bitwise the same whatever the number of server threads.
#include <catch2/catch.hpp>

#include <future>

#include "tests/support/local_cluster.h"

namespace hetps {
namespace {

constexpr int kRounds = 6;

using Floats = std::vector<float>;

std::vector<TensorInfo> Signature() {
  return {{"a", {1000}, wire::DType::F32}, {"b", {3, 5000}, wire::DType::F32}};
}

struct Run {
  std::vector<std::vector<Floats>> weights;  // per trainer, per tensor: after the last round
  std::vector<ServerSummary> servers;
};

// Trainer `rank`'s gradient at `round`. Sync gradients are small multiples of 1/16 and the batch
// sizes add up to 8, so every batch-weighted sum is exact in any order of arrival: the rounds
// come out the same however the trainers race. Async with one trainer has a single order anyway.
float Gradient(ConsistencyMode mode, uint32_t rank, int round, size_t i) {
  const auto step = static_cast<float>((i * 7 + static_cast<size_t>(round) * 3 + rank) % 17) - 8;
  return mode == ConsistencyMode::kSync ? step / 16 : step * 0.0137f;
}

uint32_t BatchSize(uint32_t rank, uint32_t trainers) {
  static constexpr uint32_t kShares[3][3] = {{8, 0, 0}, {3, 5, 0}, {1, 2, 5}};
  return kShares[trainers - 1][rank];
}

Result<std::vector<Floats>> Train(testing::ScriptedTrainer& trainer, ConsistencyMode mode,
                                  uint32_t trainers) {
  const auto signature = Signature();
  HETPS_RETURN_IF_ERROR(trainer.Setup(signature));
  std::vector<Floats> weights, grads;
  std::vector<float*> targets;
  std::vector<const float*> grad_data;
  for (const TensorInfo& t : signature) {
    weights.emplace_back(t.numel());
    for (size_t i = 0; i < weights.back().size(); ++i) weights.back()[i] = 0.001f * (i % 101);
    grads.emplace_back(t.numel());
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
    for (Floats& g : grads) {
      for (size_t i = 0; i < g.size(); ++i) g[i] = Gradient(mode, trainer.rank(), round, i);
    }
    auto result =
        trainer.client().PushPull(round, BatchSize(trainer.rank(), trainers), grad_data, nullptr, targets);
    if (!result.ok()) return result.status();
  }
  return weights;
}

Run RunJob(ConsistencyMode mode, uint32_t trainers, size_t server_threads, wire::DType dtype) {
  JobOptions job = testing::TestJob("mlp", mode, 2, trainers);
  job.optimizer = DefaultOptimizerOptions(OptimizerOptions::Kind::kAdam);
  job.optimizer.lr = 0.01;
  job.partition_bytes = 4096;  // 16 partitions over two servers: several per worker
  job.global_batch_size = 8;
  job.wire_dtype = dtype;
  ServerOptions server_options;
  server_options.threads = server_threads;
  testing::LocalCluster cluster(job, server_options);
  CATCH_REQUIRE(cluster.Start().ok());

  std::vector<std::unique_ptr<testing::ScriptedTrainer>> scripted;
  std::vector<std::future<Result<std::vector<Floats>>>> runs;
  for (uint32_t t = 0; t < trainers; ++t) {
    scripted.push_back(
        std::make_unique<testing::ScriptedTrainer>(cluster.context(), cluster.scheduler_endpoint()));
    testing::ScriptedTrainer* trainer = scripted.back().get();
    runs.push_back(std::async(std::launch::async,
                              [trainer, mode, trainers] { return Train(*trainer, mode, trainers); }));
  }
  Run run;
  run.weights.resize(trainers);
  for (uint32_t t = 0; t < trainers; ++t) {
    auto result = runs[t].get();
    CATCH_INFO(result.status().ToString());
    CATCH_REQUIRE(result.ok());
    run.weights[scripted[t]->rank()] = std::move(*result);
  }
  cluster.Stop();
  run.servers = cluster.summary().server_details;
  for (const Status& status : cluster.server_results()) {
    CATCH_INFO(status.ToString());
    CATCH_CHECK((status.ok() || status.code() == Status::Code::kAborted));
  }
  return run;
}

void CheckSameWeights(ConsistencyMode mode, uint32_t trainers, wire::DType dtype) {
  const Run one = RunJob(mode, trainers, 1, dtype);
  const Run three = RunJob(mode, trainers, 3, dtype);
  for (const Run* run : {&one, &three}) {
    CATCH_REQUIRE(run->servers.size() == 2);
    for (const ServerSummary& server : run->servers) {
      CATCH_CHECK(server.version == kRounds * (mode == ConsistencyMode::kSync ? 1 : trainers));
      CATCH_CHECK(server.pushes == kRounds * trainers);
      CATCH_CHECK(server.bad_messages == 0);
    }
  }
  for (uint32_t t = 0; t < trainers; ++t) {
    CATCH_INFO("trainer " << t);
    CATCH_CHECK(three.weights[t] == one.weights[t]);
    if (mode == ConsistencyMode::kSync) CATCH_CHECK(one.weights[t] == one.weights[0]);
  }
  // The weights must actually have moved, or the comparison proves nothing.
  CATCH_CHECK(one.weights[0][1][0] != 0.0f);
  CATCH_CHECK(one.weights[0][0][5] != 0.005f);
}

}  // namespace

CATCH_TEST_CASE("Three trainers in sync mode get bitwise the same weights from 3 server threads as from 1",
                "[ps][threads][sync]") {
  CheckSameWeights(ConsistencyMode::kSync, 3, wire::DType::F32);
}

CATCH_TEST_CASE(
    "Two trainers pushing bfloat16 in sync mode get the same weights from 3 server threads as from 1",
    "[ps][threads][sync][wire_dtype]") {
  CheckSameWeights(ConsistencyMode::kSync, 2, wire::DType::BF16);
}

CATCH_TEST_CASE("One trainer in sync mode gets the same weights from 3 server threads as from 1",
                "[ps][threads][sync]") {
  CheckSameWeights(ConsistencyMode::kSync, 1, wire::DType::F32);
}

CATCH_TEST_CASE("One trainer in async mode gets the same weights from 3 server threads as from 1",
                "[ps][threads][async]") {
  CheckSameWeights(ConsistencyMode::kAsync, 1, wire::DType::F32);
}

}  // namespace hetps
