// How long one small push-pull takes: one trainer (the real PsClient) against one real server on
// 127.0.0.1 in sync mode, each round trip (push a gradient, the server applies it, pull the new
// weights) timed on its own, against a bare ZeroMQ echo of the same messages timed the same way.
// Both are measured twice: with the threads where the kernel puts them, and with every thread of
// the process on one core. A round trip hands the message between threads six times (client,
// ZeroMQ's I/O thread, server, and back); across cores each hand-off may wake an idle core, which
// on a virtual machine costs tens of microseconds that vary from minute to minute, so the
// one-core figures are the software's own cost. The four run in alternating blocks, `--pairs` of
// each, all set up before the first; each block gives a median, and the figures are the median of
// the blocks' medians with their range.
//
//   hetps-bench-rtt [--bytes 1024,65536,2359296] [--rounds 1000] [--pairs 3] [--partition-bytes N]
//                   [--json FILE]
// Prints a markdown table; --json writes {"median_us": the smallest model's median round trip,
// "one_core_median_us": the same on one core, "cases": [...]}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <dirent.h>
#include <sched.h>

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

// Where the process's threads may run: `cpus` for every thread it has now (threads made later
// inherit their creator's).
void PlaceThreads(const cpu_set_t& cpus) {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) Fail(Status::IoError("cannot list /proc/self/task"));
  while (const dirent* entry = readdir(tasks)) {
    const int tid = std::atoi(entry->d_name);
    if (tid > 0 && sched_setaffinity(tid, sizeof(cpus), &cpus) != 0) {
      closedir(tasks);
      Fail(Status::Internal("cannot set the CPU affinity of thread " + std::to_string(tid)));
    }
  }
  closedir(tasks);
}

// One median per block of each.
struct Figures {
  std::vector<double> hetps_us, echo_us;
};

struct Case {
  size_t bytes = 0;
  size_t partitions = 0;
  Figures spread, one_core;  // threads where the kernel puts them; every thread on one core
};

Case Measure(size_t bytes, uint64_t partition_bytes, int rounds, int pairs) {
  const size_t floats = std::max<size_t>(1, bytes / sizeof(float));
  const std::vector<hetps::TensorInfo> model = {
      {"w", {static_cast<int64_t>(floats)}, hetps::wire::DType::F32}};
  hetps::JobOptions job = hetps::testing::TestJob("mlp", hetps::ConsistencyMode::kSync, 1, 1);
  job.optimizer.lr = 1e-6;
  job.partition_bytes = partition_bytes;
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
  hetps::bench::Echo echo(frames, c.bytes, hetps::PsClient::Options{}.reply_spin);
  cpu_set_t all, one;
  if (sched_getaffinity(0, sizeof(all), &all) != 0) Fail(Status::Internal("cannot read the CPU affinity"));
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  uint64_t clock = 0;
  for (int pair = 0; pair < pairs; ++pair) {
    for (Figures* figures : {&c.spread, &c.one_core}) {
      PlaceThreads(figures == &c.spread ? all : one);
      figures->hetps_us.push_back(MedianMicros(rounds, [&] {
        return trainer.client().PushPull(clock++, 1, grad_ptrs, grads, weight_ptrs).status();
      }));
      figures->echo_us.push_back(MedianMicros(rounds, [&] { return echo.Round(); }));
    }
  }
  PlaceThreads(all);
  cluster.Stop();
  return c;
}

// Median, least and largest of the blocks' medians, for hetps and the echo.
struct Summary {
  double hetps[3] = {}, echo[3] = {}, ratio = 0;
  // "hetps_median_us": .., "hetps_min_us": .., .., "echo_max_us": .., "ratio": ..
  std::string Json() const {
    char text[320];
    std::snprintf(text, sizeof(text),
                  "\"hetps_median_us\": %.2f, \"hetps_min_us\": %.2f, \"hetps_max_us\": %.2f, "
                  "\"echo_median_us\": %.2f, \"echo_min_us\": %.2f, \"echo_max_us\": %.2f, \"ratio\": %.3f",
                  hetps[0], hetps[1], hetps[2], echo[0], echo[1], echo[2], ratio);
    return text;
  }
};

Summary Summarise(const Figures& f) {
  Summary s;
  for (const auto& [values, out] : {std::pair{&f.hetps_us, s.hetps}, std::pair{&f.echo_us, s.echo}}) {
    out[0] = Median(*values);
    out[1] = *std::min_element(values->begin(), values->end());
    out[2] = *std::max_element(values->begin(), values->end());
  }
  s.ratio = s.hetps[0] / s.echo[0];
  return s;
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
  uint64_t partition_bytes = hetps::JobOptions{}.partition_bytes;
  CLI::App app("Round trips of one small push-pull, timed one by one, against a bare ZeroMQ echo.",
               "hetps-bench-rtt");
  app.add_option("--bytes", byte_list, "Model sizes in bytes of float32, comma-separated")
      ->default_val(byte_list);
  app.add_option("--rounds", rounds, "Timed round trips per block")
      ->default_val(rounds)
      ->check(CLI::Range(10, 10000000));
  app.add_option("--pairs", pairs, "Alternating blocks of hetps and the echo, each spread and on one core")
      ->default_val(pairs)
      ->check(CLI::Range(1, 100));
  app.add_option("--partition-bytes", partition_bytes, "The job's partition_bytes (as in a job file)")
      ->default_val(partition_bytes)
      ->check(CLI::Range(uint64_t{4}, hetps::JobOptions{}.max_message_bytes));
  app.add_option("--json", json_path, "Write the figures as JSON here");
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  const std::vector<size_t> sizes = ParseSizes(byte_list);
  hetps::SetLogLevel(hetps::LogLevel::kWarning);

  std::printf(
      "| model bytes | partitions | threads | hetps median µs (range) | echo median µs (range) | hetps / "
      "echo |\n");
  std::printf("| ---: | ---: | --- | ---: | ---: | ---: |\n");
  std::string cases;
  double headline = 0, headline_one_core = 0;
  for (size_t bytes : sizes) {
    const Case c = Measure(bytes, partition_bytes, rounds, pairs);
    const Summary spread = Summarise(c.spread), one_core = Summarise(c.one_core);
    if (cases.empty()) {
      headline = spread.hetps[0];
      headline_one_core = one_core.hetps[0];
    }
    for (const auto& [name, summary] : {std::pair{"spread", &spread}, std::pair{"one core", &one_core}}) {
      std::printf("| %zu | %zu | %s | %.1f (%.1f–%.1f) | %.1f (%.1f–%.1f) | %.2f |\n", c.bytes, c.partitions,
                  name, summary->hetps[0], summary->hetps[1], summary->hetps[2], summary->echo[0],
                  summary->echo[1], summary->echo[2], summary->ratio);
    }
    std::fflush(stdout);
    char line[768];
    std::snprintf(line, sizeof(line),
                  "%s    {\"bytes\": %zu, \"partitions\": %zu, \"servers\": 1, \"rounds_per_block\": %d, "
                  "\"blocks\": %d, %s, \"one_core\": {%s}}",
                  cases.empty() ? "" : ",\n", c.bytes, c.partitions, rounds, pairs, spread.Json().c_str(),
                  one_core.Json().c_str());
    cases += line;
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    char head[128];
    std::snprintf(head, sizeof(head), "\"median_us\": %.2f, \"one_core_median_us\": %.2f", headline,
                  headline_one_core);
    out << "{\n  " << head << ",\n  \"cases\": [\n" << cases << "\n  ]\n}\n";
    if (!out) Fail(Status::IoError("cannot write " + json_path));
  }
  return 0;
}
