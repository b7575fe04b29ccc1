// HandshakeMonitor: watches one socket's connections for failed ZeroMQ handshakes (a socket
// monitor), so that a process can say why a peer never answers: the peer refused its CURVE key,
// or one side speaks CURVE and the other not. Without it such a process would only time out.
//
// Owned by the thread that owns the watched socket; poll socket() beside it.
#pragma once

#include <optional>
#include <string>

#include <zmq.hpp>

namespace hetps {

class HandshakeMonitor {
 public:
  // Starts monitoring `watched` (which must outlive the monitor).
  HandshakeMonitor(zmq::context_t& context, zmq::socket_t& watched);
  ~HandshakeMonitor();
  HandshakeMonitor(const HandshakeMonitor&) = delete;
  HandshakeMonitor& operator=(const HandshakeMonitor&) = delete;

  // Readable (ZMQ_POLLIN) when events wait.
  zmq::socket_t& socket() { return events_; }

  // Reads the waiting events; why the handshake failed, if one failed for a reason (a refused
  // key, CURVE on one side only), or if three in a row were cut short with none succeeding.
  std::optional<std::string> TakeFailure();

 private:
  zmq::socket_t& watched_;
  zmq::socket_t events_;
  int silent_failures_ = 0;  // handshakes cut short without a reason since the last success
};

// Why a handshake failed, from the event and its value, in words a user can act on.
std::string DescribeHandshakeFailure(uint16_t event, uint32_t value);

}  // namespace hetps
