// ServerLinks: the scheduler's own connections to the servers' data sockets, one DEALER per
// server rank, over which it asks for checkpoints and restores state. Those messages carry the
// model's tensors in frames of their own, so they stay off the control channel.
//
// With CURVE the links are CURVE clients with the scheduler's key pair, each checking its server's
// public key (the servers admit the scheduler's key like any member's).
//
// Owned by the scheduler's loop thread, which polls sockets() and calls every method.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "common/message.h"
#include "common/status.h"
#include "common/transport.h"

namespace hetps {

class ServerLinks {
 public:
  // `token`: the routing id of every link, which the servers know from the shard map.
  ServerLinks(zmq::context_t& context, std::string token) : context_(context), token_(std::move(token)) {}
  const std::string& token() const { return token_; }

  // CURVE on every later connection, with the scheduler's key pair `own` (its server_key unused).
  void UseCurve(CurveKeys own) { own_ = std::move(own); }

  // Connects to server `rank` at `endpoint`, replacing an earlier connection to that rank
  // (whose unsent messages are dropped). With CURVE, `server_key` is the server's public key.
  // InvalidArgument for a malformed endpoint; FailedPrecondition with CURVE and no server key.
  Status Connect(uint32_t rank, const std::string& endpoint, const std::string& server_key);
  void Disconnect(uint32_t rank);
  bool Connected(uint32_t rank) const { return links_.count(rank) > 0; }

  // Sends without blocking. Unavailable when there is no connection to `rank` or its queue is full.
  Status Send(uint32_t rank, zmq::message_t envelope, std::vector<zmq::message_t> frames = {});

  // The sockets to poll for replies.
  std::vector<zmq::socket_t*> sockets();
  // Every reply waiting, with the rank of the server that sent it.
  std::vector<std::pair<uint32_t, Message>> ReceiveAll();

 private:
  zmq::context_t& context_;
  const std::string token_;
  CurveKeys own_;
  std::map<uint32_t, std::unique_ptr<zmq::socket_t>> links_;
};

}  // namespace hetps
