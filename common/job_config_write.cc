// The job file writer: the resolved job as YAML, every key with its value, defaults included
// (JobOptionsToYaml, declared in common/job_config.h).
#include <string>

#include <yaml-cpp/yaml.h>

#include "common/job_config.h"

namespace hetps {

namespace {

void WriteOptimizer(YAML::Emitter& out, const char* key, const OptimizerOptions& p) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << OptimizerKindName(p.kind);
  out << YAML::Key << "lr" << YAML::Value << p.lr;
  out << YAML::Key << "weight_decay" << YAML::Value << p.weight_decay;
  switch (p.kind) {
    case OptimizerOptions::Kind::kSgd:
      out << YAML::Key << "momentum" << YAML::Value << p.momentum;
      out << YAML::Key << "dampening" << YAML::Value << p.dampening;
      out << YAML::Key << "nesterov" << YAML::Value << p.nesterov;
      break;
    case OptimizerOptions::Kind::kAdam:
    case OptimizerOptions::Kind::kAdamW:
      out << YAML::Key << "beta1" << YAML::Value << p.beta1;
      out << YAML::Key << "beta2" << YAML::Value << p.beta2;
      out << YAML::Key << "eps" << YAML::Value << p.eps;
      out << YAML::Key << "amsgrad" << YAML::Value << p.amsgrad;
      break;
    case OptimizerOptions::Kind::kAdagrad:
      out << YAML::Key << "lr_decay" << YAML::Value << p.lr_decay;
      out << YAML::Key << "initial_accumulator_value" << YAML::Value << p.initial_accumulator_value;
      out << YAML::Key << "eps" << YAML::Value << p.eps;
      break;
  }
  out << YAML::EndMap;
}

}  // namespace

std::string JobOptionsToYaml(const JobOptions& o) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  if (o.model_file.empty()) {
    out << YAML::Key << "model" << YAML::Value << o.model;
  } else {
    out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "torchscript" << YAML::Value << o.model_file;
    out << YAML::Key << "loss" << YAML::Value << LossName(o.loss);
    out << YAML::EndMap;
  }
  if (o.model == "gpt") {
    const ModelOptions& m = o.model_options;
    out << YAML::Key << "model_options" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "layers" << YAML::Value << m.layers;
    out << YAML::Key << "heads" << YAML::Value << m.heads;
    out << YAML::Key << "width" << YAML::Value << m.width;
    out << YAML::Key << "context" << YAML::Value << m.context;
    out << YAML::EndMap;
  }
  out << YAML::Key << "dataset" << YAML::Value << o.dataset;
  {
    const DataOptions& d = o.data;
    auto files = [&out](const char* key, const DataFiles& f) {
      out << YAML::Key << key << YAML::Value << YAML::BeginMap << YAML::Key << "x" << YAML::Value << f.x;
      if (!f.y.empty()) out << YAML::Key << "y" << YAML::Value << f.y;
      out << YAML::EndMap;
    };
    out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "format" << YAML::Value << d.format;
    files("train", d.train);
    files("test", d.test);
    out << YAML::Key << "header" << YAML::Value << d.header;
    out << YAML::Key << "label_column" << YAML::Value << d.label_column;
    out << YAML::Key << "targets" << YAML::Value << (d.float_targets ? "float" : "class");
    out << YAML::Key << "classes" << YAML::Value << d.classes;
    out << YAML::Key << "sample_shape" << YAML::Value << YAML::Flow << d.sample_shape;
    out << YAML::Key << "divide_by" << YAML::Value << d.divide_by;
    out << YAML::Key << "mean" << YAML::Value << d.mean;
    out << YAML::Key << "std" << YAML::Value << d.std;
    out << YAML::Key << "serve" << YAML::Value << d.serve;
    if (d.format == "tokens") {
      if (!d.token_dtype.empty()) out << YAML::Key << "dtype" << YAML::Value << d.token_dtype;
      out << YAML::Key << "context" << YAML::Value << d.context;
      out << YAML::Key << "vocab" << YAML::Value << d.vocab;
    }
    out << YAML::EndMap;
  }
  out << YAML::Key << "mode" << YAML::Value << ModeName(o.mode);
  out << YAML::Key << "staleness" << YAML::Value << o.staleness;
  out << YAML::Key << "staleness_aware_lr" << YAML::Value << StalenessAwareLr(o);
  out << YAML::Key << "auto" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "measure_seconds" << YAML::Value << o.auto_mode.measure_seconds;
  out << YAML::Key << "decide_interval_seconds" << YAML::Value << o.auto_mode.decide_interval_seconds;
  out << YAML::Key << "steady_variation" << YAML::Value << o.auto_mode.steady_variation;
  out << YAML::Key << "sync_min_speed_ratio" << YAML::Value << o.auto_mode.sync_min_speed_ratio;
  out << YAML::Key << "async_min_transfer_share" << YAML::Value << o.auto_mode.async_min_transfer_share;
  out << YAML::Key << "diloco_min_speedup" << YAML::Value << o.auto_mode.diloco_min_speedup;
  out << YAML::Key << "max_staleness" << YAML::Value << o.auto_mode.max_staleness;
  out << YAML::Key << "stall_memory_seconds" << YAML::Value << o.auto_mode.stall_memory_seconds;
  out << YAML::EndMap;
  out << YAML::Key << "balance" << YAML::Value << BalanceName(o.balance);
  out << YAML::Key << "async_batch" << YAML::Value << AsyncBatchName(AsyncBatchOf(o));
  out << YAML::Key << "epochs" << YAML::Value << o.epochs;
  out << YAML::Key << "global_batch_size" << YAML::Value << o.global_batch_size;
  WriteOptimizer(out, "optimizer", o.optimizer);
  out << YAML::Key << "lr_schedule" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "warmup_steps" << YAML::Value << o.lr_schedule.warmup_steps;
  out << YAML::Key << "decay" << YAML::Value << LrDecayName(o.lr_schedule.decay);
  out << YAML::Key << "min_lr" << YAML::Value << o.lr_schedule.min_lr;
  out << YAML::Key << "decay_steps" << YAML::Value << o.lr_schedule.decay_steps;
  out << YAML::EndMap;
  out << YAML::Key << "clip_grad_norm" << YAML::Value << o.clip_grad_norm;
  out << YAML::Key << "diloco" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "round_steps" << YAML::Value << o.diloco.round_steps;
  out << YAML::Key << "round_seconds" << YAML::Value << o.diloco.round_seconds;
  out << YAML::Key << "sync_share" << YAML::Value << o.diloco.sync_share;
  out << YAML::Key << "min_round_seconds" << YAML::Value << o.diloco.min_round_seconds;
  out << YAML::Key << "max_round_seconds" << YAML::Value << o.diloco.max_round_seconds;
  out << YAML::Key << "overlap" << YAML::Value << o.diloco.overlap;
  out << YAML::Key << "pseudo_gradient_dtype" << YAML::Value
      << PseudoGradientDTypeName(o.diloco.int8_pseudo_gradients);
  out << YAML::Key << "async" << YAML::Value << AsyncRoundsOf(o);
  out << YAML::EndMap;
  WriteOptimizer(out, "outer_optimizer", o.outer_optimizer);
  out << YAML::Key << "wire_dtype" << YAML::Value << WireDTypeName(o.wire_dtype);
  out << YAML::Key << "partition_bytes" << YAML::Value << o.partition_bytes;
  out << YAML::Key << "max_message_bytes" << YAML::Value << o.max_message_bytes;
  out << YAML::Key << "max_model_bytes" << YAML::Value << o.max_model_bytes;
  out << YAML::Key << "servers" << YAML::Value << o.servers;
  out << YAML::Key << "trainers" << YAML::Value << o.trainers;
  out << YAML::Key << "max_trainers" << YAML::Value << o.max_trainers;
  out << YAML::Key << "listen" << YAML::Value << o.listen;
  out << YAML::Key << "summary" << YAML::Value << o.summary;
  out << YAML::Key << "seed" << YAML::Value << o.seed;
  out << YAML::Key << "chunk_samples" << YAML::Value << o.chunk_samples;
  out << YAML::Key << "max_train_samples" << YAML::Value << o.max_train_samples;
  out << YAML::Key << "eval_interval_samples" << YAML::Value << o.eval_interval_samples;
  out << YAML::Key << "eval_batch_size" << YAML::Value << o.eval_batch_size;
  out << YAML::Key << "heartbeat_interval_ms" << YAML::Value << o.heartbeat_interval_ms;
  out << YAML::Key << "heartbeat_timeout_ms" << YAML::Value << o.heartbeat_timeout_ms;
  out << YAML::Key << "join_timeout_s" << YAML::Value << o.join_timeout_s;
  out << YAML::Key << "request_timeout_ms" << YAML::Value << o.request_timeout_ms;
  out << YAML::Key << "progress_interval_ms" << YAML::Value << o.progress_interval_ms;
  out << YAML::Key << "nonfinite_limit" << YAML::Value << o.nonfinite_limit;
  out << YAML::Key << "stall_floor_s" << YAML::Value << o.stall_floor_s;
  out << YAML::Key << "stall_pace_factor" << YAML::Value << o.stall_pace_factor;
  out << YAML::Key << "checkpoint" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "dir" << YAML::Value << o.checkpoint.dir;
  out << YAML::Key << "interval_seconds" << YAML::Value << o.checkpoint.interval_seconds;
  out << YAML::Key << "interval_steps" << YAML::Value << o.checkpoint.interval_steps;
  out << YAML::Key << "keep" << YAML::Value << o.checkpoint.keep;
  out << YAML::Key << "recovery_timeout_s" << YAML::Value << o.checkpoint.recovery_timeout_s;
  out << YAML::Key << "cut_timeout_s" << YAML::Value << o.checkpoint.cut_timeout_s;
  out << YAML::EndMap;
  out << YAML::Key << "model_out" << YAML::Value << o.model_out;
  out << YAML::Key << "security" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "curve" << YAML::Value << o.security.curve;
  out << YAML::Key << "keys_dir" << YAML::Value << o.security.keys_dir;
  out << YAML::Key << "allowed" << YAML::Value << YAML::Flow << o.security.allowed;
  out << YAML::EndMap;
  out << YAML::Key << "http" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "listen" << YAML::Value << o.http.listen;
  out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace hetps
