#include "common/job_config.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "common/optimizer_options.h"

namespace hetps {
namespace {

using Kind = OptimizerOptions::Kind;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

JobOptions ParseOrFail(const std::string& yaml) {
  Result<JobOptions> options = ParseJobYaml(yaml, "job.yaml");
  CATCH_INFO("yaml:\n" << yaml << "\nstatus: " << options.status().ToString());
  CATCH_REQUIRE(options.ok());
  return std::move(options).value();
}

// Parses `yaml`, requires InvalidArgument, and requires every one of `parts` in the message.
void RequireRejected(const std::string& yaml, const std::vector<std::string>& parts) {
  Result<JobOptions> options = ParseJobYaml(yaml, "job.yaml");
  CATCH_INFO("yaml:\n" << yaml);
  CATCH_REQUIRE_FALSE(options.ok());
  CATCH_CHECK(options.status().code() == Status::Code::kInvalidArgument);
  for (const std::string& part : parts) {
    CATCH_INFO("message: " << options.status().message() << "\nexpected to contain: " << part);
    CATCH_CHECK(Contains(options.status().message(), part));
  }
}

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
  CATCH_CHECK(o.partition_bytes == 4u << 20);
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
epochs: 7
global_batch_size: 256
optimizer:
  name: sgd
  lr: 0.05
  momentum: 0.9
  dampening: 0
  nesterov: true
  weight_decay: 0.0005
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
  CATCH_CHECK(o.auto_mode.decide_interval_seconds == 3);
  CATCH_CHECK(o.auto_mode.max_staleness == 20);
  CATCH_CHECK(o.dataset == "fashion-mnist");
  CATCH_CHECK(o.data.format == "npy");
  CATCH_CHECK(o.data.train.y == "y.npy");
  CATCH_CHECK(o.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(o.staleness == 5);
  CATCH_CHECK(o.staleness_aware_lr);
  CATCH_CHECK(o.balance == Balance::kNone);
  CATCH_CHECK(o.eval_interval_samples == 6000);
  CATCH_CHECK(o.epochs == 7);
  CATCH_CHECK(o.global_batch_size == 256);
  CATCH_CHECK(o.optimizer.kind == Kind::kSgd);
  CATCH_CHECK(o.optimizer.lr == 0.05);
  CATCH_CHECK(o.optimizer.momentum == 0.9);
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

CATCH_TEST_CASE("An unknown key names the file, the line and the key and lists the known keys",
                "[common][job_config]") {
  CATCH_SECTION("top level") {
    std::vector<std::string> parts = {"job.yaml:3: batch_size", "unknown key"};
    for (const std::string& key : JobFileKeys()) parts.push_back(key);
    RequireRejected("epochs: 2\n# a comment\nbatch_size: 64\n", parts);
  }
  CATCH_SECTION("optimizer section") {
    RequireRejected("optimizer:\n  name: adam\n  betas: 0.9\n",
                    {"job.yaml:3: optimizer.betas", "unknown key", "beta1", "beta2", "amsgrad",
                     "initial_accumulator_value"});
  }
}

CATCH_TEST_CASE("max_trainers defaults to trainers and may not be below it", "[common][job_config]") {
  CATCH_CHECK(MaxTrainers(ParseOrFail("trainers: 3\n")) == 3);
  CATCH_CHECK(MaxTrainers(ParseOrFail("trainers: 3\nmax_trainers: 3\n")) == 3);
  RequireRejected("trainers: 3\nmax_trainers: 2\n", {"max_trainers: 2 is smaller than trainers (3)"});
  RequireRejected("max_trainers: 1025\n", {"job.yaml:1: max_trainers", "1025", "0..1024"});
  // Every trainer that may take part needs a sample of each step.
  RequireRejected("trainers: 2\nmax_trainers: 9\nglobal_batch_size: 8\n",
                  {"global_batch_size: 8 is smaller than max_trainers (9)"});
  // The resolved job keeps it.
  CATCH_CHECK(ParseOrFail(JobOptionsToYaml(ParseOrFail("trainers: 2\nmax_trainers: 4\n"))).max_trainers == 4);
}

CATCH_TEST_CASE("The security section needs a keys directory with CURVE and a list of names",
                "[common][job_config]") {
  RequireRejected("epochs: 1\nsecurity:\n  curve: true\n", {"job.yaml:3: security.keys_dir", "required"});
  RequireRejected("security:\n  curve: true\n  keys_dir: k\n  allowed: trainer-0\n",
                  {"job.yaml:4: security.allowed", "list of key names"});
  RequireRejected("security:\n  curve: maybe\n", {"job.yaml:2: security.curve", "'maybe'"});
  RequireRejected("security:\n  keys: k\n", {"security.keys", "unknown key", "keys_dir", "allowed"});
  CATCH_CHECK_FALSE(ParseOrFail("security:\n  keys_dir: k\n").security.curve);
}

CATCH_TEST_CASE("A bad value names the key, the value and what is allowed", "[common][job_config]") {
  struct Case {
    std::string yaml;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"epochs: many\n", {"job.yaml:1: epochs", "'many'", "not a number"}},
      {"epochs: 0\n", {"job.yaml:1: epochs", "0 is out of range", "1..1000"}},
      {"epochs: 1001\n", {"job.yaml:1: epochs", "1001", "1..1000"}},
      {"epochs: 1e30\n", {"job.yaml:1: epochs", "1e30", "out of range", "1..1000"}},
      {"seed: 1e300\n", {"job.yaml:1: seed", "1e300", "out of range"}},
      {"\nservers: -2\n", {"job.yaml:2: servers", "-2", "out of range", "1..256"}},
      {"max_train_samples: -1\n", {"max_train_samples", "-1", "out of range", "0..1099511627776"}},
      {"trainers: 2.5\n", {"job.yaml:1: trainers", "2.5", "not a whole number"}},
      {"global_batch_size: 12abc\n", {"global_batch_size", "12abc", "not a number"}},
      {"partition_bytes: 2\n", {"partition_bytes", "2", "4..1073741824"}},
      {"max_message_bytes: 1000\n", {"job.yaml:1: max_message_bytes", "1000", "1048576..1073741824"}},
      {"max_model_bytes: 2e12\n", {"job.yaml:1: max_model_bytes", "2e12", "4..1099511627776"}},
      {"request_timeout_ms: 4294967295\n", {"job.yaml:1: request_timeout_ms", "4294967295", "100..86400000"}},
      {"heartbeat_interval_ms: 5\n", {"heartbeat_interval_ms", "5", "10..600000"}},
      {"mode: bsp\n", {"job.yaml:1: mode", "'bsp'", "sync, async, ssp"}},
      {"staleness: 10001\n", {"job.yaml:1: staleness", "10001", "0..10000"}},
      {"staleness_aware_lr: true\n", {"staleness_aware_lr", "needs mode async or ssp"}},
      {"wire_dtype: fp8\n", {"job.yaml:1: wire_dtype", "'fp8'", "fp32, bf16, fp16"}},
      {"balance: fast\n", {"job.yaml:1: balance", "'fast'", "none, speed"}},
      {"checkpoint:\n  keep: 0\n", {"job.yaml:2: checkpoint.keep", "0 is out of range", "1..1000000"}},
      {"checkpoint:\n  cut_timeout_s: 0\n",
       {"job.yaml:2: checkpoint.cut_timeout_s", "0 is out of range", "1..86400"}},
      {"checkpoint:\n  cut_timeout_s: 1.5\n",
       {"job.yaml:2: checkpoint.cut_timeout_s", "1.5", "not a whole number"}},
      {"checkpoint:\n  every: 3\n", {"job.yaml:2: checkpoint.every", "unknown key", "interval_seconds"}},
      {"checkpoint: /tmp/x\n", {"checkpoint", "expected a map"}},
      {"mode: ssp\nbalance: speed\n", {"balance: speed needs mode sync, not ssp"}},
      {"auto:\n  sync_min_speed_ratio: 1.5\n", {"job.yaml:2: auto.sync_min_speed_ratio", "1.5", "[0, 1]"}},
      {"auto:\n  max_staleness: 1\n", {"job.yaml:2: auto.max_staleness", "1", "2..10000"}},
      {"auto:\n  bound: 3\n", {"job.yaml:2: auto.bound", "unknown key", "measure_seconds"}},
      {"model: resnet\n", {"job.yaml:1: model", "'resnet'", "mlp, cnn"}},
      {"dataset: mnist\n", {"job.yaml:1: dataset", "'mnist'", "fashion-mnist"}},
      {"listen: [a, b]\n", {"job.yaml:1: listen", "expected a string"}},
      {"epochs: [1, 2]\n", {"job.yaml:1: epochs", "not a number"}},
      {"optimizer: adam\n", {"job.yaml:1: optimizer", "expected a map"}},
      {"optimizer:\n  name: rmsprop\n",
       {"job.yaml:2", "optimizer.name", "'rmsprop'", "sgd, adam, adamw, adagrad"}},
      {"optimizer:\n  lr: -0.1\n", {"job.yaml", "optimizer.lr", "-0.1", "> 0"}},
      {"optimizer:\n  lr: fast\n", {"job.yaml:2: optimizer.lr", "'fast'", "not a number"}},
      {"optimizer:\n  momentum: 1\n", {"optimizer.momentum", "1", "[0, 1)"}},
      {"optimizer:\n  weight_decay: -1\n", {"optimizer.weight_decay", "-1", ">= 0"}},
      {"optimizer:\n  name: adam\n  beta1: 1.5\n", {"optimizer.beta1", "1.5", "[0, 1)"}},
      {"optimizer:\n  name: adamw\n  beta2: -0.5\n", {"optimizer.beta2", "-0.5", "[0, 1)"}},
      {"optimizer:\n  name: adam\n  eps: -1e-8\n", {"optimizer.eps", ">= 0"}},
      {"optimizer:\n  name: adagrad\n  lr_decay: -0.1\n", {"optimizer.lr_decay", "-0.1", ">= 0"}},
      {"optimizer:\n  name: adagrad\n  initial_accumulator_value: -1\n",
       {"optimizer.initial_accumulator_value", "-1", ">= 0"}},
      {"optimizer:\n  nesterov: maybe\n", {"job.yaml:2: optimizer.nesterov", "'maybe'", "true or false"}},
      {"epochs: [1, 2\n", {"job.yaml", "not valid YAML"}},
      {"- epochs\n- 3\n", {"job.yaml", "expected a map"}},
  };
  for (const Case& c : cases) RequireRejected(c.yaml, c.parts);
}

CATCH_TEST_CASE("mode: auto takes its rule from the auto section, and balance: speed",
                "[common][job_config]") {
  const JobOptions o = ParseOrFail(
      "mode: auto\nbalance: speed\nauto:\n  measure_seconds: 5\n  steady_variation: 0.5\n"
      "  sync_min_speed_ratio: 0.4\n  max_staleness: 12\n");
  CATCH_CHECK(o.mode == ConsistencyMode::kAuto);
  CATCH_CHECK(o.auto_mode.measure_seconds == 5);
  CATCH_CHECK(o.auto_mode.decide_interval_seconds == 4);
  CATCH_CHECK(o.auto_mode.steady_variation == 0.5);
  CATCH_CHECK(o.auto_mode.sync_min_speed_ratio == 0.4);
  CATCH_CHECK(o.auto_mode.max_staleness == 12);
  const JobOptions again = ParseOrFail(JobOptionsToYaml(o));
  CATCH_CHECK(again.auto_mode.sync_min_speed_ratio == 0.4);
  CATCH_CHECK(again.auto_mode.max_staleness == 12);
  CATCH_CHECK(ToWire(ConsistencyMode::kAuto) == wire::Mode::Auto);
  CATCH_CHECK(FromWire(wire::Mode::Auto) == ConsistencyMode::kAuto);
}

CATCH_TEST_CASE("An optimizer's name sets the torch defaults and its fields override them",
                "[common][job_config]") {
  CATCH_SECTION("adamw") {
    const OptimizerOptions o = ParseOrFail("optimizer:\n  name: adamw\n").optimizer;
    CATCH_CHECK(o.kind == Kind::kAdamW);
    CATCH_CHECK(o.lr == 1e-3);
    CATCH_CHECK(o.weight_decay == 0.01);
    CATCH_CHECK(o.beta1 == 0.9);
    CATCH_CHECK(o.beta2 == 0.999);
    CATCH_CHECK(o.eps == 1e-8);
    CATCH_CHECK_FALSE(o.amsgrad);
  }
  CATCH_SECTION("adam") {
    const OptimizerOptions o = ParseOrFail("optimizer:\n  name: adam\n").optimizer;
    CATCH_CHECK(o.kind == Kind::kAdam);
    CATCH_CHECK(o.lr == 1e-3);
    CATCH_CHECK(o.weight_decay == 0.0);
    CATCH_CHECK(o.eps == 1e-8);
  }
  CATCH_SECTION("adagrad") {
    const OptimizerOptions o = ParseOrFail("optimizer:\n  name: adagrad\n").optimizer;
    CATCH_CHECK(o.kind == Kind::kAdagrad);
    CATCH_CHECK(o.lr == 1e-2);
    CATCH_CHECK(o.eps == 1e-10);
    CATCH_CHECK(o.lr_decay == 0.0);
    CATCH_CHECK(o.initial_accumulator_value == 0.0);
  }
  CATCH_SECTION("sgd") {
    const OptimizerOptions o = ParseOrFail("optimizer:\n  name: sgd\n").optimizer;
    CATCH_CHECK(o.kind == Kind::kSgd);
    CATCH_CHECK(o.lr == 0.01);
    CATCH_CHECK(o.momentum == 0.0);
  }
  CATCH_SECTION("fields override the defaults, wherever the name stands") {
    const OptimizerOptions before =
        ParseOrFail("optimizer:\n  weight_decay: 0.05\n  lr: 0.002\n  name: adamw\n").optimizer;
    const OptimizerOptions after =
        ParseOrFail("optimizer:\n  name: adamw\n  weight_decay: 0.05\n  lr: 0.002\n").optimizer;
    for (const OptimizerOptions& o : {before, after}) {
      CATCH_CHECK(o.kind == Kind::kAdamW);
      CATCH_CHECK(o.weight_decay == 0.05);
      CATCH_CHECK(o.lr == 0.002);
      CATCH_CHECK(o.beta2 == 0.999);
    }
    const OptimizerOptions adagrad =
        ParseOrFail("optimizer:\n  name: adagrad\n  eps: 1e-6\n  initial_accumulator_value: 0.1\n").optimizer;
    CATCH_CHECK(adagrad.eps == 1e-6);
    CATCH_CHECK(adagrad.initial_accumulator_value == 0.1);
  }
  CATCH_SECTION("names round trip") {
    for (Kind kind : {Kind::kSgd, Kind::kAdam, Kind::kAdamW, Kind::kAdagrad}) {
      Result<Kind> parsed = ParseOptimizerKind(OptimizerKindName(kind));
      CATCH_REQUIRE(parsed.ok());
      CATCH_CHECK(*parsed == kind);
      CATCH_CHECK(DefaultOptimizerOptions(kind).kind == kind);
      CATCH_CHECK(ValidateOptimizerOptions(DefaultOptimizerOptions(kind)).ok());
    }
    CATCH_CHECK_FALSE(ParseOptimizerKind("SGD").ok());
  }
}

CATCH_TEST_CASE("Invalid optimizer combinations are rejected", "[common][job_config]") {
  RequireRejected("optimizer:\n  name: sgd\n  nesterov: true\n", {"optimizer.nesterov", "momentum"});
  RequireRejected("optimizer:\n  nesterov: true\n  momentum: 0.9\n  dampening: 0.1\n",
                  {"optimizer.nesterov", "dampening"});
  CATCH_CHECK(ParseOrFail("optimizer:\n  nesterov: true\n  momentum: 0.9\n").optimizer.nesterov);

  OptimizerOptions sgd = DefaultOptimizerOptions(Kind::kSgd);
  sgd.nesterov = true;
  const Status status = ValidateOptimizerOptions(sgd);
  CATCH_CHECK(status.code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(Contains(status.message(), "optimizer.nesterov"));

  OptimizerOptions nan_lr = DefaultOptimizerOptions(Kind::kAdam);
  nan_lr.lr = std::numeric_limits<double>::quiet_NaN();
  CATCH_CHECK(Contains(ValidateOptimizerOptions(nan_lr).message(), "optimizer.lr"));
}

CATCH_TEST_CASE("Fields are checked against each other", "[common][job_config]") {
  RequireRejected("trainers: 4\nglobal_batch_size: 3\n",
                  {"job.yaml", "global_batch_size: 3", "trainers (4)"});
  CATCH_CHECK(ParseOrFail("trainers: 4\nglobal_batch_size: 4\n").trainers == 4);
  RequireRejected("heartbeat_interval_ms: 1000\nheartbeat_timeout_ms: 1999\n",
                  {"job.yaml", "heartbeat_timeout_ms: 1999", "heartbeat_interval_ms (1000)"});
  CATCH_CHECK(ParseOrFail("heartbeat_interval_ms: 1000\nheartbeat_timeout_ms: 2000\n").heartbeat_timeout_ms ==
              2000);

  JobOptions o;
  o.trainers = 10;
  o.global_batch_size = 9;
  CATCH_CHECK(ValidateJobOptions(o).code() == Status::Code::kInvalidArgument);
  o.global_batch_size = 10;
  CATCH_CHECK(ValidateJobOptions(o).ok());
  o.listen.clear();
  CATCH_CHECK(Contains(ValidateJobOptions(o).message(), "listen"));
}

CATCH_TEST_CASE("The http section takes ADDR:PORT and nothing else", "[common][job_config]") {
  CATCH_CHECK(ParseOrFail("model: mlp\n").http.listen.empty());  // off by default
  CATCH_CHECK(ParseOrFail("http: {listen: 127.0.0.1:0}\n").http.listen == "127.0.0.1:0");
  RequireRejected("http:\n  listen: 7480\n", {"http.listen", "'7480'", "ADDR:PORT"});
  RequireRejected("http:\n  listen: 127.0.0.1:70000\n", {"http.listen", "127.0.0.1:70000"});
  RequireRejected("http:\n  port: 7480\n", {"job.yaml", "http.port"});
}

CATCH_TEST_CASE("A partition larger than a data-plane frame may be is refused at load",
                "[common][job_config][limits]") {
  // Servers drop frames over max_message_bytes; such partitions used to stall the job until the
  // request timeout.
  RequireRejected("partition_bytes: 134217728\n",
                  {"job.yaml", "partition_bytes: 134217728", "larger than max_message_bytes (67108864)"});
  RequireRejected("partition_bytes: 3000000\nmax_message_bytes: 2000000\n",
                  {"partition_bytes: 3000000", "max_message_bytes (2000000)"});
  const JobOptions o = ParseOrFail("partition_bytes: 134217728\nmax_message_bytes: 134217728\n");
  CATCH_CHECK(o.partition_bytes == o.max_message_bytes);
  // What the scheduler resolves and prints reads back the same.
  CATCH_CHECK(ParseOrFail(JobOptionsToYaml(o)).max_message_bytes == 134217728);
}

CATCH_TEST_CASE("Even batch shares sum to the global batch and differ by at most one",
                "[common][job_config]") {
  for (uint32_t global = 1; global <= 300; ++global) {
    for (uint32_t trainers = 1; trainers <= std::min<uint32_t>(global, 40); ++trainers) {
      CATCH_INFO("global " << global << ", trainers " << trainers);
      uint32_t sum = 0;
      uint32_t previous = EvenBatchShare(global, trainers, 0);
      for (uint32_t rank = 0; rank < trainers; ++rank) {
        const uint32_t share = EvenBatchShare(global, trainers, rank);
        CATCH_REQUIRE(share >= global / trainers);
        CATCH_REQUIRE(share <= global / trainers + 1);
        CATCH_REQUIRE(share <= previous);  // the first ranks take the remainder
        previous = share;
        sum += share;
      }
      CATCH_REQUIRE(sum == global);
    }
  }
  CATCH_CHECK(EvenBatchShare(64, 3, 0) == 22);
  CATCH_CHECK(EvenBatchShare(64, 3, 2) == 21);
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

namespace hetps {

CATCH_TEST_CASE("The data section names the files and how to read them, and survives the round trip",
                "[common][job_config][data]") {
  const JobOptions o = ParseOrFail(
      "data:\n"
      "  format: csv\n"
      "  train: /d/train.csv\n"
      "  test: test.csv.gz\n"
      "  header: true\n"
      "  label_column: -1\n"
      "  targets: float\n"
      "  sample_shape: [2, 3]\n"
      "  divide_by: 10\n"
      "  mean: 0.5\n"
      "  std: 2\n"
      "  serve: true\n");
  CATCH_CHECK(o.data.format == "csv");
  CATCH_CHECK(o.data.train.x == "/d/train.csv");
  CATCH_CHECK(o.data.train.y.empty());
  CATCH_CHECK(o.data.test.x == "test.csv.gz");
  CATCH_CHECK(o.data.header);
  CATCH_CHECK(o.data.label_column == -1);
  CATCH_CHECK(o.data.float_targets);
  CATCH_CHECK(o.data.sample_shape == std::vector<int64_t>{2, 3});
  CATCH_CHECK(o.data.divide_by == 10);
  CATCH_CHECK(o.data.mean == 0.5);
  CATCH_CHECK(o.data.std == 2);
  CATCH_CHECK(o.data.serve);
  const JobOptions again = ParseOrFail(JobOptionsToYaml(o));
  CATCH_CHECK(again.data.format == "csv");
  CATCH_CHECK(again.data.test.x == "test.csv.gz");
  CATCH_CHECK(again.data.label_column == -1);
  CATCH_CHECK(again.data.sample_shape == o.data.sample_shape);
  CATCH_CHECK(again.data.serve);

  const JobOptions idx =
      ParseOrFail("data: {format: idx, train: {x: a.gz, y: b.gz}, test: {x: c, y: d}, classes: 5}\n");
  CATCH_CHECK(idx.data.train.y == "b.gz");
  CATCH_CHECK(idx.data.classes == 5);
  CATCH_CHECK(ParseOrFail("epochs: 1\n").data.format.empty());
}

CATCH_TEST_CASE("A bad data section names the field", "[common][job_config][data]") {
  RequireRejected("data: {format: parquet}\n",
                  {"job.yaml:1: data.format", "'parquet' is not allowed", "idx, csv, npy"});
  RequireRejected("data: {format: idx, train: a, test: b}\n", {"data.train.y", "{x: IMAGES, y: LABELS}"});
  RequireRejected("data: {format: csv, train: {x: a, y: b}, test: c}\n",
                  {"data.train", "csv takes one file"});
  RequireRejected("data: {format: npy, train: a.npz}\n", {"data.test: required with data.format npy"});
  RequireRejected("data: {format: npy, train: a.npz, test: b.npz, std: 0}\n", {"data.std"});
  RequireRejected("data: {format: npy, train: a.npz, test: b.npz, colour: 1}\n",
                  {"job.yaml:1: data.colour: unknown key", "label_column"});
  RequireRejected("data: {format: npy, train: a.npz, test: b.npz, sample_shape: [1, 0]}\n",
                  {"data.sample_shape"});
  RequireRejected("data: {format: npy, train: a.npz, test: b.npz, targets: float, classes: 3}\n",
                  {"data.classes: only for targets: class"});
  RequireRejected("data: {format: npy, train: {x: a, z: b}, test: b.npz}\n", {"data.train.z: unknown key"});
}

}  // namespace hetps
