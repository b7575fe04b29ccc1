// The snapshot worker evaluates a snapshot on its own copy of the model, on a thread of its own,
// while the model it was taken from goes on changing: the outcome is the test pass of the weights
// as they were, on Fashion-MNIST's real test set. Snapshots come back in the order given, a bad
// one is named and the next still evaluated, and the worker stops with snapshots still waiting.
#include "trainer/snapshot_worker.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

#include "trainer/data/fashion_mnist.h"
#include "trainer/models/models.h"
#include "trainer/test_pass.h"

namespace hetps {
namespace {

Dataset TestSet() {
  auto loaded = LoadFashionMnist("/usr/share/datasets/fashion-mnist", DatasetSplit::kTest);
  CATCH_REQUIRE(loaded.ok());
  return std::move(*loaded);
}

std::shared_ptr<Model> Mlp(uint64_t seed) {
  auto model = BuildModel("mlp", seed);
  CATCH_REQUIRE(model.ok());
  return *model;
}

SnapshotWorker::Snapshot SnapshotOf(Model& model, uint32_t id) {
  SnapshotWorker::Snapshot snapshot;
  snapshot.id = id;
  snapshot.version = 10 * id;
  for (const torch::Tensor& p : model.parameters()) {
    const torch::Tensor flat = p.detach().flatten().contiguous();
    snapshot.weights.emplace_back(flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
  }
  for (const torch::Tensor& b : model.buffers()) snapshot.buffers.push_back(b.detach().clone());
  return snapshot;
}

void Perturb(Model& model, double by) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : model.parameters()) p.add_(torch::randn_like(p) * by);
}

TestOutcome PassOf(Model& model, const Dataset& test, const TestPassOptions& options) {
  auto outcome = RunTestPass(model, test, torch::kCPU, options, [] { return Status::Ok(); });
  CATCH_REQUIRE(outcome.ok());
  return *outcome;
}

}  // namespace

CATCH_TEST_CASE("A snapshot is evaluated as it was taken while its model goes on changing, in order",
                "[trainer][evaluation]") {
  const Dataset test = TestSet();
  TestPassOptions options;
  options.model_name = "mlp";
  torch::manual_seed(7);
  std::shared_ptr<Model> trained = Mlp(1);
  Perturb(*trained, 0.02);
  const TestOutcome first = PassOf(*trained, test, options);
  SnapshotWorker::Snapshot one = SnapshotOf(*trained, 1);
  Perturb(*trained, 0.05);
  const TestOutcome second = PassOf(*trained, test, options);
  SnapshotWorker::Snapshot two = SnapshotOf(*trained, 2);

  // The copy starts from other weights: only the snapshots' can give the outcomes above.
  SnapshotWorker worker(Mlp(99), test, torch::kCPU, options);
  worker.Submit(std::move(one));
  worker.Submit(std::move(two));
  Perturb(*trained, 1.0);  // training goes on meanwhile
  std::vector<SnapshotWorker::Finished> done;
  // Taken without waiting, as the trainer's loop does between steps, until both are back.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (done.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    for (auto& f : worker.Take(/*wait=*/false)) done.push_back(std::move(f));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CATCH_REQUIRE(done.size() == 2);
  CATCH_CHECK(done[0].id == 1);
  CATCH_CHECK(done[0].version == 10);
  CATCH_CHECK(done[1].id == 2);
  for (const auto& f : done) CATCH_REQUIRE(f.status.ok());
  CATCH_CHECK(done[0].outcome.samples == 10000);
  CATCH_CHECK(done[0].outcome.mean_loss == Approx(first.mean_loss).epsilon(1e-6));
  CATCH_CHECK(done[0].outcome.accuracy == Approx(first.accuracy).epsilon(1e-9));
  CATCH_CHECK(done[1].outcome.mean_loss == Approx(second.mean_loss).epsilon(1e-6));
  CATCH_CHECK(done[1].outcome.accuracy == Approx(second.accuracy).epsilon(1e-9));
  CATCH_CHECK(done[0].outcome.mean_loss != Approx(done[1].outcome.mean_loss).epsilon(1e-6));
  CATCH_CHECK(worker.Take(/*wait=*/true).empty());
}

CATCH_TEST_CASE("A snapshot that does not fit the copy is named, and the next is still evaluated",
                "[trainer][evaluation]") {
  const Dataset test = TestSet();
  TestPassOptions options;
  options.model_name = "mlp";
  std::shared_ptr<Model> trained = Mlp(1);
  SnapshotWorker::Snapshot short_one = SnapshotOf(*trained, 1);
  short_one.weights.back().pop_back();
  SnapshotWorker::Snapshot missing = SnapshotOf(*trained, 2);
  missing.weights.pop_back();
  SnapshotWorker worker(Mlp(2), test, torch::kCPU, options);
  worker.Submit(std::move(short_one));
  worker.Submit(std::move(missing));
  worker.Submit(SnapshotOf(*trained, 3));
  const std::vector<SnapshotWorker::Finished> done = worker.Take(/*wait=*/true);
  CATCH_REQUIRE(done.size() == 3);
  CATCH_CHECK(done[0].status.code() == Status::Code::kInternal);
  CATCH_CHECK_THAT(done[0].status.message(),
                   Catch::Contains("snapshot 1: parameter 5 holds 9 values, not 10"));
  CATCH_CHECK_THAT(done[1].status.message(), Catch::Contains("snapshot 2 holds 5 tensors"));
  CATCH_CHECK(done[2].status.ok());
  CATCH_CHECK(done[2].outcome.accuracy == Approx(PassOf(*trained, test, options).accuracy).epsilon(1e-9));
}

CATCH_TEST_CASE("The worker stops with snapshots still waiting", "[trainer][evaluation]") {
  const Dataset test = TestSet();
  TestPassOptions options;
  options.model_name = "mlp";
  options.batch_size = 10;  // many batches: the stop comes in the middle of the first pass
  std::shared_ptr<Model> trained = Mlp(1);
  {
    SnapshotWorker worker(Mlp(2), test, torch::kCPU, options);
    for (uint32_t id = 1; id <= 5; ++id) worker.Submit(SnapshotOf(*trained, id));
  }  // the destructor returns: nothing left running on a model about to go
  CATCH_SUCCEED("stopped");
}

}  // namespace hetps
