// ControlChannel: a server's or trainer's connection to the scheduler.
//
// A loop thread of its own owns the DEALER socket to the scheduler. It sends what other threads
// hand it (Join, Send, Request), sends a heartbeat every interval whatever the owner is doing, so
// that a long training step, evaluation or optimizer pass never makes a live member look dead,
// receives everything the scheduler sends and queues it in an inbox (ShardMap, Membership,
// EvalRequest, ...; a Shutdown is also remembered), and notices when the scheduler has been silent
// longer than its timeout, or refused the connection's handshake (a CURVE key it does not admit,
// or CURVE on one side only).
//
// Threads: every public method may be called from any thread; none touches the socket, they hand
// work to the loop thread through a queue and a wake-up. The owner usually takes the inbox from
// one thread, waiting with WaitForInbox() or polling wake_fd() beside its own sockets. The
// destructor sends what is still queued (for up to `linger`) and joins the loop thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "common/message.h"
#include "common/status.h"
#include "common/transport.h"
#include "common/wake_pipe.h"

namespace hetps {

struct ShutdownNotice {
  bool failed = false;
  std::string reason;
};

class ControlChannel {
 public:
  struct Options {
    std::string scheduler;                               // e.g. tcp://127.0.0.1:7400
    std::chrono::milliseconds connect_timeout{60000};    // give up joining after this
    std::chrono::milliseconds heartbeat_interval{1000};  // replaced by the scheduler's value
    std::chrono::milliseconds scheduler_timeout{30000};  // replaced by the scheduler's value
    std::chrono::milliseconds linger{2000};              // closing waits this long for unsent messages
    CurveKeys curve{};  // CURVE: this member's key pair and the scheduler's public key; empty: none
  };

  // What a member tells the scheduler about itself when joining.
  struct JoinInfo {
    wire::Role role = wire::Role::Unknown;
    std::string endpoint;  // servers: where trainers reach them
    std::string device;    // trainers: the torch device
  };

  // Starts the loop thread, which connects to the scheduler (nothing is sent before Join).
  // `sender` stamps outgoing envelopes and must outlive the channel.
  ControlChannel(zmq::context_t& context, Options options, Sender* sender);
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Sends Join until the scheduler answers JoinAccepted (resent after 0.5 s, doubling up to 8 s)
  // and returns that answer; adopts its rank, the job's recovery generation and the heartbeat
  // settings, and heartbeats start.
  // Unavailable when the scheduler does not answer within connect_timeout; FailedPrecondition with
  // the scheduler's reason when it refuses; InvalidArgument for a malformed scheduler address.
  Result<Message> Join(const JoinInfo& info);

  // Hands a sealed envelope to the loop thread, which sends it in the order given. The channel's
  // failure (see Check) once it has failed.
  Status Send(zmq::message_t envelope);

  // Sends `request` (a sealed envelope) and waits up to `timeout` for a message of kind `reply`
  // (other messages stay in the inbox). FailedPrecondition with the scheduler's reason when it
  // answers with an Error naming the request; Timeout; Unavailable on Shutdown or failure.
  Result<Message> Request(zmq::message_t request, wire::Body reply, std::chrono::milliseconds timeout);

  // OK while the channel works; Unavailable (sticky) once the scheduler has been silent longer
  // than its timeout after Join, or the socket failed; FailedPrecondition (sticky) once the
  // scheduler refused the connection's handshake.
  Status Check() const;

  // The oldest queued message from the scheduler, if any.
  std::optional<Message> TakeInbox();
  // Waits up to `timeout` until the inbox holds a message, a Shutdown has arrived or the channel
  // has failed.
  void WaitForInbox(std::chrono::milliseconds timeout);
  // A descriptor for zmq::poll: readable once a message was queued since TakeInbox() last found
  // the inbox empty (so a loop that takes the whole inbox each time it wakes never misses one),
  // and once the channel has failed.
  int wake_fd() const { return inbox_wake_.read_fd(); }

  // Set once a Shutdown has arrived, or the member left (Leave).
  std::optional<ShutdownNotice> shutdown() const;

  // The member leaves the job of its own accord: `goodbye` (a sealed envelope) goes out as its
  // last message when it has joined, heartbeats stop, and from then on the channel behaves as
  // after a Shutdown that did not fail, saying `reason`, so that every wait returns at once.
  void Leave(zmq::message_t goodbye, const std::string& reason);

  // The generation of a Pause from the scheduler (a server was lost) that the owner has not
  // cleared yet; 0: none. Request() gives up while it is set, unless its reply is already in.
  uint32_t paused() const;
  void ClearPause();

  // The token of the newest reply the scheduler served (DataSamples, ModelFilePiece) that this
  // channel has received, 0 before the first: the receipt of a trainer's next DataRequest or
  // ModelFileRequest, which tells the scheduler that it and every reply before it have left the
  // scheduler's send queue (docs/protocol.md, "Served data").
  uint64_t served_receipt() const;

  // Builds the heartbeats this member sends (servers add their counters). Runs on the loop
  // thread, so it must only read what is safe to read from there. Default: an empty Heartbeat.
  void set_heartbeat_builder(std::function<zmq::message_t(Sender&)> builder);

  const std::string& scheduler_endpoint() const { return options_.scheduler; }

 private:
  using Clock = std::chrono::steady_clock;

  // The loop thread: owns the socket from creation to close.
  void Loop();
  // Loop thread: sends what other threads queued; returns whether the channel is stopping.
  bool SendQueued(zmq::socket_t& socket);
  void ReceiveAll(zmq::socket_t& socket);
  // Loop thread: bookkeeping kinds are consumed, the rest queued in the inbox.
  void Accept(Message message);
  void SendHeartbeatIfDue(zmq::socket_t& socket);
  void CheckSchedulerSilence();
  // Records the first failure and wakes every waiter.
  void Fail(Status status);
  // Holding mutex_: the first queued message that `match` accepts, taken out of the inbox.
  std::optional<Message> TakeMatching(const std::function<bool(const Message&)>& match);

  const Options options_;
  Sender* sender_;
  zmq::context_t& context_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // the inbox, shutdown_ or failure_ changed
  std::deque<zmq::message_t> outbox_;
  std::deque<Message> inbox_;
  std::optional<ShutdownNotice> shutdown_;
  uint32_t paused_ = 0;
  uint64_t served_receipt_ = 0;
  Status failure_;
  std::function<zmq::message_t(Sender&)> heartbeat_builder_;
  bool joined_ = false;  // heartbeats and the silence check start with it
  bool left_ = false;    // Leave(): no heartbeat after the goodbye
  bool stopping_ = false;
  std::chrono::milliseconds heartbeat_interval_;
  std::chrono::milliseconds scheduler_timeout_;

  // The loop thread's own state.
  Clock::time_point last_heard_;
  Clock::time_point last_heartbeat_;
  uint64_t bad_messages_ = 0;

  WakePipe outbox_wake_;  // wakes the loop thread: something to send, or stopping
  WakePipe inbox_wake_;   // wakes the owner: see wake_fd()
  std::thread thread_;    // last: starts once everything above is built
};

// "<hostname>" of this machine, for Join messages and logs.
std::string HostName();

}  // namespace hetps
