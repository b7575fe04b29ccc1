// How fast a server applies the optimizer: every optimizer over the same parameters (64 MiB of
// float32 by default), with 1 thread and with 2, against two baselines measured in the same run:
// the memory-bandwidth bound (a copy moving as many bytes, read plus written, on the same thread
// count) and torch::optim's step on the same tensors with the same thread count.
//
//   hetps-bench-apply [--mib 64] [--repeats 5] [--threads 1,2] [--json FILE]
// Prints a markdown table; --json writes one object per case, `ratio` being the fraction of the
// bandwidth bound reached.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include "common/allocator.h"
#include "common/cli.h"
#include "ps/optimizer.h"

namespace {

using Clock = std::chrono::steady_clock;

// The best of `repeats` timings of `run`, in seconds (best: the machine is shared and noisy).
double Best(int repeats, const std::function<void()>& run) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

// Runs body(begin, end) over [0, n) cut into `threads` contiguous ranges, one thread each.
void Parallel(size_t n, int threads, const std::function<void(size_t, size_t)>& body) {
  std::vector<std::thread> pool;
  const size_t per = (n + threads - 1) / threads;
  for (int t = 1; t < threads; ++t) {
    const size_t begin = std::min(n, t * per), end = std::min(n, begin + per);
    pool.emplace_back(body, begin, end);
  }
  body(0, std::min(n, per));
  for (std::thread& thread : pool) thread.join();
}

struct Case {
  const char* name;
  hetps::OptimizerOptions options;
};

std::vector<Case> Cases() {
  using Kind = hetps::OptimizerOptions::Kind;
  std::vector<Case> cases = {{"sgd", hetps::DefaultOptimizerOptions(Kind::kSgd)},
                             {"sgd+momentum", hetps::DefaultOptimizerOptions(Kind::kSgd)},
                             {"adam", hetps::DefaultOptimizerOptions(Kind::kAdam)},
                             {"adamw", hetps::DefaultOptimizerOptions(Kind::kAdamW)},
                             {"adagrad", hetps::DefaultOptimizerOptions(Kind::kAdagrad)}};
  cases[1].options.momentum = 0.9;
  return cases;
}

std::unique_ptr<torch::optim::Optimizer> TorchOptimizer(const hetps::OptimizerOptions& o,
                                                        const std::vector<torch::Tensor>& params) {
  using Kind = hetps::OptimizerOptions::Kind;
  switch (o.kind) {
    case Kind::kSgd:
      return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(o.lr).momentum(o.momentum));
    case Kind::kAdam:
      return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(o.lr));
    case Kind::kAdamW:
      return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(o.lr));
    case Kind::kAdagrad:
      return std::make_unique<torch::optim::Adagrad>(params, torch::optim::AdagradOptions(o.lr));
  }
  return nullptr;
}

std::vector<int> ParseThreads(const std::string& list) {
  std::vector<int> threads;
  size_t start = 0;
  while (start < list.size()) {
    const size_t comma = list.find(',', start);
    threads.push_back(std::stoi(list.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return threads;
}

}  // namespace

int main(int argc, char** argv) {
  hetps::KeepLargeBuffersMapped();  // first, before any thread or large buffer exists
  int mib = 64, repeats = 5;
  std::string thread_list = "1,2", json_path;
  CLI::App app("Optimizer apply speed against the memory-bandwidth bound and torch::optim.",
               "hetps-bench-apply");
  app.add_option("--mib", mib, "MiB of float32 parameters")->default_val(mib)->check(CLI::Range(1, 4096));
  app.add_option("--repeats", repeats, "Timed repetitions; the best counts")
      ->default_val(repeats)
      ->check(CLI::Range(1, 1000));
  app.add_option("--threads", thread_list, "Thread counts to measure, comma-separated")
      ->default_val(thread_list);
  app.add_option("--json", json_path, "Write the figures as JSON here");
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  std::vector<int> thread_counts;
  try {
    thread_counts = ParseThreads(thread_list);
  } catch (const std::exception&) {
    return hetps::FatalError(
        "hetps-bench-apply",
        hetps::Status::InvalidArgument("--threads: '" + thread_list + "' is not a list of counts"));
  }
  at::set_num_interop_threads(1);

  const size_t n = static_cast<size_t>(mib) << 18;  // floats
  std::vector<float> grad(n), source(n), target(n);
  for (size_t i = 0; i < n; ++i) grad[i] = 1e-3f * static_cast<float>(i % 1000) - 0.5f;
  std::fill(source.begin(), source.end(), 1.0f);
  std::fill(target.begin(), target.end(), 0.0f);

  std::printf(
      "| optimizer | threads | floats touched per parameter | GB/s | bandwidth bound GB/s | "
      "of bound | torch::optim GB/s | vs torch::optim |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  std::string json = "[\n";
  for (int threads : thread_counts) {
    if (threads < 1)
      return hetps::FatalError("hetps-bench-apply",
                               hetps::Status::InvalidArgument("--threads: counts must be >= 1"));
    at::set_num_threads(threads);
    // The bound: a copy reads and writes n floats each, on the same threads.
    const double copy_seconds = Best(repeats, [&] {
      Parallel(n, threads, [&](size_t b, size_t e) {
        std::memcpy(target.data() + b, source.data() + b, (e - b) * sizeof(float));
      });
    });
    const double bound = 2.0 * n * sizeof(float) / copy_seconds / 1e9;
    for (const Case& c : Cases()) {
      auto optimizer = hetps::Optimizer::Create(c.options);
      if (!optimizer.ok()) return hetps::FatalError("hetps-bench-apply", optimizer.status());
      const int slots = (*optimizer)->state_slots();
      std::vector<float> weights(n, 0.5f), state(static_cast<size_t>(slots) * n);
      // Each thread owns a contiguous block of state, slot-major over its own range.
      (*optimizer)->InitState(state.empty() ? nullptr : state.data(), n);
      int64_t step = 0;
      const double seconds = Best(repeats, [&] {
        ++step;
        Parallel(n, threads, [&](size_t b, size_t e) {
          (*optimizer)
              ->Apply(weights.data() + b, grad.data() + b, 1.0f,
                      slots == 0 ? nullptr : state.data() + b * slots, e - b, step, 1.0f,
                      hetps::Optimizer::Share::kRound);
        });
      });
      const double touched = 3.0 + 2.0 * slots;  // read w, g and the state; write w and the state
      const double gbps = touched * n * sizeof(float) / seconds / 1e9;

      torch::Tensor param = torch::full({static_cast<int64_t>(n)}, 0.5f);
      param.mutable_grad() = torch::from_blob(grad.data(), {static_cast<int64_t>(n)}).clone();
      auto torch_optimizer = TorchOptimizer(c.options, {param});
      torch_optimizer->step();  // allocates its state outside the timing
      const double torch_seconds = Best(repeats, [&] { torch_optimizer->step(); });
      const double torch_gbps = touched * n * sizeof(float) / torch_seconds / 1e9;

      std::printf("| %s | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %.2fx |\n", c.name, threads, touched, gbps,
                  bound, gbps / bound, torch_gbps, torch_seconds / seconds);
      char line[512];
      std::snprintf(line, sizeof(line),
                    "  {\"optimizer\": \"%s\", \"threads\": %d, \"mib\": %d, \"floats_touched\": %.0f, "
                    "\"gb_per_second\": %.3f, \"bound_gb_per_second\": %.3f, \"ratio\": %.3f, "
                    "\"torch_gb_per_second\": %.3f, \"vs_torch\": %.3f},\n",
                    c.name, threads, mib, touched, gbps, bound, gbps / bound, torch_gbps,
                    torch_seconds / seconds);
      json += line;
    }
  }
  if (json.size() > 2) json.erase(json.size() - 2, 1);  // the last comma
  json += "]\n";
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << json;
    if (!out) {
      return hetps::FatalError("hetps-bench-apply", hetps::Status::IoError("cannot write " + json_path));
    }
  }
  return 0;
}
