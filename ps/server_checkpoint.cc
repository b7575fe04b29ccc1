// The server's side of checkpoints and recovery: the scheduler asks for the state at a cut
// (CheckpointRequest -> CheckpointState) and replaces it (Restore -> Ack), on the data socket,
// where tensors travel in frames of their own. A trainer joining a running job is announced
// there too (Membership -> Ack, or Error{Stale} when its first round has passed). A test-only
// fault (ServerOptions::ignore_cuts, from the command line) leaves checkpoint requests unanswered.
// Part of the Server class (ps/server.h), on its I/O thread like the rest.
#include "common/logging.h"
#include "common/transport.h"
#include "ps/server.h"

namespace hetps {

void Server::HandleSchedulerRequest(Message message) {
  if (message.kind() == wire::Body::Membership) {
    // A trainer joins: the scheduler starts it only once every server counts it from its round.
    const uint64_t seq = message.env().seq();
    Status adopted = ApplyMembership(*message.body<wire::Membership>());
    if (!adopted.ok()) {
      HETPS_LOG(INFO) << "cannot take a trainer yet: " << adopted.message();
      return Reply(std::move(message.routing_id),
                   sender_.MakeError(wire::ErrorCode::Stale, adopted.message(), seq));
    }
    flatbuffers::FlatBufferBuilder fbb(64);
    auto body = wire::CreateAck(fbb, seq);
    return Reply(std::move(message.routing_id), sender_.Seal(fbb, wire::Body::Ack, body.Union()));
  }
  if (!shard_) {
    return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                  "this server has no shard map yet");
  }
  switch (message.kind()) {
    case wire::Body::CheckpointRequest:
      return HandleCheckpointRequest(std::move(message));
    case wire::Body::Restore:
      return HandleRestore(std::move(message));
    default:
      return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                    std::string(KindName(message.kind())) + " from the scheduler on the data socket");
  }
}

bool Server::IgnoresCutRequest() {
  const int64_t nth = ++cut_requests_;
  if (options_.ignore_cuts == 0 || nth <= options_.ignore_cuts_after) return false;
  return options_.ignore_cuts < 0 || nth <= int64_t{options_.ignore_cuts_after} + options_.ignore_cuts;
}

void Server::HandleCheckpointRequest(Message message) {
  const auto* request = message.body<wire::CheckpointRequest>();
  const uint32_t checkpoint = request->checkpoint();
  if (IgnoresCutRequest()) {
    HETPS_LOG(WARNING) << "leaving checkpoint request " << checkpoint << " unanswered (fault injection)";
    return;
  }
  const uint64_t seq = message.env().seq();
  std::optional<uint64_t> round;
  if (!request->now()) round = request->round();
  auto routing_id = std::make_shared<zmq::message_t>(std::move(message.routing_id));
  const uint32_t generation = sender_.generation();
  Status status = shard_->TakeSnapshot(round, [this, routing_id, checkpoint, generation](Shard::Snapshot& s) {
    if (generation != sender_.generation()) return;  // a restore came in between
    flatbuffers::FlatBufferBuilder fbb(256 + 64 * s.tensors.size());
    auto tensors = SignatureToWire(fbb, s.tensors);
    auto body = wire::CreateCheckpointState(fbb, checkpoint, s.version, s.round, tensors);
    HETPS_LOG(DEBUG) << "checkpoint " << checkpoint << " cut at version " << s.version << ", round "
                     << s.round;
    Reply(std::move(*routing_id), sender_.Seal(fbb, wire::Body::CheckpointState, body.Union()),
          std::move(s.frames));
  });
  if (!status.ok()) {
    HETPS_LOG(INFO) << "cannot take checkpoint " << checkpoint << ": " << status.message();
    Reply(std::move(*routing_id), sender_.MakeError(wire::ErrorCode::Stale, status.message(), seq));
  }
}

void Server::HandleRestore(Message message) {
  const auto* restore = message.body<wire::Restore>();
  Status status;
  if (restore->tensors() != nullptr && restore->tensors()->size() > 0) {
    status = CheckSignatureClaims(*restore->tensors(), message.envelope.size());
    if (status.ok())
      status = shard_->Restore(SignatureFromWire(*restore->tensors()), message.tensors, restore->round());
  } else if (restore->reset()) {
    shard_->Reset();
  } else {
    // Keeps the state; only the generation changes below.
  }
  if (!status.ok()) {
    HETPS_LOG(ERROR) << "cannot restore checkpoint " << restore->checkpoint() << ": " << status.message();
    return Refuse(message, wire::ErrorCode::Refused, Refusal::Invalid, status.message());
  }
  sender_.set_generation(restore->generation());
  // Pulls waiting for rounds that no longer exist would never be answered; their trainers pull again.
  pending_.clear();
  rounds_.Forget();
  if (restore->tensors() != nullptr && restore->tensors()->size() > 0) {
    HETPS_LOG(INFO) << "restored checkpoint " << restore->checkpoint() << " (generation "
                    << restore->generation()
                    << (shard_->has_rounds() ? ", round " + std::to_string(restore->round()) : "") << ")";
  } else {
    HETPS_LOG(INFO) << (restore->reset() ? "back to uninitialised partitions" : "keeping this server's state")
                    << " (generation " << restore->generation() << ")";
  }
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateAck(fbb, message.env().seq());
  Reply(std::move(message.routing_id), sender_.Seal(fbb, wire::Body::Ack, body.Union()));
}

}  // namespace hetps
