// ZapHandler: ZeroMQ's authentication handler (ZAP, RFC 27) for one process's CURVE server
// sockets. Every CURVE handshake on a socket of the context asks it whether to admit the peer's
// public key: a listed key is admitted under its name (the connection's user id, which messages
// carry as Message::user_id), any other is refused, counted as `unauthenticated` and logged with
// the peer's address (sparsely under a flood). Handshakes that fail before a key is checked (a
// peer without CURVE) on a watched socket are counted and logged alike.
//
// A ZeroMQ context has one handler endpoint (inproc://zeromq.zap.01), so one ZapHandler serves
// every socket of its context. It owns a thread of its own with the REP socket; the destructor
// stops and joins it. allowed() may be read from any thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "common/refusals.h"
#include "common/status.h"
#include "security/curve_keys.h"

namespace hetps {

class ZapHandler {
 public:
  // Binds the handler endpoint of `context` and starts answering. `allowed` maps key names to
  // public keys (their roles are the caller's to check: a connection carries its key's name);
  // `refusals` (may be null) counts refused handshakes and must outlive the
  // handler; `what` names the process in logs ("the scheduler"). FailedPrecondition when the
  // context has a handler already.
  static Result<std::unique_ptr<ZapHandler>> Start(zmq::context_t& context, const AllowedKeys& allowed,
                                                   RefusalCounter* refusals, std::string what);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Also counts (as unauthenticated) and logs the handshakes on `socket`, a CURVE server, that
  // fail before a key is checked: a peer without CURVE, or one whose handshake is broken. Call
  // from the thread that owns `socket`; `socket` must outlive the handler. It installs the
  // socket's monitor, and a socket has only one: a socket monitored for other reasons too reports
  // its failed handshakes through HandshakeFailed instead.
  void Watch(zmq::socket_t& socket);
  // Counts and logs one failed handshake: the monitor event `event` with its `value`, from a peer
  // of `address`. Any thread.
  void HandshakeFailed(uint16_t event, uint32_t value, const std::string& address);
  // The monitor events HandshakeFailed takes.
  static constexpr int kHandshakeFailureEvents =
      ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL;

  uint64_t admitted() const { return admitted_.load(); }
  uint64_t refused() const { return refused_.load(); }

 private:
  ZapHandler(zmq::context_t& context, zmq::socket_t socket, std::map<std::string, std::string> names_by_key,
             RefusalCounter* refusals, std::string what);
  void Loop();
  // Answers one request; false when the socket failed.
  bool Answer();
  // Counts and logs the failed handshakes a watched socket reported.
  void TakeHandshakeFailures(zmq::socket_t& events);
  void Refused(const std::string& address, const std::string& reason);

  zmq::context_t& context_;
  zmq::socket_t socket_;  // the handler thread's
  std::mutex watch_mutex_;
  std::vector<std::unique_ptr<zmq::socket_t>> new_watches_;  // guarded; the thread takes them over
  std::vector<std::unique_ptr<zmq::socket_t>> watches_;      // the handler thread's
  const std::map<std::string, std::string> names_;           // 32-byte binary public key -> name
  RefusalCounter* refusals_;
  const std::string what_;
  std::atomic<uint64_t> admitted_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts once everything above is built
};

}  // namespace hetps
