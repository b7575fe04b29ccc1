// Message: one multipart ZeroMQ message of the hetps protocol (schemas/messages.fbs), and the
// helpers that seal outgoing envelopes and verify incoming ones.
//
// A Message owns its frames; the envelope and tensor bytes are read in place from them. A Message
// is not thread-safe; it is built and consumed by the thread that owns the socket it crosses.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <flatbuffers/flatbuffers.h>
#include <zmq.hpp>

#include "common/status.h"
#include "messages_generated.h"

namespace hetps {

struct Message {
  zmq::message_t routing_id;            // the peer, on a ROUTER socket; empty otherwise
  zmq::message_t envelope;              // frame 0: a wire::Envelope
  std::vector<zmq::message_t> tensors;  // frames 1..n: raw tensor bytes
  // What ZeroMQ knows of the connection it came over: the peer's IP address (TCP), and with
  // CURVE the user id the authentication handler gave its key (the key's name). Empty if unknown.
  std::string peer_address;
  std::string user_id;
  // The descriptor of the connection it arrived on (ZMQ_SRCFD; a ROUTER's only way to tell its
  // peers' connections apart), or -1.
  int source_fd = -1;
  // Set when the message broke the receiver's limits (ReceiveLimits): what was exceeded. Frames
  // beyond the limit were dropped unread; the envelope is kept when it fit.
  std::string over_limit;

  // The envelope. Only valid after VerifyEnvelope(*this) returned OK.
  const wire::Envelope& env() const { return *wire::GetEnvelope(envelope.data()); }
  wire::Body kind() const { return env().body_type(); }
  template <typename T>
  const T* body() const {
    return env().template body_as<T>();
  }
};

// Largest envelope accepted by default; tensor bytes travel in their own frames.
constexpr size_t kDefaultMaxEnvelopeBytes = 16u << 20;

// "trainer 1 at 10.0.0.5", or just the sender when the address is unknown, for logs.
std::string DescribePeer(const Message& message);

// Checks frame 0 of `message`: not empty, at most `max_bytes`, a FlatBuffers-verified Envelope
// with a body whose vectors of 64-bit values are aligned (the verifier leaves that to us).
// Protocol error with the reason otherwise; never reads outside the frame.
Status VerifyEnvelope(const Message& message, size_t max_bytes = kDefaultMaxEnvelopeBytes);

// Name of a message kind ("Push", "ShardMap", ...), for logs and errors.
const char* KindName(wire::Body kind);

// Stamps outgoing envelopes with the sender's role, rank, sequence number, membership epoch and
// recovery generation.
// Owned by one component and shared by its threads: the fields are atomics, so a control
// channel's loop thread may seal heartbeats while the component's own thread seals requests.
class Sender {
 public:
  explicit Sender(wire::Role role) : role_(role) {}

  void set_rank(uint32_t rank) { rank_.store(rank); }
  uint32_t rank() const { return rank_.load(); }
  void set_membership_epoch(uint32_t epoch) { membership_epoch_.store(epoch); }
  // The recovery generation stamped on every envelope (see Envelope.generation).
  void set_generation(uint32_t generation) { generation_.store(generation); }
  uint32_t generation() const { return generation_.load(); }
  wire::Role role() const { return role_; }

  // Wraps `body` (built in `fbb`) in an envelope, finishes `fbb` and returns the bytes as a
  // frame. Each call takes the next sequence number.
  zmq::message_t Seal(flatbuffers::FlatBufferBuilder& fbb, wire::Body kind, flatbuffers::Offset<void> body);

  // A ready Error message answering the message numbered `seq`.
  zmq::message_t MakeError(wire::ErrorCode code, const std::string& reason, uint64_t seq);

  // A message of a kind whose table has no fields (ShardReady, HeartbeatAck, Ack).
  zmq::message_t MakeEmpty(wire::Body kind);

  // The number of the last message sealed (by any thread).
  uint64_t last_seq() const { return seq_.load(); }

 private:
  const wire::Role role_;
  std::atomic<uint32_t> rank_{0};
  std::atomic<uint32_t> membership_epoch_{0};
  std::atomic<uint32_t> generation_{0};
  std::atomic<uint64_t> seq_{0};
};

// Describes the sender of a verified message for logs and errors: "trainer 1", "server 0".
std::string DescribeSender(const wire::Envelope& env);

}  // namespace hetps
