#include "checkpoint/safetensors_writer.h"

#include <set>

#include <nlohmann/json.hpp>

#include "checkpoint/checksum.h"
#include "checkpoint/safetensors_dtype.h"

namespace hetps {
namespace {

Status Check(const TensorView& t, std::set<std::string>* seen) {
  if (t.name.empty()) return Status::InvalidArgument("a tensor without a name");
  if (t.name == "__metadata__") return Status::InvalidArgument("'__metadata__' is not a tensor name");
  if (!seen->insert(t.name).second) return Status::InvalidArgument("tensor " + t.name + " is listed twice");
  const size_t size = SafetensorsDTypeSize(t.dtype);
  if (size == 0) return Status::InvalidArgument("tensor " + t.name + " has unknown dtype '" + t.dtype + "'");
  uint64_t elements = 1;
  for (int64_t d : t.shape) {
    if (d < 0) return Status::InvalidArgument("tensor " + t.name + " has a negative dimension");
    elements *= static_cast<uint64_t>(d);
  }
  if (elements * size != t.bytes) {
    return Status::InvalidArgument("tensor " + t.name + " holds " + std::to_string(t.bytes) + " bytes, but " +
                                   std::to_string(elements) + " elements of " + t.dtype + " take " +
                                   std::to_string(elements * size));
  }
  if (t.bytes > 0 && t.data == nullptr) return Status::InvalidArgument("tensor " + t.name + " has no data");
  return Status::Ok();
}

}  // namespace

Result<WrittenFile> WriteSafetensors(FileSystem& fs, const std::string& path,
                                     const std::map<std::string, std::string>& metadata,
                                     const std::vector<TensorView>& tensors) {
  std::set<std::string> seen;
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorView& t : tensors) {
    Status valid = Check(t, &seen);
    if (!valid.ok()) return valid.WithContext(path);
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  std::string text = header.dump();
  // Padding keeps the data 8-byte aligned in a file mapped into memory.
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));

  auto file = fs.NewWritableFile(path);
  if (!file.ok()) return file.status();
  WrittenFile written;
  auto append = [&](const void* data, size_t size) {
    written.crc32 = ExtendCrc32(written.crc32, data, size);
    written.bytes += size;
    return (*file)->Append(data, size);
  };
  HETPS_RETURN_IF_ERROR(append(length, sizeof(length)));
  HETPS_RETURN_IF_ERROR(append(text.data(), text.size()));
  for (const TensorView& t : tensors) HETPS_RETURN_IF_ERROR(append(t.data, t.bytes));
  HETPS_RETURN_IF_ERROR((*file)->Sync());
  HETPS_RETURN_IF_ERROR((*file)->Close());
  return written;
}

}  // namespace hetps
