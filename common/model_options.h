// ModelOptions: the shape of a built-in model that has one, from the job file's `model_options`
// section (docs/job_config.md, "Model"): for model gpt, its transformer blocks, attention heads,
// width and positions. A plain value type, filled by the job-file parser and sent to trainers in
// their job (wire::ModelOptions). Free functions; safe to call from any thread.
#pragma once

#include <cstdint>

#include <yaml-cpp/yaml.h>

#include "common/status.h"
#include "messages_generated.h"

namespace hetps {

struct ModelOptions {
  uint32_t layers = 4;   // transformer blocks, 1..64
  uint32_t heads = 4;    // attention heads per block, 1..64; divides width
  uint32_t width = 128;  // embedding size, 8..8192
  uint32_t context = 0;  // positions the model learns, up to 1048576; 0: data.context. At least
                         // data.context.
};

// Reads the `model_options` map; `source` names the file in errors. Checks each field's range and
// that heads divide width; InvalidArgument naming the file, line and key otherwise.
Status ReadModelOptions(const YAML::Node& node, const std::string& source, ModelOptions* out);

// heads divide width, every field in its range; InvalidArgument naming the field.
Status ValidateModelOptions(const ModelOptions& options);

flatbuffers::Offset<wire::ModelOptions> ModelOptionsToWire(flatbuffers::FlatBufferBuilder& fbb,
                                                           const ModelOptions& options);
// Checks what it reads (ValidateModelOptions).
Result<ModelOptions> ModelOptionsFromWire(const wire::ModelOptions& options);

}  // namespace hetps
