#include "common/job_config_sections.h"

#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/yaml_fields.h"

namespace hetps {
namespace {

// Shapes are lists of positive sizes; a split is a path or a map {x: PATH, y: PATH}.
Status ReadShape(const YAML::Node& node, const std::string& where, std::vector<int64_t>* out) {
  if (!node.IsSequence())
    return Status::InvalidArgument(where + ": expected a list of sizes, e.g. [1, 28, 28]");
  out->clear();
  for (const YAML::Node& dim : node) {
    int64_t size = 0;
    HETPS_RETURN_IF_ERROR(ReadInteger(dim, where, int64_t{1}, int64_t{1} << 31, &size));
    out->push_back(size);
  }
  return Status::Ok();
}

Status ReadDataFiles(const YAML::Node& node, const std::string& source, const std::string& where,
                     const std::string& prefix, DataFiles* out) {
  if (node.IsScalar()) {
    *out = DataFiles{node.Scalar(), ""};
    return Status::Ok();
  }
  if (!node.IsMap()) return Status::InvalidArgument(where + ": expected a path or a map {x: PATH, y: PATH}");
  const std::vector<Field> fields = {
      {"x", [out](const YAML::Node& n, const std::string& w) { return ReadString(n, w, &out->x); }},
      {"y", [out](const YAML::Node& n, const std::string& w) { return ReadString(n, w, &out->y); }},
  };
  return ReadMap(node, source, prefix, fields);
}

// A reader of a number in [min, max] into *field.
FieldReader BoundedDouble(double* field, double min, double max) {
  return [field, min, max](const YAML::Node& n, const std::string& w) {
    HETPS_RETURN_IF_ERROR(ReadDouble(n, w, field));
    if (!(*field >= min && *field <= max)) {
      char range[64];
      std::snprintf(range, sizeof range, "[%g, %g]", min, max);
      return Status::InvalidArgument(w + ": " + Scalar(n) + " is out of range " + range);
    }
    return Status::Ok();
  };
}

}  // namespace

Status ReadOptimizer(const YAML::Node& node, const std::string& source, OptimizerOptions* out,
                     const std::string& section, OptimizerOptions (*defaults)(OptimizerOptions::Kind)) {
  if (!node.IsMap()) {
    return Status::InvalidArgument(Where(source, node, section) + ": expected a map");
  }
  // The name decides the defaults of every other field, so it is read first.
  OptimizerOptions options = *out;
  if (node["name"]) {
    const std::string where = Where(source, node["name"], section + ".name");
    std::string name;
    HETPS_RETURN_IF_ERROR(ReadString(node["name"], where, &name));
    auto kind = ParseOptimizerKind(name);
    if (!kind.ok()) {
      return Status::InvalidArgument(where + ": '" + name +
                                     "' is not an optimizer; allowed: sgd, adam, adamw, adagrad");
    }
    options = defaults(*kind);
  }
  auto number = [](double* field) {
    return [field](const YAML::Node& n, const std::string& w) { return ReadDouble(n, w, field); };
  };
  auto flag = [](bool* field) {
    return [field](const YAML::Node& n, const std::string& w) { return ReadBool(n, w, field); };
  };
  const std::vector<Field> fields = {
      {"name", [](const YAML::Node&, const std::string&) { return Status::Ok(); }},
      {"lr", number(&options.lr)},
      {"momentum", number(&options.momentum)},
      {"dampening", number(&options.dampening)},
      {"nesterov", flag(&options.nesterov)},
      {"weight_decay", number(&options.weight_decay)},
      {"beta1", number(&options.beta1)},
      {"beta2", number(&options.beta2)},
      {"eps", number(&options.eps)},
      {"amsgrad", flag(&options.amsgrad)},
      {"lr_decay", number(&options.lr_decay)},
      {"initial_accumulator_value", number(&options.initial_accumulator_value)},
  };
  HETPS_RETURN_IF_ERROR(ReadMap(node, source, section + ".", fields));
  HETPS_RETURN_IF_ERROR(ValidateOptimizerOptions(options, section).WithContext(source));
  *out = options;
  return Status::Ok();
}

Status ReadAutoMode(const YAML::Node& node, const std::string& source, AutoModeOptions* out) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      if (entry.first.Scalar() != "diloco_min_transfer_share") continue;
      // The rule it tuned (every trainer's share of a step outside compute) is gone: it missed a
      // trainer beside the server, whose transfers are quick, though diloco won for the cluster.
      return Status::InvalidArgument(
          Where(source, entry.first, "auto.diloco_min_transfer_share") +
          ": no longer read; auto now picks diloco by the cluster's samples/s: use auto.diloco_min_speedup "
          "(diloco's predicted samples/s over those now from which it switches, default 1.5; "
          "docs/job_config.md)");
    }
  }
  AutoModeOptions options = *out;
  const std::vector<Field> fields = {
      {"measure_seconds", BoundedDouble(&options.measure_seconds, 0, 3600)},
      {"decide_interval_seconds", BoundedDouble(&options.decide_interval_seconds, 0.1, 3600)},
      {"steady_variation", BoundedDouble(&options.steady_variation, 0.001, 1000)},
      {"sync_min_speed_ratio", BoundedDouble(&options.sync_min_speed_ratio, 0, 1)},
      {"async_min_transfer_share", BoundedDouble(&options.async_min_transfer_share, 0, 1)},
      {"diloco_min_speedup", BoundedDouble(&options.diloco_min_speedup, 0, 1000)},
      {"max_staleness",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint32_t{2}, uint32_t{10000}, &options.max_staleness);
       }},
      {"stall_memory_seconds", BoundedDouble(&options.stall_memory_seconds, 1, 86400)},
  };
  HETPS_RETURN_IF_ERROR(ReadMap(node, source, "auto.", fields));
  *out = options;
  return Status::Ok();
}

Status ReadLrSchedule(const YAML::Node& node, const std::string& source, LrScheduleOptions* out) {
  if (!node.IsMap()) return Status::InvalidArgument(Where(source, node, "lr_schedule") + ": expected a map");
  LrScheduleOptions options = *out;
  const std::vector<Field> fields = {
      {"warmup_steps",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint64_t{0}, uint64_t{1} << 40, &options.warmup_steps);
       }},
      {"decay", ChoiceField(&options.decay, {{"none", LrScheduleOptions::Decay::kNone},
                                             {"cosine", LrScheduleOptions::Decay::kCosine}})},
      {"min_lr", BoundedDouble(&options.min_lr, 0, 1e6)},
      {"decay_steps",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint64_t{0}, uint64_t{1} << 40, &options.decay_steps);
       }},
  };
  HETPS_RETURN_IF_ERROR(ReadMap(node, source, "lr_schedule.", fields));
  *out = options;
  return Status::Ok();
}

Status ReadDiloco(const YAML::Node& node, const std::string& source, DilocoOptions* out) {
  DilocoOptions options = *out;
  const std::vector<Field> fields = {
      {"round_steps",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint32_t{0}, uint32_t{1000000}, &options.round_steps);
       }},
      {"round_seconds", BoundedDouble(&options.round_seconds, 0, 86400)},
      {"sync_share", BoundedDouble(&options.sync_share, 0.001, 1)},
      {"min_round_seconds", BoundedDouble(&options.min_round_seconds, 0.01, 86400)},
      {"max_round_seconds", BoundedDouble(&options.max_round_seconds, 0.01, 86400)},
      {"overlap",
       [&](const YAML::Node& n, const std::string& w) { return ReadBool(n, w, &options.overlap); }},
      {"pseudo_gradient_dtype",
       ChoiceField(&options.int8_pseudo_gradients, {{"wire_dtype", false}, {"int8", true}})},
      {"async",
       [&](const YAML::Node& n, const std::string& w) {
         bool async = false;
         HETPS_RETURN_IF_ERROR(ReadBool(n, w, &async));
         options.async = async;
         return Status::Ok();
       }},
  };
  HETPS_RETURN_IF_ERROR(ReadMap(node, source, "diloco.", fields));
  *out = options;
  return Status::Ok();
}

Status ReadCheckpoint(const YAML::Node& node, const std::string& source, CheckpointOptions* out) {
  CheckpointOptions options = *out;
  const std::vector<Field> fields = {
      {"dir", [&](const YAML::Node& n, const std::string& w) { return ReadString(n, w, &options.dir); }},
      {"interval_seconds",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint32_t{0}, uint32_t{86400 * 7}, &options.interval_seconds);
       }},
      {"interval_steps",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint64_t{0}, uint64_t{1} << 40, &options.interval_steps);
       }},
      {"keep",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint32_t{1}, uint32_t{1000000}, &options.keep);
       }},
      {"recovery_timeout_s",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint32_t{1}, uint32_t{86400 * 7}, &options.recovery_timeout_s);
       }},
      {"cut_timeout_s",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint32_t{1}, uint32_t{86400}, &options.cut_timeout_s);
       }},
  };
  HETPS_RETURN_IF_ERROR(ReadMap(node, source, "checkpoint.", fields));
  *out = options;
  return Status::Ok();
}

Status ReadSecurity(const YAML::Node& node, const std::string& source, SecurityOptions* out) {
  const std::vector<Field> fields = {
      {"curve", [out](const YAML::Node& n, const std::string& w) { return ReadBool(n, w, &out->curve); }},
      {"keys_dir",
       [out](const YAML::Node& n, const std::string& w) { return ReadString(n, w, &out->keys_dir); }},
      {"allowed",
       [out, source](const YAML::Node& n, const std::string& w) {
         if (!n.IsSequence()) return Status::InvalidArgument(w + ": expected a list of key names");
         out->allowed.clear();
         for (const YAML::Node& name : n) {
           std::string text;
           HETPS_RETURN_IF_ERROR(ReadString(name, Where(source, name, "security.allowed"), &text));
           out->allowed.push_back(text);
         }
         return Status::Ok();
       }},
  };
  HETPS_RETURN_IF_ERROR(ReadMap(node, source, "security.", fields));
  if (out->curve && out->keys_dir.empty()) {
    return Status::InvalidArgument(Where(source, node, "security.keys_dir") +
                                   ": required with curve: true (the directory hetps-keygen wrote)");
  }
  return Status::Ok();
}

Status ReadData(const YAML::Node& node, const std::string& source, DataOptions* out) {
  DataOptions o = *out;
  const std::vector<Field> fields = {
      {"format",
       [&](const YAML::Node& n, const std::string& w) {
         // Empty: the built-in data set (what JobOptionsToYaml writes for it).
         if (n.IsScalar() && n.Scalar().empty()) {
           o.format.clear();
           return Status::Ok();
         }
         return ReadChoice(n, w, DataFormats(), &o.format);
       }},
      {"train", [&](const YAML::Node& n,
                    const std::string& w) { return ReadDataFiles(n, source, w, "data.train.", &o.train); }},
      {"test", [&](const YAML::Node& n,
                   const std::string& w) { return ReadDataFiles(n, source, w, "data.test.", &o.test); }},
      {"header", [&](const YAML::Node& n, const std::string& w) { return ReadBool(n, w, &o.header); }},
      {"label_column",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, int32_t{-(1 << 24)}, int32_t{1 << 24}, &o.label_column);
       }},
      {"targets", ChoiceField(&o.float_targets, {{"class", false}, {"float", true}})},
      {"classes",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint32_t{0}, uint32_t{1} << 24, &o.classes);
       }},
      {"sample_shape",
       [&](const YAML::Node& n, const std::string& w) { return ReadShape(n, w, &o.sample_shape); }},
      {"divide_by",
       [&](const YAML::Node& n, const std::string& w) { return ReadDouble(n, w, &o.divide_by); }},
      {"mean", [&](const YAML::Node& n, const std::string& w) { return ReadDouble(n, w, &o.mean); }},
      {"std", [&](const YAML::Node& n, const std::string& w) { return ReadDouble(n, w, &o.std); }},
      {"serve", [&](const YAML::Node& n, const std::string& w) { return ReadBool(n, w, &o.serve); }},
      {"dtype",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadChoice(n, w, {"uint16", "uint32"}, &o.token_dtype);
       }},
      {"context",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint32_t{1}, uint32_t{1} << 20, &o.context);
       }},
      {"vocab",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint32_t{0}, uint32_t{1} << 31, &o.vocab);
       }},
  };
  HETPS_RETURN_IF_ERROR(ReadMap(node, source, "data.", fields));
  HETPS_RETURN_IF_ERROR(ValidateDataOptions(o).WithContext(Where(source, node, "data")));
  *out = o;
  return Status::Ok();
}

Status ReadHttp(const YAML::Node& node, const std::string& source, HttpOptions* out) {
  const std::vector<Field> fields = {
      {"listen", [out](const YAML::Node& n, const std::string& w) { return ReadString(n, w, &out->listen); }},
  };
  return ReadMap(node, source, "http.", fields);
}

Status ReadModel(const YAML::Node& node, const std::string& source, const std::string& where,
                 JobOptions* out) {
  if (!node.IsMap()) {
    HETPS_RETURN_IF_ERROR(ReadChoice(node, where, {"mlp", "cnn", "gpt"}, &out->model));
    out->model_file.clear();
    out->loss = Loss::kCrossEntropy;
    return Status::Ok();
  }
  std::string file;
  Loss loss = Loss::kCrossEntropy;
  const std::vector<Field> fields = {
      {"torchscript", [&](const YAML::Node& n, const std::string& w) { return ReadString(n, w, &file); }},
      {"loss",
       ChoiceField(&loss,
                   {{"cross_entropy", Loss::kCrossEntropy}, {"mse", Loss::kMse}, {"nll", Loss::kNll}})},
  };
  HETPS_RETURN_IF_ERROR(ReadMap(node, source, "model.", fields));
  if (file.empty()) {
    return Status::InvalidArgument(Where(source, node, "model.torchscript") +
                                   ": required in a model map (the TorchScript file to train); "
                                   "built-in models are written model: mlp | cnn | gpt");
  }
  out->model = "torchscript";
  out->model_file = file;
  out->loss = loss;
  return Status::Ok();
}

}  // namespace hetps
