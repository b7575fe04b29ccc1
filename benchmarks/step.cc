// hetps's trainer step against the plain single-process LibTorch loop, in one process, in
// alternating blocks of the same steps on the same data in the same order.
//
//   hetps-bench-step [--model cnn] [--batch 64] [--threads 1] [--steps 100] [--pairs 3] [--json FILE]
//                    [--no-overlap] [--server-threads 1]
//
// The hetps step is the trainer's own: StepRunner (the batch assembled, forward, backward with
// each gradient handed to the real PsClient as backward produces it, the new weights written back
// into the model) against one real server in this process, reached over ZeroMQ's inproc
// transport: no network, and the server applies SGD on its own thread, as a server beside a
// trainer does. The plain loop is hetps-bench-local-loop's step: forward, backward and
// torch::optim::SGD's step on one thread. Both keep large buffers mapped (common/allocator.h).
// Prints one JSON object: samples/s of each (median over the pairs), the median of the pairs'
// ratios (hetps / plain), and where each one's step time goes, in microseconds per step.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/allocator.h"
#include "common/cli.h"
#include "common/job_config.h"
#include "common/logging.h"
#include "tests/support/local_cluster.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/device/model_buffers.h"
#include "trainer/models/models.h"
#include "trainer/step_runner.h"

namespace {

using Clock = std::chrono::steady_clock;
using hetps::Status;

[[noreturn]] void Fail(const Status& status) {
  std::exit(hetps::FatalError("hetps-bench-step", status));
}

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Step k's samples: the same for both loops.
void Indices(int64_t k, int batch, int64_t n, std::vector<int64_t>* indices) {
  indices->resize(static_cast<size_t>(batch));
  for (int i = 0; i < batch; ++i) (*indices)[i] = (k * batch + i) % n;
}

// The plain loop, with its phases timed.
class PlainLoop {
 public:
  PlainLoop(const std::string& model_name, const hetps::Dataset& train, double lr, double momentum)
      : train_(train) {
    auto model = hetps::BuildModel(model_name, 1);
    if (!model.ok()) Fail(model.status());
    model_ = *model;
    optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(),
                                                     torch::optim::SGDOptions(lr).momentum(momentum));
  }

  void Step(const std::vector<int64_t>& indices) {
    auto t0 = Clock::now();
    hetps::Batch b = hetps::MakeBatch(train_, indices.data(), indices.size(), torch::kCPU);
    optimizer_->zero_grad();
    auto t1 = Clock::now();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model_->forward(b.input), b.target);
    auto t2 = Clock::now();
    loss.backward();
    auto t3 = Clock::now();
    optimizer_->step();
    auto t4 = Clock::now();
    batch_ += std::chrono::duration<double>(t1 - t0).count();
    forward_ += std::chrono::duration<double>(t2 - t1).count();
    backward_ += std::chrono::duration<double>(t3 - t2).count();
    update_ += std::chrono::duration<double>(t4 - t3).count();
    ++steps_;
  }

  std::string PhasesJson() const {
    const double us = 1e6 / std::max<uint64_t>(1, steps_);
    char text[256];
    std::snprintf(text, sizeof(text),
                  "{\"batch\": %.1f, \"forward\": %.1f, \"backward\": %.1f, \"optimizer\": %.1f}",
                  batch_ * us, forward_ * us, backward_ * us, update_ * us);
    return text;
  }

 private:
  const hetps::Dataset& train_;
  std::shared_ptr<hetps::Model> model_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  double batch_ = 0, forward_ = 0, backward_ = 0, update_ = 0;
  uint64_t steps_ = 0;
};

std::string HetpsPhasesJson(const hetps::StepRunner::Timings& t, double seconds) {
  const double us = 1e6 / std::max<uint64_t>(1, t.steps);
  char text[320];
  std::snprintf(text, sizeof(text),
                "{\"batch\": %.1f, \"forward\": %.1f, \"backward\": %.1f, \"hand_off\": %.1f, "
                "\"weights_back\": %.1f, \"copy_in\": %.1f, \"other\": %.1f}",
                t.batch * us, t.forward * us, t.backward * us, t.hand_off * us, t.wire * us,
                t.host_to_device * us,
                (seconds - t.batch - t.forward - t.backward - t.hand_off - t.wire - t.host_to_device) * us);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  hetps::KeepLargeBuffersMapped();  // first, before any thread or large buffer exists
  std::string model_name = "cnn", data_dir = "/usr/share/datasets/fashion-mnist", json_path;
  int batch = 64, steps = 100, threads = 1, pairs = 3;
  bool no_overlap = false;
  int server_threads = 1;
  const double lr = 0.05, momentum = 0.9;
  CLI::App app("hetps's trainer step against the plain single-process LibTorch loop.", "hetps-bench-step");
  app.add_option("--model", model_name, "mlp | cnn")->default_val(model_name);
  app.add_option("--batch", batch, "Batch size")->default_val(batch)->check(CLI::Range(1, 1 << 16));
  app.add_option("--steps", steps, "Timed steps per block")
      ->default_val(steps)
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--threads", threads, "LibTorch threads")->default_val(threads)->check(CLI::Range(1, 256));
  app.add_option("--pairs", pairs, "Alternating blocks of each")
      ->default_val(pairs)
      ->check(CLI::Range(1, 100));
  app.add_flag("--no-overlap", no_overlap,
               "Push every gradient after backward, as hetps-trainer --no-overlap");
  app.add_option("--server-threads", server_threads, "The server's worker threads, as hetps-server --threads")
      ->default_val(server_threads)
      ->check(CLI::Range(1, 64));
  app.add_option("--data-dir", data_dir, "Fashion-MNIST directory")->default_val(data_dir);
  app.add_option("--json", json_path, "Also write the JSON object here");
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  hetps::SetLogLevel(hetps::LogLevel::kWarning);
  at::set_num_interop_threads(1);
  at::set_num_threads(threads);
  auto train = hetps::LoadFashionMnist(data_dir, hetps::DatasetSplit::kTrain);
  if (!train.ok()) Fail(train.status());

  // The hetps side: a scheduler and one server in this process, the server on inproc.
  hetps::JobOptions job = hetps::testing::TestJob(model_name, hetps::ConsistencyMode::kSync, 1, 1);
  job.global_batch_size = static_cast<uint32_t>(batch);
  job.optimizer.lr = lr;
  job.optimizer.momentum = momentum;
  job.heartbeat_timeout_ms = 60000;
  job.request_timeout_ms = 600000;
  hetps::ServerOptions server_options;
  server_options.bind = "inproc://hetps-bench-step-server";
  server_options.threads = server_threads;
  hetps::testing::LocalCluster cluster(job, server_options);
  if (Status s = cluster.Start(); !s.ok()) Fail(s);
  auto model = hetps::BuildModel(model_name, 1);
  if (!model.ok()) Fail(model.status());
  auto buffers = hetps::ModelBuffers::Create(**model, torch::kCPU);
  if (!buffers.ok()) Fail(buffers.status());
  hetps::testing::ScriptedTrainer trainer(cluster.context(), cluster.scheduler_endpoint());
  Status status = trainer.Setup((*buffers)->signature());
  auto initial = (*buffers)->HostWeights();
  if (status.ok()) status = initial.status();
  if (status.ok()) status = trainer.client().InitWeights(initial->data, initial->owner);
  if (status.ok()) status = trainer.client().Pull(0, false, (*buffers)->weight_targets()).status();
  if (status.ok()) status = (*buffers)->CommitWeights();
  if (!status.ok()) Fail(status);
  hetps::StepRunner::Options step_options;
  step_options.model_name = model_name;
  step_options.overlap = !no_overlap;
  hetps::StepRunner runner(**model, **buffers, trainer.client(), *train, torch::kCPU, step_options);
  uint64_t clock = 0;
  const int64_t n = train->size();
  std::vector<int64_t> next;  // as the trainer does, the next batch is assembled during the wait
  auto hetps_step = [&](int64_t k, const std::vector<int64_t>& indices) {
    Indices(k + 1, batch, n, &next);
    auto outcome = runner.Run(clock++, indices, next);
    if (!outcome.ok()) Fail(outcome.status());
  };
  PlainLoop plain(model_name, *train, lr, momentum);

  std::vector<int64_t> indices;
  for (int k = 0; k < 10; ++k) {  // warm-up: allocator, OpenMP, caches
    Indices(k, batch, n, &indices);
    hetps_step(k, indices);
    plain.Step(indices);
  }
  const hetps::StepRunner::Timings warm = runner.timings();
  std::vector<double> hetps_rates, plain_rates, ratios;
  double hetps_seconds = 0;
  for (int pair = 0; pair < pairs; ++pair) {
    const int64_t first = 10 + static_cast<int64_t>(pair) * steps;
    auto start = Clock::now();
    for (int k = 0; k < steps; ++k) {
      Indices(first + k, batch, n, &indices);
      hetps_step(first + k, indices);
    }
    const double hetps_block = Since(start);
    hetps_seconds += hetps_block;
    start = Clock::now();
    for (int k = 0; k < steps; ++k) {
      Indices(first + k, batch, n, &indices);
      plain.Step(indices);
    }
    const double plain_block = Since(start);
    hetps_rates.push_back(steps * batch / hetps_block);
    plain_rates.push_back(steps * batch / plain_block);
    ratios.push_back(plain_block / hetps_block);
  }
  cluster.Stop();
  hetps::StepRunner::Timings timed = runner.timings();
  timed.steps -= warm.steps;
  timed.batch -= warm.batch;
  timed.forward -= warm.forward;
  timed.backward -= warm.backward;
  timed.hand_off -= warm.hand_off;
  timed.wire -= warm.wire;
  timed.host_to_device -= warm.host_to_device;

  std::string pair_list;
  for (size_t i = 0; i < ratios.size(); ++i) {
    char line[160];
    std::snprintf(line, sizeof(line), "%s{\"hetps\": %.1f, \"plain\": %.1f, \"ratio\": %.3f}", i ? ", " : "",
                  hetps_rates[i], plain_rates[i], ratios[i]);
    pair_list += line;
  }
  char head[512];
  std::snprintf(
      head, sizeof(head),
      "{\"model\": \"%s\", \"batch\": %d, \"threads\": %d, \"overlap\": %s, \"server_threads\": %d, "
      "\"steps_per_block\": %d, \"pairs\": [%s], "
      "\"hetps_samples_per_second\": %.1f, \"plain_samples_per_second\": %.1f, \"ratio_vs_plain\": %.3f, ",
      model_name.c_str(), batch, threads, no_overlap ? "false" : "true", server_threads, steps, "%s",
      Median(hetps_rates), Median(plain_rates), Median(ratios));
  std::string json = head;
  json.replace(json.find("%s"), 2, pair_list);
  json += "\"hetps_phases_us\": " + HetpsPhasesJson(timed, hetps_seconds) +
          ", \"plain_phases_us\": " + plain.PhasesJson() + "}\n";
  std::fputs(json.c_str(), stdout);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << json;
    if (!out) Fail(Status::IoError("cannot write " + json_path));
  }
  return 0;
}
