// Socket helpers over cppzmq: creating configured sockets, binding to a resolved endpoint, and
// moving whole Messages (common/message.h) in and out without copying tensor bytes.
//
// ZeroMQ sockets are not thread-safe: every socket here belongs to the thread that created it;
// other threads hand work to that thread instead of touching the socket.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "common/message.h"
#include "common/status.h"

namespace hetps {

// CURVE keys as Z85 text (security/curve_keys.h reads them from files); all empty: plaintext.
struct CurveKeys {
  std::string public_key;
  std::string secret_key;
  std::string server_key;  // a client's: the public key of the server it connects to
  bool on() const { return !secret_key.empty(); }
};

struct SocketOptions {
  int linger_ms = 2000;            // how long close() keeps unsent messages
  int64_t max_message_bytes = -1;  // per frame; a peer sending more is disconnected (-1 = none)
  std::string routing_id;          // DEALER: a stable id, so the peer knows us across reconnects
  bool router_mandatory = true;    // ROUTER: sending to an unknown peer fails instead of vanishing
  // Blocking sends give up after this (negative: never). Longer than ZeroMQ can express (about
  // 24.8 days) means that longest timeout, never "never".
  std::chrono::milliseconds send_timeout{-1};
  // Whole messages queued per connection in each direction (ZeroMQ's high-water marks). A
  // receiver that falls behind stops reading from the peer's connection (TCP back-pressure); a
  // ROUTER sending without blocking finds a full queue and drops the message.
  int send_hwm = 1000;
  int receive_hwm = 1000;
  // CURVE: a server needs its secret key and admits whom the context's authentication handler
  // admits (security/zap_handler.h); a client (curve.server_key set) needs its key pair and the
  // server's public key, and never talks to a server without that key.
  bool curve_server = false;
  CurveKeys curve;
};

// What one received message may hold, beyond which it is refused (Message::over_limit). ZeroMQ
// assembles a multipart message whole before handing it over, so these bound what hetps keeps,
// not what ZeroMQ buffered; ZeroMQ's own bound is max_message_bytes per frame.
struct ReceiveLimits {
  ReceiveLimits() = default;
  ReceiveLimits(size_t frames, uint64_t bytes) : max_frames(frames), max_bytes(bytes) {}

  size_t max_frames = SIZE_MAX;     // frames after the routing id, envelope included
  uint64_t max_bytes = UINT64_MAX;  // bytes of those frames together
  // ROUTER: messages from the peer whose routing id is `privileged_id` (when not empty) may hold
  // up to these instead (a server's data socket: the scheduler's Restore).
  std::string privileged_id;
  size_t privileged_max_frames = 0;
  uint64_t privileged_max_bytes = 0;
};

zmq::socket_t MakeSocket(zmq::context_t& context, zmq::socket_type type, const SocketOptions& options);

// Binds `socket` to `endpoint` (e.g. "tcp://127.0.0.1:*") and returns the endpoint actually
// bound, with the chosen port. Naming the endpoint when it cannot be bound: Unavailable when its
// port is in use (it may be free later), InvalidArgument otherwise (e.g. no such address here).
Result<std::string> Bind(zmq::socket_t& socket, const std::string& endpoint);

// Connects `socket` to `endpoint`; InvalidArgument naming it when the address is malformed.
// (ZeroMQ connects in the background; an unreachable peer shows up as silence, not an error.)
Status Connect(zmq::socket_t& socket, const std::string& endpoint);

// Receives one whole multipart message if one is waiting, without blocking. On a ROUTER
// (`router` true) the first frame is the peer's routing id. The envelope and tensor frames are
// aligned for in-place reads (a frame ZeroMQ delivers unaligned is copied); the peer's address
// and CURVE user id are taken from the connection. A message lacking an envelope frame is still
// returned (with an empty envelope), and so is one over `limits` (with over_limit saying why and
// only the frames within them), so the caller can refuse and count it.
Result<std::optional<Message>> TryReceive(zmq::socket_t& socket, bool router,
                                          const ReceiveLimits& limits = {});

enum class SendMode { kBlock, kDontWait };

// Sends `message` (its routing id first when not empty). kDontWait: Unavailable when the peer's
// queue is full instead of blocking. Unavailable when the peer is unknown (ROUTER) or the
// socket's send timeout expires.
Status Send(zmq::socket_t& socket, Message message, SendMode mode = SendMode::kBlock);

// A frame over `size` bytes at `data` without copying them: `owner` is kept alive until ZeroMQ
// has finished with the frame (possibly on its I/O thread), then released.
zmq::message_t BorrowFrame(const void* data, size_t size, std::shared_ptr<const void> owner);

// A copy of a routing id frame, for addressing a reply.
zmq::message_t CopyFrame(const zmq::message_t& frame);

// Waits up to `timeout` for any of `sockets` to become readable; returns the readable flags.
// A negative timeout waits forever.
std::vector<bool> PollReadable(const std::vector<zmq::socket_t*>& sockets, std::chrono::milliseconds timeout);

}  // namespace hetps
