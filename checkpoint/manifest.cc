#include "checkpoint/manifest.h"

#include <ctime>
#include <limits>

#include <nlohmann/json.hpp>

#include "checkpoint/checksum.h"
#include "checkpoint/safetensors_dtype.h"
#include "common/job_config.h"

namespace hetps {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr const char* kFormat = "hetps-checkpoint";
constexpr const char* kChecksumKey = "manifest_crc32";

// The checksum of a manifest's fields other than its checksum: CRC-32 of their compact JSON, in
// the order written (which parsing into an ordered object keeps, whatever the whitespace).
uint32_t ContentChecksum(const OrderedJson& fields) {
  const std::string compact = fields.dump();
  return Crc32(compact.data(), compact.size());
}

// Format 2: the manifest's `manifest_crc32` equals the checksum of the rest of it.
Status CheckContent(const std::string& text, const std::string& source) {
  OrderedJson ordered;
  std::string actual;
  std::string recorded;
  try {
    ordered = OrderedJson::parse(text);
    if (!ordered.contains(kChecksumKey) || !ordered[kChecksumKey].is_string()) {
      return Status::InvalidArgument(source + ": " + kChecksumKey + ": missing");
    }
    recorded = ordered[kChecksumKey].get<std::string>();
    ordered.erase(kChecksumKey);
    actual = FormatCrc32(ContentChecksum(ordered));
  } catch (const OrderedJson::exception& e) {
    return Status::InvalidArgument(source + ": not valid JSON: " + e.what());
  }
  if (actual != recorded) {
    return Status::InvalidArgument(source + ": its content's checksum " + actual + " differs from the " +
                                   recorded + " it records (corrupt)");
  }
  return Status::Ok();
}

// Reads typed fields of the manifest's JSON, naming the file and the field in every error.
class FieldReader {
 public:
  explicit FieldReader(std::string source) : source_(std::move(source)) {}

  Status Fail(const std::string& field, const std::string& what) const {
    return Status::InvalidArgument(source_ + ": " + field + ": " + what);
  }

  Result<const Json*> Get(const Json& object, const std::string& field, const char* key) const {
    if (!object.is_object() || !object.contains(key)) return Fail(Join(field, key), "missing");
    return &object[key];
  }

  template <typename T>
  Status Unsigned(const Json& object, const std::string& field, const char* key, T* out) const {
    HETPS_ASSIGN_OR_RETURN(const Json* value, Get(object, field, key));
    if (!value->is_number_unsigned() && !(value->is_number_integer() && value->get<int64_t>() >= 0)) {
      return Fail(Join(field, key), value->dump() + " is not a non-negative integer");
    }
    const uint64_t v = value->get<uint64_t>();
    if (v > std::numeric_limits<T>::max()) return Fail(Join(field, key), value->dump() + " is too large");
    *out = static_cast<T>(v);
    return Status::Ok();
  }

  Status String(const Json& object, const std::string& field, const char* key, std::string* out) const {
    HETPS_ASSIGN_OR_RETURN(const Json* value, Get(object, field, key));
    if (!value->is_string()) return Fail(Join(field, key), "is not a string");
    *out = value->get<std::string>();
    return Status::Ok();
  }

  Result<const Json*> Array(const Json& object, const std::string& field, const char* key) const {
    HETPS_ASSIGN_OR_RETURN(const Json* value, Get(object, field, key));
    if (!value->is_array()) return Fail(Join(field, key), "is not a list");
    return value;
  }

  static std::string Join(const std::string& field, const std::string& key) {
    return field.empty() ? key : field + "." + key;
  }
  static std::string Item(const std::string& field, size_t i) {
    return field + "[" + std::to_string(i) + "]";
  }

 private:
  std::string source_;
};

Result<wire::DType> DTypeFromName(const std::string& name) {
  for (wire::DType d : {wire::DType::F32, wire::DType::F16, wire::DType::BF16, wire::DType::F64,
                        wire::DType::I64, wire::DType::I32, wire::DType::U8}) {
    if (SafetensorsDType(d) == name) return d;
  }
  return Status::InvalidArgument("'" + name + "' is not a tensor dtype");
}

Status ParseModel(const FieldReader& r, const Json& root, Manifest* m) {
  HETPS_ASSIGN_OR_RETURN(const Json* tensors, r.Array(root, "", "tensors"));
  for (size_t i = 0; i < tensors->size(); ++i) {
    const std::string field = FieldReader::Item("tensors", i);
    const Json& entry = (*tensors)[i];
    TensorInfo t;
    std::string dtype;
    HETPS_RETURN_IF_ERROR(r.String(entry, field, "name", &t.name));
    HETPS_RETURN_IF_ERROR(r.String(entry, field, "dtype", &dtype));
    auto parsed = DTypeFromName(dtype);
    if (!parsed.ok()) return r.Fail(field + ".dtype", parsed.status().message());
    t.dtype = *parsed;
    HETPS_ASSIGN_OR_RETURN(const Json* shape, r.Array(entry, field, "shape"));
    for (const Json& d : *shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) {
        return r.Fail(field + ".shape", d.dump() + " is not a non-negative integer");
      }
      t.shape.push_back(d.get<int64_t>());
    }
    m->tensors.push_back(std::move(t));
  }
  Status valid = ValidateSignature(m->tensors);
  if (!valid.ok()) return r.Fail("tensors", valid.message());

  HETPS_ASSIGN_OR_RETURN(const Json* partitions, r.Array(root, "", "partitions"));
  std::vector<uint64_t> next_offset(m->tensors.size(), 0);
  for (size_t i = 0; i < partitions->size(); ++i) {
    const std::string field = FieldReader::Item("partitions", i);
    const Json& entry = (*partitions)[i];
    PartitionInfo p;
    p.id = static_cast<uint32_t>(i);
    HETPS_RETURN_IF_ERROR(r.Unsigned(entry, field, "tensor", &p.tensor));
    HETPS_RETURN_IF_ERROR(r.Unsigned(entry, field, "offset", &p.offset));
    HETPS_RETURN_IF_ERROR(r.Unsigned(entry, field, "length", &p.length));
    HETPS_RETURN_IF_ERROR(r.Unsigned(entry, field, "server", &p.server));
    if (p.tensor >= m->tensors.size()) return r.Fail(field + ".tensor", "no such tensor");
    if (p.server >= m->servers) return r.Fail(field + ".server", "no such server");
    if (p.offset != next_offset[p.tensor] || p.length == 0) {
      return r.Fail(field,
                    "does not continue " + m->tensors[p.tensor].name + " where its previous partition ended");
    }
    next_offset[p.tensor] += p.length;
    m->partitions.push_back(p);
  }
  for (size_t t = 0; t < m->tensors.size(); ++t) {
    if (next_offset[t] != static_cast<uint64_t>(m->tensors[t].numel()) && m->tensors[t].numel() > 0) {
      return r.Fail("partitions", "do not cover tensor " + m->tensors[t].name);
    }
  }
  return Status::Ok();
}

Status ParseData(const FieldReader& r, const Json& root, DataPosition* data) {
  HETPS_ASSIGN_OR_RETURN(const Json* d, r.Get(root, "", "data"));
  HETPS_RETURN_IF_ERROR(r.Unsigned(*d, "data", "epoch", &data->epoch));
  HETPS_RETURN_IF_ERROR(r.Unsigned(*d, "data", "samples_trained", &data->samples_trained));
  HETPS_ASSIGN_OR_RETURN(const Json* completed, r.Array(*d, "data", "completed"));
  for (size_t i = 0; i < completed->size(); ++i) {
    const std::string field = FieldReader::Item("data.completed", i);
    DataPosition::EpochChunks e;
    HETPS_RETURN_IF_ERROR(r.Unsigned((*completed)[i], field, "epoch", &e.epoch));
    HETPS_ASSIGN_OR_RETURN(const Json* chunks, r.Array((*completed)[i], field, "chunks"));
    for (const Json& c : *chunks) {
      if (!c.is_number_unsigned() || c.get<uint64_t>() > std::numeric_limits<uint32_t>::max()) {
        return r.Fail(field + ".chunks", c.dump() + " is not a chunk index");
      }
      e.chunks.push_back(c.get<uint32_t>());
    }
    data->completed.push_back(std::move(e));
  }
  HETPS_ASSIGN_OR_RETURN(const Json* partial, r.Array(*d, "data", "partial"));
  for (size_t i = 0; i < partial->size(); ++i) {
    const std::string field = FieldReader::Item("data.partial", i);
    DataPosition::Partial p;
    HETPS_RETURN_IF_ERROR(r.Unsigned((*partial)[i], field, "epoch", &p.epoch));
    HETPS_RETURN_IF_ERROR(r.Unsigned((*partial)[i], field, "chunk", &p.chunk));
    HETPS_RETURN_IF_ERROR(r.Unsigned((*partial)[i], field, "next", &p.next));
    data->partial.push_back(p);
  }
  return Status::Ok();
}

Status ParseFiles(const FieldReader& r, const Json& root, Manifest* m) {
  HETPS_ASSIGN_OR_RETURN(const Json* files, r.Array(root, "", "files"));
  if (files->size() != m->servers) {
    return r.Fail("files", "lists " + std::to_string(files->size()) + " files for " +
                               std::to_string(m->servers) + " servers");
  }
  for (size_t i = 0; i < files->size(); ++i) {
    const std::string field = FieldReader::Item("files", i);
    const Json& entry = (*files)[i];
    ServerFile f;
    std::string crc;
    HETPS_RETURN_IF_ERROR(r.Unsigned(entry, field, "rank", &f.rank));
    HETPS_RETURN_IF_ERROR(r.String(entry, field, "file", &f.file));
    HETPS_RETURN_IF_ERROR(r.Unsigned(entry, field, "bytes", &f.bytes));
    HETPS_RETURN_IF_ERROR(r.String(entry, field, "crc32", &crc));
    HETPS_RETURN_IF_ERROR(r.Unsigned(entry, field, "version", &f.version));
    HETPS_RETURN_IF_ERROR(r.Unsigned(entry, field, "round", &f.round));
    if (f.rank != i)
      return r.Fail(field + ".rank", "expected " + std::to_string(i) + " (files in rank order)");
    if (f.file.empty() || f.file.find('/') != std::string::npos || f.file[0] == '.') {
      return r.Fail(field + ".file", "'" + f.file + "' is not a file name within the checkpoint's directory");
    }
    unsigned value = 0;
    int used = 0;
    if (crc.size() != 14 || std::sscanf(crc.c_str(), "crc32:%8x%n", &value, &used) != 1 || used != 14) {
      return r.Fail(field + ".crc32", "'" + crc + "' is not crc32:<8 hex digits>");
    }
    f.crc32 = value;
    m->files.push_back(std::move(f));
  }
  return Status::Ok();
}

}  // namespace

std::string Manifest::ToJson() const {
  OrderedJson j;
  j["format"] = kFormat;
  j["format_version"] = kFormatVersion;
  j["id"] = id;
  j["created_utc"] = created_utc;
  j["mode"] = mode;
  j["round"] = round;
  j["servers"] = servers;
  j["partition_bytes"] = partition_bytes;
  OrderedJson tensors_json = OrderedJson::array();
  for (const TensorInfo& t : tensors) {
    tensors_json.push_back({{"name", t.name}, {"shape", t.shape}, {"dtype", SafetensorsDType(t.dtype)}});
  }
  j["tensors"] = tensors_json;
  OrderedJson partitions_json = OrderedJson::array();
  for (const PartitionInfo& p : partitions) {
    partitions_json.push_back(
        {{"tensor", p.tensor}, {"offset", p.offset}, {"length", p.length}, {"server", p.server}});
  }
  j["partitions"] = partitions_json;
  OrderedJson completed = OrderedJson::array();
  for (const DataPosition::EpochChunks& e : data.completed) {
    completed.push_back({{"epoch", e.epoch}, {"chunks", e.chunks}});
  }
  OrderedJson partial = OrderedJson::array();
  for (const DataPosition::Partial& p : data.partial) {
    partial.push_back({{"epoch", p.epoch}, {"chunk", p.chunk}, {"next", p.next}});
  }
  j["data"] = {{"epoch", data.epoch},
               {"samples_trained", data.samples_trained},
               {"completed", completed},
               {"partial", partial}};
  OrderedJson files_json = OrderedJson::array();
  for (const ServerFile& f : files) {
    files_json.push_back({{"rank", f.rank},
                          {"file", f.file},
                          {"bytes", f.bytes},
                          {"crc32", FormatCrc32(f.crc32)},
                          {"version", f.version},
                          {"round", f.round}});
  }
  j["files"] = files_json;
  j["job"] = job_yaml;
  j[kChecksumKey] = FormatCrc32(ContentChecksum(j));
  return j.dump(1) + "\n";
}

Result<Manifest> Manifest::Parse(const std::string& text, const std::string& source) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(source + ": not valid JSON (truncated or corrupt?): " + e.what());
  }
  FieldReader r(source);
  if (!root.is_object()) return r.Fail("the manifest", "is not a JSON object");
  std::string format;
  HETPS_RETURN_IF_ERROR(r.String(root, "", "format", &format));
  if (format != kFormat) return r.Fail("format", "'" + format + "' is not " + kFormat);
  int version = 0;
  HETPS_RETURN_IF_ERROR(r.Unsigned(root, "", "format_version", &version));
  if (version != kFormatVersion && version != 1) {
    return r.Fail("format_version", std::to_string(version) + " is not supported (this build reads " +
                                        std::to_string(kFormatVersion) + ")");
  }
  Manifest m;
  HETPS_RETURN_IF_ERROR(r.Unsigned(root, "", "id", &m.id));
  HETPS_RETURN_IF_ERROR(r.String(root, "", "created_utc", &m.created_utc));
  HETPS_RETURN_IF_ERROR(r.String(root, "", "mode", &m.mode));
  if (!ParseMode(m.mode).ok()) return r.Fail("mode", "'" + m.mode + "' is unknown");
  HETPS_RETURN_IF_ERROR(r.Unsigned(root, "", "round", &m.round));
  HETPS_RETURN_IF_ERROR(r.Unsigned(root, "", "servers", &m.servers));
  if (m.servers == 0) return r.Fail("servers", "is 0");
  HETPS_RETURN_IF_ERROR(r.Unsigned(root, "", "partition_bytes", &m.partition_bytes));
  HETPS_RETURN_IF_ERROR(r.String(root, "", "job", &m.job_yaml));
  HETPS_RETURN_IF_ERROR(ParseModel(r, root, &m));
  HETPS_RETURN_IF_ERROR(ParseData(r, root, &m.data));
  HETPS_RETURN_IF_ERROR(ParseFiles(r, root, &m));
  if (version >= 2) HETPS_RETURN_IF_ERROR(CheckContent(text, source));
  return m;
}

Status CheckSameJob(const Manifest& manifest, const std::vector<TensorInfo>& tensors,
                    const std::vector<PartitionInfo>& partitions) {
  Status same = CompareSignatures(manifest.tensors, tensors);
  if (!same.ok()) return Status::FailedPrecondition("the checkpoint is of another model: " + same.message());
  if (manifest.partitions.size() != partitions.size()) {
    return Status::FailedPrecondition("the checkpoint's shard map has " +
                                      std::to_string(manifest.partitions.size()) +
                                      " partitions, this job's " + std::to_string(partitions.size()) +
                                      " (another number of servers or partition_bytes)");
  }
  for (size_t i = 0; i < partitions.size(); ++i) {
    const PartitionInfo& a = manifest.partitions[i];
    const PartitionInfo& b = partitions[i];
    if (a.tensor != b.tensor || a.offset != b.offset || a.length != b.length || a.server != b.server) {
      return Status::FailedPrecondition(
          "the checkpoint's shard map differs from this job's at partition " + std::to_string(i) + " (" +
          manifest.tensors[a.tensor].name + " elements " + std::to_string(a.offset) + "+" +
          std::to_string(a.length) + " on server " + std::to_string(a.server) + ", here " +
          std::to_string(b.offset) + "+" + std::to_string(b.length) + " on server " +
          std::to_string(b.server) + ")");
    }
  }
  return Status::Ok();
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace hetps
