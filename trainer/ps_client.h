// PsClient: a trainer's data-plane connections, one DEALER per server, and the requests it makes
// over them: initial weights, push-pull steps and pulls. Requests go to every server at once and
// the client then waits for all replies, watching the control channel meanwhile (a Shutdown, a
// lost scheduler), so a stalled job never hangs the trainer. A push-pull step may be streamed: the
// gradients are handed over tensor by tensor as backward produces them and go out at once, so
// the transfer and the servers' updates overlap the rest of backward.
//
// Works on host float32 buffers, one per tensor of the shard map, so it needs no LibTorch. Owned
// by the trainer's loop thread, which owns its sockets; not thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "common/control_channel.h"
#include "common/message.h"
#include "common/shard_map.h"
#include "common/status.h"
#include "common/transport.h"
#include "trainer/int8_feedback.h"

namespace hetps {

// mode diloco: what a push of a round's pseudo-gradient says besides its samples
// (Push.inner_steps, Push.sync_us).
struct RoundPush {
  uint32_t inner_steps = 0;
  uint64_t sync_us = 0;  // the trainer's previous round's synchronisation
};

class PsClient {
 public:
  struct Options {
    std::chrono::milliseconds request_timeout{120000};  // a server silent this long is an error
    // Before sleeping until a reply comes, look for one this long, yielding the core between
    // looks: a reply that comes within it is taken without waking a sleeping thread, which costs
    // tens of microseconds when the cores are idle (a small push-pull's round trip halves,
    // benchmarks/README.md, "Round trips of small models"). 0: sleep at once.
    std::chrono::microseconds reply_spin{100};
    wire::DType wire_dtype = wire::DType::F32;  // gradients sent and weights asked for: F32,
                                                // BF16 or F16
    // mode diloco, diloco.pseudo_gradient_dtype int8: pushes travel as int8, one scale per
    // partition, with error feedback (Int8Feedback); the weights still come as wire_dtype.
    bool int8_pushes = false;
    // A streamed step sends a server's ready partitions once they hold at least this many
    // bytes (a larger partition goes alone), so small tensors share a message.
    uint64_t coalesce_bytes = uint64_t{1} << 20;
    // Largest frame accepted from a server (the shard map's max_message_bytes); a larger one
    // drops the connection.
    int64_t max_message_bytes = int64_t{64} << 20;
    // The routing id of the sockets to the servers: the data token the scheduler gave this
    // trainer, by which the servers recognise it. Empty: one ZeroMQ makes up (servers refuse it).
    std::string routing_id;
    // CURVE: this trainer's key pair, and each server's public key by rank (from the shard map).
    // Empty: plaintext.
    CurveKeys curve;
    std::vector<std::string> server_keys;
  };

  // What a pull brought back.
  struct PullResult {
    uint64_t weight_version = 0;  // largest version among the partitions received
    uint64_t round_samples = 0;   // sync: samples of the round these weights follow
    // The longest any server held the request for the consistency rule (Weights.held_us).
    double held_seconds = 0;
    // diloco: the length the servers chose for the round these weights start (Weights.round_seconds;
    // 0: none chosen).
    double round_seconds = 0;
    // This trainer's steps whose gradients a server left out for NaN or infinite values, so far
    // (the most over the servers; Weights.left_out). The client logs it when it grows.
    uint64_t left_out = 0;
  };

  // `endpoints[s]` is server s's data endpoint. `sender` and `control` must outlive the client.
  PsClient(zmq::context_t& context, const ShardMap& map, std::vector<std::string> endpoints, Sender* sender,
           ControlChannel* control, Options options);

  Status Connect();
  // After a recovery: servers whose endpoint or CURVE key changed (a replacement took a lost
  // server's rank) get a new connection; messages still queued for the old one are dropped.
  Status Reconnect(const std::vector<std::string>& endpoints, const std::vector<std::string>& keys);

  // The dtype weights are asked for as, and gradients travel as unless int8_pushes.
  wire::DType wire_dtype() const { return options_.wire_dtype; }
  // The dtype of the gradients' host buffers PushTensor takes as they are: float32 for int8
  // pushes (quantised as they are packed), otherwise wire_dtype.
  wire::DType staging_dtype() const { return feedback_ ? wire::DType::F32 : options_.wire_dtype; }

  // Offers `weights` (one host buffer per tensor) as the initial model; servers keep the first
  // offer they get. `owner` keeps the buffers alive until sent.
  Status InitWeights(const std::vector<const float*>& weights, std::shared_ptr<const void> owner);

  // Writes the weights of round `clock` (sync; any mode: the newest when `latest`) into `weights`.
  Result<PullResult> Pull(uint64_t clock, bool latest, const std::vector<float*>& weights);

  // Pushes the gradients of step `clock` (one host buffer per tensor, mean over `batch_size`
  // samples; batch_size 0 sends none and only takes part in the sync round) and writes the
  // weights that follow the round into `weights`. `owner` keeps the gradients alive until sent.
  // The same as BeginStep, PushTensor for every tensor in order, then FinishStep.
  Result<PullResult> PushPull(uint64_t clock, uint32_t batch_size, const std::vector<const float*>& grads,
                              std::shared_ptr<const void> owner, const std::vector<float*>& weights);

  // A streamed push-pull step: BeginStep, then PushTensor once for every tensor of the shard map
  // (in any order, as its gradient becomes ready), then FinishStep, which sends what is still
  // held back and writes the weights that follow the step into `weights`. Each message asks for
  // the weights of the partitions it carries, so the servers answer partition by partition.
  // batch_size 0 takes part in a sync round without data: no PushTensor calls. `ahead` > 0
  // (async, ssp): the trainer will compute that many steps on the weights it holds before it
  // uses the ones this step asks for (Push.ahead), so ssp holds them as for a later step.
  // `round` (diloco): the step is a round whose gradients are its pseudo-gradient.
  void BeginStep(uint64_t clock, uint32_t batch_size, uint32_t ahead = 0, RoundPush round = {});
  // Sends tensor `tensor`'s gradient (a host buffer of its elements, kept alive by `owner` until
  // sent) with whatever else is ready for the same servers, once enough bytes are ready.
  Status PushTensor(size_t tensor, const float* grad, std::shared_ptr<const void> owner);
  // The same for a gradient whose elements are `dtype`: float32, or already the wire dtype (as
  // GradientStaging converts them on the device), in which case the bytes go out as they are.
  // With int8_pushes the gradient must be float32: each partition is quantised into its frame
  // here, its residual kept for the next step's push of it (so a round's residual is settled
  // before the next round begins, even while the round travels).
  Status PushTensor(size_t tensor, const void* grad, wire::DType dtype, std::shared_ptr<const void> owner);
  // Whether tensor `tensor`'s gradient has been pushed in the step under way.
  bool Pushed(size_t tensor) const { return step_pushed_[tensor]; }
  Result<PullResult> FinishStep(const std::vector<float*>& weights);
  // FinishStep in two halves, for a trainer that computes on while the weights travel: SendStep
  // sends what is held back; AwaitStep then writes the weights that follow the step into
  // `weights`. Nothing else may use the client between the two, and the next BeginStep comes
  // after AwaitStep.
  Status SendStep();
  Result<PullResult> AwaitStep(const std::vector<float*>& weights);
  // Between SendStep and AwaitStep: takes in the replies that have arrived, without waiting,
  // writing their weights into `weights`; true once every reply of the step is in (AwaitStep then
  // returns at once). An error as AwaitStep's.
  Result<bool> PollStep(const std::vector<float*>& weights);

  // Per partition, the weight version that pushes report their gradients were computed on: the
  // version last received, unless set otherwise (a trainer computing on older weights than it
  // has received says which).
  const std::vector<uint64_t>& versions() const { return versions_; }
  void set_versions(std::vector<uint64_t> versions) { versions_ = std::move(versions); }

  // ssp: tells every server that this trainer, at `clock`, has no data for now, so no pull waits
  // for it until it pushes gradients again.
  Status MarkIdle(uint64_t clock);

  // Tensor bytes sent in pushes and received in weights so far (as on the wire).
  uint64_t bytes_pushed() const { return bytes_pushed_; }
  uint64_t bytes_pulled() const { return bytes_pulled_; }

 private:
  // A DEALER to server `s` at `endpoint`, with the options every such socket gets (and its CURVE
  // key from options_.server_keys when this trainer uses CURVE).
  Result<zmq::socket_t> MakeServerSocket(uint32_t s, const std::string& endpoint);
  // Partitions of one server held back in a streamed step, with their gradient frames.
  struct Outgoing {
    std::vector<uint32_t> partitions;
    std::vector<zmq::message_t> frames;
    std::vector<float> scales;  // int8 pushes: one per partition
    uint64_t bytes = 0;
  };

  // Sends one request per server; `build` makes server s's envelope and tensor frames.
  Status SendToAll(const std::function<void(uint32_t, Message*)>& build);
  // Sends server `server`'s held-back partitions of the streamed step as one Push.
  Status Flush(uint32_t server);
  // Waits until every server has sent `replies[s]` replies of kind `expected`, handing each to
  // `accept`.
  Status AwaitReplies(wire::Body expected, const char* request_name, std::vector<size_t> replies,
                      const std::function<Status(uint32_t, const Message&)>& accept);
  // The same for the replies already queued, without waiting: takes them from every server,
  // counting each down in `replies`; OK when none is left to take now.
  Status TakeReplies(wire::Body expected, const char* request_name, std::vector<size_t>& replies,
                     const std::function<Status(uint32_t, const Message&)>& accept, size_t* taken);
  // Whether the control channel says to stop waiting (a pause, a shutdown, a lost scheduler).
  Status CheckControl() const;
  std::vector<size_t> OnePerServer() const;
  // Writes the weights of a reply into `weights`. The partitions must be ones this client awaits
  // from that server (awaiting_) and are then no longer awaited.
  Status AcceptWeights(uint32_t server, const Message& reply, const std::vector<float*>& weights,
                       PullResult* result);
  // Protocol error naming a partition whose weights were asked for but not received.
  Status CheckAllReceived(const char* request_name) const;
  std::string ServerName(uint32_t server) const;

  zmq::context_t& context_;
  const ShardMap& map_;
  std::vector<std::string> endpoints_;
  Sender* sender_;
  ControlChannel* control_;
  Options options_;
  std::vector<zmq::socket_t> sockets_;
  std::vector<std::vector<uint32_t>> partitions_of_;  // per server
  std::vector<ReceiveLimits> reply_limits_;           // per server
  std::vector<uint64_t> left_out_;                    // per server: Weights.left_out last seen
  std::vector<std::vector<uint32_t>> partitions_of_tensor_;
  std::vector<uint64_t> versions_;  // per partition: last version pulled
  std::vector<bool> awaiting_;      // per partition: weights requested
  // The streamed step under way.
  uint64_t step_clock_ = 0;
  uint64_t bytes_pushed_ = 0;
  uint64_t bytes_pulled_ = 0;
  uint32_t step_batch_ = 0;
  uint32_t step_ahead_ = 0;
  RoundPush step_round_;
  std::vector<bool> step_pushed_;           // per tensor
  std::vector<Outgoing> outgoing_;          // per server
  std::vector<size_t> step_messages_;       // per server: pushes sent
  std::vector<size_t> step_awaited_;        // per server: replies to them not yet taken in
  PullResult step_result_;                  // what the replies taken in so far brought
  std::unique_ptr<Int8Feedback> feedback_;  // int8 pushes: the residuals, per partition
};

}  // namespace hetps
