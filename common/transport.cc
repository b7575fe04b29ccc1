#include "common/transport.h"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <limits>
#include <new>

namespace hetps {

zmq::socket_t MakeSocket(zmq::context_t& context, zmq::socket_type type, const SocketOptions& options) {
  zmq::socket_t socket(context, type);
  socket.set(zmq::sockopt::linger, options.linger_ms);
  if (options.max_message_bytes > 0) socket.set(zmq::sockopt::maxmsgsize, options.max_message_bytes);
  if (!options.routing_id.empty()) socket.set(zmq::sockopt::routing_id, options.routing_id);
  if (type == zmq::socket_type::router && options.router_mandatory) {
    socket.set(zmq::sockopt::router_mandatory, 1);
  }
  if (options.send_timeout.count() >= 0) {
    // ZeroMQ takes an int; a longer timeout saturates rather than wrapping to -1 ("never").
    const auto longest = std::chrono::milliseconds(std::numeric_limits<int>::max());
    socket.set(zmq::sockopt::sndtimeo, static_cast<int>(std::min(options.send_timeout, longest).count()));
  }
  socket.set(zmq::sockopt::sndhwm, options.send_hwm);
  socket.set(zmq::sockopt::rcvhwm, options.receive_hwm);
  if (options.curve_server) {
    socket.set(zmq::sockopt::curve_server, 1);
    socket.set(zmq::sockopt::curve_secretkey, options.curve.secret_key);
  } else if (!options.curve.server_key.empty()) {
    socket.set(zmq::sockopt::curve_serverkey, options.curve.server_key);
    socket.set(zmq::sockopt::curve_publickey, options.curve.public_key);
    socket.set(zmq::sockopt::curve_secretkey, options.curve.secret_key);
  }
  return socket;
}

Result<std::string> Bind(zmq::socket_t& socket, const std::string& endpoint) {
  try {
    socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    // A port in use may be free again soon (a restart can help); a malformed endpoint never is.
    if (e.num() == EADDRINUSE) return Status::Unavailable("cannot bind " + endpoint + ": " + e.what());
    return Status::InvalidArgument("cannot bind " + endpoint + ": " + e.what());
  }
  return socket.get(zmq::sockopt::last_endpoint);
}

Status Connect(zmq::socket_t& socket, const std::string& endpoint) {
  try {
    socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return Status::InvalidArgument("cannot connect to " + endpoint + ": " + e.what());
  }
  return Status::Ok();
}

namespace {

constexpr size_t kFrameAlignment = alignof(std::max_align_t);

void FreeAlignedCopy(void* data, void* /*hint*/) {
  ::operator delete(data, std::align_val_t(kFrameAlignment));
}

// ZeroMQ hands out small and medium frames as slices of its receive buffer at any byte offset.
// Envelopes (FlatBuffers) and tensors (floats) are read in place, so those few frames are copied
// to aligned memory; large frames have buffers of their own and are already aligned.
zmq::message_t Aligned(zmq::message_t frame) {
  const size_t size = frame.size();
  if (size == 0 || reinterpret_cast<uintptr_t>(frame.data()) % kFrameAlignment == 0) return frame;
  void* copy = ::operator new(size, std::align_val_t(kFrameAlignment));
  std::memcpy(copy, frame.data(), size);
  return zmq::message_t(copy, size, &FreeAlignedCopy, nullptr);
}

// A property of the connection a frame came over ("Peer-Address", "User-Id"); empty if none.
std::string Property(zmq::message_t& frame, const char* name) {
  const char* value = zmq_msg_gets(frame.handle(), name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

Result<std::optional<Message>> TryReceive(zmq::socket_t& socket, bool router, const ReceiveLimits& limits) {
  Message message;
  size_t frames = 0;  // after the routing id
  uint64_t bytes = 0;
  size_t max_frames = limits.max_frames;
  uint64_t max_bytes = limits.max_bytes;
  try {
    zmq::message_t frame;
    if (!socket.recv(frame, zmq::recv_flags::dontwait)) return std::optional<Message>();
    bool first = true;
    while (true) {
      // The rest of a multipart message is already here: ZeroMQ delivers it whole.
      if (!first && !socket.recv(frame)) break;
      const bool is_id = first && router;
      if (is_id && !limits.privileged_id.empty() && frame.size() == limits.privileged_id.size() &&
          std::memcmp(frame.data(), limits.privileged_id.data(), frame.size()) == 0) {
        max_frames = limits.privileged_max_frames;
        max_bytes = limits.privileged_max_bytes;
      }
      first = false;
      const bool more = frame.more();
      if (!is_id) {
        ++frames;
        bytes += frame.size();
        if (frames == 1) {
          message.peer_address = Property(frame, "Peer-Address");
          message.user_id = Property(frame, "User-Id");
          // Read before Aligned() may copy the frame: a copy has no metadata. (A ROUTER's routing
          // id frame loses it too when a poll prefetched the message.)
          message.source_fd = zmq_msg_get(frame.handle(), ZMQ_SRCFD);
        }
        if (message.over_limit.empty() && (frames > max_frames || bytes > max_bytes)) {
          message.over_limit = frames > max_frames ? "more than " + std::to_string(max_frames) + " frames"
                                                   : "more than " + std::to_string(max_bytes) + " bytes";
        }
      }
      if (is_id) {
        message.routing_id = std::move(frame);
      } else if (message.over_limit.empty()) {
        if (frames == 1) {
          message.envelope = Aligned(std::move(frame));
        } else {
          message.tensors.push_back(Aligned(std::move(frame)));
        }
      }
      if (!more) break;
      frame = zmq::message_t();
    }
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(std::string("receive failed: ") + e.what());
  }
  if (!message.over_limit.empty()) {
    message.over_limit = "a message of " + std::to_string(frames) + " frames and " + std::to_string(bytes) +
                         " bytes is over the limit (" + message.over_limit + ")";
    message.tensors.clear();
  }
  return std::optional<Message>(std::move(message));
}

Status Send(zmq::socket_t& socket, Message message, SendMode mode) {
  const auto last = zmq::send_flags::none;
  const auto more = zmq::send_flags::sndmore;
  const auto flag = [mode](zmq::send_flags f) {
    return mode == SendMode::kDontWait ? (f | zmq::send_flags::dontwait) : f;
  };
  try {
    // The first frame decides: ZeroMQ delivers a multipart message whole or not at all.
    bool first = true;
    auto send_one = [&](zmq::message_t& frame, bool is_last) -> bool {
      auto sent = socket.send(frame, flag(is_last ? last : more));
      if (!sent && first) return false;
      first = false;
      return true;
    };
    const bool has_id = message.routing_id.size() > 0;
    const size_t tensor_count = message.tensors.size();
    if (has_id && !send_one(message.routing_id, false)) {
      return Status::Unavailable("send queue to peer is full or timed out");
    }
    if (!send_one(message.envelope, tensor_count == 0)) {
      return Status::Unavailable("send queue to peer is full or timed out");
    }
    for (size_t i = 0; i < tensor_count; ++i) send_one(message.tensors[i], i + 1 == tensor_count);
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) return Status::Unavailable("peer is no longer connected");
    return Status::Unavailable(std::string("send failed: ") + e.what());
  }
  return Status::Ok();
}

namespace {

void ReleaseOwner(void* /*data*/, void* hint) {
  delete static_cast<std::shared_ptr<const void>*>(hint);
}

}  // namespace

zmq::message_t BorrowFrame(const void* data, size_t size, std::shared_ptr<const void> owner) {
  if (size == 0) return zmq::message_t();
  auto* hint = new std::shared_ptr<const void>(std::move(owner));
  // ZeroMQ never writes through the pointer of a message it sends.
  return zmq::message_t(const_cast<void*>(data), size, &ReleaseOwner, hint);
}

zmq::message_t CopyFrame(const zmq::message_t& frame) {
  return zmq::message_t(frame.data(), frame.size());
}

std::vector<bool> PollReadable(const std::vector<zmq::socket_t*>& sockets,
                               std::chrono::milliseconds timeout) {
  std::vector<zmq::pollitem_t> items;
  items.reserve(sockets.size());
  for (zmq::socket_t* socket : sockets) {
    items.push_back({static_cast<void*>(*socket), 0, ZMQ_POLLIN, 0});
  }
  std::vector<bool> readable(sockets.size(), false);
  try {
    zmq::poll(items.data(), items.size(), timeout);
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) throw;
    return readable;
  }
  for (size_t i = 0; i < items.size(); ++i) readable[i] = (items[i].revents & ZMQ_POLLIN) != 0;
  return readable;
}

}  // namespace hetps
