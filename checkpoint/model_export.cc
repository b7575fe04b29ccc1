#include "checkpoint/model_export.h"

#include <cstring>
#include <memory>

#include "checkpoint/partition_names.h"

namespace hetps {

Result<WrittenFile> WriteModelFile(FileSystem& fs, const std::string& path,
                                   const std::vector<TensorInfo>& tensors,
                                   const std::vector<PartitionInfo>& partitions,
                                   const PartitionWeights& weights,
                                   std::map<std::string, std::string> metadata,
                                   const std::vector<ModelBuffer>& buffers) {
  std::vector<std::vector<float>> whole(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) whole[t].resize(static_cast<size_t>(tensors[t].numel()));
  for (const PartitionInfo& p : partitions) {
    if (p.tensor >= tensors.size() || p.offset + p.length > whole[p.tensor].size()) {
      return Status::InvalidArgument("partition " + std::to_string(p.id) + " lies outside its tensor");
    }
    const std::string name = PartitionTensorName(tensors[p.tensor].name, p.offset, p.offset + p.length);
    auto data = weights(name, p.length);
    if (!data.ok()) return data.status();
    std::memcpy(whole[p.tensor].data() + p.offset, *data, p.length * sizeof(float));
  }
  std::vector<TensorView> views;
  for (size_t t = 0; t < tensors.size(); ++t) {
    views.push_back(
        {tensors[t].name, "F32", tensors[t].shape, whole[t].data(), whole[t].size() * sizeof(float)});
  }
  for (const ModelBuffer& b : buffers) {
    views.push_back({b.info.name, b.dtype, b.info.shape, b.bytes.data(), b.bytes.size()});
  }
  // torch's convention, which safetensors.torch.load_file reads.
  metadata.emplace("format", "pt");
  const std::string temporary = path + ".tmp";
  auto written = WriteSafetensors(fs, temporary, metadata, views);
  if (!written.ok()) return written.status();
  HETPS_RETURN_IF_ERROR(fs.Rename(temporary, path));
  HETPS_RETURN_IF_ERROR(fs.SyncDir(DirName(path)));
  return written;
}

Result<WrittenFile> ExportCheckpoint(FileSystem& fs, const LoadedCheckpoint& checkpoint,
                                     const std::string& path) {
  const Manifest& m = checkpoint.manifest;
  PartitionWeights weights = [&](const std::string& name, uint64_t length) -> Result<const void*> {
    for (const SafetensorsFile& file : checkpoint.files) {
      const SafetensorsFile::Tensor* t = file.Find(name);
      if (t == nullptr) continue;
      if (t->dtype != "F32" || t->elements != length) {
        return Status::InvalidArgument(file.source() + ": tensor " + name + " is not " +
                                       std::to_string(length) + " float32 elements");
      }
      return static_cast<const void*>(file.data(*t));
    }
    return Status::InvalidArgument(checkpoint.path + ": no server file holds " + name);
  };
  return WriteModelFile(fs, path, m.tensors, m.partitions, weights,
                        {{"hetps_checkpoint", std::to_string(m.id)}, {"hetps_mode", m.mode}});
}

}  // namespace hetps
