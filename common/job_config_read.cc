// The job file reader: the top-level keys of a job file and the reader of each, and the entry
// points ParseJobYaml and LoadJobFile (declared in common/job_config.h). The sections are read in
// common/job_config_sections.cc; the relations between fields are checked in
// common/job_config_validate.cc.
#include <fstream>
#include <limits>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "common/job_config.h"
#include "common/job_config_sections.h"
#include "common/yaml_fields.h"

namespace hetps {
namespace {

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
      {"model_options",
       [o, source](const YAML::Node& n, const std::string&) {
         return ReadModelOptions(n, source, &o->model_options);
       }},
      {"dataset", [o](const YAML::Node& n,
                      const std::string& w) { return ReadChoice(n, w, {"fashion-mnist"}, &o->dataset); }},
      {"data",
       [o, source](const YAML::Node& n, const std::string&) { return ReadData(n, source, &o->data); }},
      {"mode", ChoiceField(&o->mode, {{"sync", ConsistencyMode::kSync},
                                      {"async", ConsistencyMode::kAsync},
                                      {"ssp", ConsistencyMode::kSsp},
                                      {"auto", ConsistencyMode::kAuto},
                                      {"diloco", ConsistencyMode::kDiloco}})},
      {"staleness", u32(&o->staleness, 0, 10000)},
      {"auto", [o, source](const YAML::Node& n,
                           const std::string&) { return ReadAutoMode(n, source, &o->auto_mode); }},
      {"staleness_aware_lr",
       [o](const YAML::Node& n, const std::string& w) {
         bool aware = false;
         HETPS_RETURN_IF_ERROR(ReadBool(n, w, &aware));
         o->staleness_aware_lr = aware;
         return Status::Ok();
       }},
      {"balance", ChoiceField(&o->balance, {{"none", Balance::kNone}, {"speed", Balance::kSpeed}})},
      {"async_batch", ChoiceField<std::optional<AsyncBatch>>(
                          &o->async_batch, {{"share", AsyncBatch::kShare}, {"whole", AsyncBatch::kWhole}})},
      {"epochs", u32(&o->epochs, 1, 1000)},
      {"global_batch_size", u32(&o->global_batch_size, 1, 1u << 20)},
      {"optimizer", [o, source](const YAML::Node& n,
                                const std::string&) { return ReadOptimizer(n, source, &o->optimizer); }},
      {"lr_schedule", [o, source](const YAML::Node& n,
                                  const std::string&) { return ReadLrSchedule(n, source, &o->lr_schedule); }},
      {"clip_grad_norm",
       [o](const YAML::Node& n, const std::string& w) {
         HETPS_RETURN_IF_ERROR(ReadDouble(n, w, &o->clip_grad_norm));
         if (!(o->clip_grad_norm >= 0 && o->clip_grad_norm <= 1e9)) {
           return Status::InvalidArgument(w + ": " + n.Scalar() +
                                          " is out of range; allowed: > 0, or 0 for no clipping");
         }
         return Status::Ok();
       }},
      {"diloco",
       [o, source](const YAML::Node& n, const std::string&) { return ReadDiloco(n, source, &o->diloco); }},
      {"outer_optimizer",
       [o, source](const YAML::Node& n, const std::string&) {
         return ReadOptimizer(n, source, &o->outer_optimizer, "outer_optimizer", OuterOptimizerDefaults);
       }},
      {"wire_dtype",
       ChoiceField(&o->wire_dtype,
                   {{"fp32", wire::DType::F32}, {"bf16", wire::DType::BF16}, {"fp16", wire::DType::F16}})},
      {"partition_bytes", u64(&o->partition_bytes, 4, uint64_t{1} << 30)},
      {"max_message_bytes", u64(&o->max_message_bytes, uint64_t{1} << 20, uint64_t{1} << 30)},
      {"max_model_bytes", u64(&o->max_model_bytes, 4, uint64_t{1} << 40)},
      {"servers", u32(&o->servers, 1, 256)},
      {"trainers", u32(&o->trainers, 1, 1024)},
      {"max_trainers", u32(&o->max_trainers, 0, 1024)},
      {"listen", [o](const YAML::Node& n, const std::string& w) { return ReadEndpoint(n, w, &o->listen); }},
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
      {"nonfinite_limit", u32(&o->nonfinite_limit, 0, 1u << 30)},
      {"stall_floor_s", u32(&o->stall_floor_s, 0, 86400)},
      {"stall_pace_factor", u32(&o->stall_pace_factor, 2, 10000)},
      // The same as checkpoint.keep, at the top level.
      {"checkpoint_keep", u32(&o->checkpoint.keep, 1, 1000000)},
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

}  // namespace hetps
