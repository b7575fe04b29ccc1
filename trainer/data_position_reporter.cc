#include "trainer/data_position_reporter.h"

namespace hetps {

void DataPositionReporter::Note(const wire::CheckpointRequest& request) {
  pending_ = Pending{request.checkpoint(), request.round(), sync_ && !request.now()};
}

Status DataPositionReporter::MaybeReport(uint64_t clock, uint32_t epoch, uint64_t samples,
                                         const ChunkSampler& sampler, bool idle) {
  if (!pending_ || (pending_->at_round && clock < pending_->round && !idle)) return Status::Ok();
  const ChunkSampler::Position position = sampler.CurrentPosition();
  flatbuffers::FlatBufferBuilder fbb(128 + 16 * (position.finished.size() + position.held.size()));
  auto body = wire::CreateDataPositionDirect(fbb, pending_->checkpoint, clock, epoch, samples,
                                             &position.finished, &position.held, &position.held_next);
  pending_.reset();
  return control_->Send(sender_->Seal(fbb, wire::Body::DataPosition, body.Union()));
}

}  // namespace hetps
