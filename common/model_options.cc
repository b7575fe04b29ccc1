#include "common/model_options.h"

#include <vector>

#include "common/yaml_fields.h"

namespace hetps {

Status ReadModelOptions(const YAML::Node& node, const std::string& source, ModelOptions* out) {
  ModelOptions o = *out;
  auto u32 = [](uint32_t* field, uint32_t min, uint32_t max) {
    return [=](const YAML::Node& n, const std::string& w) { return ReadInteger(n, w, min, max, field); };
  };
  const std::vector<Field> fields = {
      {"layers", u32(&o.layers, 1, 64)},
      {"heads", u32(&o.heads, 1, 64)},
      {"width", u32(&o.width, 8, 8192)},
      {"context", u32(&o.context, 0, 1u << 20)},
  };
  HETPS_RETURN_IF_ERROR(ReadMap(node, source, "model_options.", fields));
  HETPS_RETURN_IF_ERROR(ValidateModelOptions(o).WithContext(Where(source, node, "model_options")));
  *out = o;
  return Status::Ok();
}

Status ValidateModelOptions(const ModelOptions& o) {
  auto range = [](const char* field, uint32_t value, uint32_t min, uint32_t max) {
    if (value >= min && value <= max) return Status::Ok();
    return Status::InvalidArgument(std::string("model_options.") + field + ": " + std::to_string(value) +
                                   " is out of range " + std::to_string(min) + ".." + std::to_string(max));
  };
  HETPS_RETURN_IF_ERROR(range("layers", o.layers, 1, 64));
  HETPS_RETURN_IF_ERROR(range("heads", o.heads, 1, 64));
  HETPS_RETURN_IF_ERROR(range("width", o.width, 8, 8192));
  HETPS_RETURN_IF_ERROR(range("context", o.context, 0, 1u << 20));
  if (o.width % o.heads != 0) {
    return Status::InvalidArgument("model_options.heads: " + std::to_string(o.heads) +
                                   " heads do not divide width " + std::to_string(o.width));
  }
  return Status::Ok();
}

flatbuffers::Offset<wire::ModelOptions> ModelOptionsToWire(flatbuffers::FlatBufferBuilder& fbb,
                                                           const ModelOptions& o) {
  return wire::CreateModelOptions(fbb, o.layers, o.heads, o.width, o.context);
}

Result<ModelOptions> ModelOptionsFromWire(const wire::ModelOptions& options) {
  ModelOptions o;
  o.layers = options.layers();
  o.heads = options.heads();
  o.width = options.width();
  o.context = options.context();
  HETPS_RETURN_IF_ERROR(ValidateModelOptions(o).WithContext("the job's model_options"));
  return o;
}

}  // namespace hetps
