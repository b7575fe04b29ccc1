// Sync mode end to end: two trainers on fixed, disjoint batches against one process on the
// concatenated batches, through a real scheduler and two servers on 127.0.0.1 — with even
// shares, and with shares that change every step as balance: speed makes them.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <array>
#include <future>
#include <thread>

#include "http/status_client.h"
#include "http/status_json.h"
#include "tests/support/local_cluster.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/device/model_buffers.h"
#include "trainer/models/models.h"

namespace hetps {
namespace {

constexpr int kSteps = 5;
constexpr int kGlobalBatch = 64;
constexpr int kTrainers = 2;

// Per step, trainer 0's and trainer 1's batch; each step's pair adds up to kGlobalBatch.
using Splits = std::vector<std::array<int, kTrainers>>;
const Splits kEven(kSteps, {32, 32});
const Splits kChanging = {{32, 32}, {48, 16}, {56, 8}, {40, 24}, {61, 3}};

std::vector<int64_t> Rows(int64_t begin, int64_t count) {
  std::vector<int64_t> rows(static_cast<size_t>(count));
  std::iota(rows.begin(), rows.end(), begin);
  return rows;
}

// One trainer of the cluster: at each step trainer 0 takes the first splits[step][0] rows of the
// step's kGlobalBatch, trainer 1 the rest.
Result<std::vector<torch::Tensor>> TrainInCluster(testing::ScriptedTrainer& trainer, const Dataset& data,
                                                  uint64_t seed, const Splits& splits) {
  auto model = BuildModel("mlp", seed);
  if (!model.ok()) return model.status();
  auto buffers = ModelBuffers::Create(**model, torch::kCPU);
  if (!buffers.ok()) return buffers.status();
  HETPS_RETURN_IF_ERROR(trainer.Setup((*buffers)->signature()));
  HETPS_ASSIGN_OR_RETURN(HostTensors initial, (*buffers)->HostWeights());
  HETPS_RETURN_IF_ERROR(trainer.client().InitWeights(initial.data, initial.owner));
  auto pulled = trainer.client().Pull(0, false, (*buffers)->weight_targets());
  if (!pulled.ok()) return pulled.status();
  for (int step = 0; step < kSteps; ++step) {
    const int count = splits[step][trainer.rank()];
    auto rows = Rows(step * kGlobalBatch + (trainer.rank() == 0 ? 0 : splits[step][0]), count);
    Batch batch = MakeBatch(data, rows.data(), rows.size(), torch::kCPU);
    (*buffers)->ClearGradients();
    torch::nn::functional::cross_entropy((*model)->forward(batch.input), batch.target).backward();
    HETPS_ASSIGN_OR_RETURN(HostTensors grads, (*buffers)->HostGradients());
    auto result = trainer.client().PushPull(step, static_cast<uint32_t>(count), grads.data, grads.owner,
                                            (*buffers)->weight_targets());
    if (!result.ok()) return result.status();
    if (result->round_samples != kGlobalBatch) {
      return Status::Internal("round " + std::to_string(step) + " had " +
                              std::to_string(result->round_samples) + " samples");
    }
  }
  std::vector<torch::Tensor> weights;
  for (const auto& p : (*model)->parameters()) weights.push_back(p.detach().clone());
  return weights;
}

// The same steps in one process on the concatenated batches.
std::vector<torch::Tensor> TrainAlone(
    const Dataset& data, uint64_t seed,
    const std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)>&
        make_optimizer) {
  auto model = *BuildModel("mlp", seed);
  auto optimizer = make_optimizer(model->parameters());
  for (int step = 0; step < kSteps; ++step) {
    auto rows = Rows(step * kGlobalBatch, kGlobalBatch);
    Batch batch = MakeBatch(data, rows.data(), rows.size(), torch::kCPU);
    optimizer->zero_grad();
    torch::nn::functional::cross_entropy(model->forward(batch.input), batch.target).backward();
    optimizer->step();
  }
  std::vector<torch::Tensor> weights;
  for (const auto& p : model->parameters()) weights.push_back(p.detach().clone());
  return weights;
}

void CheckEquivalence(
    const OptimizerOptions& options,
    const std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)>& make_optimizer,
    const Splits& splits = kEven, size_t server_threads = 1) {
  auto data = LoadFashionMnist("/usr/share/datasets/fashion-mnist", DatasetSplit::kTrain);
  CATCH_REQUIRE(data.ok());
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 2, kTrainers);
  job.optimizer = options;
  job.partition_bytes = 256 << 10;  // fc1 alone is 7 partitions, spread over both servers
  ServerOptions server_options;
  server_options.threads = server_threads;
  testing::LocalCluster cluster(job, server_options);
  CATCH_REQUIRE(cluster.Start().ok());

  // The trainers stay connected until the servers' reports are in: a job whose trainers have
  // all gone ends at once, and its status is no longer served.
  std::vector<std::unique_ptr<testing::ScriptedTrainer>> members;
  std::vector<std::future<Result<std::vector<torch::Tensor>>>> trainers;
  for (int t = 0; t < kTrainers; ++t) {
    members.push_back(
        std::make_unique<testing::ScriptedTrainer>(cluster.context(), cluster.scheduler_endpoint()));
    trainers.push_back(std::async(std::launch::async, [&, member = members.back().get()] {
      return TrainInCluster(*member, *data, job.seed, splits);
    }));
  }
  std::vector<std::vector<torch::Tensor>> results;
  for (auto& trainer : trainers) {
    auto result = trainer.get();
    CATCH_INFO(result.status().ToString());
    CATCH_REQUIRE(result.ok());
    results.push_back(std::move(*result));
  }
  const auto alone = TrainAlone(*data, job.seed, make_optimizer);
  double worst = 0;
  for (const auto& weights : results) {
    CATCH_REQUIRE(weights.size() == alone.size());
    for (size_t i = 0; i < weights.size(); ++i) {
      worst = std::max(worst, (weights[i] - alone[i]).abs().max().item<double>());
    }
  }
  CATCH_INFO("largest difference from one process: " << worst);
  CATCH_CHECK(worst < 1e-5);
  // The weights must actually have moved, or the comparison proves nothing.
  auto initial = *BuildModel("mlp", job.seed);
  CATCH_CHECK((initial->parameters()[0] - alone[0]).abs().max().item<double>() > 1e-4);
  // Every server applied every step. The scheduler learns a server's version from its periodic
  // stats, so wait (up to 20 s) until they say so before stopping the job: a stop ends it without
  // another report, and the summary keeps the last one.
  uint64_t servers_done = 0;
  for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       servers_done < 2 && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto json = FetchStatusOverZmq(cluster.scheduler_endpoint(), std::chrono::milliseconds(2000));
    if (!json.ok()) continue;
    auto status = ParseStatusJson(*json, "the scheduler");
    if (!status.ok()) continue;
    servers_done = 0;
    for (const MemberStatus& m : status->members) {
      servers_done += m.role == "server" && m.weight_version == static_cast<uint64_t>(kSteps);
    }
  }
  cluster.Stop();
  CATCH_CHECK(cluster.summary().server_details.size() == 2);
  for (const ServerSummary& server : cluster.summary().server_details) {
    CATCH_CHECK(server.version == kSteps);
  }
}

// SGD at lr 0.05 with momentum 0.9, against torch::optim::SGD.
void CheckSgdWithMomentum(const Splits& splits, size_t server_threads) {
  OptimizerOptions options = DefaultOptimizerOptions(OptimizerOptions::Kind::kSgd);
  options.lr = 0.05;
  options.momentum = 0.9;
  CheckEquivalence(
      options,
      [&](const std::vector<torch::Tensor>& params) {
        return std::make_unique<torch::optim::SGD>(
            params, torch::optim::SGDOptions(options.lr).momentum(options.momentum));
      },
      splits, server_threads);
}

}  // namespace

CATCH_TEST_CASE(
    "Two trainers in sync mode with SGD and momentum equal one process on the concatenated batches",
    "[ps][sync]") {
  OptimizerOptions options = DefaultOptimizerOptions(OptimizerOptions::Kind::kSgd);
  options.lr = 0.05;
  options.momentum = 0.9;
  options.nesterov = true;
  options.weight_decay = 1e-4;
  CheckEquivalence(options, [&](const std::vector<torch::Tensor>& params) {
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(options.lr)
                                                           .momentum(options.momentum)
                                                           .nesterov(true)
                                                           .weight_decay(options.weight_decay));
  });
}

CATCH_TEST_CASE("Two trainers in sync mode on servers with 3 worker threads equal one process",
                "[ps][sync][threads]") {
  CheckSgdWithMomentum(kEven, /*server_threads=*/3);
}

CATCH_TEST_CASE("Two trainers in sync mode with Adam equal one process on the concatenated batches",
                "[ps][sync]") {
  OptimizerOptions options = DefaultOptimizerOptions(OptimizerOptions::Kind::kAdam);
  options.lr = 1e-3;
  CheckEquivalence(options, [&](const std::vector<torch::Tensor>& params) {
    return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(options.lr));
  });
}

CATCH_TEST_CASE("Trainers whose shares of the global batch change every step equal one process",
                "[ps][sync][balance]") {
  CheckSgdWithMomentum(kChanging, /*server_threads=*/1);
}

}  // namespace hetps
