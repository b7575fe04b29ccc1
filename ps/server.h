// Server: one parameter-server process (or thread): joins the scheduler, receives its part of
// the shard map, and serves pushes and pulls from trainers until the scheduler shuts it down.
//
// Run() is the loop (the I/O thread); it owns the data ROUTER for trainers and the Shard, whose
// worker threads do the numeric work on the partitions and hand finished replies back to the loop,
// which sends them. The ControlChannel to the scheduler has a thread of its own, which sends the
// heartbeats (with the counters the loop publishes), so a long optimizer pass never looks like
// death. Every other method runs on the thread that calls Run(); bad_messages() may be read from
// any thread. The scheduler also talks to the data socket: it asks for checkpoints and restores
// state there (server_checkpoint.cc).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "common/control_channel.h"
#include "common/message.h"
#include "common/refusals.h"
#include "common/shard_map.h"
#include "common/status.h"
#include "common/transport.h"
#include "ps/round_timer.h"
#include "ps/shard.h"
#include "ps/trainer_identities.h"
#include "ps/trainer_pace.h"
#include "security/zap_handler.h"

namespace hetps {

struct ServerOptions {
  std::string scheduler = "tcp://127.0.0.1:7400";    // the scheduler's control endpoint
  std::string bind = "tcp://127.0.0.1:*";            // where trainers reach this server
  std::string advertise;                             // endpoint told to trainers; empty: the bound
                                                     // one (with this host's name for 0.0.0.0)
  int64_t max_message_bytes = int64_t{64} << 20;     // per frame; larger ones drop the connection.
                                                     // At least the job's partition frames.
  std::chrono::milliseconds connect_timeout{60000};  // give up joining the scheduler after this
  // Worker threads that own the partitions (optimizer steps, sums, reply frames), besides the
  // loop thread that owns the sockets. 1 does that work on the loop thread itself: best on a
  // host shared with trainers; on a machine of its own, about one per spare core.
  size_t threads = 1;
  // CURVE: this server's key pair and the scheduler's public key (security/curve_keys.h), and
  // the public keys by name its data socket admits (trainers' and the scheduler's). Empty:
  // plaintext.
  CurveKeys curve;
  AllowedKeys curve_allowed;
  // Fault injection for tests (hetps-server's hidden --inject-ignore-cuts): after answering the
  // first `ignore_cuts_after` checkpoint requests, leave `ignore_cuts` more unanswered (negative:
  // every one), as a server that never reaches a cut would; pushes, pulls and heartbeats go on.
  // Only the command line sets it; no message can.
  int ignore_cuts = 0;
  int ignore_cuts_after = 0;
};

class Server {
 public:
  Server(zmq::context_t& context, ServerOptions options);
  ~Server();

  // Binds the data socket. The endpoint trainers will use is then endpoint().
  Status Start();
  const std::string& endpoint() const { return endpoint_; }

  // The scheduler to join, when it is only known after construction. Call before Run().
  void set_scheduler(std::string endpoint) { options_.scheduler = std::move(endpoint); }

  // Joins the scheduler and serves until it says Shutdown (OK) or is lost (Unavailable). The
  // worker threads have ended when it returns, whatever the outcome.
  Status Run();

  // Messages refused so far (every reason), and by reason; readable from any thread.
  uint64_t bad_messages() const { return refusals_.total(); }
  RefusalTally refusals() const { return refusals_.Snapshot(); }

 private:
  struct PendingPull {
    zmq::message_t routing_id;
    uint32_t trainer = 0;
    std::vector<uint32_t> partitions;
    uint64_t clock = 0;
    bool latest = false;
    wire::DType dtype = wire::DType::F32;           // of the weights in the reply
    std::chrono::steady_clock::time_point arrived;  // for Weights.held_us
  };

  Status Serve();
  // Waits up to `timeout` for either socket or for finished work; whether the data socket is
  // readable.
  bool Poll(std::chrono::milliseconds timeout);
  Status HandleControl(Message message);
  void HandleData(Message message);
  // HandleData, with the last guard: an exception a handler throws (memory a message made it ask
  // for, a fault) drops that message, counted as `unexpected`, and the server goes on.
  void HandleDataGuarded(Message message);
  // Requests the scheduler makes on the data socket (server_checkpoint.cc): CheckpointRequest,
  // answered with CheckpointState; Restore, answered with Ack; Membership (a trainer joins),
  // answered with Ack or Error{Stale}.
  void HandleSchedulerRequest(Message message);
  void HandleCheckpointRequest(Message message);
  // Whether this checkpoint request is one the fault injection leaves unanswered (counts it).
  bool IgnoresCutRequest();
  void HandleRestore(Message message);
  // Adopts the live trainers a Membership names, unless an older one than the last adopted (the
  // scheduler sends them over both sockets). Sync: a newcomer whose first round a partition has
  // already completed is left out, and FailedPrecondition says so; the rest is adopted.
  Status ApplyMembership(const wire::Membership& membership);
  // Hands the live trainers to the shard and drops the pulls of trainers that left.
  void UpdateShardTrainers();
  // The scheduler's shard map, and the Shard built from it (server_shard_map.cc).
  Status HandleShardMap(const Message& message);
  // Refuses `message`: counts it under `why`, logs it (sparsely under a flood) and answers an
  // Error to its sender.
  void Refuse(const Message& message, wire::ErrorCode code, Refusal why, const std::string& reason);
  void Refuse(const Message& message, const Status& status);
  // ResourceExhausted when `trainer` has as many pulls waiting as this server keeps for one.
  Status CheckPendingPulls(uint32_t trainer) const;
  // Checks that the job's partitions fit this server's frame limit and builds the Shard.
  Status InstallShard(const wire::ShardMap& wire_map);
  void Reply(zmq::message_t routing_id, zmq::message_t envelope, std::vector<zmq::message_t> frames = {});
  void AnswerReadyPulls();
  // Counts the sync rounds whose last reply has gone out (RoundTimer::Settle).
  void SettleRounds();
  // mode: auto: adopts the scheduler's switch (logged; ignored with a warning when it does not apply).
  void SwitchMode(const wire::ModeSwitch& change);

  // The counters heartbeats and Goodbye carry, with the trainers the pulls held now wait for
  // (ServerStats.waits): per trainer, the longest-waiting pull's hold.
  struct Wait {
    Shard::Hold hold;
    std::chrono::milliseconds waited{0};
    std::chrono::milliseconds pace{0};  // TrainerPace::Of
  };
  struct Counters {
    Shard::Stats shard;
    uint64_t pulls = 0;
    RefusalTally refusals;
    SecondsHistogram round_seconds;
    std::vector<Wait> waits;
  };
  std::vector<Wait> Waits(std::chrono::steady_clock::time_point now) const;
  Counters CurrentStats() const;
  // Copies the counters for the control channel's thread, which sends the heartbeats, at most
  // every kStatsPublishInterval.
  void PublishStats();
  Counters PublishedStats() const;
  static zmq::message_t BuildHeartbeat(Sender& sender, const Counters& counters, bool goodbye);
  static constexpr std::chrono::milliseconds kStatsPublishInterval{100};

  zmq::context_t& context_;
  ServerOptions options_;
  Sender sender_{wire::Role::Server};
  zmq::socket_t data_;
  std::string endpoint_;
  std::unique_ptr<ControlChannel> control_;
  std::unique_ptr<ShardMap> map_;
  std::unique_ptr<Shard> shard_;
  std::deque<PendingPull> pending_;
  TrainerIdentities identities_;  // which connection is which trainer, as the scheduler says
  // The live trainers as the newest Membership (or the shard map) says, with the first clocks
  // of those that joined a running job; kept before the shard map too, for a late map.
  uint32_t membership_epoch_ = 0;
  std::vector<uint32_t> live_trainers_;
  std::map<uint32_t, uint64_t> from_clocks_;
  std::string scheduler_token_;  // the routing id of the scheduler's connection (shard map)
  ReceiveLimits data_limits_;    // what one message from a trainer may hold, set by the shard map
  RefusalCounter refusals_;
  std::unique_ptr<ZapHandler> zap_;  // with CURVE: admits trainers' keys (counts in refusals_)
  uint64_t pulls_answered_ = 0;
  RoundTimer rounds_;
  TrainerPace paces_;
  uint64_t stale_messages_ = 0;  // data messages of an older generation, dropped
  uint64_t undelivered_ = 0;     // replies dropped: the trainer's queue full, or the trainer gone
  int64_t cut_requests_ = 0;     // checkpoint requests received (for the fault injection)
  std::chrono::steady_clock::time_point stats_published_{};
  mutable std::mutex stats_mutex_;
  Counters published_;  // guarded by stats_mutex_
};

}  // namespace hetps
