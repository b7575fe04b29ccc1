#include "checkpoint/checkpoint_writer.h"

#include <chrono>

namespace hetps {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result<Manifest> WriteCheckpoint(CheckpointStore& store, Manifest manifest,
                                 const std::vector<ServerState>& servers, uint32_t keep) {
  HETPS_RETURN_IF_ERROR(store.Prepare(manifest.id));
  const std::string dir = store.PathOf(manifest.id);
  manifest.files.clear();
  for (const ServerState& state : servers) {
    std::map<std::string, std::string> metadata = state.metadata;
    metadata["checkpoint"] = std::to_string(manifest.id);
    metadata["server"] = std::to_string(state.rank);
    ServerFile file;
    file.rank = state.rank;
    file.file = CheckpointStore::ServerFileName(state.rank);
    file.version = state.version;
    file.round = state.round;
    auto written = WriteSafetensors(store.fs(), JoinPath(dir, file.file), metadata, state.tensors);
    if (!written.ok()) return written.status();
    file.bytes = written->bytes;
    file.crc32 = written->crc32;
    manifest.files.push_back(std::move(file));
  }
  HETPS_RETURN_IF_ERROR(store.Commit(manifest));
  HETPS_RETURN_IF_ERROR(store.Prune(keep));
  return manifest;
}

CheckpointWriter::CheckpointWriter(FileSystem& fs, std::string dir, Options options)
    : store_(fs, std::move(dir)), options_(options), thread_([this] { Run(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void CheckpointWriter::Post(std::function<Outcome()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
  }
  changed_.notify_all();
}

void CheckpointWriter::Write(Manifest manifest, std::vector<ServerState> servers) {
  // The servers' buffers travel with the work and are released once it ran.
  auto shared = std::make_shared<std::vector<ServerState>>(std::move(servers));
  Post([this, manifest = std::move(manifest), shared]() mutable {
    const auto start = std::chrono::steady_clock::now();
    Outcome outcome;
    if (next_id_ == 0) {
      auto id = store_.NextId();
      if (!id.ok()) {
        outcome.status = id.status();
        return outcome;
      }
      next_id_ = *id;
    }
    manifest.id = next_id_++;
    outcome.id = manifest.id;
    outcome.path = store_.PathOf(manifest.id);
    auto written = WriteCheckpoint(store_, std::move(manifest), *shared, options_.keep);
    outcome.status = written.ok() ? Status::Ok() : written.status();
    if (written.ok()) {
      for (const ServerFile& f : written->files) outcome.bytes += f.bytes;
    }
    outcome.seconds = SecondsSince(start);
    return outcome;
  });
}

void CheckpointWriter::WriteModel(std::string path, std::vector<TensorInfo> tensors,
                                  std::vector<PartitionInfo> partitions, std::vector<ServerState> servers,
                                  std::map<std::string, std::string> metadata,
                                  std::vector<ModelBuffer> buffers) {
  auto shared = std::make_shared<std::vector<ServerState>>(std::move(servers));
  auto shared_buffers = std::make_shared<std::vector<ModelBuffer>>(std::move(buffers));
  Post([this, path = std::move(path), tensors = std::move(tensors), partitions = std::move(partitions),
        shared, shared_buffers, metadata = std::move(metadata)] {
    const auto start = std::chrono::steady_clock::now();
    Outcome outcome;
    outcome.kind = Outcome::Kind::kModel;
    outcome.path = path;
    PartitionWeights weights = [&](const std::string& name, uint64_t length) -> Result<const void*> {
      for (const ServerState& state : *shared) {
        for (const TensorView& t : state.tensors) {
          if (t.name != name) continue;
          if (t.dtype != "F32" || t.bytes != length * sizeof(float)) {
            return Status::InvalidArgument("server " + std::to_string(state.rank) + " sent " + name + " as " +
                                           std::to_string(t.bytes) + " bytes of " + t.dtype);
          }
          return t.data;
        }
      }
      return Status::InvalidArgument("no server sent the weights of " + name);
    };
    auto written = WriteModelFile(store_.fs(), path, tensors, partitions, weights, metadata, *shared_buffers);
    outcome.status = written.ok() ? Status::Ok() : written.status();
    if (written.ok()) outcome.bytes = written->bytes;
    outcome.seconds = SecondsSince(start);
    return outcome;
  });
}

std::vector<CheckpointWriter::Outcome> CheckpointWriter::TakeFinished() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Outcome> finished = std::move(finished_);
  finished_.clear();
  return finished;
}

void CheckpointWriter::Flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

bool CheckpointWriter::Busy() {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_ || !queue_.empty();
}

void CheckpointWriter::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued has been written
    std::function<Outcome()> work = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    Outcome outcome = work();
    work = nullptr;  // releases the buffers now, not when the next work arrives
    lock.lock();
    busy_ = false;
    finished_.push_back(std::move(outcome));
    changed_.notify_all();
  }
}

}  // namespace hetps
