#include "checkpoint/safetensors_reader.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "checkpoint/safetensors_dtype.h"

namespace hetps {
namespace {

using Json = nlohmann::json;

// Parses the header JSON, noting the first key that appears twice in one object (the JSON
// library would silently keep the last).
struct HeaderParser {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;

  Json Parse(const std::string& text) {
    auto callback = [this](int, Json::parse_event_t event, Json& parsed) {
      switch (event) {
        case Json::parse_event_t::object_start:
          open_objects.emplace_back();
          break;
        case Json::parse_event_t::object_end:
          if (!open_objects.empty()) open_objects.pop_back();
          break;
        case Json::parse_event_t::key:
          if (!open_objects.empty() && !open_objects.back().insert(parsed.get<std::string>()).second &&
              duplicate.empty()) {
            duplicate = parsed.get<std::string>();
          }
          break;
        default:
          break;
      }
      return true;
    };
    return Json::parse(text, callback);
  }
};

// A JSON integer in [0, max], or nullopt.
std::optional<uint64_t> Unsigned(const Json& value, uint64_t max) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v <= max) return v;
  } else if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    const auto v = static_cast<uint64_t>(value.get<int64_t>());
    if (v <= max) return v;
  }
  return std::nullopt;
}

std::string Range(uint64_t begin, uint64_t end) {
  return "bytes " + std::to_string(begin) + ".." + std::to_string(end);
}

}  // namespace

Result<SafetensorsFile> SafetensorsFile::Parse(std::string bytes, const std::string& source) {
  auto fail = [&](const std::string& what) { return Status::InvalidArgument(source + ": " + what); };
  if (bytes.size() < 8) {
    return fail("not a safetensors file: " + std::to_string(bytes.size()) +
                " bytes, fewer than the 8-byte header length (truncated?)");
  }
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | static_cast<unsigned char>(bytes[i]);
  if (header_bytes > kMaxHeaderBytes) {
    return fail("the header length field says " + std::to_string(header_bytes) +
                " bytes, more than the format's limit of 100 MB (corrupt, or not a safetensors file)");
  }
  if (header_bytes > bytes.size() - 8) {
    return fail("the header length field says " + std::to_string(header_bytes) + " bytes but only " +
                std::to_string(bytes.size() - 8) + " follow it (truncated?)");
  }
  if (header_bytes < 2 || bytes[8] != '{') return fail("the header is not a JSON object");

  Json header;
  HeaderParser parser;
  try {
    header = parser.Parse(bytes.substr(8, header_bytes));
  } catch (const Json::exception& e) {
    return fail(std::string("the header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) return fail("the header is not a JSON object");
  if (!parser.duplicate.empty()) return fail("the header names '" + parser.duplicate + "' twice");

  SafetensorsFile file;
  file.source_ = source;
  file.data_start_ = 8 + header_bytes;
  const uint64_t data_bytes = bytes.size() - file.data_start_;
  for (const auto& item : header.items()) {
    // Named, not a structured binding: C++17 lambdas (bad, below) cannot capture one.
    const std::string& name = item.key();
    const Json& entry = item.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) return fail("__metadata__ is not a JSON object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) return fail("__metadata__ entry '" + key + "' is not a string");
        file.metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& what) { return fail("tensor '" + name + "': " + what); };
    if (!entry.is_object()) return bad("its entry is not a JSON object");
    for (const auto& [key, value] : entry.items()) {
      if (key != "dtype" && key != "shape" && key != "data_offsets")
        return bad("unknown field '" + key + "'");
    }
    if (!entry.contains("dtype") || !entry["dtype"].is_string()) return bad("no dtype");
    Tensor t;
    t.name = name;
    t.dtype = entry["dtype"].get<std::string>();
    const size_t element_bytes = SafetensorsDTypeSize(t.dtype);
    if (element_bytes == 0) return bad("unknown dtype '" + t.dtype + "'");
    if (!entry.contains("shape") || !entry["shape"].is_array()) return bad("no shape");
    // Elements are bounded by what the data could hold, so the product cannot overflow.
    const uint64_t max_elements = data_bytes / element_bytes;
    t.elements = 1;
    for (const Json& dim : entry["shape"]) {
      auto d = Unsigned(dim, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
      if (!d) return bad("the shape holds " + dim.dump() + ", not a non-negative integer");
      t.shape.push_back(static_cast<int64_t>(*d));
      if (*d != 0 && t.elements > max_elements / *d) {
        t.elements = max_elements + 1;  // more than the file holds; reported below
      } else {
        t.elements *= *d;
      }
    }
    if (!entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2) {
      return bad("data_offsets is not a pair [begin, end]");
    }
    auto begin = Unsigned(entry["data_offsets"][0], data_bytes);
    auto end = Unsigned(entry["data_offsets"][1], data_bytes);
    if (!begin || !end || *begin > *end) {
      return bad("data_offsets " + entry["data_offsets"].dump() + " is not a range within the " +
                 std::to_string(data_bytes) + " bytes of data");
    }
    t.offset = *begin;
    t.bytes = *end - *begin;
    if (t.elements > max_elements || t.elements * element_bytes != t.bytes) {
      return bad("data_offsets " + entry["data_offsets"].dump() + " span " + std::to_string(t.bytes) +
                 " bytes, but its shape " + entry["shape"].dump() + " of " + t.dtype + " needs " +
                 (t.elements > max_elements ? "more than the file holds"
                                            : std::to_string(t.elements * element_bytes)));
    }
    file.tensors_.push_back(std::move(t));
  }
  std::sort(file.tensors_.begin(), file.tensors_.end(), [](const Tensor& a, const Tensor& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.bytes < b.bytes;
  });
  uint64_t covered = 0;
  const Tensor* previous = nullptr;
  for (const Tensor& t : file.tensors_) {
    if (t.offset < covered) {
      return fail("tensors '" + previous->name + "' and '" + t.name + "' overlap (" +
                  Range(previous->offset, covered) + " and " + Range(t.offset, t.offset + t.bytes) + ")");
    }
    if (t.offset > covered) return fail(Range(covered, t.offset) + " of the data belong to no tensor");
    covered = t.offset + t.bytes;
    previous = &t;
  }
  if (covered != data_bytes) {
    return fail(Range(covered, data_bytes) + " of the data belong to no tensor (trailing bytes)");
  }
  for (size_t i = 0; i < file.tensors_.size(); ++i) file.index_[file.tensors_[i].name] = i;
  file.bytes_ = std::move(bytes);
  return file;
}

Result<SafetensorsFile> SafetensorsFile::Read(FileSystem& fs, const std::string& path) {
  auto bytes = fs.ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  return Parse(std::move(*bytes), path);
}

const SafetensorsFile::Tensor* SafetensorsFile::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace hetps
