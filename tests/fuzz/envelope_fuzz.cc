// Fuzz target: one received message through envelope verification (VerifyEnvelope) and then
// through what the scheduler and a server do with a verified envelope of its kind, as far as
// that runs without sockets: the model signature checks and the shard map a registration leads
// to (and that map's round trip through the wire, which servers and trainers rebuild it from),
// the plausibility checks of reports and the speed balancer behind them, the data chunks, a
// checkpoint cut's data positions and server states, heartbeat counters, and a server's shard
// map (with the shard it builds) and membership.
//
// The input is one message in the form of tests/fuzz/fuzz_input.h. The job is the default job
// with 2 servers and 2 trainers; the sender's rank stands for the identity already checked.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/job_config.h"
#include "common/message.h"
#include "common/shard_map.h"
#include "ps/shard.h"
#include "ps/trainer_identities.h"
#include "scheduler/balancer.h"
#include "scheduler/checkpoint_cut.h"
#include "scheduler/chunk_queue.h"
#include "scheduler/membership.h"
#include "scheduler/report_checks.h"
#include "tests/fuzz/fuzz_input.h"

namespace hetps {
namespace {

// Servers and trainers of the job the messages arrive in.
constexpr uint32_t kServers = 2;
constexpr uint32_t kTrainers = 2;
// Small enough that a map of the largest model allowed stays quick to build each run.
constexpr uint64_t kPartitionBytes = 64 << 10;
// A server builds its shard from a map only up to this size here: the allocation a valid map
// asks for is the scheduler's to bound (max_model_bytes), not the fuzzer's to make.
constexpr uint64_t kMaxShardBytes = 1 << 20;

const JobOptions& TheJob() {
  static const JobOptions kJob = [] {
    JobOptions j;
    j.servers = kServers;
    j.trainers = kTrainers;
    j.epochs = 2;
    return j;
  }();
  return kJob;
}

// A property the code under test promises; a broken one is a finding.
void Require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "fuzz check failed: %s\n", what);
  std::abort();
}

// The map built from a registered signature, sent as the scheduler sends it, must come back the
// same from the wire.
void CheckShardMapRoundTrip(const ShardMap& map) {
  flatbuffers::FlatBufferBuilder fbb;
  auto tensors = map.TensorsToWire(fbb);
  auto partitions = map.PartitionsToWire(fbb);
  std::vector<flatbuffers::Offset<wire::ServerEndpoint>> endpoints;
  for (uint32_t rank = 0; rank < map.num_servers(); ++rank) {
    endpoints.push_back(wire::CreateServerEndpointDirect(fbb, rank, "tcp://127.0.0.1:1"));
  }
  auto body = wire::CreateShardMap(fbb, 1, tensors, partitions, fbb.CreateVector(endpoints));
  fbb.Finish(body);
  auto rebuilt = ShardMap::FromWire(*flatbuffers::GetRoot<wire::ShardMap>(fbb.GetBufferPointer()));
  if (!rebuilt.ok()) std::fprintf(stderr, "%s\n", rebuilt.status().message().c_str());
  Require(rebuilt.ok(), "a map built from a valid signature is accepted from the wire");
  Require(rebuilt->partitions().size() == map.partitions().size(), "the same partitions come back");
  Require(CompareSignatures(map.tensors(), rebuilt->tensors()).ok(), "the same tensors come back");
  for (size_t i = 0; i < map.partitions().size(); ++i) {
    const PartitionInfo& a = map.partitions()[i];
    const PartitionInfo& b = rebuilt->partitions()[i];
    Require(a.tensor == b.tensor && a.offset == b.offset && a.length == b.length && a.server == b.server,
            "each partition comes back the same");
  }
}

void RegisterModel(const wire::RegisterModel& body, size_t message_bytes, const JobOptions& job) {
  if (!CheckSignatureClaims(*body.signature(), message_bytes).ok()) return;
  std::vector<TensorInfo> signature = SignatureFromWire(*body.signature());
  if (!ValidateSignature(signature, job.max_model_bytes).ok()) return;
  if (!CountPartitions(signature, kPartitionBytes).ok()) return;
  (void)CompareSignatures({{"w", {4, 2}, wire::DType::F32}}, signature);
  auto map = ShardMap::Build(signature, kServers, kPartitionBytes);
  Require(map.ok(), "a signature that passed the scheduler's checks can be sharded");
  CheckShardMapRoundTrip(*map);
}

void Progress(const wire::Progress& progress, const ReportBounds& bounds) {
  if (!CheckProgress(progress, bounds).ok()) return;
  Balancer balancer(TheJob().global_batch_size);
  for (int i = 0; i < 3; ++i) {
    balancer.Observe(0, progress.timed_samples(), progress.timed_seconds(), progress.timed_steps());
    balancer.Observe(1, 32, 0.1, 1);
  }
  (void)balancer.Propose({0, 1}, {{0, 32}, {1, 32}});
}

// As the scheduler takes a heartbeat's or Goodbye's figures: checked, then read.
void ServerStats(const wire::ServerStats* stats) {
  if (stats == nullptr || !CheckServerStats(*stats).ok()) return;
  const ServerCounters counters = CountersFromWire(*stats);
  (void)counters.round_seconds.count();
  (void)counters.apply_seconds.count();
}

void ChunkRequest(const wire::ChunkRequest& request, uint32_t trainer, ChunkQueue& chunks) {
  (void)chunks.Next(trainer, 0);
  if (request.completed() != nullptr) {
    for (uint32_t chunk : *request.completed()) (void)chunks.Complete(trainer, chunk);
  }
  (void)chunks.Next(trainer, request.epoch());
  const uint32_t last_epoch = chunks.epochs() - 1;
  (void)chunks.EpochComplete(request.epoch() < last_epoch ? request.epoch() : last_epoch);
}

CheckpointCut MakeCut(const ChunkQueue& chunks, uint32_t number) {
  CheckpointCut::Options options;
  options.number = number;
  options.round = 4;
  options.servers = 1;
  options.trainers = {0, 1};
  options.chunks_per_epoch = chunks.chunks_per_epoch();
  return CheckpointCut(options, chunks.Completed());
}

void DataPosition(const wire::DataPosition& position, uint32_t trainer, const ChunkQueue& chunks) {
  CheckpointCut cut = MakeCut(chunks, position.checkpoint());
  if (!cut.AddPosition(trainer, position).ok()) return;
  (void)cut.AddPosition(trainer ^ 1, position);
  if (cut.HasAllPositions()) (void)cut.Position(TheJob().epochs);
}

void CheckpointState(Message message, const ChunkQueue& chunks) {
  const uint32_t number = message.body<wire::CheckpointState>()->checkpoint();
  CheckpointCut cut = MakeCut(chunks, number);
  if (!cut.AddState(0, std::move(message)).ok()) return;
  // The states borrow the message's frames: read every byte the cut says a tensor has.
  unsigned checksum = 0;
  for (const ServerState& state : cut.States()) {
    for (const TensorView& tensor : state.tensors) {
      const auto* bytes = static_cast<const unsigned char*>(tensor.data);
      for (size_t i = 0; i < tensor.bytes; ++i) checksum += bytes[i];
    }
  }
  volatile unsigned sink = checksum;
  (void)sink;
  (void)cut.Version();
}

// A server installing the map it was sent: FromWire, then its shard when small enough.
void ServerShardMap(const wire::ShardMap& wire_map) {
  auto map = ShardMap::FromWire(wire_map);
  if (!map.ok() || wire_map.optimizer() == nullptr || map->num_servers() == 0) return;
  if (map->BytesOf(0) > kMaxShardBytes) return;
  Shard::Options options;
  options.mode = FromWire(wire_map.mode());
  options.staleness = wire_map.staleness();
  options.staleness_aware_lr = wire_map.staleness_aware_lr();
  options.global_batch_size = wire_map.global_batch_size();
  options.optimizer = OptimizerFromWire(*wire_map.optimizer());
  auto shard = Shard::Create(*map, 0, options);
  if (!shard.ok()) return;
  std::vector<uint32_t> live;
  if (wire_map.trainers() != nullptr) live.assign(wire_map.trainers()->begin(), wire_map.trainers()->end());
  (*shard)->SetLiveTrainers(live);
  TrainerIdentities identities;
  identities.Set(wire_map.identities());
}

void Dispatch(Message message) {
  const JobOptions& job = TheJob();
  const ReportBounds bounds = BoundsOf(job, DatasetTrainSamples(job.dataset));
  ChunkQueue chunks(bounds.samples_per_epoch, job.chunk_samples, job.epochs);
  const uint32_t sender = message.env().sender();
  switch (message.kind()) {
    case wire::Body::RegisterModel:
      return RegisterModel(*message.body<wire::RegisterModel>(), message.envelope.size(), job);
    case wire::Body::Heartbeat:
      return ServerStats(message.body<wire::Heartbeat>()->server_stats());
    case wire::Body::Goodbye:
      return ServerStats(message.body<wire::Goodbye>()->server_stats());
    case wire::Body::Progress:
      return Progress(*message.body<wire::Progress>(), bounds);
    case wire::Body::Done:
      (void)CheckDone(*message.body<wire::Done>(), bounds);
      return;
    case wire::Body::EvalReport:
      (void)CheckEvalReport(*message.body<wire::EvalReport>(), bounds);
      return;
    case wire::Body::ChunkRequest:
      return ChunkRequest(*message.body<wire::ChunkRequest>(), sender % kTrainers, chunks);
    case wire::Body::DataPosition:
      (void)chunks.Next(sender % kTrainers, 0);
      return DataPosition(*message.body<wire::DataPosition>(), sender % kTrainers, chunks);
    case wire::Body::CheckpointState:
      return CheckpointState(std::move(message), chunks);
    case wire::Body::Error:
      (void)message.body<wire::Error>()->reason()->str();
      return;
    case wire::Body::ShardMap:
      return ServerShardMap(*message.body<wire::ShardMap>());
    case wire::Body::Membership: {
      TrainerIdentities identities;
      identities.Set(message.body<wire::Membership>()->identities());
      return;
    }
    default:
      return;
  }
}

}  // namespace
}  // namespace hetps

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hetps::fuzz::FuzzInput in(data, size);
  auto message = hetps::fuzz::NextMessage(in);
  if (!message) return 0;
  message->peer_address = "10.0.0.5";
  const hetps::Status valid = hetps::VerifyEnvelope(*message);
  (void)hetps::DescribePeer(*message);
  if (!valid.ok()) return 0;
  (void)hetps::DescribeSender(message->env());
  (void)hetps::KindName(message->kind());
  hetps::Dispatch(std::move(*message));
  return 0;
}
