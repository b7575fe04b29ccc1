// CheckpointWriter: writes checkpoints (and the exported model) on a thread of its own, so that
// whoever takes them, the scheduler's loop, never waits for the disk. A checkpoint is written in
// this order: its directory, each server's file (synced), the directory's entries (synced), then
// the manifest atomically: the commit. Older checkpoints are pruned after each commit.
//
// Write, WriteModel, TakeFinished and Flush may be called from any thread (usually the
// scheduler's loop); the work runs in submission order on the writer's thread. The destructor
// finishes what is queued and joins the thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/file_system.h"
#include "checkpoint/manifest.h"
#include "checkpoint/model_export.h"
#include "checkpoint/safetensors_writer.h"

namespace hetps {

// One server's state at a checkpoint's cut, as tensors to write; `owner` keeps their bytes alive.
struct ServerState {
  uint32_t rank = 0;
  uint64_t version = 0;                         // updates applied (largest over its partitions)
  uint64_t round = 0;                           // sync rounds completed
  std::map<std::string, std::string> metadata;  // the writer adds "checkpoint" and "server"
  std::vector<TensorView> tensors;
  std::shared_ptr<const void> owner;
};

// Writes one checkpoint synchronously into `store` under manifest.id (see the order above), then
// prunes to `keep` committed checkpoints. The manifest's `files` are filled in from the server
// files written. Errors name the file and the step.
Result<Manifest> WriteCheckpoint(CheckpointStore& store, Manifest manifest,
                                 const std::vector<ServerState>& servers, uint32_t keep);

class CheckpointWriter {
 public:
  struct Options {
    uint32_t keep = 3;  // committed checkpoints kept; older ones are deleted
  };

  // What a finished write did.
  struct Outcome {
    enum class Kind { kCheckpoint, kModel } kind = Kind::kCheckpoint;
    uint64_t id = 0;  // the checkpoint's id (kCheckpoint)
    Status status;    // OK once committed (or the model written)
    double seconds = 0;
    uint64_t bytes = 0;  // written, over every file
    std::string path;    // the checkpoint's directory, or the model file
  };

  CheckpointWriter(FileSystem& fs, std::string dir, Options options);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Queues checkpoint `manifest` with the servers' states, one per rank. Its id is assigned on the
  // writer's thread (one more than any checkpoint in the directory) and reported in the Outcome.
  void Write(Manifest manifest, std::vector<ServerState> servers);
  // Queues the whole model, assembled from `servers`' partitions, to `path` (model_export.h).
  void WriteModel(std::string path, std::vector<TensorInfo> tensors, std::vector<PartitionInfo> partitions,
                  std::vector<ServerState> servers, std::map<std::string, std::string> metadata,
                  std::vector<ModelBuffer> buffers = {});

  // The writes finished since the last call, in order.
  std::vector<Outcome> TakeFinished();
  // Waits until every queued write has finished.
  void Flush();
  // Whether writes are queued or under way.
  bool Busy();

 private:
  void Run();
  void Post(std::function<Outcome()> work);

  CheckpointStore store_;
  Options options_;
  uint64_t next_id_ = 0;  // writer thread only; 0: not yet read from the store

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<Outcome()>> queue_;
  std::vector<Outcome> finished_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace hetps
