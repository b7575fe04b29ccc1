// ControlChannel: a server's or trainer's connection to the scheduler.
//
// Joins with retries and back-off, sends heartbeats, makes requests that wait for their reply,
// and queues every other message from the scheduler (ShardMap, Membership, EvalRequest, ...) in an
// inbox for the owner to take. A Shutdown is also remembered (shutdown()). Owned by one thread,
// which must call Service() regularly (at least every heartbeat interval); not thread-safe.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "common/message.h"
#include "common/status.h"

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
  };

  // What a member tells the scheduler about itself when joining.
  struct JoinInfo {
    wire::Role role = wire::Role::Unknown;
    std::string endpoint;  // servers: where trainers reach them
    std::string device;    // trainers: the torch device
  };

  // `sender` stamps outgoing envelopes and must outlive the channel.
  ControlChannel(zmq::context_t& context, Options options, Sender* sender);

  // Sends Join until the scheduler answers JoinAccepted (resent after 0.5 s, doubling up to 8 s)
  // and returns that answer; adopts its rank and heartbeat settings. Unavailable when the
  // scheduler does not answer within connect_timeout; FailedPrecondition with the scheduler's
  // reason when it refuses.
  Result<Message> Join(const JoinInfo& info);

  Status Send(zmq::message_t envelope);

  // Sends `request` and waits up to `timeout` for a message of kind `reply`, servicing the channel
  // meanwhile (other messages go to the inbox). FailedPrecondition with the scheduler's reason
  // when it answers Error; Unavailable on timeout, loss of the scheduler or Shutdown.
  Result<Message> Request(zmq::message_t request, wire::Body reply, std::chrono::milliseconds timeout);

  // Receives what has arrived without blocking, queues it, and sends a heartbeat when one is due.
  // Unavailable once the scheduler has been silent longer than its timeout.
  Status Service();

  // The oldest queued message from the scheduler, if any.
  std::optional<Message> TakeInbox();

  // Set once a Shutdown has arrived.
  const std::optional<ShutdownNotice>& shutdown() const { return shutdown_; }

  // The generation of a Pause from the scheduler (a server was lost) that the owner has not
  // cleared yet; 0: none. Request() gives up while it is set, unless its reply is already in.
  uint32_t paused() const { return paused_; }
  void ClearPause() { paused_ = 0; }

  // Builds the heartbeats this member sends (servers add their counters). Default: empty.
  void set_heartbeat_builder(std::function<zmq::message_t(Sender&)> builder);

  // For polling alongside other sockets; read it only through Service().
  zmq::socket_t& socket() { return socket_; }
  const std::string& scheduler_endpoint() const { return options_.scheduler; }

 private:
  // Handles one received message: bookkeeping kinds are consumed, the rest queued.
  void Accept(Message message);
  Status ReceiveAll();
  void SendHeartbeatIfDue();

  Options options_;
  Sender* sender_;
  zmq::socket_t socket_;
  std::deque<Message> inbox_;
  std::optional<ShutdownNotice> shutdown_;
  uint32_t paused_ = 0;
  std::function<zmq::message_t(Sender&)> heartbeat_builder_;
  std::chrono::steady_clock::time_point last_heard_;
  std::chrono::steady_clock::time_point last_heartbeat_;
  bool joined_ = false;
  uint64_t bad_messages_ = 0;
};

// "<hostname>" of this machine, for Join messages and logs.
std::string HostName();

}  // namespace hetps
