// Readers of the job file's sections (optimizer, outer_optimizer, lr_schedule, diloco, auto, checkpoint,
// security, data, http) and of its model key, each over the YAML node that holds it; `source`
// names the file in errors. Each
// keeps the values in *out for the keys the node leaves out; on an error (InvalidArgument naming
// the file, line and key) the caller discards *out. Internal to the job file reader
// (common/job_config_read.cc). Stateless: any thread may call them.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "common/data_options.h"
#include "common/job_config.h"
#include "common/optimizer_options.h"
#include "common/status.h"

namespace hetps {

// The optimizer's name sets the defaults of every other field (`defaults` of that kind), wherever
// it stands in the map. `section` names the key in errors: optimizer, outer_optimizer.
Status ReadOptimizer(const YAML::Node& node, const std::string& source, OptimizerOptions* out,
                     const std::string& section = "optimizer",
                     OptimizerOptions (*defaults)(OptimizerOptions::Kind) = DefaultOptimizerOptions);
// `lr_schedule`: warmup_steps, decay (none | cosine), min_lr, decay_steps; checked against the
// optimizer's lr once the whole file is read (ValidateJobOptions).
Status ReadLrSchedule(const YAML::Node& node, const std::string& source, LrScheduleOptions* out);
Status ReadDiloco(const YAML::Node& node, const std::string& source, DilocoOptions* out);
Status ReadAutoMode(const YAML::Node& node, const std::string& source, AutoModeOptions* out);
Status ReadCheckpoint(const YAML::Node& node, const std::string& source, CheckpointOptions* out);
// keys_dir is required with curve: true.
Status ReadSecurity(const YAML::Node& node, const std::string& source, SecurityOptions* out);
// Also checks the section as a whole (ValidateDataOptions).
Status ReadData(const YAML::Node& node, const std::string& source, DataOptions* out);
Status ReadHttp(const YAML::Node& node, const std::string& source, HttpOptions* out);
// `model: mlp | cnn`, or `model: {torchscript: FILE, loss: cross_entropy | mse | nll}`; sets
// model, model_file and loss. `where` names the key.
Status ReadModel(const YAML::Node& node, const std::string& source, const std::string& where,
                 JobOptions* out);

}  // namespace hetps
