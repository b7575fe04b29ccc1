#include "tests/support/trainer_option_jobs.h"

#include <memory>
#include <utility>

#include <torch/torch.h>

#include "tests/support/fake_copy_stream.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/models/loss.h"

namespace hetps::testing {

TrainersRun RunMlpJob(ConsistencyMode mode, uint32_t trainers,
                      const std::function<void(JobOptions&)>& adjust_job,
                      const std::function<void(uint32_t, TrainerOptions&)>& adjust_trainer, bool staged) {
  JobOptions job = TestJob("mlp", mode, 1, trainers);
  job.max_train_samples = 4000;
  job.chunk_samples = 500;
  job.global_batch_size = 32;
  job.optimizer.lr = 0.05;
  job.optimizer.momentum = 0.5;
  job.eval_interval_samples = 1000;
  if (adjust_job) adjust_job(job);
  LocalCluster cluster(job);
  if (Status started = cluster.Start(); !started.ok()) {
    TrainersRun failed;
    failed.job = started;
    return failed;
  }
  return RunCpuTrainers(cluster, trainers, [&adjust_trainer, staged](uint32_t t, TrainerOptions& options) {
    if (adjust_trainer) adjust_trainer(t, options);
    if (staged) options.copy_stream = [] { return std::make_unique<FakeCopyStream>(); };
  });
}

namespace {

JobOptions OneTrainerSgdJob(uint32_t batch, double lr) {
  JobOptions job = TestJob("mlp", ConsistencyMode::kAsync, 1, 1);
  job.global_batch_size = batch;
  job.optimizer.lr = lr;
  job.optimizer.momentum = 0;
  return job;
}

}  // namespace

OneTrainerSgd::OneTrainerSgd(uint32_t batch, double lr) : cluster(OneTrainerSgdJob(batch, lr)) {}

Status OneTrainerSgd::Start() {
  auto loaded = LoadFashionMnist("/usr/share/datasets/fashion-mnist", DatasetSplit::kTrain);
  if (!loaded.ok()) return loaded.status();
  train = std::move(*loaded);
  if (Status started = cluster.Start(); !started.ok()) return started;
  auto model = JoinScriptedModel(cluster, "mlp");
  if (!model.ok()) return model.status();
  joined = std::move(*model);
  return Status::Ok();
}

void MlpGradient(Model& model, const Dataset& train, const std::vector<int64_t>& indices) {
  for (auto& parameter : model.parameters()) parameter.mutable_grad() = torch::Tensor();
  Batch batch = MakeBatch(train, indices.data(), indices.size(), torch::kCPU);
  BatchLoss(Loss::kCrossEntropy, model.forward(batch.input), batch.target).backward();
}

std::vector<torch::Tensor> ModelWeights(Model& model) {
  std::vector<torch::Tensor> weights;
  for (const auto& parameter : model.parameters()) weights.push_back(parameter.detach().clone());
  return weights;
}

bool AllClose(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, double rtol,
              double atol) {
  if (a.size() != b.size()) return false;
  for (size_t t = 0; t < a.size(); ++t) {
    if (!torch::allclose(a[t], b[t], rtol, atol)) return false;
  }
  return true;
}

}  // namespace hetps::testing
