#include "common/transport.h"

#include <cstddef>
#include <cstring>
#include <iterator>
#include <new>

#include <zmq_addon.hpp>

namespace hetps {

zmq::socket_t MakeSocket(zmq::context_t& context, zmq::socket_type type, const SocketOptions& options) {
  zmq::socket_t socket(context, type);
  socket.set(zmq::sockopt::linger, options.linger_ms);
  if (options.max_message_bytes > 0) socket.set(zmq::sockopt::maxmsgsize, options.max_message_bytes);
  if (!options.routing_id.empty()) socket.set(zmq::sockopt::routing_id, options.routing_id);
  if (type == zmq::socket_type::router && options.router_mandatory) {
    socket.set(zmq::sockopt::router_mandatory, 1);
  }
  if (options.send_timeout_ms >= 0) socket.set(zmq::sockopt::sndtimeo, options.send_timeout_ms);
  // Tensor traffic comes in bursts of many frames per step; the default of 1000 messages would
  // make a burst to several servers block or drop.
  socket.set(zmq::sockopt::sndhwm, 100000);
  socket.set(zmq::sockopt::rcvhwm, 100000);
  return socket;
}

Result<std::string> Bind(zmq::socket_t& socket, const std::string& endpoint) {
  try {
    socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
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

}  // namespace

Result<std::optional<Message>> TryReceive(zmq::socket_t& socket, bool router) {
  std::vector<zmq::message_t> frames;
  try {
    auto received = zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait);
    if (!received) return std::optional<Message>();
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(std::string("receive failed: ") + e.what());
  }
  Message message;
  size_t next = 0;
  if (router && next < frames.size()) message.routing_id = std::move(frames[next++]);
  // Read before Aligned() may copy the frame: the copy has no metadata. (A ROUTER's routing id
  // frame loses it too when the message was prefetched by a poll.)
  if (next < frames.size()) message.source_fd = zmq_msg_get(frames[next].handle(), ZMQ_SRCFD);
  if (next < frames.size()) message.envelope = Aligned(std::move(frames[next++]));
  message.tensors.reserve(frames.size() - next);
  for (; next < frames.size(); ++next) message.tensors.push_back(Aligned(std::move(frames[next])));
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
