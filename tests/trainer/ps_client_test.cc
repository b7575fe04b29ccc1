// The PS client's streamed push-pull steps (trainer/ps_client.h) through a real scheduler and two
// servers on 127.0.0.1: gradients pushed from the autograd hook while backward still runs, in
// messages of any size, leave exactly the weights of gradients pushed after backward.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <ctime>
#include <future>
#include <numeric>
#include <thread>

#include "tests/support/local_cluster.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/device/model_buffers.h"
#include "trainer/models/models.h"

namespace hetps {
namespace {

constexpr int kSteps = 4;
constexpr int kBatch = 32;  // per trainer and step
constexpr int kTrainers = 2;

struct Run {
  std::vector<torch::Tensor> weights;
  std::vector<size_t> hook_order;  // the tensors in the order the first step's hook pushed them
  // Rank 0's first FinishStep: the CPU time of its thread and the wall time.
  double first_wait_cpu_seconds = 0, first_wait_seconds = 0;
};

struct Knobs {
  bool stream = false;  // push from the gradient hook as backward produces them
  uint64_t coalesce_bytes = uint64_t{1} << 20;
  std::chrono::microseconds reply_spin = PsClient::Options{}.reply_spin;
  std::chrono::milliseconds rank1_late{0};  // rank 1 starts its first step this late
};

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Trainer `rank`'s steps on fixed rows: pushed from the gradient hook as backward produces them
// when `knobs.stream`, otherwise all after backward.
Result<Run> Train(testing::LocalCluster& cluster, const Dataset& data, uint64_t seed, const Knobs& knobs) {
  auto model = BuildModel("mlp", seed);
  if (!model.ok()) return model.status();
  auto buffers = ModelBuffers::Create(**model, torch::kCPU);
  if (!buffers.ok()) return buffers.status();
  testing::ScriptedTrainer trainer(cluster.context(), cluster.scheduler_endpoint());
  PsClient::Options options;
  options.coalesce_bytes = knobs.coalesce_bytes;
  options.reply_spin = knobs.reply_spin;
  HETPS_RETURN_IF_ERROR(trainer.Setup((*buffers)->signature(), options));
  PsClient& client = trainer.client();
  HETPS_ASSIGN_OR_RETURN(HostTensors initial, (*buffers)->HostWeights());
  HETPS_RETURN_IF_ERROR(client.InitWeights(initial.data, initial.owner));
  auto pulled = client.Pull(0, false, (*buffers)->weight_targets());
  if (!pulled.ok()) return pulled.status();

  Run run;
  const size_t tensors = (*buffers)->signature().size();
  Status push_status;
  if (knobs.stream) {
    (*buffers)->SetGradientHook([&](size_t tensor, const torch::Tensor& grad) {
      auto held = std::make_shared<torch::Tensor>(grad.detach().contiguous());
      if (push_status.ok()) push_status = client.PushTensor(tensor, held->data_ptr<float>(), held);
      if (run.hook_order.size() < tensors) run.hook_order.push_back(tensor);
    });
  }
  for (int step = 0; step < kSteps; ++step) {
    if (step == 0 && trainer.rank() == 1) std::this_thread::sleep_for(knobs.rank1_late);
    std::vector<int64_t> rows(kBatch);
    std::iota(rows.begin(), rows.end(), int64_t{(step * kTrainers + trainer.rank()) * kBatch});
    Batch batch = MakeBatch(data, rows.data(), rows.size(), torch::kCPU);
    (*buffers)->ClearGradients();
    client.BeginStep(step, kBatch);
    torch::nn::functional::cross_entropy((*model)->forward(batch.input), batch.target).backward();
    HETPS_RETURN_IF_ERROR(push_status);
    for (size_t t = 0; t < tensors; ++t) {
      if (client.Pushed(t)) continue;
      HETPS_ASSIGN_OR_RETURN(auto gradient, (*buffers)->HostGradient(t));
      HETPS_RETURN_IF_ERROR(client.PushTensor(t, gradient.first, std::move(gradient.second)));
    }
    const auto wait_start = std::chrono::steady_clock::now();
    const double cpu_start = ThreadCpuSeconds();
    auto result = client.FinishStep((*buffers)->weight_targets());
    if (!result.ok()) return result.status();
    if (step == 0 && trainer.rank() == 0) {
      run.first_wait_cpu_seconds = ThreadCpuSeconds() - cpu_start;
      run.first_wait_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
    }
    if (result->round_samples != kBatch * kTrainers) return Status::Internal("a round was short");
  }
  for (const auto& p : (*model)->parameters()) run.weights.push_back(p.detach().clone());
  return run;
}

// Both trainers of a sync job on two servers, each with `knobs`; the runs by rank.
std::vector<Run> TrainJob(const Dataset& data, const Knobs& knobs) {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 2, kTrainers);
  job.optimizer.lr = 0.05;
  job.optimizer.momentum = 0.9;
  job.partition_bytes = 64 << 10;  // fc1 is 25 partitions over both servers
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  std::vector<std::future<Result<Run>>> trainers;
  for (int t = 0; t < kTrainers; ++t) {
    trainers.push_back(std::async(std::launch::async, [&] { return Train(cluster, data, job.seed, knobs); }));
  }
  std::vector<Run> runs;
  for (auto& trainer : trainers) {
    auto run = trainer.get();
    CATCH_INFO(run.status().ToString());
    CATCH_REQUIRE(run.ok());
    runs.push_back(std::move(*run));
  }
  cluster.Stop();
  // Ranks follow the order of joining: the one that measured its wait is rank 0.
  if (runs[1].first_wait_seconds > 0) std::swap(runs[0], runs[1]);
  return runs;
}

}  // namespace

CATCH_TEST_CASE(
    "Gradients pushed as backward produces them give exactly the weights of pushing after backward",
    "[trainer][ps_client][sync][overlap]") {
  auto data = LoadFashionMnist("/usr/share/datasets/fashion-mnist", DatasetSplit::kTrain);
  CATCH_REQUIRE(data.ok());
  const std::vector<Run> after = TrainJob(*data, Knobs{});
  // Every partition in a message of its own, and the default coalescing of small tensors.
  for (uint64_t coalesce_bytes : {uint64_t{0}, uint64_t{1} << 20}) {
    CATCH_INFO("coalesce_bytes " << coalesce_bytes);
    Knobs knobs;
    knobs.stream = true;
    knobs.coalesce_bytes = coalesce_bytes;
    const std::vector<Run> streamed = TrainJob(*data, knobs);
    for (size_t t = 0; t < streamed.size(); ++t) {
      // Backward produced the last layer's gradients first, and each went out from the hook.
      const size_t tensors = streamed[t].weights.size();
      CATCH_REQUIRE(streamed[t].hook_order.size() == tensors);
      CATCH_CHECK(streamed[t].hook_order.front() >= tensors - 2);
      CATCH_CHECK(streamed[t].hook_order.back() <= 1);
      for (size_t i = 0; i < tensors; ++i) {
        CATCH_CHECK(torch::equal(streamed[t].weights[i], after[t].weights[i]));
      }
    }
  }
  // The weights moved, or the comparison proves nothing.
  auto initial = *BuildModel("mlp", JobOptions{}.seed);
  CATCH_CHECK((initial->parameters()[0] - after[0].weights[0]).abs().max().item<double>() > 1e-4);
}

CATCH_TEST_CASE(
    "A trainer looks for a reply only briefly before it sleeps, and the weights do not depend on it",
    "[trainer][ps_client][sync]") {
  auto data = LoadFashionMnist("/usr/share/datasets/fashion-mnist", DatasetSplit::kTrain);
  CATCH_REQUIRE(data.ok());
  // Rank 0 waits about 400 ms for its first round while rank 1 starts late; with the default
  // look of 100 µs before each sleep it must sleep through nearly all of it.
  Knobs late;
  late.rank1_late = std::chrono::milliseconds(400);
  const std::vector<Run> spun = TrainJob(*data, late);
  CATCH_INFO("waited " << spun[0].first_wait_seconds << " s, " << spun[0].first_wait_cpu_seconds
                       << " s of CPU");
  CATCH_CHECK(spun[0].first_wait_seconds > 0.3);
  CATCH_CHECK(spun[0].first_wait_cpu_seconds < 0.1 * spun[0].first_wait_seconds);
  // Sleeping at once trains to the same weights, bit for bit.
  late.reply_spin = std::chrono::microseconds(0);
  const std::vector<Run> slept = TrainJob(*data, late);
  for (size_t t = 0; t < slept.size(); ++t) {
    for (size_t i = 0; i < slept[t].weights.size(); ++i) {
      CATCH_CHECK(torch::equal(slept[t].weights[i], spun[t].weights[i]));
    }
  }
}

}  // namespace hetps
