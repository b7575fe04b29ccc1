// Fuzz target: a sequence of data-plane messages through a server's Shard, as the server's loop
// hands them over once the envelope is verified and the trainer identified: InitWeights, Push and
// Pull from trainers, Membership changes, and the scheduler's CheckpointRequest and Restore.
// Ready pulls are answered and their Weights replies built, as the server does after each message.
//
// The input opens with five bytes of job (mode, optimizer, staleness, staleness-aware lr, global
// batch), then holds messages in the form of tests/fuzz/fuzz_input.h. The shard is server 0 of
// two, holding two of the three partitions of "w" [6] and "b" [3] (3 floats each); trainers 0
// and 1 are live; the sender's rank stands for the identity the server would have checked.
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "ps/shard.h"
#include "tests/fuzz/fuzz_input.h"

namespace hetps {
namespace {

struct WaitingPull {
  uint32_t trainer = 0;
  std::vector<uint32_t> partitions;
  uint64_t clock = 0;
  bool latest = false;
  wire::DType dtype = wire::DType::F32;
};

const ShardMap& TheMap() {
  static const ShardMap kMap = [] {
    auto built = ShardMap::Build({{"w", {6}, wire::DType::F32}, {"b", {3}, wire::DType::F32}},
                                 /*num_servers=*/2, /*partition_bytes=*/12);
    if (!built.ok()) std::abort();
    return std::move(*built);
  }();
  return kMap;
}

Shard::Options JobOptionsFrom(fuzz::FuzzInput& in) {
  Shard::Options options;
  options.mode = static_cast<ConsistencyMode>(in.U8() % 4);  // sync, async, ssp, auto
  options.optimizer = DefaultOptimizerOptions(static_cast<OptimizerOptions::Kind>(in.U8() % 4));
  options.optimizer.momentum = options.optimizer.kind == OptimizerOptions::Kind::kSgd ? 0.9 : 0.0;
  options.staleness = in.U8() % 8;
  options.staleness_aware_lr = (in.U8() & 1) != 0;
  options.global_batch_size = in.U8();
  options.threads = 1;  // deterministic: every task runs inline
  return options;
}

// Answers the pulls that can be answered, building each reply as the server sends it.
void AnswerReady(Shard& shard, std::deque<WaitingPull>& waiting) {
  for (auto it = waiting.begin(); it != waiting.end();) {
    if (!shard.PullReady(it->partitions, it->clock, it->latest)) {
      ++it;
      continue;
    }
    if (!it->latest) shard.RecordAdmission(it->clock);
    const size_t asked = it->partitions.size();
    shard.BuildWeights(it->partitions, it->dtype, [asked](Shard::WeightsReply& reply) {
      flatbuffers::FlatBufferBuilder fbb;
      fbb.Finish(reply.Write(fbb));
      if (reply.frames.size() != asked) std::abort();  // one frame per partition asked for
    });
    it = waiting.erase(it);
  }
}

void Handle(Shard& shard, Message& message, std::deque<WaitingPull>& waiting) {
  const uint32_t trainer = message.env().sender();
  auto frames = std::make_shared<const std::vector<zmq::message_t>>(std::move(message.tensors));
  switch (message.kind()) {
    case wire::Body::InitWeights:
      (void)shard.Init(*message.body<wire::InitWeights>(), frames);
      break;
    case wire::Body::Push: {
      const auto* push = message.body<wire::Push>();
      if (shard.Push(trainer, *push, frames).ok() && push->pull()) {
        waiting.push_back({trainer,
                           {push->partitions()->begin(), push->partitions()->end()},
                           push->clock() + 1,
                           false,
                           push->dtype()});
      }
      break;
    }
    case wire::Body::Pull: {
      const auto* pull = message.body<wire::Pull>();
      if (shard.ValidatePull(trainer, *pull).ok()) {
        waiting.push_back({trainer,
                           {pull->partitions()->begin(), pull->partitions()->end()},
                           pull->clock(),
                           pull->latest(),
                           pull->dtype()});
      }
      break;
    }
    case wire::Body::Membership: {
      const auto* membership = message.body<wire::Membership>();
      std::vector<uint32_t> live;
      if (membership->trainers() != nullptr)
        live.assign(membership->trainers()->begin(), membership->trainers()->end());
      shard.SetLiveTrainers(live);
      // Pulls from trainers that left will never be collected.
      for (auto it = waiting.begin(); it != waiting.end();) {
        it = shard.IsLive(it->trainer) ? std::next(it) : waiting.erase(it);
      }
      break;
    }
    case wire::Body::CheckpointRequest: {
      const auto* request = message.body<wire::CheckpointRequest>();
      std::optional<uint64_t> round;
      if (!request->now()) round = request->round();
      (void)shard.TakeSnapshot(round, [](Shard::Snapshot& snapshot) {
        if (snapshot.frames.size() != snapshot.tensors.size()) std::abort();
      });
      break;
    }
    case wire::Body::Restore: {
      const auto* restore = message.body<wire::Restore>();
      if (restore->tensors() != nullptr && restore->tensors()->size() > 0 &&
          CheckSignatureClaims(*restore->tensors(), message.envelope.size()).ok()) {
        (void)shard.Restore(SignatureFromWire(*restore->tensors()), *frames, restore->round());
      } else if (restore->reset()) {
        shard.Reset();
      }
      waiting.clear();
      break;
    }
    case wire::Body::ModeSwitch: {
      const auto* change = message.body<wire::ModeSwitch>();
      (void)shard.SwitchMode(change->from_clock(), FromWire(change->mode()), change->staleness());
      break;
    }
    default:
      break;
  }
}

}  // namespace
}  // namespace hetps

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hetps;
  fuzz::FuzzInput in(data, size);
  const Shard::Options options = JobOptionsFrom(in);
  auto shard = Shard::Create(TheMap(), /*server_rank=*/0, options);
  if (!shard.ok()) std::abort();  // the options above are all valid
  (*shard)->SetLiveTrainers({0, 1});
  std::deque<WaitingPull> waiting;
  while (auto message = fuzz::NextMessage(in)) {
    if (!VerifyEnvelope(*message).ok()) continue;
    Handle(**shard, *message, waiting);
    AnswerReady(**shard, waiting);
  }
  (*shard)->workers().Flush();
  return 0;
}
