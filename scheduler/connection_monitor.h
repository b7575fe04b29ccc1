// ConnectionMonitor: tells the scheduler within moments which member's control connection dropped
// (its process was killed or crashed, its machine went away), rather than after the heartbeat
// timeout.
//
// A ROUTER does not say which peer a closed connection belonged to, and the notification option
// that would (ZMQ_ROUTER_NOTIFY) is in ZeroMQ's draft API, which Debian's build leaves out. So: a
// socket monitor reports each closed connection's file descriptor, every received message carries
// the descriptor it arrived on (ZMQ_SRCFD, read from its first frame before anything copies it),
// and the monitor remembers, per member, the descriptor of its latest message. A member that reconnected has
// sent on a new descriptor since, so the old one closing does not count against it.
//
// The system reuses a closed descriptor for the next connection at once, and the monitor's events
// travel apart from the messages: a member's first message on a reused descriptor can be handled
// before the event saying its predecessor on that descriptor closed. The event of a closed
// connection is emitted before its descriptor is closed, so before any later connection can have
// that number and send on it: Note() reads the events waiting before recording a descriptor,
// and a close then counts only against whoever held the descriptor before.
//
// Owned by the scheduler's loop thread, which owns the ROUTER too and polls socket().
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <zmq.hpp>

namespace hetps {

class ConnectionMonitor {
 public:
  // A failed handshake on the ROUTER: the monitor event, its value and the endpoint it names.
  using HandshakeFailure = std::function<void(uint16_t event, uint32_t value, const std::string& address)>;

  // Starts monitoring `router` (which must outlive this object) for closed connections, and, with
  // `handshake_failed` (`handshake_events` being those events), for failed handshakes, which
  // TakeDropped() passes to it: a socket has one monitor, so this one serves CURVE's count too
  // (ZapHandler::HandshakeFailed).
  ConnectionMonitor(zmq::context_t& context, zmq::socket_t& router, HandshakeFailure handshake_failed = {},
                    int handshake_events = 0);
  // Stops monitoring.
  ~ConnectionMonitor();
  ConnectionMonitor(const ConnectionMonitor&) = delete;
  ConnectionMonitor& operator=(const ConnectionMonitor&) = delete;

  // Readable when events wait; poll it beside the ROUTER.
  zmq::socket_t& socket() { return events_; }

  // Records that a message from member `routing_id` arrived on descriptor `source_fd`
  // (Message::source_fd; -1: unknown, ignored).
  void Note(const std::string& routing_id, int source_fd);
  // No longer watches `routing_id` (it left or was declared dead).
  void Forget(const std::string& routing_id);

  // Reads the events waiting, without blocking; the members whose latest connection closed since
  // the previous call.
  std::vector<std::string> TakeDropped();

 private:
  // Reads the events waiting, without blocking, into dropped_.
  void ReadEvents();

  zmq::socket_t& router_;
  zmq::socket_t events_;
  HandshakeFailure handshake_failed_;
  std::map<std::string, int> fd_of_;  // member -> descriptor its latest message came on
  std::vector<std::string> dropped_;  // read, not yet taken
};

}  // namespace hetps
