// StepRunner's staged path, the one GPUs take (a compute thread runs backward, each gradient is
// converted and copied through host buffers and sent once its copy has finished, weights return
// through the copy stream), run on the CPU with a fake copy stream that defers every copy: it must
// train to exactly the weights of the direct CPU path, and a device error in a step must end the
// trainer with a Status naming the tensor and the device while the job goes on. And the next
// step's batch, assembled while a step waits for its weights: the samples the chunks held say come
// next, and exactly the training of a batch assembled at its own step.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <future>
#include <memory>

#include "tests/support/fake_copy_stream.h"
#include "tests/support/local_cluster.h"
#include "trainer/chunk_sampler.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/device/model_buffers.h"
#include "trainer/models/loss.h"
#include "trainer/models/models.h"
#include "trainer/step_runner.h"
#include "trainer/trainer.h"

namespace hetps {
namespace {

using testing::FakeCopyStream;

// A job of `trainers` trainers on the mlp; trainer t's options go through `adjust(t, options)`.
testing::TrainersRun RunJob(ConsistencyMode mode, uint32_t trainers,
                            const std::function<void(JobOptions&)>& adjust_job,
                            const std::function<void(uint32_t, TrainerOptions&)>& adjust) {
  JobOptions job = testing::TestJob("mlp", mode, 2, trainers);
  job.epochs = 2;
  job.max_train_samples = 2000;
  job.chunk_samples = 128;
  job.global_batch_size = 48;
  job.partition_bytes = 64 << 10;  // layers spread over both servers
  job.optimizer.lr = 0.02;
  job.optimizer.momentum = 0.9;
  if (adjust_job) adjust_job(job);
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  testing::TrainersRun run = testing::RunCpuTrainers(cluster, trainers, adjust);
  CATCH_INFO(run.job.ToString());
  CATCH_REQUIRE(run.job.ok());
  return run;
}

// A job of one server and one scripted trainer on the mlp, started and set up; stopped when
// it goes out of scope.
struct ScriptedMlp {
  explicit ScriptedMlp(const JobOptions& job) : cluster(job) {
    CATCH_REQUIRE(cluster.Start().ok());
    auto built = BuildModel("mlp", 1);
    CATCH_REQUIRE(built.ok());
    model = *built;
    auto made = ModelBuffers::Create(*model, torch::kCPU);
    CATCH_REQUIRE(made.ok());
    buffers = std::move(*made);
    trainer = std::make_unique<testing::ScriptedTrainer>(cluster.context(), cluster.scheduler_endpoint());
    CATCH_REQUIRE(trainer->Setup(buffers->signature()).ok());
  }
  ~ScriptedMlp() { cluster.Stop(); }

  // The servers start from the model's weights, and the model holds them as pulled.
  void StartFromItsWeights() {
    auto initial = buffers->HostWeights();
    CATCH_REQUIRE(initial.ok());
    CATCH_REQUIRE(trainer->client().InitWeights(initial->data, initial->owner).ok());
    CATCH_REQUIRE(trainer->client().Pull(0, false, buffers->weight_targets()).ok());
    CATCH_REQUIRE(buffers->CommitWeights().ok());
  }

  testing::LocalCluster cluster;
  std::shared_ptr<Model> model;
  std::unique_ptr<ModelBuffers> buffers;
  std::unique_ptr<testing::ScriptedTrainer> trainer;  // once the scheduler listens
};

// The losses of `steps` sync steps of the mlp through a StepRunner (1 trainer, 1 server), batch
// k being samples [16k, 16k + 16). With `prefetch`, each step names the next one's samples, but
// step `wrong` names other samples than its successor's. The final weights go to `weights`.
std::vector<double> StepLosses(const Dataset& train, int steps, bool prefetch, int wrong,
                               std::vector<torch::Tensor>* weights, uint64_t* prepared) {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 1);
  job.global_batch_size = 16;
  job.optimizer.lr = 0.05;
  job.optimizer.momentum = 0.9;
  ScriptedMlp mlp(job);
  mlp.StartFromItsWeights();
  StepRunner::Options options;
  options.model_name = "mlp";
  StepRunner runner(*mlp.model, *mlp.buffers, mlp.trainer->client(), train, torch::kCPU, options);
  auto batch = [](int64_t k, int64_t offset = 0) {
    std::vector<int64_t> indices(16);
    for (int64_t i = 0; i < 16; ++i) indices[i] = 16 * k + i + offset;
    return indices;
  };
  std::vector<double> losses;
  for (int k = 0; k < steps; ++k) {
    std::vector<int64_t> next;
    if (prefetch) next = batch(k + 1, k == wrong ? 1 : 0);
    auto outcome = runner.Run(static_cast<uint64_t>(k), batch(k), next);
    CATCH_REQUIRE(outcome.ok());
    losses.push_back(outcome->loss);
  }
  weights->clear();
  for (const auto& parameter : mlp.model->parameters()) weights->push_back(parameter.detach().clone());
  *prepared = runner.timings().prepared;
  return losses;
}

}  // namespace

CATCH_TEST_CASE(
    "A batch assembled during the previous step's wait trains exactly as one assembled at its step",
    "[trainer][step]") {
  auto train = LoadFashionMnist("/usr/share/datasets/fashion-mnist", DatasetSplit::kTrain);
  CATCH_REQUIRE(train.ok());
  const int steps = 12, wrong = 5;
  std::vector<torch::Tensor> plain_weights, prefetched_weights;
  uint64_t plain_prepared = 0, prepared = 0;
  const std::vector<double> plain = StepLosses(*train, steps, false, -1, &plain_weights, &plain_prepared);
  const std::vector<double> prefetched =
      StepLosses(*train, steps, true, wrong, &prefetched_weights, &prepared);
  CATCH_CHECK(plain_prepared == 0);
  // Every step but the first and the one after the wrong guess took the batch made in advance.
  CATCH_CHECK(prepared == static_cast<uint64_t>(steps - 2));
  CATCH_REQUIRE(prefetched.size() == plain.size());
  for (int k = 0; k < steps; ++k) {
    CATCH_INFO("step " << k);
    CATCH_CHECK(prefetched[k] == plain[k]);  // the batch is the step's own, also after the wrong guess
  }
  CATCH_REQUIRE(prefetched_weights.size() == plain_weights.size());
  for (size_t t = 0; t < plain_weights.size(); ++t)
    CATCH_CHECK(torch::equal(prefetched_weights[t], plain_weights[t]));
}

CATCH_TEST_CASE("ChunkSampler::Peek names the samples the next Next() hands out, and changes nothing",
                "[trainer][chunks]") {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 1);
  job.max_train_samples = 1000;
  job.chunk_samples = 100;
  ScriptedMlp mlp(job);
  ChunkSampler sampler(&mlp.trainer->control(), &mlp.trainer->sender(), 1000, job.seed,
                       std::chrono::milliseconds(5000));
  CATCH_CHECK(sampler.Peek(48).empty());  // nothing held before the first chunk is asked for
  size_t handed_out = 0, peeked = 0;
  for (uint64_t clock = 0; handed_out < 1000; ++clock) {
    const std::vector<int64_t> peek = sampler.Peek(48);
    CATCH_CHECK(sampler.Peek(48) == peek);
    auto next = sampler.Next(0, 48, clock);
    CATCH_REQUIRE(next.ok());
    CATCH_REQUIRE(!next->empty());
    handed_out += next->size();
    if (peek.empty()) continue;
    ++peeked;
    CATCH_CHECK(peek == *next);
  }
  CATCH_CHECK(handed_out == 1000);
  // Chunks of 100 and batches of 48: a batch that needs a chunk not yet asked for cannot be
  // named in advance, every other one can (the first of each chunk's two or three batches).
  CATCH_CHECK(peeked >= 9);
}

CATCH_TEST_CASE("Training through the staged device path gives exactly the weights of the direct path",
                "[trainer][device][staging]") {
  for (const char* wire_dtype : {"fp32", "bf16"}) {
    CATCH_INFO("wire dtype " << wire_dtype);
    auto job = [wire_dtype](JobOptions& options) {
      auto parsed = ParseWireDType(wire_dtype);
      CATCH_REQUIRE(parsed.ok());
      options.wire_dtype = *parsed;
    };
    std::vector<std::pair<std::string, testing::TrainersRun>> runs;
    std::shared_ptr<FakeCopyStream::Shared> copies;
    runs.emplace_back("direct", RunJob(ConsistencyMode::kSync, 1, job, [](uint32_t, TrainerOptions&) {}));
    // Without overlap only once: the dtype conversion does not depend on when gradients are staged.
    for (bool overlap : {true, false}) {
      if (!overlap && std::string(wire_dtype) != "fp32") continue;
      runs.emplace_back(
          overlap ? "staged, overlapping" : "staged, after backward",
          RunJob(ConsistencyMode::kSync, 1, job, [&copies, overlap](uint32_t, TrainerOptions& o) {
            o.overlap = overlap;
            o.copy_stream = [&copies] {
              auto stream = std::make_unique<FakeCopyStream>();
              copies = stream->shared();
              return stream;
            };
          }));
      // Every step sent each of the 6 gradients and received each of the 6 weights through it.
      CATCH_REQUIRE(copies);
      CATCH_REQUIRE(runs.back().second.summary.trainer_details.size() == 1);
      // (Less the sync round without data that ends the last epoch.)
      CATCH_CHECK(copies->done >= 2 * 6 * (runs.back().second.summary.trainer_details[0].steps - 1));
    }
    const RunSummary& direct = runs[0].second.summary;
    CATCH_REQUIRE(runs[0].second.trainers[0].ok());
    for (const auto& [name, run] : runs) {
      CATCH_INFO(name << ": " << run.trainers[0].ToString());
      CATCH_CHECK(run.trainers[0].ok());
      CATCH_CHECK(run.summary.samples_completed == 4000);
      // The test loss is a function of every weight: equal to the last bit, the weights are equal.
      CATCH_CHECK(run.summary.final_test_loss == direct.final_test_loss);
      CATCH_CHECK(run.summary.weight_version == direct.weight_version);
    }
    CATCH_CHECK(direct.final_test_accuracy > 0.6);
  }
}

CATCH_TEST_CASE("A device error in a step ends the trainer with a Status naming the tensor and the device",
                "[trainer][device][staging]") {
  // Trainer 1's copy stream fails like a GPU out of memory at its 100th copy (the eighth step or
  // so: 6 weights and 6 gradients per step); trainer 0 trains on the CPU and finishes the job.
  const testing::TrainersRun run = RunJob(
      ConsistencyMode::kAsync, 2, [](JobOptions&) {},
      [](uint32_t t, TrainerOptions& options) {
        if (t == 0) return;
        options.copy_stream = [] { return std::make_unique<FakeCopyStream>(/*fail_copy=*/100); };
      });
  CATCH_REQUIRE(run.trainers.size() == 2);
  CATCH_CHECK(run.trainers[0].ok());
  const Status& failed = run.trainers[1];
  CATCH_INFO(failed.ToString());
  CATCH_CHECK(failed.code() == Status::Code::kInternal);
  CATCH_CHECK(failed.message().find(" on cpu") != std::string::npos);
  CATCH_CHECK(failed.message().find("CUDA out of memory") != std::string::npos);
  CATCH_CHECK((failed.message().find("the gradient of fc") != std::string::npos ||
               failed.message().find("the weights of fc") != std::string::npos));
  // The job went on without it and ended well. (Whether its last chunk is trained again depends on
  // the other trainer still being at work when the failed one is declared dead: not checked here.)
  CATCH_CHECK(run.summary.ok);
}

CATCH_TEST_CASE("With clip_grad_norm a step pushes its gradient scaled to that global norm",
                "[trainer][step][clip]") {
  auto train = LoadFashionMnist("/usr/share/datasets/fashion-mnist", DatasetSplit::kTrain);
  CATCH_REQUIRE(train.ok());
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 1);
  job.global_batch_size = 16;
  job.optimizer.lr = 0.5;  // plain SGD: the servers' step is lr times the pushed gradient
  ScriptedMlp mlp(job);
  mlp.StartFromItsWeights();
  std::vector<int64_t> indices(16);
  for (int64_t i = 0; i < 16; ++i) indices[static_cast<size_t>(i)] = i;

  // The step's gradient, computed here on the same weights and batch.
  std::vector<torch::Tensor> before, grads;
  for (const torch::Tensor& p : mlp.model->parameters()) before.push_back(p.detach().clone());
  Batch batch = MakeBatch(*train, indices.data(), indices.size(), torch::kCPU);
  mlp.buffers->ClearGradients();
  BatchLoss(Loss::kCrossEntropy, mlp.model->forward(batch.input), batch.target).backward();
  double norm_squared = 0;
  for (const torch::Tensor& p : mlp.model->parameters()) {
    grads.push_back(p.grad().detach().clone());
    norm_squared += grads.back().pow(2).sum().item<double>();
  }
  const double norm = std::sqrt(norm_squared);
  const double max_norm = norm / 4;  // well below: the push is a quarter of the gradient

  StepRunner::Options options;
  options.model_name = "mlp";
  options.clip_grad_norm = max_norm;
  StepRunner runner(*mlp.model, *mlp.buffers, mlp.trainer->client(), *train, torch::kCPU, options);
  CATCH_CHECK_FALSE(runner.overlapping());  // the whole gradient first
  CATCH_REQUIRE(runner.Run(0, indices).ok());
  const auto after = mlp.model->parameters();
  for (size_t t = 0; t < before.size(); ++t) {
    const torch::Tensor expected = before[t] - job.optimizer.lr * (max_norm / norm) * grads[t];
    CATCH_INFO("parameter " << t);
    CATCH_CHECK(torch::allclose(after[t].detach(), expected, 1e-4, 1e-6));
  }
}

}  // namespace hetps
