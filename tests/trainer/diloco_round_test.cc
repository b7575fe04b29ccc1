// Mode diloco through real servers: a trainer's rounds (DilocoRound, StepRunner::InnerStep and
// FinishRound) against plain SGD computed by the test. With one inner step of SGD without
// momentum per round and plain averaging outside, one trainer must train exactly as SGD on each
// batch, and two trainers as sync SGD on their batches together; with several inner steps a
// round's outer step is the pseudo-gradient's, and the inner optimizer's momentum carries over
// from round to round.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <future>
#include <memory>
#include <vector>

#include "tests/support/local_cluster.h"
#include "tests/support/trainer_option_jobs.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/diloco_round.h"
#include "trainer/step_runner.h"

namespace hetps {
namespace {

constexpr int64_t kBatch = 16;
constexpr double kLr = 0.05;
constexpr int kRounds = 5;

std::vector<int64_t> Rows(int64_t begin, int64_t count) {
  std::vector<int64_t> rows(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) rows[static_cast<size_t>(i)] = begin + i;
  return rows;
}

// The mlp in mode diloco on one server, `trainers` trainers, rounds of `round_steps` inner
// steps, the outer optimizer plain averaging.
JobOptions DilocoJob(uint32_t trainers, uint32_t round_steps) {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kDiloco, 1, trainers);
  job.global_batch_size = kBatch;
  job.optimizer.lr = kLr;
  job.optimizer.momentum = 0;
  job.diloco.round_steps = round_steps;
  return job;
}

OptimizerOptions InnerSgd(double momentum) {
  OptimizerOptions inner = DefaultOptimizerOptions(OptimizerOptions::Kind::kSgd);
  inner.lr = kLr;
  inner.momentum = momentum;
  return inner;
}

// One trainer of a running diloco job: kRounds rounds of `round_steps` inner steps each on the
// batches `batch_rows(rank, round, step)`, with or without `overlap`; returns its model's weights
// after the last round (the servers' weights).
Result<std::vector<torch::Tensor>> TrainRounds(
    testing::LocalCluster& cluster, const Dataset& train, const OptimizerOptions& inner, uint32_t round_steps,
    const std::function<std::vector<int64_t>(uint32_t, int, uint32_t)>& batch_rows, bool overlap = false) {
  HETPS_ASSIGN_OR_RETURN(testing::ScriptedModel joined, testing::JoinScriptedModel(cluster, "mlp"));
  DilocoOptions rounds;
  rounds.round_steps = round_steps;
  HETPS_ASSIGN_OR_RETURN(auto round, DilocoRound::Create(joined.buffers->parameters(), inner, rounds));
  StepRunner::Options options;
  options.model_name = "mlp";
  options.round = round.get();
  StepRunner runner(*joined.model, *joined.buffers, joined.trainer->client(), train, torch::kCPU, options);
  const uint32_t rank = joined.trainer->rank();
  for (int r = 0; r < kRounds; ++r) {
    round->Begin(0);
    while (!round->Over()) {
      double loss = 0, seconds = 0;
      HETPS_RETURN_IF_ERROR(runner.InnerStep(batch_rows(rank, r, round->steps()), &loss, &seconds));
    }
    HETPS_ASSIGN_OR_RETURN(StepRunner::Outcome outcome,
                           runner.FinishRound(static_cast<uint64_t>(r), overlap));
    if (overlap) {
      // The round travels while the next one runs; its weights are taken in by the next's end.
      if (outcome.weights_written || !runner.round_travelling()) {
        return Status::Internal("round " + std::to_string(r) + " did not travel while the next ran");
      }
      continue;
    }
    if (outcome.pulled.weight_version != static_cast<uint64_t>(r + 1)) {
      return Status::Internal("round " + std::to_string(r) + " came back at version " +
                              std::to_string(outcome.pulled.weight_version));
    }
  }
  HETPS_RETURN_IF_ERROR(runner.Drain().status());  // the last round's weights
  if (runner.round_pulled().weight_version != static_cast<uint64_t>(kRounds)) {
    return Status::Internal("the last round came back at version " +
                            std::to_string(runner.round_pulled().weight_version));
  }
  return testing::ModelWeights(*joined.model);
}

// Plain SGD at kLr from the mlp's initial weights, one step per entry of `steps` on the mean
// gradient of its rows.
std::vector<torch::Tensor> Sgd(const Dataset& train, const std::vector<std::vector<int64_t>>& steps) {
  auto built = BuildModel("mlp", 1);
  CATCH_REQUIRE(built.ok());
  Model& model = **built;
  model.train();
  for (const std::vector<int64_t>& rows : steps) {
    testing::MlpGradient(model, train, rows);
    torch::NoGradGuard no_grad;
    for (auto& parameter : model.parameters()) parameter.add_(parameter.grad(), -kLr);
  }
  return testing::ModelWeights(model);
}

Dataset Train() {
  auto loaded = LoadFashionMnist("/usr/share/datasets/fashion-mnist", DatasetSplit::kTrain);
  CATCH_REQUIRE(loaded.ok());
  return std::move(*loaded);
}

void CheckClose(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  CATCH_REQUIRE(a.size() == b.size());
  for (size_t t = 0; t < a.size(); ++t) {
    const double worst = (a[t] - b[t]).abs().max().item<double>();
    CATCH_INFO("tensor " << t << ": largest difference " << worst);
    CATCH_CHECK(worst < 1e-6);
  }
}

}  // namespace

CATCH_TEST_CASE("One diloco trainer with one inner SGD step per round and plain averaging trains as SGD",
                "[trainer][diloco]") {
  const Dataset train = Train();
  testing::LocalCluster cluster(DilocoJob(1, 1));
  CATCH_REQUIRE(cluster.Start().ok());
  auto rows = [](uint32_t, int round, uint32_t) { return Rows(round * kBatch, kBatch); };
  auto trained = TrainRounds(cluster, train, InnerSgd(0), 1, rows);
  CATCH_INFO(trained.status().ToString());
  CATCH_REQUIRE(trained.ok());
  std::vector<std::vector<int64_t>> steps;
  for (int r = 0; r < kRounds; ++r) steps.push_back(Rows(r * kBatch, kBatch));
  CheckClose(*trained, Sgd(train, steps));
  cluster.Stop();
}

CATCH_TEST_CASE("With rounds overlapping their transfers, one diloco trainer still trains as SGD",
                "[trainer][diloco]") {
  // Each round's progress is pushed and not lost: the servers' weights after it, taken in during
  // the next round, add to the model exactly what the next round has trained since.
  const Dataset train = Train();
  testing::LocalCluster cluster(DilocoJob(1, 2));
  CATCH_REQUIRE(cluster.Start().ok());
  auto rows = [](uint32_t, int round, uint32_t step) { return Rows((2 * round + step) * kBatch, kBatch); };
  auto trained = TrainRounds(cluster, train, InnerSgd(0), 2, rows, /*overlap=*/true);
  CATCH_INFO(trained.status().ToString());
  CATCH_REQUIRE(trained.ok());
  std::vector<std::vector<int64_t>> steps;
  for (int k = 0; k < 2 * kRounds; ++k) steps.push_back(Rows(k * kBatch, kBatch));
  CheckClose(*trained, Sgd(train, steps));
  cluster.Stop();
}

CATCH_TEST_CASE(
    "Two diloco trainers with one inner SGD step per round and plain averaging train as sync SGD "
    "on their batches together",
    "[trainer][diloco]") {
  const Dataset train = Train();
  testing::LocalCluster cluster(DilocoJob(2, 1));
  CATCH_REQUIRE(cluster.Start().ok());
  // Round r: trainer t takes the t-th kBatch of the round's 2 * kBatch rows.
  auto rows = [](uint32_t rank, int round, uint32_t) { return Rows((2 * round + rank) * kBatch, kBatch); };
  auto first =
      std::async(std::launch::async, [&] { return TrainRounds(cluster, train, InnerSgd(0), 1, rows); });
  auto second =
      std::async(std::launch::async, [&] { return TrainRounds(cluster, train, InnerSgd(0), 1, rows); });
  auto a = first.get();
  auto b = second.get();
  CATCH_INFO(a.status().ToString() << "; " << b.status().ToString());
  CATCH_REQUIRE(a.ok());
  CATCH_REQUIRE(b.ok());
  std::vector<std::vector<int64_t>> steps;
  for (int r = 0; r < kRounds; ++r) steps.push_back(Rows(2 * r * kBatch, 2 * kBatch));
  const std::vector<torch::Tensor> sync = Sgd(train, steps);
  CheckClose(*a, sync);
  CheckClose(*b, sync);
  cluster.Stop();
}

CATCH_TEST_CASE(
    "A diloco round of several inner steps moves the servers' weights as far as the trainer's, "
    "with the inner momentum kept across rounds",
    "[trainer][diloco]") {
  const Dataset train = Train();
  testing::LocalCluster cluster(DilocoJob(1, 4));
  CATCH_REQUIRE(cluster.Start().ok());
  auto rows = [](uint32_t, int round, uint32_t step) { return Rows((4 * round + step) * kBatch, kBatch); };
  auto trained = TrainRounds(cluster, train, InnerSgd(0.9), 4, rows);
  CATCH_INFO(trained.status().ToString());
  CATCH_REQUIRE(trained.ok());
  // The same 20 steps of SGD with momentum 0.9 on one model: one trainer and plain averaging
  // leave the servers where the trainer's own steps went, and a momentum reset at each round
  // would not.
  auto reference = [&](bool reset_each_round) {
    auto built = BuildModel("mlp", 1);
    CATCH_REQUIRE(built.ok());
    Model& model = **built;
    model.train();
    std::unique_ptr<torch::optim::SGD> sgd;
    for (int r = 0; r < kRounds; ++r) {
      if (!sgd || reset_each_round) {
        sgd = std::make_unique<torch::optim::SGD>(model.parameters(),
                                                  torch::optim::SGDOptions(kLr).momentum(0.9));
      }
      for (int s = 0; s < 4; ++s) {
        testing::MlpGradient(model, train, Rows((4 * r + s) * kBatch, kBatch));
        sgd->step();
      }
    }
    return testing::ModelWeights(model);
  };
  CATCH_CHECK(testing::AllClose(*trained, reference(false), 1e-4, 1e-5));
  CATCH_CHECK(!testing::AllClose(*trained, reference(true), 1e-4, 1e-5));
  cluster.Stop();
}

}  // namespace hetps
