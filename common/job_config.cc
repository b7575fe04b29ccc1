#include "common/job_config.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace hetps {
namespace {

// Where a value sits in the job file, for error messages: "job.yaml:7: epochs".
std::string Where(const std::string& source, const YAML::Node& node, const std::string& key) {
  const YAML::Mark mark = node.Mark();
  if (mark.line >= 0) return source + ":" + std::to_string(mark.line + 1) + ": " + key;
  return source + ": " + key;
}

std::string Scalar(const YAML::Node& node) {
  return node.IsScalar() ? node.Scalar() : "<not a scalar>";
}

template <typename T>
Status ReadInteger(const YAML::Node& node, const std::string& where, T min, T max, T* out) {
  const std::string text = Scalar(node);
  long double value = 0;
  // Parse as long double first so "1e6" works and so values beyond the type's range are caught.
  try {
    size_t used = 0;
    value = std::stold(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    return Status::InvalidArgument(where + ": '" + text + "' is not a number");
  }
  // std::trunc rather than a cast to an integer type: the cast is undefined for values beyond
  // that type, which would report 1e30 as a fraction instead of out of range.
  if (value != std::trunc(value)) {
    return Status::InvalidArgument(where + ": '" + text + "' is not a whole number");
  }
  if (value < static_cast<long double>(min) || value > static_cast<long double>(max)) {
    return Status::InvalidArgument(where + ": " + text + " is out of range; allowed " + std::to_string(min) +
                                   ".." + std::to_string(max));
  }
  *out = static_cast<T>(value);
  return Status::Ok();
}

Status ReadDouble(const YAML::Node& node, const std::string& where, double* out) {
  const std::string text = Scalar(node);
  try {
    size_t used = 0;
    *out = std::stod(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    return Status::InvalidArgument(where + ": '" + text + "' is not a number");
  }
  return Status::Ok();
}

Status ReadBool(const YAML::Node& node, const std::string& where, bool* out) {
  const std::string text = Scalar(node);
  if (text == "true" || text == "yes" || text == "on")
    *out = true;
  else if (text == "false" || text == "no" || text == "off")
    *out = false;
  else
    return Status::InvalidArgument(where + ": '" + text + "' is not true or false");
  return Status::Ok();
}

Status ReadString(const YAML::Node& node, const std::string& where, std::string* out) {
  if (!node.IsScalar()) return Status::InvalidArgument(where + ": expected a string");
  *out = node.Scalar();
  return Status::Ok();
}

Status ReadChoice(const YAML::Node& node, const std::string& where, const std::vector<std::string>& choices,
                  std::string* out) {
  HETPS_RETURN_IF_ERROR(ReadString(node, where, out));
  for (const std::string& c : choices) {
    if (*out == c) return Status::Ok();
  }
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  return Status::InvalidArgument(where + ": '" + *out + "' is not allowed; choose one of: " + list);
}

constexpr uint32_t kMaxRequestTimeoutMs = 24 * 3600 * 1000;

using FieldReader = std::function<Status(const YAML::Node&, const std::string& where)>;

struct Field {
  const char* key;
  FieldReader read;
};

Status UnknownKey(const std::string& where, const std::vector<Field>& fields) {
  std::string list;
  for (const Field& f : fields) list += (list.empty() ? "" : ", ") + std::string(f.key);
  return Status::InvalidArgument(where + ": unknown key; known keys: " + list);
}

Status ReadMap(const YAML::Node& map, const std::string& source, const std::string& prefix,
               const std::vector<Field>& fields) {
  if (!map.IsMap()) {
    const std::string what = prefix.empty() ? "the top level" : prefix.substr(0, prefix.size() - 1);
    return Status::InvalidArgument(Where(source, map, what) + ": expected a map of keys to values");
  }
  for (const auto& entry : map) {
    const std::string key = entry.first.Scalar();
    const std::string where = Where(source, entry.first, prefix + key);
    const Field* field = nullptr;
    for (const Field& f : fields) {
      if (key == f.key) field = &f;
    }
    if (field == nullptr) return UnknownKey(where, fields);
    HETPS_RETURN_IF_ERROR(field->read(entry.second, where));
  }
  return Status::Ok();
}

Status ReadOptimizer(const YAML::Node& node, const std::string& source, OptimizerOptions* out) {
  if (!node.IsMap()) {
    return Status::InvalidArgument(Where(source, node, "optimizer") + ": expected a map");
  }
  // The name decides the defaults of every other field, so it is read first.
  OptimizerOptions options = *out;
  if (node["name"]) {
    std::string name;
    HETPS_RETURN_IF_ERROR(ReadString(node["name"], Where(source, node["name"], "optimizer.name"), &name));
    auto kind = ParseOptimizerKind(name);
    if (!kind.ok()) {
      return kind.status().WithContext(source + ":" + std::to_string(node["name"].Mark().line + 1));
    }
    options = DefaultOptimizerOptions(*kind);
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
  HETPS_RETURN_IF_ERROR(ReadMap(node, source, "optimizer.", fields));
  HETPS_RETURN_IF_ERROR(ValidateOptimizerOptions(options).WithContext(source));
  *out = options;
  return Status::Ok();
}

Status ReadAutoMode(const YAML::Node& node, const std::string& source, AutoModeOptions* out) {
  AutoModeOptions options = *out;
  auto number = [](double* field, double min, double max) {
    return [field, min, max](const YAML::Node& n, const std::string& w) {
      HETPS_RETURN_IF_ERROR(ReadDouble(n, w, field));
      if (!(*field >= min && *field <= max)) {
        char range[64];
        std::snprintf(range, sizeof range, "[%g, %g]", min, max);
        return Status::InvalidArgument(w + ": " + Scalar(n) + " is out of range " + range);
      }
      return Status::Ok();
    };
  };
  const std::vector<Field> fields = {
      {"measure_seconds", number(&options.measure_seconds, 0, 3600)},
      {"decide_interval_seconds", number(&options.decide_interval_seconds, 0.1, 3600)},
      {"steady_variation", number(&options.steady_variation, 0.001, 1000)},
      {"sync_min_speed_ratio", number(&options.sync_min_speed_ratio, 0, 1)},
      {"max_staleness",
       [&](const YAML::Node& n, const std::string& w) {
         return ReadInteger(n, w, uint32_t{2}, uint32_t{10000}, &options.max_staleness);
       }},
  };
  HETPS_RETURN_IF_ERROR(ReadMap(node, source, "auto.", fields));
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
      {"targets",
       [&](const YAML::Node& n, const std::string& w) {
         std::string kind;
         HETPS_RETURN_IF_ERROR(ReadChoice(n, w, {"class", "float"}, &kind));
         o.float_targets = kind == "float";
         return Status::Ok();
       }},
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

// "ADDR:PORT" with a port of 1 to 5 digits, at most 65535.
bool LooksLikeHostPort(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  const std::string port = text.substr(colon + 1);
  return !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos &&
         std::stoul(port) <= 65535;
}

// `model: mlp | cnn`, or `model: {torchscript: FILE, loss: cross_entropy | mse | nll}`.
Status ReadModel(const YAML::Node& node, const std::string& source, const std::string& where,
                 JobOptions* out) {
  if (!node.IsMap()) {
    HETPS_RETURN_IF_ERROR(ReadChoice(node, where, {"mlp", "cnn"}, &out->model));
    out->model_file.clear();
    out->loss = Loss::kCrossEntropy;
    return Status::Ok();
  }
  std::string file;
  Loss loss = Loss::kCrossEntropy;
  const std::vector<Field> fields = {
      {"torchscript", [&](const YAML::Node& n, const std::string& w) { return ReadString(n, w, &file); }},
      {"loss",
       [&](const YAML::Node& n, const std::string& w) {
         std::string name;
         HETPS_RETURN_IF_ERROR(ReadChoice(n, w, {"cross_entropy", "mse", "nll"}, &name));
         loss = *ParseLoss(name);
         return Status::Ok();
       }},
  };
  HETPS_RETURN_IF_ERROR(ReadMap(node, source, "model.", fields));
  if (file.empty()) {
    return Status::InvalidArgument(Where(source, node, "model.torchscript") +
                                   ": required in a model map (the TorchScript file to train); "
                                   "built-in models are written model: mlp | cnn");
  }
  out->model = "torchscript";
  out->model_file = file;
  out->loss = loss;
  return Status::Ok();
}

std::vector<Field> TopLevelFields(JobOptions* o, const std::string& source) {
  auto u32 = [](uint32_t* field, uint32_t min, uint32_t max) {
    return [=](const YAML::Node& n, const std::string& w) { return ReadInteger(n, w, min, max, field); };
  };
  auto u64 = [](uint64_t* field, uint64_t min, uint64_t max) {
    return [=](const YAML::Node& n, const std::string& w) { return ReadInteger(n, w, min, max, field); };
  };
  return {
      {"model",
       [o, source](const YAML::Node& n, const std::string& w) { return ReadModel(n, source, w, o); }},
      {"dataset", [o](const YAML::Node& n,
                      const std::string& w) { return ReadChoice(n, w, {"fashion-mnist"}, &o->dataset); }},
      {"data",
       [o, source](const YAML::Node& n, const std::string&) { return ReadData(n, source, &o->data); }},
      {"mode",
       [o](const YAML::Node& n, const std::string& w) {
         std::string name;
         HETPS_RETURN_IF_ERROR(ReadChoice(n, w, {"sync", "async", "ssp", "auto"}, &name));
         o->mode = *ParseMode(name);
         return Status::Ok();
       }},
      {"staleness", u32(&o->staleness, 0, 10000)},
      {"auto", [o, source](const YAML::Node& n,
                           const std::string&) { return ReadAutoMode(n, source, &o->auto_mode); }},
      {"staleness_aware_lr",
       [o](const YAML::Node& n, const std::string& w) { return ReadBool(n, w, &o->staleness_aware_lr); }},
      {"balance",
       [o](const YAML::Node& n, const std::string& w) {
         std::string name;
         HETPS_RETURN_IF_ERROR(ReadChoice(n, w, {"none", "speed"}, &name));
         o->balance = name == "speed" ? Balance::kSpeed : Balance::kNone;
         return Status::Ok();
       }},
      {"epochs", u32(&o->epochs, 1, 1000)},
      {"global_batch_size", u32(&o->global_batch_size, 1, 1u << 20)},
      {"optimizer", [o, source](const YAML::Node& n,
                                const std::string&) { return ReadOptimizer(n, source, &o->optimizer); }},
      {"wire_dtype",
       [o](const YAML::Node& n, const std::string& w) {
         std::string name;
         HETPS_RETURN_IF_ERROR(ReadChoice(n, w, {"fp32", "bf16", "fp16"}, &name));
         o->wire_dtype = *ParseWireDType(name);
         return Status::Ok();
       }},
      {"partition_bytes", u64(&o->partition_bytes, 4, uint64_t{1} << 30)},
      {"max_message_bytes", u64(&o->max_message_bytes, uint64_t{1} << 20, uint64_t{1} << 30)},
      {"max_model_bytes", u64(&o->max_model_bytes, 4, uint64_t{1} << 40)},
      {"servers", u32(&o->servers, 1, 256)},
      {"trainers", u32(&o->trainers, 1, 1024)},
      {"max_trainers", u32(&o->max_trainers, 0, 1024)},
      {"listen", [o](const YAML::Node& n, const std::string& w) { return ReadString(n, w, &o->listen); }},
      {"summary", [o](const YAML::Node& n, const std::string& w) { return ReadString(n, w, &o->summary); }},
      {"seed", u64(&o->seed, 0, std::numeric_limits<int64_t>::max())},
      {"chunk_samples", u32(&o->chunk_samples, 1, 1u << 24)},
      {"max_train_samples", u64(&o->max_train_samples, 0, uint64_t{1} << 40)},
      {"eval_interval_samples", u64(&o->eval_interval_samples, 0, uint64_t{1} << 40)},
      {"eval_batch_size", u32(&o->eval_batch_size, 1, 1u << 20)},
      {"heartbeat_interval_ms", u32(&o->heartbeat_interval_ms, 10, 600000)},
      {"heartbeat_timeout_ms", u32(&o->heartbeat_timeout_ms, 100, 3600000)},
      {"join_timeout_s", u32(&o->join_timeout_s, 1, 86400)},
      {"request_timeout_ms", u32(&o->request_timeout_ms, 100, kMaxRequestTimeoutMs)},
      {"progress_interval_ms", u32(&o->progress_interval_ms, 10, 3600000)},
      {"checkpoint", [o, source](const YAML::Node& n,
                                 const std::string&) { return ReadCheckpoint(n, source, &o->checkpoint); }},
      {"model_out",
       [o](const YAML::Node& n, const std::string& w) { return ReadString(n, w, &o->model_out); }},
      {"security", [o, source](const YAML::Node& n,
                               const std::string&) { return ReadSecurity(n, source, &o->security); }},
      {"http",
       [o, source](const YAML::Node& n, const std::string&) { return ReadHttp(n, source, &o->http); }},
  };
}

}  // namespace

std::vector<std::string> JobFileKeys() {
  JobOptions unused;
  std::vector<std::string> keys;
  for (const Field& f : TopLevelFields(&unused, "")) keys.push_back(f.key);
  return keys;
}

Result<JobOptions> ParseJobYaml(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(source + ": not valid YAML: " + e.what());
  }
  JobOptions options;
  if (root.IsNull()) return options;  // an empty file means every default
  try {
    HETPS_RETURN_IF_ERROR(ReadMap(root, source, "", TopLevelFields(&options, source)));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(source + ": " + e.what());
  }
  HETPS_RETURN_IF_ERROR(ValidateJobOptions(options).WithContext(source));
  return options;
}

Result<JobOptions> LoadJobFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read job file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  auto job = ParseJobYaml(text.str(), path);
  // A model file is found next to the job file that names it, wherever the scheduler runs.
  if (job.ok() && !job->model_file.empty() && job->model_file.front() != '/') {
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos) job->model_file = path.substr(0, slash + 1) + job->model_file;
  }
  return job;
}

Status ValidateJobOptions(const JobOptions& o) {
  HETPS_RETURN_IF_ERROR(ValidateOptimizerOptions(o.optimizer));
  if (o.global_batch_size < MaxTrainers(o)) {
    const char* field = o.max_trainers > o.trainers ? "max_trainers" : "trainers";
    return Status::InvalidArgument("global_batch_size: " + std::to_string(o.global_batch_size) +
                                   " is smaller than " + field + " (" + std::to_string(MaxTrainers(o)) +
                                   "); every trainer needs at least one sample per step");
  }
  if (o.max_trainers != 0 && o.max_trainers < o.trainers) {
    return Status::InvalidArgument("max_trainers: " + std::to_string(o.max_trainers) +
                                   " is smaller than trainers (" + std::to_string(o.trainers) +
                                   "); it counts the trainers waited for at the start too");
  }
  if (o.partition_bytes > o.max_message_bytes) {
    return Status::InvalidArgument("partition_bytes: " + std::to_string(o.partition_bytes) +
                                   " is larger than max_message_bytes (" +
                                   std::to_string(o.max_message_bytes) +
                                   "); a partition travels in one frame, and larger frames are dropped");
  }
  if (o.request_timeout_ms < 100 || o.request_timeout_ms > kMaxRequestTimeoutMs) {
    return Status::InvalidArgument("request_timeout_ms: " + std::to_string(o.request_timeout_ms) +
                                   " is out of range; allowed 100.." + std::to_string(kMaxRequestTimeoutMs));
  }
  if (o.heartbeat_timeout_ms < 2 * o.heartbeat_interval_ms) {
    return Status::InvalidArgument("heartbeat_timeout_ms: " + std::to_string(o.heartbeat_timeout_ms) +
                                   " must be at least twice heartbeat_interval_ms (" +
                                   std::to_string(o.heartbeat_interval_ms) + ")");
  }
  if (DatasetTrainSamples(o.dataset) == 0) {
    return Status::InvalidArgument("dataset: '" + o.dataset + "' is unknown; allowed: fashion-mnist");
  }
  HETPS_RETURN_IF_ERROR(ValidateDataOptions(o.data));
  if (!o.model_file.empty()) {
    if (o.model != "torchscript") {
      return Status::InvalidArgument("model: '" + o.model + "' with a TorchScript file " + o.model_file +
                                     "; give one or the other");
    }
  } else if (o.model != "mlp" && o.model != "cnn") {
    return Status::InvalidArgument("model: '" + o.model + "' is unknown; allowed: mlp, cnn, or " +
                                   "{torchscript: FILE, loss: ...}");
  } else if (o.loss != Loss::kCrossEntropy) {
    return Status::InvalidArgument(std::string("loss: ") + LossName(o.loss) +
                                   " needs a TorchScript model (model: {torchscript: FILE, loss: ...}); "
                                   "the built-in models train with cross_entropy");
  }
  if (o.listen.empty()) return Status::InvalidArgument("listen: empty endpoint");
  if (!o.http.listen.empty() && !LooksLikeHostPort(o.http.listen)) {
    return Status::InvalidArgument("http.listen: '" + o.http.listen +
                                   "' is not ADDR:PORT (e.g. 127.0.0.1:7480; empty: no HTTP)");
  }
  if (o.security.curve && o.security.keys_dir.empty()) {
    return Status::InvalidArgument("security.keys_dir: required with curve: true (or give --curve-keys DIR)");
  }
  if (o.staleness_aware_lr && o.mode == ConsistencyMode::kSync) {
    return Status::InvalidArgument(
        "staleness_aware_lr: true needs mode async or ssp; sync pushes are never stale");
  }
  if (o.balance == Balance::kSpeed && o.mode != ConsistencyMode::kSync && o.mode != ConsistencyMode::kAuto) {
    return Status::InvalidArgument(std::string("balance: speed needs mode sync, not ") + ModeName(o.mode) +
                                   "; other modes let each trainer run at its own pace");
  }
  return Status::Ok();
}

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
    out << YAML::EndMap;
  }
  out << YAML::Key << "mode" << YAML::Value << ModeName(o.mode);
  out << YAML::Key << "staleness" << YAML::Value << o.staleness;
  out << YAML::Key << "staleness_aware_lr" << YAML::Value << o.staleness_aware_lr;
  out << YAML::Key << "auto" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "measure_seconds" << YAML::Value << o.auto_mode.measure_seconds;
  out << YAML::Key << "decide_interval_seconds" << YAML::Value << o.auto_mode.decide_interval_seconds;
  out << YAML::Key << "steady_variation" << YAML::Value << o.auto_mode.steady_variation;
  out << YAML::Key << "sync_min_speed_ratio" << YAML::Value << o.auto_mode.sync_min_speed_ratio;
  out << YAML::Key << "max_staleness" << YAML::Value << o.auto_mode.max_staleness;
  out << YAML::EndMap;
  out << YAML::Key << "balance" << YAML::Value << BalanceName(o.balance);
  out << YAML::Key << "epochs" << YAML::Value << o.epochs;
  out << YAML::Key << "global_batch_size" << YAML::Value << o.global_batch_size;
  out << YAML::Key << "optimizer" << YAML::Value << YAML::BeginMap;
  const OptimizerOptions& p = o.optimizer;
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

uint64_t DatasetTrainSamples(const std::string& dataset) {
  return dataset == "fashion-mnist" ? 60000 : 0;
}

uint32_t MaxTrainers(const JobOptions& options) {
  return options.max_trainers == 0 ? options.trainers : options.max_trainers;
}

uint32_t EvenBatchShare(uint32_t global_batch, uint32_t trainers, uint32_t rank) {
  return global_batch / trainers + (rank < global_batch % trainers ? 1 : 0);
}

}  // namespace hetps
