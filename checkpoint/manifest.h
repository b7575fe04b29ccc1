// Manifest: what one checkpoint holds, written last by the scheduler as `manifest.json` in the
// checkpoint's directory; writing it (atomically) is the checkpoint's commit point. It records the
// job (its YAML and shard map), where the data stood (epoch, chunks trained), and each server's
// file with its size and CRC-32, so that a reader can tell a whole checkpoint from a broken one
// and a checkpoint of this job from one of another.
//
// A plain value type. Parse checks every field and names the file and the field it refuses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/shard_map.h"
#include "common/status.h"

namespace hetps {

// Where the training data stood at a checkpoint's cut.
struct DataPosition {
  struct EpochChunks {
    uint32_t epoch = 0;
    std::vector<uint32_t> chunks;  // indices within the epoch of the chunks trained, ascending
  };
  // A chunk partly trained: positions [its first, next) of the epoch's permutation were trained.
  struct Partial {
    uint32_t epoch = 0;
    uint32_t chunk = 0;  // index within the epoch
    uint64_t next = 0;
  };
  uint32_t epoch = 0;                  // the epoch the trainers resume in
  std::vector<EpochChunks> completed;  // epochs with trained chunks, ascending
  std::vector<Partial> partial;
  uint64_t samples_trained = 0;  // by all trainers up to the cut (samples trained again count twice)
};

struct ServerFile {
  uint32_t rank = 0;
  std::string file;      // name within the checkpoint's directory
  uint64_t bytes = 0;    // size of the whole file
  uint32_t crc32 = 0;    // of the whole file
  uint64_t version = 0;  // updates the server had applied (largest over its partitions)
  uint64_t round = 0;    // sync rounds it had completed
};

struct Manifest {
  // 2: the manifest carries its own checksum (`manifest_crc32`, over the rest of it, the job's
  // text included); 1, without one, is still read.
  static constexpr int kFormatVersion = 2;

  uint64_t id = 0;
  std::string created_utc;  // "2026-11-24T10:11:12Z"
  std::string job_yaml;     // the job as the scheduler ran it (every key)
  std::string mode;         // "sync", "async", "ssp", "auto"
  // sync: every server was cut after exactly this many rounds, and trainers resume at this clock;
  // async and ssp: 0, each server was cut at its own version (see ServerFile::version).
  uint64_t round = 0;
  uint64_t partition_bytes = 0;
  uint32_t servers = 0;
  std::vector<TensorInfo> tensors;        // the model, in order
  std::vector<PartitionInfo> partitions;  // the shard map
  DataPosition data;
  std::vector<ServerFile> files;  // one per server rank, in rank order

  std::string ToJson() const;
  // InvalidArgument "<source>: <field>: <what is wrong>" for anything missing, mistyped or
  // inconsistent (partitions that do not tile the tensors, a file per rank, ...), and, the
  // fields being well-formed, for a manifest whose content differs from its checksum (a flipped
  // bit in a number or in the job's text).
  static Result<Manifest> Parse(const std::string& text, const std::string& source);
};

// OK when `manifest` describes the same model and shard map as `tensors`/`partitions`; otherwise
// FailedPrecondition saying that the checkpoint is from another job and what differs.
Status CheckSameJob(const Manifest& manifest, const std::vector<TensorInfo>& tensors,
                    const std::vector<PartitionInfo>& partitions);

// The current time as "2026-11-24T10:11:12Z".
std::string UtcNow();

}  // namespace hetps
