// The job file's sections: optimizer, auto, security, http and data.
#include "common/job_config.h"

#include <catch2/catch.hpp>
#include <limits>
#include <string>
#include <vector>

#include "common/optimizer_options.h"
#include "tests/common/job_config_checks.h"

namespace hetps {
namespace {

using Kind = OptimizerOptions::Kind;
using testing::Contains;
using testing::ParseOrFail;
using testing::RequireRejected;

CATCH_TEST_CASE("mode: auto takes its rule from the auto section, and balance: speed",
                "[common][job_config]") {
  const JobOptions o = ParseOrFail(
      "mode: auto\nbalance: speed\nauto:\n  measure_seconds: 5\n  steady_variation: 0.5\n"
      "  sync_min_speed_ratio: 0.4\n  max_staleness: 12\n  stall_memory_seconds: 90\n"
      "  async_min_transfer_share: 0.7\n");
  CATCH_CHECK(o.mode == ConsistencyMode::kAuto);
  CATCH_CHECK(o.auto_mode.measure_seconds == 5);
  CATCH_CHECK(o.auto_mode.decide_interval_seconds == 4);
  CATCH_CHECK(o.auto_mode.steady_variation == 0.5);
  CATCH_CHECK(o.auto_mode.sync_min_speed_ratio == 0.4);
  CATCH_CHECK(o.auto_mode.max_staleness == 12);
  CATCH_CHECK(o.auto_mode.stall_memory_seconds == 90);
  CATCH_CHECK(o.auto_mode.async_min_transfer_share == 0.7);
  const JobOptions again = ParseOrFail(JobOptionsToYaml(o));
  CATCH_CHECK(again.auto_mode.sync_min_speed_ratio == 0.4);
  CATCH_CHECK(again.auto_mode.max_staleness == 12);
  CATCH_CHECK(again.auto_mode.stall_memory_seconds == 90);
  CATCH_CHECK(again.auto_mode.async_min_transfer_share == 0.7);
  CATCH_CHECK(ToWire(ConsistencyMode::kAuto) == wire::Mode::Auto);
  CATCH_CHECK(FromWire(wire::Mode::Auto) == ConsistencyMode::kAuto);
}

CATCH_TEST_CASE("mode: auto's diloco speedup defaults to 1.5, is read, written back and bounded",
                "[common][job_config]") {
  CATCH_CHECK(ParseOrFail("mode: auto\n").auto_mode.diloco_min_speedup == 1.5);
  const JobOptions o = ParseOrFail("mode: auto\nauto:\n  diloco_min_speedup: 2.5\n");
  CATCH_CHECK(o.auto_mode.diloco_min_speedup == 2.5);
  CATCH_CHECK(ParseOrFail(JobOptionsToYaml(o)).auto_mode.diloco_min_speedup == 2.5);
  RequireRejected("auto:\n  diloco_min_speedup: -1\n",
                  {"job.yaml:2: auto.diloco_min_speedup", "-1", "[0, 1000]"});
}

CATCH_TEST_CASE("The old key auto.diloco_min_transfer_share is refused, naming the new one",
                "[common][job_config]") {
  RequireRejected(
      "mode: auto\nauto:\n  measure_seconds: 2\n  diloco_min_transfer_share: 0.65\n",
      {"job.yaml:4: auto.diloco_min_transfer_share", "no longer read", "auto.diloco_min_speedup"});
}

CATCH_TEST_CASE("diloco.pseudo_gradient_dtype: int8 is read, written back and sent to the members",
                "[common][job_config]") {
  CATCH_CHECK(!ParseOrFail("mode: diloco\n").diloco.int8_pseudo_gradients);
  const JobOptions o = ParseOrFail("mode: diloco\ndiloco:\n  pseudo_gradient_dtype: int8\n");
  CATCH_CHECK(o.diloco.int8_pseudo_gradients);
  CATCH_CHECK(ParseOrFail(JobOptionsToYaml(o)).diloco.int8_pseudo_gradients);
  CATCH_CHECK(!ParseOrFail("mode: diloco\ndiloco:\n  pseudo_gradient_dtype: wire_dtype\n")
                   .diloco.int8_pseudo_gradients);
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(DilocoToWire(fbb, o.diloco));
  const auto* config = flatbuffers::GetRoot<wire::DilocoConfig>(fbb.GetBufferPointer());
  CATCH_CHECK(config->pseudo_gradient_dtype() == wire::DType::I8);
  CATCH_CHECK(DilocoFromWire(config).int8_pseudo_gradients);
  // A scheduler that predates the field sends none: pseudo-gradients travel as wire_dtype.
  CATCH_CHECK(!DilocoFromWire(nullptr).int8_pseudo_gradients);
  CATCH_CHECK(*ParsePseudoGradientDType("int8"));
  CATCH_CHECK(!ParsePseudoGradientDType("fp8").ok());
}

CATCH_TEST_CASE("diloco.async is off unless set, allowed in mode auto, and is written back resolved",
                "[common][job_config]") {
  CATCH_CHECK(!AsyncRoundsOf(ParseOrFail("mode: diloco\n")));
  CATCH_CHECK(!AsyncRoundsOf(ParseOrFail("mode: auto\n")));
  CATCH_CHECK(AsyncRoundsOf(ParseOrFail("mode: auto\ndiloco:\n  async: true\n")));
  CATCH_CHECK(AsyncRoundsOf(ParseOrFail("mode: diloco\ndiloco:\n  async: true\n")));
  CATCH_CHECK(!AsyncRoundsOf(ParseOrFail("mode: auto\nouter_optimizer: {name: adamw, lr: 0.001}\n")));
  RequireRejected("mode: auto\ndiloco:\n  async: true\nouter_optimizer: {name: adamw, lr: 0.001}\n",
                  {"outer_optimizer.name", "Delayed Nesterov"});
  const JobOptions resolved =
      ParseOrFail(JobOptionsToYaml(ParseOrFail("mode: auto\ndiloco:\n  async: true\n")));
  CATCH_CHECK(resolved.diloco.async == std::optional<bool>(true));
  CATCH_CHECK(ParseOrFail(JobOptionsToYaml(ParseOrFail("mode: auto\n"))).diloco.async ==
              std::optional<bool>(false));
  flatbuffers::FlatBufferBuilder fbb;
  DilocoOptions sent;
  sent.async = true;
  fbb.Finish(DilocoToWire(fbb, sent));
  CATCH_CHECK(
      DilocoFromWire(flatbuffers::GetRoot<wire::DilocoConfig>(fbb.GetBufferPointer())).async_rounds());
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

CATCH_TEST_CASE("The security section needs a keys directory with CURVE and a list of names",
                "[common][job_config]") {
  RequireRejected("epochs: 1\nsecurity:\n  curve: true\n", {"job.yaml:3: security.keys_dir", "required"});
  RequireRejected("security:\n  curve: true\n  keys_dir: k\n  allowed: trainer-0\n",
                  {"job.yaml:4: security.allowed", "list of key names"});
  RequireRejected("security:\n  curve: maybe\n", {"job.yaml:2: security.curve", "'maybe'"});
  RequireRejected("security:\n  keys: k\n", {"security.keys", "unknown key", "keys_dir", "allowed"});
  CATCH_CHECK_FALSE(ParseOrFail("security:\n  keys_dir: k\n").security.curve);
}

CATCH_TEST_CASE("The http section takes ADDR:PORT and nothing else", "[common][job_config]") {
  CATCH_CHECK(ParseOrFail("model: mlp\n").http.listen.empty());  // off by default
  CATCH_CHECK(ParseOrFail("http: {listen: 127.0.0.1:0}\n").http.listen == "127.0.0.1:0");
  RequireRejected("http:\n  listen: 7480\n", {"http.listen", "'7480'", "ADDR:PORT"});
  RequireRejected("http:\n  listen: 127.0.0.1:70000\n", {"http.listen", "127.0.0.1:70000"});
  RequireRejected("http:\n  port: 7480\n", {"job.yaml", "http.port"});
}

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

}  // namespace
}  // namespace hetps
