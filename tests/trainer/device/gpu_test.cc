// The GPU data path on a real device (HETPS_TEST_DEVICE: cuda or mps): gradients staged through
// the device's copy stream and pinned host buffers, converted to the wire dtype on the device;
// weights committed back; a training step on the device against the same step on the CPU; and a
// sync job trained on the device against the same job on the CPU. Without the device every test
// exits 77 after saying why, which CTest reports as skipped; scripts/gpu_check.sh runs these on a
// GPU machine.
#define CATCH_CONFIG_RUNNER
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <future>
#include <string>

#include "common/dtype.h"
#include "tests/support/local_cluster.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/device/copy_stream.h"
#include "trainer/device/device.h"
#include "trainer/device/gradient_staging.h"
#include "trainer/device/model_buffers.h"
#include "trainer/device/torch_build.h"
#include "trainer/models/models.h"
#include "trainer/trainer.h"

namespace hetps {
namespace {

torch::Device TestDevice() {
  return *SelectDevice(HETPS_TEST_DEVICE);
}

std::vector<int64_t> Rows(int64_t first, int64_t count) {
  std::vector<int64_t> rows(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) rows[static_cast<size_t>(i)] = first + i;
  return rows;
}

// Final test loss of a one-trainer sync job on `device`.
double TrainOn(const std::string& device) {
  JobOptions job = testing::TestJob("cnn", ConsistencyMode::kSync, 1, 1);
  job.max_train_samples = 2048;
  job.global_batch_size = 64;
  job.chunk_samples = 256;
  job.optimizer.lr = 0.05;
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  auto run = std::async(std::launch::async, [&] {
    TrainerOptions options;
    options.scheduler = cluster.scheduler_endpoint();
    options.device = device;
    return Trainer(cluster.context(), options).Run();
  });
  Status status = cluster.WaitForJob(std::chrono::seconds(300));
  CATCH_REQUIRE(status.ok());
  Status trainer = run.get();
  CATCH_INFO(trainer.ToString());
  CATCH_REQUIRE(trainer.ok());
  return cluster.summary().final_test_loss;
}

}  // namespace

CATCH_TEST_CASE("Gradients leave the device through pinned buffers, narrowed on the device",
                "[gpu][staging]") {
  const torch::Device device = TestDevice();
  auto stream = MakeCopyStream(device);
  CATCH_REQUIRE(stream);
  const std::vector<TensorInfo> signature = {{"w", {256, 300}, wire::DType::F32},
                                             {"b", {300}, wire::DType::F32}};
  for (wire::DType dtype : {wire::DType::F32, wire::DType::BF16, wire::DType::F16}) {
    CATCH_INFO(DTypeName(dtype));
    auto staging = GradientStaging::Create(signature, device, dtype, *stream);
    CATCH_REQUIRE(staging.ok());
    for (int step = 0; step < 3; ++step) {
      (*staging)->BeginStep();
      std::vector<torch::Tensor> host;
      for (size_t t = 0; t < signature.size(); ++t) {
        host.push_back(torch::randn(signature[t].shape) * 1000);
        (*staging)->Stage(t, host.back().to(device) * 1);  // computed on the device
      }
      for (size_t k = 0; k < signature.size(); ++k) {
        auto next = (*staging)->Next(std::chrono::milliseconds(10000));
        CATCH_REQUIRE((next.ok() && next->has_value()));
        const size_t t = **next;
        const size_t bytes = signature[t].numel() * DTypeSize(dtype);
        std::vector<uint8_t> expected(bytes);
        PackFloats(host[t].data_ptr<float>(), signature[t].numel(), dtype, expected.data());
        CATCH_CHECK(std::memcmp((*staging)->data(t), expected.data(), bytes) == 0);
      }
    }
    CATCH_CHECK((*staging)->replaced_buffers() == 0);
  }
}

CATCH_TEST_CASE("A step on the device computes the CPU's gradients within 1e-4", "[gpu]") {
  const torch::Device device = TestDevice();
  auto data = LoadFashionMnist("/usr/share/datasets/fashion-mnist", DatasetSplit::kTest);
  CATCH_REQUIRE(data.ok());
  auto cpu_model = BuildModel("cnn", 7);
  auto gpu_model = BuildModel("cnn", 7);
  CATCH_REQUIRE((cpu_model.ok() && gpu_model.ok()));
  (*gpu_model)->to(device);
  auto stream = MakeCopyStream(device);
  auto buffers = ModelBuffers::Create(**gpu_model, device, stream.get());
  CATCH_REQUIRE(buffers.ok());
  const auto rows = Rows(0, 64);
  for (auto* model : {&*cpu_model, &*gpu_model}) {
    const torch::Device on = model == &*cpu_model ? torch::Device(torch::kCPU) : device;
    Batch batch = MakeBatch(*data, rows.data(), rows.size(), on);
    torch::nn::functional::cross_entropy((*model)->forward(batch.input), batch.target).backward();
  }
  auto cpu_params = (*cpu_model)->parameters();
  auto gpu_params = (*gpu_model)->parameters();
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    torch::Tensor from_device = gpu_params[i].grad().to(torch::kCPU);
    CATCH_CHECK(torch::allclose(from_device, cpu_params[i].grad(), 1e-4, 1e-5));
  }
  // Weights written into the host buffers reach the device model.
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    std::memcpy((*buffers)->weight_targets()[i], cpu_params[i].data_ptr<float>(), cpu_params[i].nbytes());
    (*buffers)->weight_targets()[i][0] = 0.25f;
  }
  CATCH_REQUIRE((*buffers)->CommitWeights().ok());
  CATCH_REQUIRE((*buffers)->FinishWeightCopies().ok());
  CATCH_CHECK(gpu_params[0].to(torch::kCPU).flatten()[0].item<float>() == 0.25f);
}

CATCH_TEST_CASE("A sync job on the device reaches the CPU job's test loss within 2%", "[gpu]") {
  const double cpu = TrainOn("cpu");
  const double gpu = TrainOn(HETPS_TEST_DEVICE);
  CATCH_INFO("test loss: cpu " << cpu << ", " << HETPS_TEST_DEVICE << " " << gpu);
  CATCH_CHECK(std::abs(gpu - cpu) <= 0.02 * cpu);
}

}  // namespace hetps

int main(int argc, char** argv) {
  // Listing the tests (CTest does at build time) needs no device.
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
  if (!listing) {
    auto device = hetps::SelectDevice(HETPS_TEST_DEVICE);
    if (!device.ok()) {
      std::printf("SKIPPED: %s\n", device.status().message().c_str());
      return 77;
    }
  }
  return Catch::Session().run(argc, argv);
}
