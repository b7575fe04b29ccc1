// PsClient: a trainer's data-plane connections, one DEALER per server, and the requests it makes
// over them: initial weights, push-pull rounds and pulls. Requests go to every server at once and
// the client then waits for all replies, servicing the control channel meanwhile (heartbeats,
// Shutdown), so a stalled job never hangs the trainer.
//
// Works on host float32 buffers, one per tensor of the shard map, so it needs no LibTorch. Owned
// by the trainer's loop thread, with the ControlChannel it services; not thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "common/control_channel.h"
#include "common/message.h"
#include "common/shard_map.h"
#include "common/status.h"

namespace hetps {

class PsClient {
 public:
  struct Options {
    std::chrono::milliseconds request_timeout{120000};  // a server silent this long is an error
    wire::DType wire_dtype = wire::DType::F32;  // gradients sent and weights asked for: F32,
                                                // BF16 or F16
  };

  // What a pull brought back.
  struct PullResult {
    uint64_t weight_version = 0;  // largest version among the partitions received
    uint64_t round_samples = 0;   // sync: samples of the round these weights follow
  };

  // `endpoints[s]` is server s's data endpoint. `sender` and `control` must outlive the client.
  PsClient(zmq::context_t& context, const ShardMap& map, std::vector<std::string> endpoints,
           Sender* sender, ControlChannel* control, Options options);

  Status Connect();

  // Offers `weights` (one host buffer per tensor) as the initial model; servers keep the first
  // offer they get. `owner` keeps the buffers alive until sent.
  Status InitWeights(const std::vector<const float*>& weights, std::shared_ptr<const void> owner);

  // Writes the weights of round `clock` (sync; any mode: the newest when `latest`) into `weights`.
  Result<PullResult> Pull(uint64_t clock, bool latest, const std::vector<float*>& weights);

  // Pushes the gradients of step `clock` (one host buffer per tensor, mean over `batch_size`
  // samples; batch_size 0 sends none and only takes part in the sync round) and writes the
  // weights that follow the round into `weights`. `owner` keeps the gradients alive until sent.
  Result<PullResult> PushPull(uint64_t clock, uint32_t batch_size,
                              const std::vector<const float*>& grads,
                              std::shared_ptr<const void> owner, const std::vector<float*>& weights);

  // ssp: tells every server that this trainer, at `clock`, has no data for now, so no pull waits
  // for it until it pushes gradients again.
  Status MarkIdle(uint64_t clock);

 private:
  // Sends one request per server; `build` makes server s's envelope and tensor frames.
  Status SendToAll(const std::function<void(uint32_t, Message*)>& build);
  // Waits for one reply of kind `expected` from every server, handing each to `accept`.
  Status AwaitReplies(wire::Body expected, const char* request_name,
                      const std::function<Status(uint32_t, const Message&)>& accept);
  Status AcceptWeights(uint32_t server, const Message& reply, const std::vector<float*>& weights,
                       PullResult* result);
  std::string ServerName(uint32_t server) const;

  zmq::context_t& context_;
  const ShardMap& map_;
  std::vector<std::string> endpoints_;
  Sender* sender_;
  ControlChannel* control_;
  Options options_;
  std::vector<zmq::socket_t> sockets_;
  std::vector<std::vector<uint32_t>> partitions_of_;  // per server
  std::vector<uint64_t> versions_;                    // per partition: last version pulled
};

}  // namespace hetps
