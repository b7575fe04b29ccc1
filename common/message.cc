#include "common/message.h"

#include <cstring>

namespace hetps {

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
  return Status::Ok();
}

const char* KindName(wire::Body kind) {
  const char* name = wire::EnumNameBody(kind);
  return (name != nullptr && *name != '\0') ? name : "unknown";
}

zmq::message_t Sender::Seal(flatbuffers::FlatBufferBuilder& fbb, wire::Body kind,
                            flatbuffers::Offset<void> body) {
  auto envelope = wire::CreateEnvelope(fbb, role_, rank_.load(), seq_.fetch_add(1) + 1,
                                       membership_epoch_.load(), kind, body);
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
