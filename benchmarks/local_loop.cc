// The baseline hetps is measured against: a plain single-process LibTorch training loop with the
// same model, data, optimizer, batch size and threads as a hetps job, timed in the same run.
//
//   hetps-bench-local-loop [--model cnn] [--batch 64] [--steps 200] [--threads 1]
//                          [--eval-batch 1000] [--device cpu] [--allocator kept|system]
// Prints one JSON object: training samples/s, and evaluation images/s at the given batch.
// --allocator: `kept` (the default) sets up the C library's allocator as every hetps program does
// (common/allocator.h), so that the baseline is not slowed by what hetps avoids; `system` leaves
// its defaults, to measure what that set-up is worth.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <numeric>

#include "common/allocator.h"
#include "common/cli.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/device/device.h"
#include "trainer/device/torch_build.h"
#include "trainer/models/models.h"

int main(int argc, char** argv) {
  std::string model_name = "cnn", data_dir = "/usr/share/datasets/fashion-mnist", device_spec = "cpu",
              allocator = "kept";
  int batch = 64, steps = 200, threads = 1, eval_batch = 1000;
  double lr = 0.05, momentum = 0.9;
  CLI::App app("Single-process LibTorch training loop: the baseline for hetps benchmarks.",
               "hetps-bench-local-loop");
  app.add_option("--model", model_name, "mlp | cnn")->default_val(model_name);
  app.add_option("--batch", batch, "Batch size")->default_val(batch)->check(CLI::Range(1, 1 << 16));
  app.add_option("--steps", steps, "Timed training steps")->default_val(steps)->check(CLI::Range(1, 1 << 20));
  app.add_option("--threads", threads, "LibTorch threads")->default_val(threads)->check(CLI::Range(1, 256));
  app.add_option("--eval-batch", eval_batch, "Evaluation batch size")->default_val(eval_batch);
  app.add_option("--lr", lr, "SGD learning rate")->default_val(lr);
  app.add_option("--momentum", momentum, "SGD momentum")->default_val(momentum);
  app.add_option("--data-dir", data_dir, "Fashion-MNIST directory")->default_val(data_dir);
  app.add_option("--device", device_spec, "auto, cpu, cuda, cuda:N or mps")->default_val(device_spec);
  app.add_option("--allocator", allocator,
                 "kept: large buffers stay mapped (as in hetps); system: glibc's defaults")
      ->default_val(allocator)
      ->check(CLI::IsMember({"kept", "system"}));
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  if (allocator == "kept" && !hetps::KeepLargeBuffersMapped()) {
    std::fprintf(stderr, "hetps-bench-local-loop: the C library refused the allocator thresholds\n");
    return 1;
  }
  at::set_num_interop_threads(1);
  at::set_num_threads(threads);

  auto train = hetps::LoadFashionMnist(data_dir, hetps::DatasetSplit::kTrain);
  auto test = hetps::LoadFashionMnist(data_dir, hetps::DatasetSplit::kTest);
  if (!train.ok()) return hetps::FatalError("hetps-bench-local-loop", train.status());
  if (!test.ok()) return hetps::FatalError("hetps-bench-local-loop", test.status());
  auto device = hetps::SelectDevice(device_spec);
  if (!device.ok()) return hetps::FatalError("hetps-bench-local-loop", device.status());
  auto model = hetps::BuildModel(model_name, 1);
  if (!model.ok()) return hetps::FatalError("hetps-bench-local-loop", model.status());
  (*model)->to(*device);
  torch::optim::SGD optimizer((*model)->parameters(), torch::optim::SGDOptions(lr).momentum(momentum));

  std::vector<int64_t> indices(static_cast<size_t>(batch));
  auto step = [&](int64_t k) {
    const int64_t n = train->size();
    for (int i = 0; i < batch; ++i) indices[i] = (k * batch + i) % n;
    hetps::Batch b = hetps::MakeBatch(*train, indices.data(), indices.size(), *device);
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy((*model)->forward(b.input), b.target).backward();
    optimizer.step();
  };
  // Waits for the device: GPU kernels run asynchronously.
  auto sync = [&] { (*model)->parameters()[0].sum().item<float>(); };
  for (int k = 0; k < 10; ++k) step(k);  // warm-up: allocator, OpenMP, caches
  sync();
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < steps; ++k) step(k + 10);
  sync();
  const double train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  torch::NoGradGuard no_grad;
  (*model)->eval();
  std::vector<int64_t> eval_indices(static_cast<size_t>(eval_batch));
  const auto eval_start = std::chrono::steady_clock::now();
  int64_t evaluated = 0;
  for (int64_t begin = 0; begin < test->size(); begin += eval_batch) {
    const int64_t count = std::min<int64_t>(eval_batch, test->size() - begin);
    std::iota(eval_indices.begin(), eval_indices.begin() + count, begin);
    hetps::Batch b = hetps::MakeBatch(*test, eval_indices.data(), static_cast<size_t>(count), *device);
    (*model)->forward(b.input).argmax(1).sum().item<int64_t>();
    evaluated += count;
  }
  const double eval_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - eval_start).count();
  std::printf(
      "{\"model\": \"%s\", \"batch\": %d, \"threads\": %d, \"device\": \"%s\", \"libtorch\": \"%s\", "
      "\"allocator\": \"%s\", \"train_samples_per_second\": %.1f, \"eval_batch\": %d, "
      "\"eval_images_per_second\": %.1f}\n",
      model_name.c_str(), batch, threads, device->str().c_str(), hetps::TorchBuildDescription().c_str(),
      allocator.c_str(), steps * batch / train_seconds, eval_batch, evaluated / eval_seconds);
  return 0;
}
