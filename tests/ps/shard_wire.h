// Hand-built wire messages for Shard tests: a two-server map of three small partitions, pushes,
// pulls and initial weights as the server would receive them, and the weights a reply carries.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <vector>

#include "ps/shard.h"

namespace hetps {
namespace testing {

constexpr float kLr = 0.1f;
// Elements per partition. 64-byte frames are heap-allocated by ZeroMQ, so they are float-aligned.
constexpr size_t kLength = 16;

using Floats = std::vector<float>;

// "w" [32] and "b" [16] cut into three partitions of 16 floats: server 0 holds partitions 0
// (w[0:16]) and 2 (b), server 1 holds partition 1 (w[16:32]).
inline ShardMap TestMap() {
  auto map = ShardMap::Build({{"w", {32}, wire::DType::F32}, {"b", {16}, wire::DType::F32}},
                             /*num_servers=*/2, kLength * sizeof(float));
  CATCH_REQUIRE(map.ok());
  CATCH_REQUIRE(map->PartitionsOf(0) == std::vector<uint32_t>{0, 2});
  CATCH_REQUIRE(map->PartitionsOf(1) == std::vector<uint32_t>{1});
  return std::move(*map);
}

// Worker threads of the shards under test: 1 here; the tests are built a second time with more.
#ifndef HETPS_TEST_SHARD_THREADS
#define HETPS_TEST_SHARD_THREADS 1
#endif

// Plain SGD at kLr; `adjust` may change the options first.
inline std::unique_ptr<Shard> MakeShard(const ShardMap& map, ConsistencyMode mode,
                                        const std::function<void(Shard::Options&)>& adjust = {}) {
  Shard::Options options;
  options.mode = mode;
  options.optimizer = DefaultOptimizerOptions(OptimizerOptions::Kind::kSgd);
  options.optimizer.lr = kLr;
  options.threads = HETPS_TEST_SHARD_THREADS;
  if (adjust) adjust(options);
  auto shard = Shard::Create(map, /*server_rank=*/0, options);
  CATCH_REQUIRE(shard.ok());
  return std::move(*shard);
}

// Mode diloco, the outer optimizer SGD at `lr` (with Nesterov momentum when `nesterov` and
// `momentum` > 0); `async`: asynchronous rounds (Delayed Nesterov).
inline std::unique_ptr<Shard> MakeDilocoShard(const ShardMap& map, double lr, double momentum,
                                              bool async = false, bool nesterov = true) {
  return MakeShard(map, ConsistencyMode::kDiloco, [&](Shard::Options& o) {
    o.optimizer = DefaultOuterOptimizer();
    o.optimizer.lr = lr;
    o.optimizer.momentum = momentum;
    o.optimizer.nesterov = nesterov && momentum > 0;
    o.global_batch_size = 64;  // not used in diloco: every round is one outer step
    o.diloco.async = async;
  });
}

inline Floats Ramp(float start, float step, size_t length = kLength) {
  Floats values(length);
  for (size_t i = 0; i < length; ++i) values[i] = start + step * static_cast<float>(i);
  return values;
}

inline zmq::message_t Frame(const Floats& values) {
  if (values.empty()) return zmq::message_t();
  return zmq::message_t(values.data(), values.size() * sizeof(float));
}

// A finished FlatBuffer and the tensor frames that travel with it, shared as the server shares
// a received message's frames with the tasks that read them.
struct WireMessage {
  std::vector<uint8_t> buffer;
  std::shared_ptr<std::vector<zmq::message_t>> frames = std::make_shared<std::vector<zmq::message_t>>();

  template <typename T>
  const T& root() const {
    return *flatbuffers::GetRoot<T>(buffer.data());
  }
};

template <typename T>
inline WireMessage Finish(flatbuffers::FlatBufferBuilder& fbb, flatbuffers::Offset<T> root,
                          const std::vector<Floats>& frames) {
  fbb.Finish(root);
  WireMessage message;
  message.buffer.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  for (const Floats& f : frames) message.frames->push_back(Frame(f));
  return message;
}

// `versions`: the weight version each gradient was computed on; none: zeros.
inline WireMessage MakePush(uint64_t clock, uint32_t batch_size, const std::vector<uint32_t>& ids,
                            const std::vector<Floats>& grads, wire::DType dtype = wire::DType::F32,
                            std::vector<uint64_t> versions = {}) {
  flatbuffers::FlatBufferBuilder fbb;
  if (versions.empty()) versions.assign(ids.size(), 0);
  return Finish(fbb, wire::CreatePushDirect(fbb, clock, batch_size, &ids, &versions, dtype, true), grads);
}

// A diloco push of round `round`'s pseudo-gradient `delta` (both partitions of server 0) over
// `inner_steps` inner steps of `samples` samples in all; with 0 samples, empty frames. `versions`:
// the weight version the round started from (both partitions).
inline WireMessage MakeRoundPush(uint64_t round, uint32_t samples, uint32_t inner_steps, const Floats& delta,
                                 uint64_t sync_us = 0, uint64_t version = 0) {
  flatbuffers::FlatBufferBuilder fbb;
  const std::vector<uint32_t> ids = {0, 2};
  const std::vector<uint64_t> versions(ids.size(), version);
  const std::vector<Floats> frames =
      samples == 0 ? std::vector<Floats>{Floats{}, Floats{}} : std::vector<Floats>{delta, delta};
  return Finish(fbb,
                wire::CreatePushDirect(fbb, round, samples, &ids, &versions, wire::DType::F32, /*pull=*/true,
                                       /*ahead=*/0, inner_steps, sync_us),
                frames);
}

// SGD with momentum as torch::optim::SGD steps it (dampening 0; the buffer starts as the first
// gradient), Nesterov's or not, in double precision: the outer step diloco's tests compare with.
struct MomentumReference {
  double lr, momentum;
  std::vector<double> weights, buffer;
  bool nesterov = true;
  bool first = true;

  void Step(const std::vector<double>& grad) {
    for (size_t i = 0; i < weights.size(); ++i) {
      buffer[i] = first ? grad[i] : momentum * buffer[i] + grad[i];
      weights[i] -= lr * (nesterov ? grad[i] + momentum * buffer[i] : buffer[i]);
    }
    first = false;
  }
};

inline WireMessage MakeInit(const std::vector<uint32_t>& ids, const std::vector<Floats>& weights) {
  flatbuffers::FlatBufferBuilder fbb;
  return Finish(fbb, wire::CreateInitWeightsDirect(fbb, &ids), weights);
}

inline WireMessage MakePull(const std::vector<uint32_t>& ids, wire::DType dtype = wire::DType::F32) {
  flatbuffers::FlatBufferBuilder fbb;
  return Finish(fbb, wire::CreatePullDirect(fbb, /*clock=*/0, /*latest=*/false, &ids, dtype), {});
}

inline Status Push(Shard& shard, uint32_t trainer, const WireMessage& push) {
  return shard.Push(trainer, push.root<wire::Push>(), push.frames);
}

// Pushes the same gradient to both partitions of server 0.
inline Status PushBoth(Shard& shard, uint32_t trainer, uint64_t clock, uint32_t batch_size,
                       const Floats& grad) {
  return Push(shard, trainer, MakePush(clock, batch_size, {0, 2}, {grad, grad}));
}

inline Status InitBoth(Shard& shard, const Floats& weights) {
  WireMessage init = MakeInit({0, 2}, {weights, weights});
  return shard.Init(init.root<wire::InitWeights>(), init.frames);
}

// A Weights reply as the server would send it: the body and the tensor frames.
struct BuiltWeights {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<zmq::message_t> frames;

  const wire::Weights& body() const { return *flatbuffers::GetRoot<wire::Weights>(fbb.GetBufferPointer()); }
};

// Builds the reply to a pull of `partitions` once the work queued before it has run.
inline std::unique_ptr<BuiltWeights> Build(Shard& shard, const std::vector<uint32_t>& partitions,
                                           wire::DType dtype = wire::DType::F32) {
  auto built = std::make_unique<BuiltWeights>();
  bool done = false;
  shard.BuildWeights(partitions, dtype, [&](Shard::WeightsReply& reply) {
    built->fbb.Finish(reply.Write(built->fbb));
    built->frames = std::move(reply.frames);
    done = true;
  });
  shard.workers().Flush();
  CATCH_REQUIRE(done);
  return built;
}

// The weights of one partition, copied out of a Weights reply.
inline Floats WeightsOf(Shard& shard, uint32_t partition) {
  auto built = Build(shard, {partition});
  CATCH_REQUIRE(built->frames.size() == 1);
  const auto* data = static_cast<const float*>(built->frames[0].data());
  return Floats(data, data + built->frames[0].size() / sizeof(float));
}

}  // namespace testing
}  // namespace hetps
