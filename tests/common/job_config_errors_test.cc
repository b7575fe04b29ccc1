// What the reader says of a key it does not know or a value out of its range: the file, the line,
// the key, the value and what is allowed.
#include "common/job_config.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/common/job_config_checks.h"

namespace hetps {
namespace {

using testing::RequireRejected;

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

CATCH_TEST_CASE("An unknown key that looks like a typo is given the known key nearest to it",
                "[common][job_config]") {
  RequireRejected("epochs: 2\nepoch: 3\n",
                  {"job.yaml:2: epoch: unknown key; did you mean epochs? known keys:"});
  RequireRejected("optimizer:\n  name: sgd\n  momentun: 0.9\n",
                  {"job.yaml:3: optimizer.momentun: unknown key; did you mean momentum?"});
  RequireRejected("data:\n  format: csv\n  lable_column: 0\n",
                  {"data.lable_column", "did you mean label_column?"});
}

CATCH_TEST_CASE("listen takes HOST:PORT as tcp:// and refuses a malformed endpoint", "[common][job_config]") {
  CATCH_CHECK(testing::ParseOrFail("listen: 127.0.0.1:7500\n").listen == "tcp://127.0.0.1:7500");
  RequireRejected("listen: 127.0.0.1\n", {"job.yaml:1: listen: '127.0.0.1' has no port"});
  RequireRejected("listen: http://127.0.0.1:7400\n", {"job.yaml:1: listen", "unknown scheme 'http'"});
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
      {"async_batch: all\n", {"job.yaml:1: async_batch", "'all'", "share, whole"}},
      {"async_batch: whole\n", {"async_batch: whole needs mode async, ssp or auto"}},
      {"checkpoint:\n  keep: 0\n", {"job.yaml:2: checkpoint.keep", "0 is out of range", "1..1000000"}},
      {"checkpoint:\n  cut_timeout_s: 0\n",
       {"job.yaml:2: checkpoint.cut_timeout_s", "0 is out of range", "1..86400"}},
      {"checkpoint:\n  cut_timeout_s: 1.5\n",
       {"job.yaml:2: checkpoint.cut_timeout_s", "1.5", "not a whole number"}},
      {"checkpoint:\n  every: 3\n", {"job.yaml:2: checkpoint.every", "unknown key", "interval_seconds"}},
      {"checkpoint: /tmp/x\n", {"checkpoint", "expected a map"}},
      {"mode: ssp\nbalance: speed\n", {"balance: speed needs mode sync, not ssp"}},
      {"auto:\n  sync_min_speed_ratio: 1.5\n", {"job.yaml:2: auto.sync_min_speed_ratio", "1.5", "[0, 1]"}},
      {"auto:\n  async_min_transfer_share: -0.1\n",
       {"job.yaml:2: auto.async_min_transfer_share", "-0.1", "[0, 1]"}},
      {"auto:\n  max_staleness: 1\n", {"job.yaml:2: auto.max_staleness", "1", "2..10000"}},
      {"auto:\n  stall_memory_seconds: 0\n", {"job.yaml:2: auto.stall_memory_seconds", "0", "[1, 86400]"}},
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
      // Found by fuzzing: an infinity or a NaN in a field no later check looked at (the data
      // section of a built-in dataset) was accepted, and the resolved job's YAML (.nan) was not.
      {"data:\n  mean: nan\n", {"job.yaml:2: data.mean", "'nan'", "not a finite number"}},
      {"data:\n  divide_by: inf\n", {"job.yaml:2: data.divide_by", "'inf'", "not a finite number"}},
      {"optimizer:\n  lr: nan\n", {"job.yaml:2: optimizer.lr", "'nan'", "not a finite number"}},
      {"auto:\n  measure_seconds: -inf\n", {"auto.measure_seconds", "'-inf'", "not a finite number"}},
      // The fuzzer found bytes that are not UTF-8 text accepted in a string, and the resolved job's
      // YAML read back as another string.
      {"listen: \xff\xff\n", {"job.yaml:1: listen", "byte 0", "not UTF-8 text"}},
      {"listen: \"tcp://a\\rb\"\n", {"job.yaml:1: listen", "byte 7", "control character"}},
      {"optimizer:\n  nesterov: maybe\n", {"job.yaml:2: optimizer.nesterov", "'maybe'", "true or false"}},
      {"mode: diloco\nstaleness_aware_lr: true\n", {"staleness_aware_lr", "diloco pushes are never stale"}},
      {"diloco:\n  round_steps: 10\n  round_seconds: 2\n",
       {"diloco: round_steps (10)", "round_seconds (2)", "one or the other"}},
      {"diloco:\n  round_seconds: -1\n", {"job.yaml:2: diloco.round_seconds", "-1", "[0, 86400]"}},
      {"diloco:\n  sync_share: 0\n", {"job.yaml:2: diloco.sync_share", "0", "[0.001, 1]"}},
      {"diloco:\n  min_round_seconds: 5\n  max_round_seconds: 2\n",
       {"diloco.min_round_seconds: 5", "larger than max_round_seconds (2)"}},
      {"diloco:\n  rounds: 3\n", {"job.yaml:2: diloco.rounds", "unknown key", "round_steps"}},
      {"mode: diloco\ndiloco:\n  pseudo_gradient_dtype: fp8\n",
       {"job.yaml:3: diloco.pseudo_gradient_dtype", "'fp8'", "wire_dtype, int8"}},
      // int8 without error feedback loses too much: the per-step modes do not offer it.
      {"mode: sync\ndiloco:\n  pseudo_gradient_dtype: int8\n",
       {"job.yaml", "diloco.pseudo_gradient_dtype: int8 needs mode diloco, not sync", "error feedback"}},
      {"mode: async\ndiloco:\n  pseudo_gradient_dtype: int8\n",
       {"diloco.pseudo_gradient_dtype: int8 needs mode diloco, not async"}},
      // Asynchronous rounds: mode diloco, and an outer SGD that Delayed Nesterov can step.
      {"mode: async\ndiloco:\n  async: true\n",
       {"diloco.async: asynchronous rounds need mode diloco or auto, not async"}},
      {"mode: diloco\ndiloco:\n  async: yes please\n", {"job.yaml:3: diloco.async"}},
      {"mode: diloco\ndiloco:\n  async: true\nouter_optimizer:\n  name: adam\n",
       {"outer_optimizer.name", "Delayed Nesterov", "not adam"}},
      {"mode: diloco\ndiloco:\n  async: true\nouter_optimizer:\n  weight_decay: 0.1\n",
       {"outer_optimizer.weight_decay", "without weight decay (not 0.1)"}},
      {"wire_dtype: int8\n", {"job.yaml:1: wire_dtype", "'int8'", "fp32, bf16, fp16"}},
      {"outer_optimizer:\n  lr: 0\n", {"job.yaml", "outer_optimizer.lr", "> 0"}},
      {"outer_optimizer:\n  name: lion\n", {"job.yaml:2: outer_optimizer.name", "'lion'", "sgd, adam"}},
      {"outer_optimizer:\n  nesterov: true\n", {"outer_optimizer.nesterov: true needs momentum > 0"}},
      {"optimizer:\n  lr: 0.01\nlr_schedule:\n  decay: cosine\n  min_lr: 0.1\n",
       {"job.yaml", "lr_schedule.min_lr: 0.1 is larger than optimizer.lr (0.01)"}},
      {"lr_schedule:\n  decay: linear\n", {"job.yaml:2: lr_schedule.decay", "'linear'", "none, cosine"}},
      {"lr_schedule:\n  warmup: 10\n", {"job.yaml:2: lr_schedule.warmup", "unknown key", "warmup_steps"}},
      {"lr_schedule:\n  warmup_steps: -5\n", {"job.yaml:2: lr_schedule.warmup_steps", "-5"}},
      {"lr_schedule:\n  decay: cosine\n  warmup_steps: 100\n  decay_steps: 50\n",
       {"lr_schedule.decay_steps: 50 is not larger than warmup_steps (100)"}},
      {"lr_schedule:\n  min_lr: 0.001\n", {"lr_schedule.min_lr: 0.001 needs decay: cosine"}},
      {"lr_schedule: 100\n", {"job.yaml:1: lr_schedule", "expected a map"}},
      {"clip_grad_norm: -1\n", {"job.yaml:1: clip_grad_norm", "-1", "out of range"}},
      {"clip_grad_norm: big\n", {"job.yaml:1: clip_grad_norm", "'big'"}},
      {"epochs: [1, 2\n", {"job.yaml", "not valid YAML"}},
      {"- epochs\n- 3\n", {"job.yaml", "expected a map"}},
  };
  for (const Case& c : cases) RequireRejected(c.yaml, c.parts);
}

}  // namespace
}  // namespace hetps
