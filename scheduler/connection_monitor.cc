#include "scheduler/connection_monitor.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "common/logging.h"

namespace hetps {

ConnectionMonitor::ConnectionMonitor(zmq::context_t& context, zmq::socket_t& router,
                                     HandshakeFailure handshake_failed, int handshake_events)
    : router_(router),
      events_(context, zmq::socket_type::pair),
      handshake_failed_(std::move(handshake_failed)) {
  const int events = ZMQ_EVENT_DISCONNECTED | (handshake_failed_ ? handshake_events : 0);
  // Unique per monitor, so that several schedulers in one test process do not collide.
  const std::string address =
      "inproc://hetps-connection-monitor-" + std::to_string(reinterpret_cast<uintptr_t>(this));
  if (zmq_socket_monitor(static_cast<void*>(router_), address.c_str(), events) != 0) {
    HETPS_LOG(WARNING) << "cannot monitor the control socket (" << zmq_strerror(zmq_errno())
                       << "); lost members will be noticed by their silence only";
    return;
  }
  events_.set(zmq::sockopt::linger, 0);
  events_.connect(address);
}

ConnectionMonitor::~ConnectionMonitor() {
  zmq_socket_monitor(static_cast<void*>(router_), nullptr, 0);
}

void ConnectionMonitor::Note(const std::string& routing_id, int fd) {
  if (fd < 0) return;
  ReadEvents();
  auto [it, added] = fd_of_.insert_or_assign(routing_id, fd);
  if (added) HETPS_LOG(DEBUG) << "member " << routing_id << " talks on descriptor " << fd;
}

void ConnectionMonitor::Forget(const std::string& routing_id) {
  fd_of_.erase(routing_id);
}

std::vector<std::string> ConnectionMonitor::TakeDropped() {
  ReadEvents();
  return std::exchange(dropped_, {});
}

void ConnectionMonitor::ReadEvents() {
  while (true) {
    zmq::message_t event;
    zmq::message_t address;
    try {
      if (!events_.recv(event, zmq::recv_flags::dontwait)) break;
      // The second frame (the endpoint) always follows the first.
      if (event.more()) (void)events_.recv(address, zmq::recv_flags::none);
    } catch (const zmq::error_t&) {
      break;
    }
    if (event.size() < 6) continue;
    uint16_t kind = 0;
    uint32_t fd = 0;
    std::memcpy(&kind, event.data(), sizeof(kind));
    std::memcpy(&fd, static_cast<const char*>(event.data()) + 2, sizeof(fd));
    if (kind != ZMQ_EVENT_DISCONNECTED) {
      // The value of any other event is not a descriptor: a failed handshake's is its reason.
      if (handshake_failed_) {
        handshake_failed_(kind, fd, std::string(static_cast<const char*>(address.data()), address.size()));
      }
      continue;
    }
    for (auto it = fd_of_.begin(); it != fd_of_.end();) {
      if (it->second == static_cast<int>(fd)) {
        dropped_.push_back(it->first);
        it = fd_of_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace hetps
