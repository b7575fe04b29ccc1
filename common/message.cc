#include "common/message.h"

#include <cstdint>
#include <cstring>

namespace hetps {
namespace {

// FlatBuffers' verifier (2.0) checks that a vector's length field is 4-byte aligned, not that
// 8-byte elements are 8-byte aligned within the buffer, and a forged buffer can place them
// otherwise (reading them is then undefined behaviour where the buffer is aligned). A builder
// always aligns them relative to the buffer's start, so the check is on the offset, not on the
// address: ZeroMQ hands over received frames at whatever address its buffers give. Every vector
// of 64-bit values in schemas/messages.fbs is checked here.
class WideVectors {
 public:
  explicit WideVectors(const uint8_t* buffer) : buffer_(reinterpret_cast<uintptr_t>(buffer)) {}

  bool Aligned(const wire::Envelope& env) const {
    switch (env.body_type()) {
      case wire::Body::RegisterModel:
        return Shapes(env.body_as_RegisterModel()->signature());
      case wire::Body::ShardMap:
        return Shapes(env.body_as_ShardMap()->tensors());
      case wire::Body::CheckpointState:
        return Shapes(env.body_as_CheckpointState()->tensors());
      case wire::Body::Restore:
        return Shapes(env.body_as_Restore()->tensors());
      case wire::Body::Heartbeat:
        return Stats(env.body_as_Heartbeat()->server_stats());
      case wire::Body::Goodbye:
        return Stats(env.body_as_Goodbye()->server_stats());
      case wire::Body::Push:
        return Vector(env.body_as_Push()->versions());
      case wire::Body::Weights:
        return Vector(env.body_as_Weights()->versions());
      case wire::Body::DataPosition:
        return Vector(env.body_as_DataPosition()->held_next());
      case wire::Body::EvalReport:
        return Buffers(env.body_as_EvalReport()->buffers());
      default:
        return true;
    }
  }

 private:
  template <typename T>
  bool Vector(const flatbuffers::Vector<T>* vector) const {
    // An empty vector has nothing to read, and a builder may leave its (unused) start unaligned.
    return vector == nullptr || vector->size() == 0 ||
           (reinterpret_cast<uintptr_t>(vector->Data()) - buffer_) % alignof(T) == 0;
  }

  bool Shapes(const flatbuffers::Vector<flatbuffers::Offset<wire::TensorSpec>>* tensors) const {
    if (tensors == nullptr) return true;
    for (const wire::TensorSpec* tensor : *tensors) {
      if (!Vector(tensor->shape())) return false;
    }
    return true;
  }

  bool Buffers(const flatbuffers::Vector<flatbuffers::Offset<wire::BufferValue>>* buffers) const {
    if (buffers == nullptr) return true;
    for (const wire::BufferValue* buffer : *buffers) {
      if (!Vector(buffer->spec()->shape())) return false;
    }
    return true;
  }

  bool Stats(const wire::ServerStats* stats) const {
    return stats == nullptr || (Vector(stats->staleness_counts()) && Seconds(stats->round_seconds()) &&
                                Seconds(stats->apply_seconds()));
  }

  bool Seconds(const wire::SecondsHistogram* histogram) const {
    return histogram == nullptr || Vector(histogram->counts());
  }

  uintptr_t buffer_;
};

}  // namespace

Status VerifyEnvelope(const Message& message, size_t max_bytes) {
  const size_t size = message.envelope.size();
  if (size == 0) return Status::Protocol("empty envelope frame");
  if (size > max_bytes) {
    return Status::Protocol("envelope of " + std::to_string(size) + " bytes exceeds the limit of " +
                            std::to_string(max_bytes));
  }
  const auto* bytes = static_cast<const uint8_t*>(message.envelope.data());
  // Depth and table limits well above what any valid envelope needs, far below what would let a
  // hostile buffer make the verifier work hard.
  flatbuffers::Verifier verifier(bytes, size, /*max_depth=*/16, /*max_tables=*/1u << 20);
  if (!wire::VerifyEnvelopeBuffer(verifier)) {
    return Status::Protocol("envelope of " + std::to_string(size) + " bytes fails FlatBuffers verification");
  }
  const wire::Envelope* env = wire::GetEnvelope(bytes);
  if (env->body_type() == wire::Body::NONE || env->body() == nullptr) {
    return Status::Protocol("envelope has no body");
  }
  // The generated verifier accepts kinds it does not know without looking inside them.
  if (env->body_type() > wire::Body::MAX) {
    return Status::Protocol("envelope has an unknown message kind " +
                            std::to_string(static_cast<int>(env->body_type())));
  }
  if (!WideVectors(bytes).Aligned(*env)) {
    return Status::Protocol(std::string(KindName(env->body_type())) +
                            " envelope holds a vector of 64-bit values at a misaligned offset");
  }
  return Status::Ok();
}

const char* KindName(wire::Body kind) {
  const char* name = wire::EnumNameBody(kind);
  return (name != nullptr && *name != '\0') ? name : "unknown";
}

zmq::message_t Sender::Seal(flatbuffers::FlatBufferBuilder& fbb, wire::Body kind,
                            flatbuffers::Offset<void> body) {
  auto envelope = wire::CreateEnvelope(fbb, role_, rank_.load(), seq_.fetch_add(1) + 1,
                                       membership_epoch_.load(), kind, body, generation_.load());
  fbb.Finish(envelope);
  return zmq::message_t(fbb.GetBufferPointer(), fbb.GetSize());
}

zmq::message_t Sender::MakeError(wire::ErrorCode code, const std::string& reason, uint64_t seq) {
  flatbuffers::FlatBufferBuilder fbb(256 + reason.size());
  auto body = wire::CreateErrorDirect(fbb, code, reason.c_str(), seq);
  return Seal(fbb, wire::Body::Error, body.Union());
}

zmq::message_t Sender::MakeEmpty(wire::Body kind) {
  flatbuffers::FlatBufferBuilder fbb(64);
  // Each of these tables has no fields, so one empty table serves for every kind.
  const auto start = fbb.StartTable();
  flatbuffers::Offset<void> body(fbb.EndTable(start));
  return Seal(fbb, kind, body);
}

std::string DescribePeer(const Message& message) {
  std::string who =
      message.envelope.size() > 0 && VerifyEnvelope(message).ok() ? DescribeSender(message.env()) : "a peer";
  if (!message.user_id.empty()) who += " (key " + message.user_id + ")";
  if (!message.peer_address.empty()) who += " at " + message.peer_address;
  return who;
}

std::string DescribeSender(const wire::Envelope& env) {
  switch (env.role()) {
    case wire::Role::Server:
      return "server " + std::to_string(env.sender());
    case wire::Role::Trainer:
      return "trainer " + std::to_string(env.sender());
    case wire::Role::Scheduler:
      return "scheduler";
    default:
      return "unknown peer";
  }
}

}  // namespace hetps
