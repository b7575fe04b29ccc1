#include "common/handshake_monitor.h"

#include <atomic>
#include <cstring>

namespace hetps {
namespace {

constexpr int kFailures = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                          ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
// A handshake cut short without a reason may be a network accident; so many in a row, with none
// succeeding, are taken as the peer refusing this process.
constexpr int kSilentFailuresInARow = 3;

std::string UniqueEndpoint() {
  static std::atomic<uint64_t> next{0};
  return "inproc://hetps-handshake-monitor-" + std::to_string(next.fetch_add(1));
}

}  // namespace

std::string DescribeHandshakeFailure(uint16_t event, uint32_t value) {
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
    return "the peer refused this process's CURVE key (status " + std::to_string(value) +
           "): its public key is not among the keys the peer admits (security.allowed, or the "
           "peer's keys directory)";
  }
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL && value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
    return "one side uses CURVE and the other does not (give every process --curve-keys, or none)";
  }
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
    return "the peer closed every connection during the handshake: most likely one side uses CURVE "
           "and the other does not (give every process --curve-keys, or none), or the peer's "
           "public key is not the one this process has for it";
  }
  if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL && value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC) {
    return "the CURVE handshake failed: the peer's key is not the public key this process has for it";
  }
  return "the connection handshake failed (ZeroMQ event " + std::to_string(event) + ", value " +
         std::to_string(value) + ")";
}

HandshakeMonitor::HandshakeMonitor(zmq::context_t& context, zmq::socket_t& watched)
    : watched_(watched), events_(context, zmq::socket_type::pair) {
  const std::string endpoint = UniqueEndpoint();
  // Both calls fail only on a closed socket or a used endpoint, which are bugs here.
  zmq_socket_monitor(static_cast<void*>(watched_), endpoint.c_str(),
                     kFailures | ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  events_.set(zmq::sockopt::linger, 0);
  events_.connect(endpoint);
}

HandshakeMonitor::~HandshakeMonitor() {
  zmq_socket_monitor(static_cast<void*>(watched_), nullptr, 0);
}

std::optional<std::string> HandshakeMonitor::TakeFailure() {
  std::optional<std::string> failure;
  while (true) {
    zmq::message_t event;
    if (!events_.recv(event, zmq::recv_flags::dontwait)) return failure;
    zmq::message_t address;
    if (event.more()) (void)events_.recv(address, zmq::recv_flags::none);
    if (event.size() < 6) continue;
    uint16_t id = 0;
    uint32_t value = 0;
    std::memcpy(&id, event.data(), 2);
    std::memcpy(&value, static_cast<const char*>(event.data()) + 2, 4);
    if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
      silent_failures_ = 0;
    } else if (id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
      if (++silent_failures_ >= kSilentFailuresInARow && !failure)
        failure = DescribeHandshakeFailure(id, value);
    } else if (!failure && (id & kFailures) != 0) {
      failure = DescribeHandshakeFailure(id, value);
    }
  }
}

}  // namespace hetps
