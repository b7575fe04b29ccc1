// The job file as a whole: its defaults, every top-level key, the files LoadJobFile reads and those
// under configs/.
#include "common/job_config.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/optimizer_options.h"
#include "tests/common/job_config_checks.h"

namespace hetps {
namespace {

using Kind = OptimizerOptions::Kind;
using testing::Contains;
using testing::ParseOrFail;

void RequireDefaults(const JobOptions& o) {
  CATCH_CHECK(o.model == "cnn");
  CATCH_CHECK(o.dataset == "fashion-mnist");
  CATCH_CHECK(o.mode == ConsistencyMode::kSync);
  CATCH_CHECK(o.epochs == 1);
  CATCH_CHECK(o.global_batch_size == 64);
  CATCH_CHECK(o.optimizer.kind == Kind::kSgd);
  CATCH_CHECK(o.optimizer.lr == 0.01);
  CATCH_CHECK(o.optimizer.momentum == 0.0);
  CATCH_CHECK_FALSE(o.optimizer.nesterov);
  CATCH_CHECK(o.optimizer.weight_decay == 0.0);
  CATCH_CHECK(o.partition_bytes == 1u << 20);
  CATCH_CHECK(o.servers == 1);
  CATCH_CHECK(o.trainers == 1);
  CATCH_CHECK(o.max_trainers == 0);
  CATCH_CHECK(MaxTrainers(o) == 1);
  CATCH_CHECK(o.listen == "tcp://127.0.0.1:7400");
  CATCH_CHECK(o.summary.empty());
  CATCH_CHECK(o.seed == 1);
  CATCH_CHECK(o.chunk_samples == 512);
  CATCH_CHECK(o.max_train_samples == 0);
  CATCH_CHECK(o.eval_batch_size == 250);
  CATCH_CHECK(o.heartbeat_interval_ms == 1000);
  CATCH_CHECK(o.heartbeat_timeout_ms == 10000);
  CATCH_CHECK(o.join_timeout_s == 300);
  CATCH_CHECK(o.request_timeout_ms == 120000);
  CATCH_CHECK(o.progress_interval_ms == 1000);
  CATCH_CHECK(o.nonfinite_limit == 10);
  CATCH_CHECK(o.stall_floor_s == 30);
  CATCH_CHECK(o.stall_pace_factor == 10);
  CATCH_CHECK(o.max_message_bytes == 64u << 20);
  CATCH_CHECK(o.max_model_bytes == uint64_t{1} << 30);
  CATCH_CHECK(o.checkpoint.dir.empty());
  CATCH_CHECK(o.checkpoint.interval_seconds == 30);
  CATCH_CHECK(o.checkpoint.interval_steps == 0);
  CATCH_CHECK(o.checkpoint.keep == 3);
  CATCH_CHECK(o.checkpoint.recovery_timeout_s == 600);
  CATCH_CHECK(o.checkpoint.cut_timeout_s == 60);
  CATCH_CHECK(o.model_out.empty());
}

// A job file setting every top-level key to a value other than its default.
const char* const kEveryKey = R"(# every key
model: mlp
model_options: {layers: 2, heads: 2, width: 32, context: 64}
dataset: fashion-mnist
data:
  format: npy
  train: {x: x.npy, y: y.npy}
  test: test.npz
mode: async
staleness: 5
staleness_aware_lr: true
auto:
  measure_seconds: 2
  decide_interval_seconds: 3
  steady_variation: 0.2
  sync_min_speed_ratio: 0.6
  max_staleness: 20
balance: none
async_batch: whole
epochs: 7
global_batch_size: 256
optimizer:
  name: sgd
  lr: 0.05
  momentum: 0.9
  dampening: 0
  nesterov: true
  weight_decay: 0.0005
lr_schedule:
  warmup_steps: 100
  decay: cosine
  min_lr: 0.001
  decay_steps: 5000
clip_grad_norm: 1.5
diloco:
  round_seconds: 2.5
  sync_share: 0.1
  min_round_seconds: 0.5
  max_round_seconds: 30
  overlap: false
outer_optimizer:
  name: sgd
  momentum: 0.9
  nesterov: true
wire_dtype: bf16
partition_bytes: 1048576
max_message_bytes: 2097152
max_model_bytes: 100000000
servers: 3
trainers: 5
max_trainers: 8
listen: tcp://0.0.0.0:7500
summary: /tmp/run.json
seed: 42
chunk_samples: 1024
max_train_samples: 12000
eval_interval_samples: 6000
eval_batch_size: 500
heartbeat_interval_ms: 200
heartbeat_timeout_ms: 2000
join_timeout_s: 60
request_timeout_ms: 30000
progress_interval_ms: 250
nonfinite_limit: 4
stall_floor_s: 45
stall_pace_factor: 20
checkpoint_keep: 2
checkpoint:
  dir: /tmp/ckpt
  interval_seconds: 10
  interval_steps: 500
  keep: 2
  recovery_timeout_s: 60
  cut_timeout_s: 5
model_out: /tmp/model.safetensors
security:
  curve: true
  keys_dir: /etc/hetps/keys
  allowed: [scheduler, server-0, trainer-laptop]
http:
  listen: 0.0.0.0:7480
)";

CATCH_TEST_CASE("An empty job file means every default", "[common][job_config]") {
  RequireDefaults(ParseOrFail(""));
  RequireDefaults(ParseOrFail("# only a comment\n"));
  RequireDefaults(JobOptions{});
  CATCH_CHECK(ValidateJobOptions(JobOptions{}).ok());
}

CATCH_TEST_CASE("Every key of a job file is parsed", "[common][job_config]") {
  const JobOptions o = ParseOrFail(kEveryKey);
  CATCH_CHECK(o.model == "mlp");
  CATCH_CHECK(o.model_options.width == 32);
  CATCH_CHECK(o.auto_mode.decide_interval_seconds == 3);
  CATCH_CHECK(o.auto_mode.max_staleness == 20);
  CATCH_CHECK(o.dataset == "fashion-mnist");
  CATCH_CHECK(o.data.format == "npy");
  CATCH_CHECK(o.data.train.y == "y.npy");
  CATCH_CHECK(o.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(o.staleness == 5);
  CATCH_CHECK(o.staleness_aware_lr == true);
  CATCH_CHECK(o.balance == Balance::kNone);
  CATCH_CHECK(o.async_batch == AsyncBatch::kWhole);
  CATCH_CHECK(o.eval_interval_samples == 6000);
  CATCH_CHECK(o.epochs == 7);
  CATCH_CHECK(o.global_batch_size == 256);
  CATCH_CHECK(o.optimizer.kind == Kind::kSgd);
  CATCH_CHECK(o.optimizer.lr == 0.05);
  CATCH_CHECK(o.optimizer.momentum == 0.9);
  CATCH_CHECK(o.diloco.round_steps == 0);
  CATCH_CHECK(o.diloco.round_seconds == 2.5);
  CATCH_CHECK(o.diloco.sync_share == 0.1);
  CATCH_CHECK(o.diloco.min_round_seconds == 0.5);
  CATCH_CHECK(o.diloco.max_round_seconds == 30);
  CATCH_CHECK(!o.diloco.overlap);
  // The outer SGD's lr defaults to 1 (plain averaging's), not torch's 0.01.
  CATCH_CHECK(o.outer_optimizer.kind == Kind::kSgd);
  CATCH_CHECK(o.outer_optimizer.lr == 1.0);
  CATCH_CHECK(o.outer_optimizer.momentum == 0.9);
  CATCH_CHECK(o.outer_optimizer.nesterov);
  CATCH_CHECK(o.optimizer.dampening == 0.0);
  CATCH_CHECK(o.optimizer.nesterov);
  CATCH_CHECK(o.optimizer.weight_decay == 0.0005);
  CATCH_CHECK(o.wire_dtype == wire::DType::BF16);
  CATCH_CHECK(o.partition_bytes == 1048576);
  CATCH_CHECK(o.max_message_bytes == 2097152);
  CATCH_CHECK(o.max_model_bytes == 100000000);
  CATCH_CHECK(o.servers == 3);
  CATCH_CHECK(o.trainers == 5);
  CATCH_CHECK(o.max_trainers == 8);
  CATCH_CHECK(MaxTrainers(o) == 8);
  CATCH_CHECK(o.listen == "tcp://0.0.0.0:7500");
  CATCH_CHECK(o.summary == "/tmp/run.json");
  CATCH_CHECK(o.seed == 42);
  CATCH_CHECK(o.chunk_samples == 1024);
  CATCH_CHECK(o.max_train_samples == 12000);
  CATCH_CHECK(o.eval_batch_size == 500);
  CATCH_CHECK(o.heartbeat_interval_ms == 200);
  CATCH_CHECK(o.heartbeat_timeout_ms == 2000);
  CATCH_CHECK(o.join_timeout_s == 60);
  CATCH_CHECK(o.request_timeout_ms == 30000);
  CATCH_CHECK(o.progress_interval_ms == 250);
  CATCH_CHECK(o.nonfinite_limit == 4);
  CATCH_CHECK(o.stall_floor_s == 45);
  CATCH_CHECK(o.stall_pace_factor == 20);
  CATCH_CHECK(o.checkpoint.dir == "/tmp/ckpt");
  CATCH_CHECK(o.checkpoint.interval_seconds == 10);
  CATCH_CHECK(o.checkpoint.interval_steps == 500);
  CATCH_CHECK(o.checkpoint.keep == 2);
  CATCH_CHECK(o.checkpoint.recovery_timeout_s == 60);
  CATCH_CHECK(o.checkpoint.cut_timeout_s == 5);
  CATCH_CHECK(o.model_out == "/tmp/model.safetensors");
  CATCH_CHECK(o.security.curve);
  CATCH_CHECK(o.security.keys_dir == "/etc/hetps/keys");
  CATCH_CHECK(o.security.allowed == std::vector<std::string>{"scheduler", "server-0", "trainer-laptop"});
  // And back: the resolved job keeps its security section.
  const JobOptions again = ParseOrFail(JobOptionsToYaml(o));
  CATCH_CHECK(again.security.curve);
  CATCH_CHECK(again.security.keys_dir == o.security.keys_dir);
  CATCH_CHECK(again.security.allowed == o.security.allowed);
  CATCH_CHECK(o.http.listen == "0.0.0.0:7480");
  CATCH_CHECK(again.http.listen == o.http.listen);
  CATCH_CHECK(again.diloco.round_seconds == o.diloco.round_seconds);
  CATCH_CHECK(again.diloco.max_round_seconds == o.diloco.max_round_seconds);
  CATCH_CHECK(!again.diloco.overlap);
  CATCH_CHECK(again.outer_optimizer.lr == o.outer_optimizer.lr);
  CATCH_CHECK(again.outer_optimizer.nesterov);
  CATCH_CHECK(o.lr_schedule.warmup_steps == 100);
  CATCH_CHECK(o.lr_schedule.decay == LrScheduleOptions::Decay::kCosine);
  CATCH_CHECK(o.lr_schedule.min_lr == 0.001);
  CATCH_CHECK(o.lr_schedule.decay_steps == 5000);
  CATCH_CHECK(o.clip_grad_norm == 1.5);
  CATCH_CHECK(again.lr_schedule.warmup_steps == 100);
  CATCH_CHECK(again.lr_schedule.decay == LrScheduleOptions::Decay::kCosine);
  CATCH_CHECK(again.lr_schedule.min_lr == 0.001);
  CATCH_CHECK(again.lr_schedule.decay_steps == 5000);
  CATCH_CHECK(again.clip_grad_norm == 1.5);

  // The file above must cover every accepted key, so a new key without a test fails here.
  std::set<std::string> in_file;
  const std::string text = kEveryKey;
  for (const std::string& key : JobFileKeys()) {
    CATCH_INFO("key " << key);
    CATCH_CHECK(Contains(text, "\n" + key + ":"));
    in_file.insert(key);
  }
  CATCH_CHECK(in_file.size() == JobFileKeys().size());
}

CATCH_TEST_CASE("Numbers may be written in exponent form and booleans as yes/no", "[common][job_config]") {
  const JobOptions o = ParseOrFail("max_train_samples: 1e4\noptimizer:\n  name: adam\n  amsgrad: yes\n");
  CATCH_CHECK(o.max_train_samples == 10000);
  CATCH_CHECK(o.optimizer.amsgrad);
  CATCH_CHECK_FALSE(ParseOrFail("optimizer:\n  name: adam\n  amsgrad: off\n").optimizer.amsgrad);
}

CATCH_TEST_CASE("Modes convert to and from names and the wire", "[common][job_config]") {
  for (ConsistencyMode mode : {ConsistencyMode::kSync, ConsistencyMode::kAsync}) {
    Result<ConsistencyMode> parsed = ParseMode(ModeName(mode));
    CATCH_REQUIRE(parsed.ok());
    CATCH_CHECK(*parsed == mode);
    CATCH_CHECK(FromWire(ToWire(mode)) == mode);
  }
  CATCH_CHECK(Contains(ParseMode("bsp").status().message(), "'bsp'"));
  CATCH_CHECK(DatasetTrainSamples("fashion-mnist") == 60000);
  CATCH_CHECK(DatasetTrainSamples("cifar10") == 0);
}

CATCH_TEST_CASE("LoadJobFile reads a file and names it in errors", "[common][job_config]") {
  CATCH_SECTION("a missing file") {
    Result<JobOptions> missing = LoadJobFile("/nonexistent/dir/job.yaml");
    CATCH_REQUIRE_FALSE(missing.ok());
    CATCH_CHECK(missing.status().code() == Status::Code::kNotFound);
    CATCH_CHECK(Contains(missing.status().message(), "/nonexistent/dir/job.yaml"));
  }
  CATCH_SECTION("a file on disk") {
    const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                       ("hetps_job_config_test_" + std::to_string(::getpid()) + ".yaml");
    {
      std::ofstream out(path);
      out << "epochs: 3\nmode: async\n";
    }
    Result<JobOptions> loaded = LoadJobFile(path.string());
    CATCH_REQUIRE(loaded.ok());
    CATCH_CHECK(loaded->epochs == 3);
    CATCH_CHECK(loaded->mode == ConsistencyMode::kAsync);
    {
      std::ofstream out(path);
      out << "epochs: 3\nepoch: 4\n";
    }
    Result<JobOptions> bad = LoadJobFile(path.string());
    std::filesystem::remove(path);
    CATCH_REQUIRE_FALSE(bad.ok());
    CATCH_CHECK(Contains(bad.status().message(), path.string() + ":2: epoch"));
  }
}

CATCH_TEST_CASE("The repository ships a Fashion-MNIST job file", "[common][job_config]") {
  const std::filesystem::path configs = std::filesystem::path(HETPS_SOURCE_DIR) / "configs";
  CATCH_REQUIRE(std::filesystem::exists(configs / "fashion_mnist.yaml"));
}

CATCH_TEST_CASE("Every job file under configs/ parses", "[common][job_config]") {
  const std::filesystem::path configs = std::filesystem::path(HETPS_SOURCE_DIR) / "configs";
  CATCH_REQUIRE(std::filesystem::is_directory(configs));
  for (const auto& entry : std::filesystem::directory_iterator(configs)) {
    if (entry.path().extension() != ".yaml") continue;
    CATCH_INFO("job file " << entry.path().string());
    Result<JobOptions> options = LoadJobFile(entry.path().string());
    CATCH_INFO(options.status().ToString());
    CATCH_CHECK(options.ok());
  }
}

}  // namespace
}  // namespace hetps
