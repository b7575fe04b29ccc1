// The scheduler's recovery from a lost server. A server whose connection closes (noticed within
// moments by the ConnectionMonitor) or that falls silent for the heartbeat timeout is declared
// lost; with checkpoints on, the trainers are paused (Pause), the lost rank waits for a new
// hetps-server to take it, and once every lost rank has a server holding its shard, the servers
// are restored from the newest checkpoint of this job: in sync mode all of them, so the model
// stays consistent, and the data position goes back to the checkpoint's; in async and ssp only
// the replacements, the others keeping their state. Without a checkpoint yet, the restored servers
// start from the initial weights, which the trainers offer again. Then the trainers go on (Resume).
// Part of the Scheduler class (scheduler/scheduler.h), on its loop thread like the rest.
#include <algorithm>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/safetensors_dtype.h"
#include "common/logging.h"
#include "common/transport.h"
#include "scheduler/scheduler.h"

namespace hetps {

void Scheduler::ServerLost(Member& member, const std::string& why) {
  const double silent_s = SecondsSince(member.last_heard);
  const uint32_t rank = member.rank;
  const std::string who = member.Describe();
  HETPS_LOG(WARNING) << who << " is lost: " << why;
  members_.MarkDead(member);
  if (monitor_) monitor_->Forget(member.routing_id);
  links_.Disconnect(rank);
  if (job_.checkpoint.dir.empty()) {
    return BeginShutdown(true,
                         who + " stopped (" + why +
                             "); the job cannot go on without its partitions (with checkpoint.dir set, a "
                             "new hetps-server would take its place)");
  }
  if (phase_ == Phase::kShuttingDown) return;
  replaced_.insert(member.routing_id);
  members_.Remove(member.routing_id);  // its rank is free for a replacement; `member` is gone
  if (phase_ == Phase::kGathering || phase_ == Phase::kStarting) {
    // No training yet: the job starts once another server has taken the rank.
    phase_ = Phase::kGathering;
    awaiting_restore_.clear();
    HETPS_LOG(INFO) << "waiting for a server to take rank " << rank;
    return;
  }
  Failure failure;
  failure.role = "server";
  failure.rank = rank;
  failure.cause = why;
  failure.at_seconds = SecondsSince(training_started_);
  failure.detected_after_s = silent_s;
  summary_.failures.push_back(failure);
  AbandonCut(who + " was lost");
  AbandonAdmission(who + " was lost");
  if (!recovery_) {
    // Not emplace(): clang decides whether a nested struct with member initialisers is default
    // constructible before the enclosing class is complete, and says no.
    Recovery recovery;
    recovery.started = Clock::now();
    recovery_ = std::move(recovery);
  }
  recovery_->lost.insert(rank);
  recovery_->failures.push_back(summary_.failures.size() - 1);
  // A restore under way (another server lost meanwhile) starts over once this rank is replaced;
  // the new generation makes the servers' acknowledgements of the old one not count.
  recovery_->restoring = false;
  awaiting_restore_.clear();
  sender_.set_generation(++generation_);
  const std::string reason =
      who + " was lost (" + why + "); waiting for a server to take rank " + std::to_string(rank);
  display_.Note(reason);
  for (Member* t : members_.Training()) {
    flatbuffers::FlatBufferBuilder fbb(128 + reason.size());
    auto body = wire::CreatePauseDirect(fbb, generation_, reason.c_str());
    SendTo(t->routing_id, sender_.Seal(fbb, wire::Body::Pause, body.Union()));
  }
}

bool Scheduler::AwaitingReplacement() const {
  return recovery_ && !recovery_->lost.empty() &&
         const_cast<Membership&>(members_).Count(wire::Role::Server) < job_.servers;
}

void Scheduler::MaybeRestoreServers() {
  if (!recovery_ || recovery_->restoring || members_.Count(wire::Role::Server) < job_.servers) return;
  for (Member* server : members_.Members(wire::Role::Server)) {
    if (!server->ready) return;
  }
  // A checkpoint still being written counts once committed.
  if (writer_) {
    writer_->Flush();
    PollWriter();
  }
  recovery_->restoring = true;
  Status sent = SendRestores(&recovery_->samples_at_checkpoint);
  if (!sent.ok()) BeginShutdown(true, "cannot recover from the loss of a server: " + sent.message());
}

Status Scheduler::SendRestore(uint32_t rank, const std::shared_ptr<SafetensorsFile>& file,
                              uint64_t checkpoint, uint64_t round, bool reset) {
  flatbuffers::FlatBufferBuilder fbb(1024 + (file ? 64 * file->tensors().size() : 0));
  std::vector<TensorInfo> tensors;
  std::vector<zmq::message_t> frames;
  if (file) {
    for (const SafetensorsFile::Tensor& t : file->tensors()) {
      TensorInfo info{t.name, t.shape, wire::DType::Other};
      for (wire::DType d : {wire::DType::F32, wire::DType::I64}) {
        if (SafetensorsDType(d) == t.dtype) info.dtype = d;
      }
      tensors.push_back(std::move(info));
      frames.push_back(BorrowFrame(file->data(t), t.bytes, file));
    }
  }
  auto body = wire::CreateRestore(fbb, generation_, checkpoint, round,
                                  file ? SignatureToWire(fbb, tensors) : 0, reset);
  HETPS_RETURN_IF_ERROR(
      links_.Send(rank, sender_.Seal(fbb, wire::Body::Restore, body.Union()), std::move(frames)));
  awaiting_restore_[rank] = sender_.last_seq();
  return Status::Ok();
}

Status Scheduler::SendRestores(uint64_t* samples_at_checkpoint) {
  Recovery& r = *recovery_;
  const bool sync = HasRounds(job_.mode, job_.diloco);
  std::optional<LoadedCheckpoint> checkpoint;
  if (!restorable_checkpoint_.empty()) {
    auto loaded = LoadCheckpoint(fs_, restorable_checkpoint_);
    if (!loaded.ok() && loaded.status().code() == Status::Code::kInvalidArgument &&
        !job_.checkpoint.dir.empty()) {
      // Damaged since it was written: the newest intact one of the job's directory instead.
      HETPS_LOG(WARNING) << "cannot restore " << restorable_checkpoint_ << ": " << loaded.status().message()
                         << "; looking for an older intact checkpoint in " << job_.checkpoint.dir;
      loaded = LoadCheckpoint(fs_, job_.checkpoint.dir);
      if (loaded.ok()) {
        for (const std::string& why : loaded->skipped) HETPS_LOG(WARNING) << "passed over: " << why;
      }
    }
    if (!loaded.ok()) return loaded.status();
    HETPS_RETURN_IF_ERROR(CheckSameJob(loaded->manifest, shard_map_->tensors(), shard_map_->partitions()));
    checkpoint = std::move(*loaded);
  }
  awaiting_restore_.clear();
  for (uint32_t rank = 0; rank < job_.servers; ++rank) {
    const bool replaced = r.lost.count(rank) > 0;
    if (!sync && !replaced) {
      HETPS_RETURN_IF_ERROR(SendRestore(rank, nullptr, 0, 0, /*reset=*/false));  // keeps its state
    } else if (checkpoint) {
      auto file = std::make_shared<SafetensorsFile>(std::move(checkpoint->files[rank]));
      HETPS_RETURN_IF_ERROR(
          SendRestore(rank, file, checkpoint->manifest.id, checkpoint->manifest.round, /*reset=*/false));
    } else {
      HETPS_RETURN_IF_ERROR(SendRestore(rank, nullptr, 0, 0, /*reset=*/true));
    }
  }
  r.checkpoint = checkpoint ? checkpoint->manifest.id : 0;
  r.reinitialize = !checkpoint;
  r.rollback = sync;
  if (sync) {
    const DataPosition start = checkpoint ? checkpoint->manifest.data : DataPosition{};
    chunks_.Restore(start);
    r.resume_clock = checkpoint ? checkpoint->manifest.round : 0;
    r.resume_epoch = std::min(start.epoch, job_.epochs - 1);
    *samples_at_checkpoint = checkpoint ? samples_at_checkpoint_ : 0;
  }
  HETPS_LOG(INFO) << "restoring "
                  << (checkpoint ? "checkpoint " + std::to_string(checkpoint->manifest.id)
                                 : "the initial weights")
                  << " on " << (sync ? "every server" : "the replaced servers")
                  << (sync ? "; training goes back to step " + std::to_string(r.resume_clock)
                           : std::string());
  return Status::Ok();
}

void Scheduler::FinishRecovery() {
  Recovery& r = *recovery_;
  const auto now = Clock::now();
  uint64_t samples_now = 0;
  for (Member* t : members_.Members(wire::Role::Trainer, false)) samples_now += t->progress.samples;
  const uint64_t retrained =
      r.rollback && samples_now > r.samples_at_checkpoint ? samples_now - r.samples_at_checkpoint : 0;
  for (size_t index : r.failures) {
    Failure& f = summary_.failures[index];
    f.recovery_seconds = SecondsSince(training_started_) - f.at_seconds;
    f.samples_retrained = retrained;
    f.checkpoint = r.checkpoint;
    f.recovered = true;
  }
  for (Member* t : members_.Training()) {
    flatbuffers::FlatBufferBuilder fbb(512);
    auto servers = ServerEndpointsToWire(fbb);
    auto body = wire::CreateResume(fbb, generation_, servers, r.rollback, r.resume_clock, r.resume_epoch,
                                   r.reinitialize);
    SendTo(t->routing_id, sender_.Seal(fbb, wire::Body::Resume, body.Union()));
  }
  if (r.rollback) ReopenTraining();
  // An evaluation asked for before the loss was abandoned by its trainer: ask again.
  eval_member_.clear();
  MaybeRequestEvaluation();
  const std::string line =
      "recovered in " + FormatDuration(std::chrono::duration<double>(now - r.started).count()) +
      (r.checkpoint > 0 ? " from checkpoint " + std::to_string(r.checkpoint) : " from the initial weights") +
      (r.rollback ? ", " + WithThousands(retrained) + " samples to train again" : std::string());
  HETPS_LOG(INFO) << line;
  display_.Note(line);
  recovery_.reset();
}

void Scheduler::ReopenTraining() {
  for (Member* t : members_.Members(wire::Role::Trainer)) {
    t->done = false;
    t->start_clock = 0;  // everyone goes on from the checkpoint's round, newcomers too
  }
  final_epoch_over_ = false;
  if (phase_ == Phase::kFinishing) phase_ = Phase::kTraining;
  if (final_eval_queued_) {
    final_eval_queued_ = false;
    evals_.erase(std::remove_if(evals_.begin(), evals_.end(), [](const EvalTask& e) { return e.final; }),
                 evals_.end());
  }
  all_done_ = {};
  final_cut_asked_ = false;
  final_evaluated_ = false;
}

void Scheduler::CheckRecoveryTimeout() {
  if (!recovery_ || phase_ == Phase::kShuttingDown) return;
  const auto limit = std::chrono::seconds(job_.checkpoint.recovery_timeout_s);
  if (Clock::now() - recovery_->started < limit) return;
  std::string ranks;
  for (uint32_t rank : recovery_->lost) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
  BeginShutdown(true, "server rank " + ranks + " was lost and not replaced within " +
                          std::to_string(job_.checkpoint.recovery_timeout_s) +
                          " s (checkpoint.recovery_timeout_s); start a hetps-server with --scheduler " +
                          endpoint_);
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::ServerEndpoint>>>
Scheduler::ServerEndpointsToWire(flatbuffers::FlatBufferBuilder& fbb) {
  std::vector<flatbuffers::Offset<wire::ServerEndpoint>> endpoints;
  for (Member* server : members_.Members(wire::Role::Server, /*live_only=*/false)) {
    endpoints.push_back(wire::CreateServerEndpointDirect(fbb, server->rank, server->endpoint.c_str(),
                                                         PublicKeyOf(server->key_name).c_str()));
  }
  return fbb.CreateVector(endpoints);
}

}  // namespace hetps
