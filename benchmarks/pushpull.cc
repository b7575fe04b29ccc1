// How close a push-pull round trip comes to the wire: one trainer (the real PsClient) against 1
// and 2 real servers on 127.0.0.1 in sync mode, for models of several sizes cut into partitions
// of the default size, against two baselines measured in the same run: a bare ZeroMQ
// DEALER/ROUTER echo of the same bytes in the same messages over the same number of sockets, and
// memcpy of the model.
//
//   hetps-bench-pushpull [--mib 4,64,256] [--servers 1,2] [--seconds 3] [--wire-dtype fp32]
//                        [--server-threads 1] [--partition-bytes N] [--device cpu] [--json FILE]
// Prints a markdown table; --json writes one object per case, `ratio` being hetps round trips
// per second over the echo's. With --device cuda (or mps) the gradient starts on the device and
// the weights end there: each round trip includes the trainer's GPU data path (conversion to the
// wire dtype on the device, the copy through a pinned host buffer, the weights' copy back).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <torch/torch.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "benchmarks/echo.h"
#include "common/allocator.h"
#include "common/cli.h"
#include "common/dtype.h"
#include "common/job_config.h"
#include "common/logging.h"
#include "common/shard_map.h"
#include "tests/support/local_cluster.h"
#include "trainer/device/copy_stream.h"
#include "trainer/device/device.h"
#include "trainer/device/gradient_staging.h"

namespace {

using Clock = std::chrono::steady_clock;
using hetps::Status;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<int> ParseList(const std::string& flag, const std::string& list) {
  std::vector<int> values;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const int value = std::atoi(list.substr(start, comma - start).c_str());
    if (value < 1) {
      std::fprintf(stderr, "hetps-bench-pushpull: %s: '%s' is not a list of positive numbers\n", flag.c_str(),
                   list.c_str());
      std::exit(2);
    }
    values.push_back(value);
    start = comma + 1;
  }
  return values;
}

// Repeats `round` for at least `seconds` (and at least 3 times) after one warm-up; rounds per second.
double RoundsPerSecond(double seconds, const std::function<Status()>& round) {
  Status status = round();
  const auto start = Clock::now();
  int rounds = 0;
  while (status.ok() && (rounds < 3 || SecondsSince(start) < seconds)) {
    status = round();
    ++rounds;
  }
  if (!status.ok()) return hetps::FatalError("hetps-bench-pushpull", status), -1;
  return rounds / SecondsSince(start);
}

struct Figures {
  double hetps_rounds = 0, echo_rounds = 0, memcpy_gbps = 0;
};

// One round trip of a gradient that starts on `device` and weights that end there.
class DeviceRound {
 public:
  DeviceRound(torch::Device device, const std::vector<hetps::TensorInfo>& model,
              hetps::wire::DType wire_dtype)
      : stream_(hetps::MakeCopyStream(device)) {
    auto staging = hetps::GradientStaging::Create(model, device, wire_dtype, *stream_);
    if (!staging.ok()) std::exit(hetps::FatalError("hetps-bench-pushpull", staging.status()));
    staging_ = std::move(*staging);
    grad_ = torch::full(model[0].shape, 1e-3f, torch::TensorOptions().device(device));
    weights_ = torch::empty(model[0].shape, torch::TensorOptions().device(device));
    host_weights_ = hetps::HostBuffer(*stream_, model[0].shape, torch::kFloat32);
  }

  Status Run(hetps::PsClient& client, uint64_t clock) {
    client.BeginStep(clock, 1);
    staging_->BeginStep();
    staging_->Stage(0, grad_);
    auto staged = staging_->Next(std::chrono::seconds(60));
    if (!staged.ok()) return staged.status();
    if (!staged->has_value()) return Status::Timeout("the gradient's copy did not finish");
    HETPS_RETURN_IF_ERROR(
        client.PushTensor(0, staging_->data(0), staging_->wire_dtype(), staging_->owner(0)));
    auto pulled = client.FinishStep({host_weights_.data_ptr<float>()});
    if (!pulled.ok()) return pulled.status();
    stream_->Copy(weights_, host_weights_)->Synchronize();
    return Status::Ok();
  }

 private:
  std::unique_ptr<hetps::CopyStream> stream_;
  std::unique_ptr<hetps::GradientStaging> staging_;
  torch::Tensor grad_, weights_, host_weights_;
};

Figures Measure(int mib, int servers, double seconds, hetps::wire::DType wire_dtype, size_t server_threads,
                uint64_t partition_bytes, torch::Device device) {
  const size_t floats = static_cast<size_t>(mib) << 18;
  const std::vector<hetps::TensorInfo> model = {
      {"w", {static_cast<int64_t>(floats)}, hetps::wire::DType::F32}};
  hetps::JobOptions job = hetps::testing::TestJob("mlp", hetps::ConsistencyMode::kSync, servers, 1);
  job.wire_dtype = wire_dtype;
  job.partition_bytes = partition_bytes;
  job.optimizer.lr = 1e-6;
  job.heartbeat_timeout_ms = 30000;
  job.request_timeout_ms = 600000;
  Figures figures;

  auto grads = std::make_shared<std::vector<float>>(floats, 1e-3f);
  std::vector<float> weights(floats, 0.5f);
  const std::vector<const float*> grad_ptrs = {grads->data()};
  const std::vector<float*> weight_ptrs = {weights.data()};
  std::vector<std::vector<size_t>> frames(servers);
  {
    hetps::ServerOptions server_options;
    server_options.threads = server_threads;
    hetps::testing::LocalCluster cluster(job, server_options);
    Status status = cluster.Start();
    if (!status.ok()) std::exit(hetps::FatalError("hetps-bench-pushpull", status));
    hetps::testing::ScriptedTrainer trainer(cluster.context(), cluster.scheduler_endpoint());
    status = trainer.Setup(model);
    if (status.ok()) status = trainer.client().InitWeights({weights.data()}, nullptr);
    if (status.ok()) status = trainer.client().Pull(0, false, weight_ptrs).status();
    if (!status.ok()) std::exit(hetps::FatalError("hetps-bench-pushpull", status));
    for (const hetps::PartitionInfo& p : trainer.map().partitions()) {
      frames[p.server].push_back(p.length * hetps::DTypeSize(wire_dtype));
    }
    uint64_t clock = 0;
    if (device.is_cpu()) {
      figures.hetps_rounds = RoundsPerSecond(seconds, [&] {
        return trainer.client().PushPull(clock++, 1, grad_ptrs, grads, weight_ptrs).status();
      });
    } else {
      DeviceRound round(device, model, wire_dtype);
      figures.hetps_rounds = RoundsPerSecond(seconds, [&] { return round.Run(trainer.client(), clock++); });
    }
    cluster.Stop();
  }
  {
    hetps::bench::Echo echo(frames, floats * hetps::DTypeSize(wire_dtype),
                            hetps::PsClient::Options{}.reply_spin);
    figures.echo_rounds = RoundsPerSecond(seconds, [&] { return echo.Round(); });
  }
  std::vector<float> copy(floats);
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const auto start = Clock::now();
    std::memcpy(copy.data(), weights.data(), floats * sizeof(float));
    best = std::min(best, SecondsSince(start));
  }
  figures.memcpy_gbps = floats * sizeof(float) / best / 1e9;
  return figures;
}

}  // namespace

int main(int argc, char** argv) {
  hetps::KeepLargeBuffersMapped();  // first, before any thread or large buffer exists
  std::string mib_list = "4,64,256", server_list = "1,2", json_path, dtype_name = "fp32", device_spec = "cpu";
  double seconds = 3;
  size_t server_threads = 1;
  uint64_t partition_bytes = hetps::JobOptions{}.partition_bytes;
  CLI::App app("Push-pull round trips of the real client and servers against a bare ZeroMQ echo.",
               "hetps-bench-pushpull");
  app.add_option("--mib", mib_list, "Model sizes in MiB of float32, comma-separated")->default_val(mib_list);
  app.add_option("--servers", server_list, "Server counts, comma-separated")->default_val(server_list);
  app.add_option("--seconds", seconds, "Seconds timed per case and baseline")
      ->default_val(seconds)
      ->check(CLI::Range(0.1, 600.0));
  app.add_option("--wire-dtype", dtype_name, "fp32 | bf16 | fp16")
      ->default_val(dtype_name)
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  app.add_option("--server-threads", server_threads, "Worker threads per server (hetps-server --threads)")
      ->default_val(server_threads)
      ->check(CLI::Range(1, 256));
  app.add_option("--partition-bytes", partition_bytes, "The job's partition_bytes (as in a job file)")
      ->default_val(partition_bytes)
      ->check(CLI::Range(uint64_t{4}, hetps::JobOptions{}.max_message_bytes));
  app.add_option("--device", device_spec, "Where the gradient starts and the weights end: cpu, cuda, mps")
      ->default_val(device_spec);
  app.add_option("--json", json_path, "Write the figures as JSON here");
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  const auto sizes = ParseList("--mib", mib_list);
  const auto server_counts = ParseList("--servers", server_list);
  const hetps::wire::DType wire_dtype = *hetps::ParseWireDType(dtype_name);
  hetps::SetLogLevel(hetps::LogLevel::kWarning);
  auto device = hetps::SelectDevice(device_spec);
  if (!device.ok()) return hetps::FatalError("hetps-bench-pushpull", device.status());

  std::printf(
      "| model MiB | servers | wire | hetps round trips/s | GB/s each way | echo round trips/s | "
      "hetps / echo | memcpy GB/s |\n");
  std::printf("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n");
  std::string json = "[\n";
  for (int servers : server_counts) {
    for (int mib : sizes) {
      const Figures f = Measure(mib, servers, seconds, wire_dtype, server_threads, partition_bytes, *device);
      const double wire_bytes = static_cast<double>(size_t{1} << 20) * mib * hetps::DTypeSize(wire_dtype) / 4;
      const double gbps = f.hetps_rounds * wire_bytes / 1e9;
      const double ratio = f.hetps_rounds / f.echo_rounds;
      std::printf("| %d | %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", mib, servers, dtype_name.c_str(),
                  f.hetps_rounds, gbps, f.echo_rounds, ratio, f.memcpy_gbps);
      std::fflush(stdout);
      char line[512];
      std::snprintf(
          line, sizeof(line),
          "  {\"model_mib\": %d, \"servers\": %d, \"server_threads\": %zu, \"wire_dtype\": \"%s\", "
          "\"device\": \"%s\", "
          "\"round_trips_per_second\": %.3f, \"gb_per_second_each_way\": %.3f, "
          "\"echo_round_trips_per_second\": %.3f, \"ratio\": %.3f, \"memcpy_gb_per_second\": %.3f},\n",
          mib, servers, server_threads, dtype_name.c_str(), device->str().c_str(), f.hetps_rounds, gbps,
          f.echo_rounds, ratio, f.memcpy_gbps);
      json += line;
    }
  }
  if (json.size() > 2) json.erase(json.size() - 2, 1);
  json += "]\n";
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << json;
    if (!out) return hetps::FatalError("hetps-bench-pushpull", Status::IoError("cannot write " + json_path));
  }
  return 0;
}
