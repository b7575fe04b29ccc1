// The field readers of a YAML job file: each reads one YAML value into a typed field, or returns
// InvalidArgument naming where the value stands ("job.yaml:7: epochs"), the value and what is
// allowed. Internal to the job file reader (common/job_config_read.cc,
// common/job_config_sections.cc). Stateless: any thread may call them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/status.h"

namespace hetps {

// Where a value sits in the job file, for error messages: "job.yaml:7: epochs".
std::string Where(const std::string& source, const YAML::Node& node, const std::string& key);

// The node's text, or "<not a scalar>" for a list or a map.
std::string Scalar(const YAML::Node& node);

// A whole number in min..max, also in exponent form ("1e6"). T is int32_t, int64_t, uint32_t or
// uint64_t.
template <typename T>
Status ReadInteger(const YAML::Node& node, const std::string& where, T min, T max, T* out);

Status ReadDouble(const YAML::Node& node, const std::string& where, double* out);

// true, yes, on or false, no, off.
Status ReadBool(const YAML::Node& node, const std::string& where, bool* out);

// Any scalar; a list or a map is refused.
Status ReadString(const YAML::Node& node, const std::string& where, std::string* out);

// A ZeroMQ endpoint, HOST:PORT or with a scheme, stored as common/endpoint.h's NormalizeEndpoint
// gives it (tcp://HOST:PORT); the error says what is wrong with it.
Status ReadEndpoint(const YAML::Node& node, const std::string& where, std::string* out);

// One of `choices`; the error lists them.
Status ReadChoice(const YAML::Node& node, const std::string& where, const std::vector<std::string>& choices,
                  std::string* out);

// Reads the value of one key into the field it was made for; `where` names the key in errors.
using FieldReader = std::function<Status(const YAML::Node&, const std::string& where)>;

struct Field {
  const char* key;
  FieldReader read;
};

// The reader of a key whose value is one of `choices`' names: stores the value paired with it in
// `*field`; the error lists the names.
template <typename T>
FieldReader ChoiceField(T* field, std::vector<std::pair<std::string, T>> choices) {
  return [field, choices = std::move(choices)](const YAML::Node& node, const std::string& where) {
    std::vector<std::string> names;
    for (const auto& choice : choices) names.push_back(choice.first);
    std::string name;
    HETPS_RETURN_IF_ERROR(ReadChoice(node, where, names, &name));
    for (const auto& choice : choices) {
      if (choice.first == name) *field = choice.second;
    }
    return Status::Ok();
  };
}

// Reads each key of `map` with the field of that key. An unknown key fails with the list of the
// known ones, and so does a node that is not a map. `prefix` ("optimizer.", or "" at the top
// level) goes before each key in errors.
Status ReadMap(const YAML::Node& map, const std::string& source, const std::string& prefix,
               const std::vector<Field>& fields);

}  // namespace hetps
