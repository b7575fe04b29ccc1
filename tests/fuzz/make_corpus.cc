// Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/) with the project's
// own writers: envelopes sealed by Sender, shard maps from ShardMap::Build, checkpoint states
// from a Shard's snapshot, job files from JobOptionsToYaml and configs/, safetensors files from
// WriteSafetensors and manifests from Manifest::ToJson. Small valid inputs, one per kind of
// message or file, from which the fuzzer mutates its way to the invalid ones.
//   fuzz_make_corpus DIR     (writes DIR/<target>/<name>, replacing files of the same name)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "checkpoint/file_system.h"
#include "checkpoint/manifest.h"
#include "checkpoint/safetensors_writer.h"
#include "common/check.h"
#include "common/job_config.h"
#include "common/message.h"
#include "common/optimizer_options.h"
#include "common/shard_map.h"
#include "ps/shard.h"
#include "tests/fuzz/fuzz_input.h"

namespace hetps {
namespace {

namespace fs = std::filesystem;
using fuzz::EncodeMessage;

class CorpusWriter {
 public:
  explicit CorpusWriter(fs::path root) : root_(std::move(root)) {}

  void Write(const std::string& target, const std::string& name, const std::string& bytes) {
    fs::create_directories(root_ / target);
    std::ofstream out(root_ / target / name, std::ios::binary);
    out << bytes;
    HETPS_CHECK(out.good()) << "cannot write " << (root_ / target / name);
    ++written_;
  }
  int written() const { return written_; }

 private:
  fs::path root_;
  int written_ = 0;
};

std::string Floats(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// The map of the shard target (tests/fuzz/shard_fuzz.cc): server 0 holds partitions 0 and 2.
ShardMap ShardTargetMap() {
  auto map = ShardMap::Build({{"w", {6}, wire::DType::F32}, {"b", {3}, wire::DType::F32}}, 2, 12);
  HETPS_CHECK(map.ok());
  return std::move(*map);
}

zmq::message_t ShardMapEnvelope(Sender& scheduler, const ShardMap& map, wire::Mode mode) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<wire::ServerEndpoint>> servers;
  for (uint32_t rank = 0; rank < map.num_servers(); ++rank) {
    servers.push_back(wire::CreateServerEndpointDirect(fbb, rank, "tcp://127.0.0.1:7401"));
  }
  std::vector<flatbuffers::Offset<wire::TrainerIdentity>> identities = {
      wire::CreateTrainerIdentityDirect(fbb, 0, "0123456789abcdef0123456789abcdef"),
      wire::CreateTrainerIdentityDirect(fbb, 1, "fedcba9876543210fedcba9876543210", "trainer1")};
  auto tensors = map.TensorsToWire(fbb);
  auto partitions = map.PartitionsToWire(fbb);
  auto servers_vector = fbb.CreateVector(servers);
  auto optimizer = OptimizerToWire(fbb, DefaultOptimizerOptions(OptimizerOptions::Kind::kAdam));
  auto trainers = fbb.CreateVector(std::vector<uint32_t>{0, 1});
  auto identities_vector = fbb.CreateVector(identities);
  auto token = fbb.CreateString("scheduler-token");
  auto body = wire::CreateShardMap(fbb, 1, tensors, partitions, servers_vector, optimizer, mode, trainers, 1,
                                   64u << 20, 2, false, wire::DType::F32, 64, identities_vector, 0, 0, token);
  return scheduler.Seal(fbb, wire::Body::ShardMap, body.Union());
}

void WriteEnvelopes(CorpusWriter& out) {
  Sender scheduler(wire::Role::Scheduler);
  Sender server(wire::Role::Server);
  Sender trainer(wire::Role::Trainer);
  trainer.set_rank(1);
  auto write = [&](const std::string& name, const zmq::message_t& envelope,
                   const std::vector<std::string>& frames = {}) {
    out.Write("envelope", name, EncodeMessage(envelope, frames));
  };
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateJoinDirect(fbb, wire::Role::Server, "host-a", 4242, "tcp://10.0.0.5:7401");
    write("join_server", server.Seal(fbb, wire::Body::Join, body.Union()));
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<TensorInfo> signature = {{"fc1.weight", {4, 3}, wire::DType::F32},
                                         {"fc1.bias", {4}, wire::DType::F32}};
    auto body = wire::CreateRegisterModel(fbb, SignatureToWire(fbb, signature));
    write("register_model", trainer.Seal(fbb, wire::Body::RegisterModel, body.Union()));
  }
  for (const bool goodbye : {false, true}) {
    flatbuffers::FlatBufferBuilder fbb;
    RefusalTally refusals;
    refusals.counts[static_cast<size_t>(Refusal::Impostor)] = 3;
    auto stats = wire::CreateServerStats(fbb, 7, 7, 7, 3, 7, fbb.CreateVector(std::vector<uint64_t>{5, 2}), 1,
                                         1, refusals.ToWire(fbb));
    if (goodbye) {
      write("goodbye", server.Seal(fbb, wire::Body::Goodbye, wire::CreateGoodbye(fbb, stats).Union()));
    } else {
      write("heartbeat", server.Seal(fbb, wire::Body::Heartbeat, wire::CreateHeartbeat(fbb, stats).Union()));
    }
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateProgress(fbb, 0, 40, 1280, 0.7, 900.0, 40, 0, 32, 10, 320, 0.35);
    write("progress", trainer.Seal(fbb, wire::Body::Progress, body.Union()));
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    write("done", trainer.Seal(fbb, wire::Body::Done, wire::CreateDone(fbb, 1875, 60000).Union()));
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateEvalReport(fbb, 0, true, 1875, 0.35, 0.87, 10000, 0);
    write("eval_report", trainer.Seal(fbb, wire::Body::EvalReport, body.Union()));
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<uint32_t> completed = {0, 2};
    auto body = wire::CreateChunkRequestDirect(fbb, 0, &completed);
    write("chunk_request", trainer.Seal(fbb, wire::Body::ChunkRequest, body.Union()));
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<uint32_t> finished = {1};
    std::vector<uint32_t> held = {3};
    std::vector<uint64_t> held_next = {1600};
    auto body = wire::CreateDataPositionDirect(fbb, 1, 4, 0, 128, &finished, &held, &held_next);
    write("data_position", trainer.Seal(fbb, wire::Body::DataPosition, body.Union()));
  }
  {
    // A server's state at a cut, as a Shard snapshot makes it.
    const ShardMap map = ShardTargetMap();
    Shard::Options options;
    options.optimizer = DefaultOptimizerOptions(OptimizerOptions::Kind::kSgd);
    options.optimizer.momentum = 0.9;
    auto shard = Shard::Create(map, 0, options);
    HETPS_CHECK(shard.ok());
    (*shard)->TakeSnapshot(std::nullopt, [&](Shard::Snapshot& s) {
      flatbuffers::FlatBufferBuilder fbb;
      auto body = wire::CreateCheckpointState(fbb, 1, s.version, s.round, SignatureToWire(fbb, s.tensors));
      std::vector<std::string> frames;
      for (const zmq::message_t& frame : s.frames) frames.push_back(frame.to_string());
      write("checkpoint_state", server.Seal(fbb, wire::Body::CheckpointState, body.Union()), frames);
    });
    (*shard)->workers().Flush();
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateErrorDirect(fbb, wire::ErrorCode::Refused, "cannot hold the shard", 3);
    write("error", server.Seal(fbb, wire::Body::Error, body.Union()));
  }
  write("shard_map", ShardMapEnvelope(scheduler, ShardTargetMap(), wire::Mode::Sync));
  {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<uint32_t> trainers = {0};
    std::vector<flatbuffers::Offset<wire::TrainerIdentity>> identities = {
        wire::CreateTrainerIdentityDirect(fbb, 0, "0123456789abcdef0123456789abcdef")};
    auto body = wire::CreateMembershipDirect(fbb, 2, &trainers, &identities);
    write("membership", scheduler.Seal(fbb, wire::Body::Membership, body.Union()));
  }
}

// The five-byte job header of the shard target: mode, optimizer kind, staleness, staleness-aware
// lr, global batch.
std::string ShardJob(ConsistencyMode mode, OptimizerOptions::Kind kind, uint8_t staleness, bool aware_lr) {
  return std::string{static_cast<char>(mode), static_cast<char>(kind), static_cast<char>(staleness),
                     static_cast<char>(aware_lr ? 1 : 0), static_cast<char>(64)};
}

class ShardMessages {
 public:
  ShardMessages() { scheduler_.set_rank(0); }

  std::string Init(uint32_t rank, const std::vector<uint32_t>& ids) {
    Sender& t = Trainer(rank);
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateInitWeightsDirect(fbb, &ids);
    return EncodeMessage(t.Seal(fbb, wire::Body::InitWeights, body.Union()),
                         std::vector<std::string>(ids.size(), Floats({0.5f, -0.25f, 1.0f})));
  }
  // `first`: the first element of every float32 frame (a NaN or an infinity, for a push left out).
  std::string Push(uint32_t rank, uint64_t clock, uint32_t batch, const std::vector<uint32_t>& ids,
                   wire::DType dtype = wire::DType::F32, bool pull = true, float first = 0.1f) {
    Sender& t = Trainer(rank);
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<uint64_t> versions(ids.size(), 0);  // computed on the initial weights
    auto body = wire::CreatePushDirect(fbb, clock, batch, &ids, &versions, dtype, pull);
    std::string frame = Floats({first, -0.2f, 0.3f});
    if (dtype != wire::DType::F32) frame = std::string("\x80\x3f\x00\xbf\x40\x3e", 6);  // three 16-bit values
    if (batch == 0) frame.clear();
    return EncodeMessage(t.Seal(fbb, wire::Body::Push, body.Union()),
                         std::vector<std::string>(ids.size(), frame));
  }
  std::string Pull(uint32_t rank, uint64_t clock, bool latest, const std::vector<uint32_t>& ids,
                   wire::DType dtype = wire::DType::F32) {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreatePullDirect(fbb, clock, latest, &ids, dtype);
    return EncodeMessage(Trainer(rank).Seal(fbb, wire::Body::Pull, body.Union()));
  }
  std::string Membership(const std::vector<uint32_t>& live) {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateMembershipDirect(fbb, 2, &live);
    return EncodeMessage(scheduler_.Seal(fbb, wire::Body::Membership, body.Union()));
  }
  std::string CheckpointRequest(uint64_t round, bool now) {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateCheckpointRequest(fbb, 1, round, now);
    return EncodeMessage(scheduler_.Seal(fbb, wire::Body::CheckpointRequest, body.Union()));
  }
  // A Restore of the state a fresh shard of `kind` has, as the scheduler sends it from a checkpoint.
  std::string Restore(OptimizerOptions::Kind kind, uint64_t round) {
    const ShardMap map = ShardTargetMap();
    Shard::Options options;
    options.optimizer = DefaultOptimizerOptions(kind);
    auto shard = Shard::Create(map, 0, options);
    HETPS_CHECK(shard.ok());
    std::string encoded;
    (*shard)->TakeSnapshot(std::nullopt, [&](Shard::Snapshot& s) {
      flatbuffers::FlatBufferBuilder fbb;
      auto body = wire::CreateRestore(fbb, 1, 1, round, SignatureToWire(fbb, s.tensors));
      std::vector<std::string> frames;
      for (const zmq::message_t& frame : s.frames) frames.push_back(frame.to_string());
      encoded = EncodeMessage(scheduler_.Seal(fbb, wire::Body::Restore, body.Union()), frames);
    });
    (*shard)->workers().Flush();
    HETPS_CHECK(!encoded.empty());
    return encoded;
  }

 private:
  Sender& Trainer(uint32_t rank) {
    trainers_[rank].set_rank(rank);
    return trainers_[rank];
  }
  Sender trainers_[2] = {Sender(wire::Role::Trainer), Sender(wire::Role::Trainer)};
  Sender scheduler_{wire::Role::Scheduler};
};

void WriteShardSequences(CorpusWriter& out) {
  using Kind = OptimizerOptions::Kind;
  const std::vector<uint32_t> mine = {0, 2};
  ShardMessages m;
  out.Write("shard", "sync_two_trainers",
            ShardJob(ConsistencyMode::kSync, Kind::kSgd, 0, false) + m.Init(0, mine) +
                m.Push(0, 0, 32, mine) + m.Push(1, 0, 32, mine) + m.Pull(0, 1, false, mine) +
                m.Push(0, 1, 32, mine));
  out.Write("shard", "async_bf16_adam",
            ShardJob(ConsistencyMode::kAsync, Kind::kAdam, 0, true) + m.Init(1, mine) +
                m.Push(0, 0, 32, mine, wire::DType::BF16) + m.Push(1, 0, 32, {2}, wire::DType::F16) +
                m.Pull(1, 0, true, mine, wire::DType::BF16));
  out.Write("shard", "ssp_idle_trainer",
            ShardJob(ConsistencyMode::kSsp, Kind::kAdagrad, 1, false) + m.Init(0, mine) +
                m.Push(0, 0, 32, mine) + m.Push(1, 0, 0, mine, wire::DType::F32, false) +
                m.Push(0, 1, 32, mine) + m.Pull(0, 2, false, mine));
  out.Write("shard", "membership_and_checkpoint",
            ShardJob(ConsistencyMode::kSync, Kind::kAdamW, 0, false) + m.Init(0, mine) +
                m.Push(0, 0, 32, mine) + m.Membership({0}) + m.CheckpointRequest(1, false) +
                m.Push(0, 1, 32, mine) + m.CheckpointRequest(0, true));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  out.Write("shard", "nonfinite_left_out",
            ShardJob(ConsistencyMode::kSync, Kind::kSgd, 0, false) + m.Init(0, mine) +
                m.Push(0, 0, 32, mine, wire::DType::F32, true, nan) + m.Push(1, 0, 32, mine) +
                m.Pull(0, 1, false, mine) + m.Push(0, 1, 32, mine, wire::DType::F32, true, -inf) +
                m.Push(1, 1, 64, mine) + m.Push(0, 2, 255, mine));
  out.Write("shard", "restore_then_train",
            ShardJob(ConsistencyMode::kSync, Kind::kAdam, 0, false) + m.Restore(Kind::kAdam, 3) +
                m.Push(0, 3, 32, mine) + m.Push(1, 3, 32, mine) + m.Pull(1, 4, false, mine));
}

void WriteJobFiles(CorpusWriter& out) {
  std::ifstream example(std::string(HETPS_SOURCE_DIR) + "/configs/fashion_mnist.yaml");
  std::stringstream text;
  text << example.rdbuf();
  HETPS_CHECK(!text.str().empty()) << "configs/fashion_mnist.yaml is missing";
  out.Write("job_config", "fashion_mnist", text.str());
  out.Write("job_config", "defaults", JobOptionsToYaml(JobOptions()));
  JobOptions job;
  job.mode = ConsistencyMode::kSsp;
  job.staleness = 2;
  job.optimizer = DefaultOptimizerOptions(OptimizerOptions::Kind::kAdamW);
  job.wire_dtype = wire::DType::BF16;
  job.checkpoint.dir = "/tmp/checkpoints";
  job.checkpoint.interval_steps = 100;
  job.security.curve = true;
  job.security.keys_dir = "keys";
  job.security.allowed = {"server0", "trainer0"};
  out.Write("job_config", "ssp_checkpoints_curve", JobOptionsToYaml(job));
}

// WriteSafetensors writes through a FileSystem: into a scratch file, read back as bytes.
std::string SafetensorsBytes(const std::map<std::string, std::string>& metadata,
                             const std::vector<TensorView>& tensors) {
  const fs::path scratch = fs::temp_directory_path() / ("fuzz_make_corpus." + std::to_string(::getpid()));
  auto written = WriteSafetensors(PosixFileSystem(), scratch.string(), metadata, tensors);
  HETPS_CHECK(written.ok()) << written.status().message();
  std::ifstream in(scratch, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  fs::remove(scratch);
  return bytes.str();
}

void WriteCheckpointFiles(CorpusWriter& out) {
  const std::vector<float> weights = {0.5f, -0.25f, 1.0f, 2.0f, 0.0f, -1.0f};
  const int64_t step = 7;
  out.Write("safetensors", "model",
            SafetensorsBytes({{"format", "pt"}}, {{"fc.weight", "F32", {2, 3}, weights.data(), 24},
                                                  {"fc.bias", "F32", {2}, weights.data(), 8}}));
  out.Write("safetensors", "server_checkpoint",
            SafetensorsBytes({{"checkpoint", "1"}, {"server", "0"}},
                             {{"w[0:3]", "F32", {3}, weights.data(), 12},
                              {"w[0:3].momentum_buffer", "F32", {3}, weights.data() + 3, 12},
                              {"w[0:3].step", "I64", {}, &step, 8}}));
  out.Write("safetensors", "empty", SafetensorsBytes({}, {}));

  const ShardMap map = ShardTargetMap();
  Manifest m;
  m.id = 3;
  m.created_utc = "2026-11-24T10:11:12Z";
  m.job_yaml = JobOptionsToYaml(JobOptions());
  m.mode = "sync";
  m.round = 40;
  m.partition_bytes = 12;
  m.servers = map.num_servers();
  m.tensors = map.tensors();
  m.partitions = map.partitions();
  m.data.epoch = 1;
  m.data.completed = {{0, {0, 1, 2}}, {1, {0}}};
  m.data.partial = {{1, 1, 900}};
  m.data.samples_trained = 2200;
  for (uint32_t rank = 0; rank < map.num_servers(); ++rank) {
    m.files.push_back(
        {rank, "server-" + std::to_string(rank) + ".safetensors", 512, 0x1234abcdu + rank, 40, 40});
  }
  out.Write("manifest", "sync_two_servers", m.ToJson());
}

}  // namespace
}  // namespace hetps

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR   (writes DIR/<target>/<seed>)\n", argv[0]);
    return 2;
  }
  hetps::CorpusWriter out(argv[1]);
  hetps::WriteEnvelopes(out);
  hetps::WriteShardSequences(out);
  hetps::WriteJobFiles(out);
  hetps::WriteCheckpointFiles(out);
  std::printf("wrote %d seed inputs under %s\n", out.written(), argv[1]);
  return 0;
}
