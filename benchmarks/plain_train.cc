// The fast machine alone with no hetps at all: a plain LibTorch training loop on Fashion-MNIST,
// trained to the end of its epochs with evaluations on the test set along the way, for
// benchmarks/modes.sh's `fast alone plain` case. The model (built as hetps's trainer builds it,
// the same seed giving the same initial weights), optimizer (SGD with momentum), batch, threads
// and C library allocator set-up are those of a hetps job; the data order is a fresh seeded
// shuffle of the training set every epoch. Evaluations stop the clock: like hetps's, which run
// on copies of the weights after training, they cost no training time.
//
//   hetps-bench-plain-train [--model mlp|cnn] [--epochs N] [--batch 64] [--lr 0.05]
//                           [--momentum 0.9] [--seed 1] [--threads 1]
//                           [--eval-interval-samples N] [--max-train-samples N]
//                           [--data-dir DIR] --summary FILE
//
// FILE gets a run summary in the shape of hetps-scheduler --summary's, as far as a loop has its
// figures: status, mode ("plain"), train_seconds, samples_per_second, samples_trained,
// final_test_accuracy, final_test_loss and evaluations (snapshot k at wall_seconds of training;
// the last one final).
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

#include "common/allocator.h"
#include "common/cli.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/models/models.h"

namespace {

constexpr char kTool[] = "hetps-bench-plain-train";

struct Evaluation {
  uint32_t snapshot = 0;  // 1, 2, ...; 0 for the final one
  double wall_seconds = 0;
  int64_t samples_trained = 0;
  double test_accuracy = 0;
  double test_loss = 0;
};

// Loss and accuracy of `model` over the whole of `test`, in batches of 1,000.
Evaluation Evaluate(hetps::Model& model, const hetps::Dataset& test) {
  torch::NoGradGuard no_grad;
  model.eval();
  std::vector<int64_t> indices(1000);
  double loss = 0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < test.size(); begin += 1000) {
    const int64_t count = std::min<int64_t>(1000, test.size() - begin);
    std::iota(indices.begin(), indices.begin() + count, begin);
    hetps::Batch b = hetps::MakeBatch(test, indices.data(), static_cast<size_t>(count), torch::kCPU);
    const torch::Tensor logits = model.forward(b.input);
    loss += torch::nn::functional::cross_entropy(
                logits, b.target, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                .item<double>();
    correct += logits.argmax(1).eq(b.target).sum().item<int64_t>();
  }
  model.train();
  Evaluation e;
  e.test_loss = loss / static_cast<double>(test.size());
  e.test_accuracy = static_cast<double>(correct) / static_cast<double>(test.size());
  return e;
}

std::string SummaryJson(const std::string& model, uint64_t seed, double train_seconds, int64_t samples,
                        const std::vector<Evaluation>& evaluations) {
  std::ostringstream out;
  out.precision(6);
  const Evaluation& last = evaluations.back();
  out << "{\"status\": \"ok\", \"mode\": \"plain\", \"model\": \"" << model << "\", \"seed\": " << seed
      << ", \"train_seconds\": " << train_seconds << ", \"samples_trained\": " << samples
      << ", \"samples_per_second\": " << (train_seconds > 0 ? samples / train_seconds : 0)
      << ", \"final_test_accuracy\": " << last.test_accuracy << ", \"final_test_loss\": " << last.test_loss
      << ", \"evaluations\": [";
  for (size_t i = 0; i < evaluations.size(); ++i) {
    const Evaluation& e = evaluations[i];
    out << (i ? ", " : "") << "{\"snapshot\": " << e.snapshot
        << ", \"final\": " << (e.snapshot == 0 ? "true" : "false") << ", \"wall_seconds\": " << e.wall_seconds
        << ", \"samples_trained\": " << e.samples_trained << ", \"test_accuracy\": " << e.test_accuracy
        << ", \"test_loss\": " << e.test_loss << "}";
  }
  out << "]}\n";
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_name = "mlp", data_dir = "/usr/share/datasets/fashion-mnist", summary_path;
  int batch = 64, epochs = 2, threads = 1;
  int64_t eval_interval = 2000, max_samples = 0;
  uint64_t seed = 1;
  double lr = 0.05, momentum = 0.9;
  CLI::App app("A plain LibTorch training loop to accuracy: the fast machine alone without hetps.", kTool);
  app.add_option("--model", model_name, "mlp | cnn")
      ->default_val(model_name)
      ->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--epochs", epochs, "Passes over the training set")
      ->default_val(epochs)
      ->check(CLI::Range(1, 1000));
  app.add_option("--batch", batch, "Batch size")->default_val(batch)->check(CLI::Range(1, 1 << 16));
  app.add_option("--lr", lr, "SGD learning rate")->default_val(lr)->check(CLI::PositiveNumber);
  app.add_option("--momentum", momentum, "SGD momentum")
      ->default_val(momentum)
      ->check(CLI::Range(0.0, 0.999999));
  app.add_option("--seed", seed, "Initial weights and data order")->default_val(seed);
  app.add_option("--threads", threads, "LibTorch threads")->default_val(threads)->check(CLI::Range(1, 256));
  app.add_option("--eval-interval-samples", eval_interval, "Evaluate on the test set every N samples trained")
      ->default_val(eval_interval)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--max-train-samples", max_samples, "Use only the first N training samples (0: all)")
      ->default_val(max_samples)
      ->check(CLI::NonNegativeNumber);
  app.add_option("--data-dir", data_dir, "Fashion-MNIST directory")->default_val(data_dir);
  app.add_option("--summary", summary_path, "Where to write the run summary (JSON)")->required();
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  if (!hetps::KeepLargeBuffersMapped()) {
    std::fprintf(stderr, "%s: the C library refused the allocator thresholds\n", kTool);
    return 1;
  }
  at::set_num_interop_threads(1);
  at::set_num_threads(threads);

  auto train = hetps::LoadFashionMnist(data_dir, hetps::DatasetSplit::kTrain);
  auto test = hetps::LoadFashionMnist(data_dir, hetps::DatasetSplit::kTest);
  if (!train.ok()) return hetps::FatalError(kTool, train.status());
  if (!test.ok()) return hetps::FatalError(kTool, test.status());
  auto model = hetps::BuildModel(model_name, seed);
  if (!model.ok()) return hetps::FatalError(kTool, model.status());
  torch::optim::SGD optimizer((*model)->parameters(), torch::optim::SGDOptions(lr).momentum(momentum));

  const int64_t n = max_samples > 0 ? std::min<int64_t>(max_samples, train->size()) : train->size();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::mt19937_64 random(seed);
  std::vector<Evaluation> evaluations;
  int64_t samples = 0;
  double seconds = 0;  // training only: the clock stops for evaluations
  auto clock_start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - clock_start).count();
  };
  auto evaluate = [&](uint32_t snapshot) {
    seconds = elapsed();
    Evaluation e = Evaluate(**model, *test);
    e.snapshot = snapshot;
    e.wall_seconds = seconds;
    e.samples_trained = samples;
    evaluations.push_back(e);
    clock_start = std::chrono::steady_clock::now();
  };
  for (int epoch = 0; epoch < epochs; ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), random);
    for (int64_t begin = 0; begin < n; begin += batch) {
      const int64_t count = std::min<int64_t>(batch, n - begin);
      hetps::Batch b =
          hetps::MakeBatch(*train, order.data() + begin, static_cast<size_t>(count), torch::kCPU);
      optimizer.zero_grad();
      torch::nn::functional::cross_entropy((*model)->forward(b.input), b.target).backward();
      optimizer.step();
      const int64_t before = samples;
      samples += count;
      if (samples / eval_interval > before / eval_interval) {
        evaluate(static_cast<uint32_t>(evaluations.size() + 1));
      }
    }
  }
  evaluate(0);
  std::ofstream file(summary_path);
  file << SummaryJson(model_name, seed, seconds, samples, evaluations);
  if (!file.flush()) {
    std::fprintf(stderr, "%s: could not write %s\n", kTool, summary_path.c_str());
    return 1;
  }
  std::printf("%s: %lld samples in %.2f s, final test accuracy %.4f\n", kTool,
              static_cast<long long>(samples), seconds, evaluations.back().test_accuracy);
  return 0;
}
