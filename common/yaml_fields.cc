#include "common/yaml_fields.h"

#include <cmath>
#include <stdexcept>

#include "common/endpoint.h"
#include "common/nearest_name.h"

namespace hetps {

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

// The types the job file's fields have.
template Status ReadInteger<int32_t>(const YAML::Node&, const std::string&, int32_t, int32_t, int32_t*);
template Status ReadInteger<int64_t>(const YAML::Node&, const std::string&, int64_t, int64_t, int64_t*);
template Status ReadInteger<uint32_t>(const YAML::Node&, const std::string&, uint32_t, uint32_t, uint32_t*);
template Status ReadInteger<uint64_t>(const YAML::Node&, const std::string&, uint64_t, uint64_t, uint64_t*);

Status ReadDouble(const YAML::Node& node, const std::string& where, double* out) {
  const std::string text = Scalar(node);
  try {
    size_t used = 0;
    *out = std::stod(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    return Status::InvalidArgument(where + ": '" + text + "' is not a number");
  }
  // No field takes an infinity or a NaN, and a NaN would pass every range check after this one.
  if (!std::isfinite(*out)) return Status::InvalidArgument(where + ": '" + text + "' is not a finite number");
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

namespace {

// The length of the UTF-8 sequence at text[i], or 0 when it is not one (or a control character).
size_t Utf8Length(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x20 || c == 0x7f) return 0;
  size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

Status ReadString(const YAML::Node& node, const std::string& where, std::string* out) {
  if (!node.IsScalar()) return Status::InvalidArgument(where + ": expected a string");
  const std::string& text = node.Scalar();
  // A job's strings are endpoints, paths and names: text, which a resolved job writes back as read.
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8Length(text, i);
    if (n == 0) {
      return Status::InvalidArgument(where + ": byte " + std::to_string(i) +
                                     " is a control character or not UTF-8 text");
    }
    i += n;
  }
  *out = text;
  return Status::Ok();
}

Status ReadEndpoint(const YAML::Node& node, const std::string& where, std::string* out) {
  std::string text;
  HETPS_RETURN_IF_ERROR(ReadString(node, where, &text));
  auto endpoint = NormalizeEndpoint(text);
  if (!endpoint.ok()) return endpoint.status().WithContext(where);
  *out = *endpoint;
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

namespace {

Status UnknownKey(const std::string& where, const std::string& key, const std::vector<Field>& fields) {
  std::string list;
  std::vector<std::string> keys;
  for (const Field& f : fields) {
    list += (list.empty() ? "" : ", ") + std::string(f.key);
    keys.emplace_back(f.key);
  }
  const std::string nearest = NearestName(key, keys);
  const std::string guess = nearest.empty() ? "" : "did you mean " + nearest + "? ";
  return Status::InvalidArgument(where + ": unknown key; " + guess + "known keys: " + list);
}

}  // namespace

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
    if (field == nullptr) return UnknownKey(where, key, fields);
    HETPS_RETURN_IF_ERROR(field->read(entry.second, where));
  }
  return Status::Ok();
}

}  // namespace hetps
