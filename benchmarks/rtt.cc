// How long one small push-pull takes: one trainer (the real PsClient) against one real server on
// 127.0.0.1 in sync mode, each round trip (push a gradient, the server applies it, pull the new
// weights) timed on its own, against a bare ZeroMQ echo of the same messages timed the same way.
// The two run in alternating blocks, `--pairs` of them, both set up before the first; each block
// gives a median, and the figures are the median of the blocks' medians with their range.
//
//   hetps-bench-rtt [--bytes 1024,65536,2359296] [--rounds 1000] [--pairs 3] [--partition-bytes N]
//                   [--json FILE]
// Prints a markdown table; --json writes {"median_us": the smallest model's median round trip,
// "cases": [...]}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/echo.h"
#include "common/allocator.h"
#include "common/cli.h"
#include "common/dtype.h"
#include "common/job_config.h"
#include "common/logging.h"
#include "common/shard_map.h"
#include "tests/support/local_cluster.h"

namespace {

using Clock = std::chrono::steady_clock;
using hetps::Status;

[[noreturn]] void Fail(const Status& status) {
  std::exit(hetps::FatalError("hetps-bench-rtt", status));
}

// `rounds` round trips of `round` after `rounds / 10` untimed ones; the median in microseconds.
double MedianMicros(int rounds, const std::function<Status()>& round) {
  for (int r = 0; r < std::max(1, rounds / 10); ++r) {
    if (Status s = round(); !s.ok()) Fail(s);
  }
  std::vector<double> micros(static_cast<size_t>(rounds));
  for (double& m : micros) {
    const auto start = Clock::now();
    if (Status s = round(); !s.ok()) Fail(s);
    m = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  }
  std::nth_element(micros.begin(), micros.begin() + rounds / 2, micros.end());
  return micros[rounds / 2];
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Case {
  size_t bytes = 0;
  size_t partitions = 0;
  std::vector<double> hetps_us, echo_us;  // one median per block
};

Case Measure(size_t bytes, uint64_t partition_bytes, int rounds, int pairs) {
  const size_t floats = std::max<size_t>(1, bytes / sizeof(float));
  const std::vector<hetps::TensorInfo> model = {
      {"w", {static_cast<int64_t>(floats)}, hetps::wire::DType::F32}};
  hetps::JobOptions job = hetps::testing::TestJob("mlp", hetps::ConsistencyMode::kSync, 1, 1);
  job.optimizer.lr = 1e-6;
  if (partition_bytes > 0) job.partition_bytes = partition_bytes;
  job.heartbeat_timeout_ms = 30000;
  job.request_timeout_ms = 600000;
  hetps::testing::LocalCluster cluster(job);
  if (Status s = cluster.Start(); !s.ok()) Fail(s);
  hetps::testing::ScriptedTrainer trainer(cluster.context(), cluster.scheduler_endpoint());
  auto grads = std::make_shared<std::vector<float>>(floats, 1e-3f);
  std::vector<float> weights(floats, 0.5f);
  const std::vector<const float*> grad_ptrs = {grads->data()};
  const std::vector<float*> weight_ptrs = {weights.data()};
  Status status = trainer.Setup(model);
  if (status.ok()) status = trainer.client().InitWeights({weights.data()}, nullptr);
  if (status.ok()) status = trainer.client().Pull(0, false, weight_ptrs).status();
  if (!status.ok()) Fail(status);

  Case c;
  c.bytes = floats * sizeof(float);
  std::vector<std::vector<size_t>> frames(1);
  for (const hetps::PartitionInfo& p : trainer.map().partitions()) {
    frames[0].push_back(p.length * sizeof(float));
  }
  c.partitions = frames[0].size();
  hetps::bench::Echo echo(frames, c.bytes);
  uint64_t clock = 0;
  for (int pair = 0; pair < pairs; ++pair) {
    c.hetps_us.push_back(MedianMicros(rounds, [&] {
      return trainer.client().PushPull(clock++, 1, grad_ptrs, grads, weight_ptrs).status();
    }));
    c.echo_us.push_back(MedianMicros(rounds, [&] { return echo.Round(); }));
  }
  cluster.Stop();
  return c;
}

std::vector<size_t> ParseSizes(const std::string& list) {
  std::vector<size_t> sizes;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const long long value = std::atoll(list.substr(start, comma - start).c_str());
    if (value < 4 || value > (1LL << 32)) {
      std::fprintf(stderr, "hetps-bench-rtt: --bytes: '%s' is not a list of sizes from 4 bytes to 4 GiB\n",
                   list.c_str());
      std::exit(2);
    }
    sizes.push_back(static_cast<size_t>(value));
    start = comma + 1;
  }
  return sizes;
}

}  // namespace

int main(int argc, char** argv) {
  hetps::KeepLargeBuffersMapped();  // first, before any thread or large buffer exists
  // 2359296 bytes: about the MLP's 2.2 MB of weights.
  std::string byte_list = "1024,65536,2359296", json_path;
  int rounds = 1000, pairs = 3;
  uint64_t partition_bytes = 0;
  CLI::App app("Round trips of one small push-pull, timed one by one, against a bare ZeroMQ echo.",
               "hetps-bench-rtt");
  app.add_option("--bytes", byte_list, "Model sizes in bytes of float32, comma-separated")
      ->default_val(byte_list);
  app.add_option("--rounds", rounds, "Timed round trips per block")
      ->default_val(rounds)
      ->check(CLI::Range(10, 10000000));
  app.add_option("--pairs", pairs, "Alternating blocks of hetps and the echo")
      ->default_val(pairs)
      ->check(CLI::Range(1, 100));
  app.add_option("--partition-bytes", partition_bytes, "The job's partition_bytes (0: its default)");
  app.add_option("--json", json_path, "Write the figures as JSON here");
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  const std::vector<size_t> sizes = ParseSizes(byte_list);
  hetps::SetLogLevel(hetps::LogLevel::kWarning);

  std::printf(
      "| model bytes | partitions | hetps median µs (range) | echo median µs (range) | hetps / echo |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: |\n");
  std::string cases;
  double headline = 0;
  for (size_t bytes : sizes) {
    const Case c = Measure(bytes, partition_bytes, rounds, pairs);
    const double hetps = Median(c.hetps_us), echo = Median(c.echo_us);
    const auto [hetps_min, hetps_max] = std::minmax_element(c.hetps_us.begin(), c.hetps_us.end());
    const auto [echo_min, echo_max] = std::minmax_element(c.echo_us.begin(), c.echo_us.end());
    if (cases.empty()) headline = hetps;
    std::printf("| %zu | %zu | %.1f (%.1f–%.1f) | %.1f (%.1f–%.1f) | %.2f |\n", c.bytes, c.partitions, hetps,
                *hetps_min, *hetps_max, echo, *echo_min, *echo_max, hetps / echo);
    std::fflush(stdout);
    char line[512];
    std::snprintf(
        line, sizeof(line),
        "%s    {\"bytes\": %zu, \"partitions\": %zu, \"servers\": 1, \"rounds_per_block\": %d, "
        "\"blocks\": %d, \"hetps_median_us\": %.2f, \"hetps_min_us\": %.2f, \"hetps_max_us\": %.2f, "
        "\"echo_median_us\": %.2f, \"echo_min_us\": %.2f, \"echo_max_us\": %.2f, \"ratio\": %.3f}",
        cases.empty() ? "" : ",\n", c.bytes, c.partitions, rounds, pairs, hetps, *hetps_min, *hetps_max, echo,
        *echo_min, *echo_max, hetps / echo);
    cases += line;
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    char head[64];
    std::snprintf(head, sizeof(head), "%.2f", headline);
    out << "{\n  \"median_us\": " << head << ",\n  \"cases\": [\n" << cases << "\n  ]\n}\n";
    if (!out) Fail(Status::IoError("cannot write " + json_path));
  }
  return 0;
}
