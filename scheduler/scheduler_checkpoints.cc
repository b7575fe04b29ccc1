// The scheduler's checkpoints: when to take one, the cut (sync: every server at the same round,
// every trainer reporting where its data stood at that step; async and ssp: the trainers' data
// positions first, then each server at once), handing the result to the writer thread, the final
// checkpoint and the model at the end of the job, and resuming a job from a checkpoint. Part of
// the Scheduler class (scheduler/scheduler.h), on its loop thread like the rest.
#include <algorithm>
#include <limits>

#include "checkpoint/checkpoint_store.h"
#include "common/logging.h"
#include "common/transport.h"
#include "scheduler/scheduler.h"

namespace hetps {
namespace {

// A sync cut lies this far ahead of the fastest trainer (doubled after each miss), so that every
// trainer and server hears of it before reaching it.
constexpr double kCutLeadSeconds = 2.0;
// A cut that has not come back checkpoint.cut_timeout_s after it was asked for (sync: after its
// round was due) is abandoned: a trainer or server too slow to reach it, or one that never answers.
// The final checkpoint is asked for again after it is abandoned; after this many attempts the job
// ends as failed, saying why, rather than waiting for it forever.
constexpr uint32_t kFinalCutAttempts = 3;

}  // namespace

void Scheduler::MaybeCheckpoint() {
  const auto now = Clock::now();
  if (cut_ && now > cut_->deadline()) {
    AbandonCut("it did not complete within " + std::to_string(job_.checkpoint.cut_timeout_s) + " s" +
               (cut_->options().round ? " after its round was due" : "") +
               " (checkpoint.cut_timeout_s; nothing yet from " + cut_->Missing() + ")");
    if (phase_ == Phase::kShuttingDown) return;
  }
  if (!writer_ || recovery_) return;
  if (phase_ == Phase::kFinishing && !final_cut_asked_) {
    if (cut_) AbandonCut("the job is finishing");
    return BeginCheckpoint(/*final=*/true);
  }
  // Not while a trainer joins: the cut's data positions would miss the newcomer's.
  if (job_.checkpoint.dir.empty() || phase_ != Phase::kTraining || cut_ || admission_) return;
  if (last_cut_ < training_started_) last_cut_ = training_started_;  // the first one an interval in
  uint64_t clock = 0;
  for (Member* t : members_.Training()) clock = std::max(clock, t->progress.clock);
  const auto& c = job_.checkpoint;
  const bool by_time = c.interval_seconds > 0 && now - last_cut_ >= std::chrono::seconds(c.interval_seconds);
  const bool by_steps = c.interval_steps > 0 && clock >= last_cut_clock_ + c.interval_steps;
  if (!by_time && !by_steps) return;
  // A sync cut's round is placed by the trainers' speed: wait for their first progress reports.
  if (HasRounds(job_.mode, job_.diloco) && clock == 0) return;
  BeginCheckpoint(/*final=*/false);
}

void Scheduler::BeginCheckpoint(bool final) {
  const bool sync = HasRounds(job_.mode, job_.diloco);
  CheckpointCut::Options o;
  o.number = ++cut_number_;
  o.final = final;
  o.servers = job_.servers;
  o.chunks_per_epoch = chunks_.chunks_per_epoch();
  o.timeout = std::chrono::seconds(job_.checkpoint.cut_timeout_s);
  uint64_t newest_clock = 0;
  for (Member* t : members_.Training()) {
    newest_clock = std::max(newest_clock, t->progress.clock);
    if (!final && !t->done) o.trainers.push_back(t->rank);
  }
  if (sync && !final) {
    // Progress reports are up to one interval old: the trainers are that much further on. A diloco
    // round lasts seconds, so a shorter lead (in rounds) reaches the cut as safely and sooner.
    const double base = job_.mode == ConsistencyMode::kDiloco ? kCutLeadSeconds / 4 : kCutLeadSeconds;
    const double lead = base * static_cast<double>(1u << std::min<uint32_t>(cut_misses_, 5)) +
                        job_.progress_interval_ms / 1000.0;
    o.round = StepAhead(lead);
    o.lead = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(lead));
  }
  cut_.emplace(o, chunks_.Completed());
  servers_asked_ = false;
  last_cut_ = Clock::now();
  last_cut_clock_ = newest_clock;
  if (final) final_cut_asked_ = true;
  HETPS_LOG(DEBUG) << (final ? "final checkpoint" : "checkpoint") << " cut " << o.number
                   << (o.round ? " at round " + std::to_string(*o.round) : std::string(" now"));
  for (Member* t : members_.Training()) {
    if (std::count(o.trainers.begin(), o.trainers.end(), t->rank) > 0)
      SendTo(t->routing_id, CheckpointRequest());
  }
  // Async and ssp: the servers cut once every trainer has said where its data stands, so that
  // no chunk counts as trained whose gradients a server's copy lacks.
  if (sync || final || o.trainers.empty()) AskServersForState();
}

zmq::message_t Scheduler::CheckpointRequest() {
  const CheckpointCut::Options& o = cut_->options();
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateCheckpointRequest(fbb, o.number, o.round.value_or(0), !o.round.has_value());
  return sender_.Seal(fbb, wire::Body::CheckpointRequest, body.Union());
}

void Scheduler::AskServersForState() {
  servers_asked_ = true;
  for (uint32_t rank = 0; rank < job_.servers; ++rank) {
    Status sent = links_.Send(rank, CheckpointRequest());
    if (!sent.ok()) return AbandonCut(sent.message());
  }
}

std::string Scheduler::ForeignChunk(uint32_t trainer, const wire::DataPosition& position) const {
  if (const auto* finished = position.finished()) {
    for (uint32_t chunk : *finished) {
      // Trained whole and not yet reported (or reported already, on its way): held, or complete.
      if (!chunks_.Holds(trainer, chunk) && !chunks_.IsComplete(chunk)) {
        return "names chunk " + std::to_string(chunk) + " finished, which was not granted to it";
      }
    }
  }
  if (const auto* held = position.held()) {
    for (uint32_t chunk : *held) {
      if (!chunks_.Holds(trainer, chunk)) {
        return "names chunk " + std::to_string(chunk) + " in progress, which it does not hold";
      }
    }
  }
  return {};
}

void Scheduler::HandleDataPosition(Member& member, const Message& message) {
  const auto* position = message.body<wire::DataPosition>();
  if (!cut_ || position->checkpoint() != cut_->options().number) return;  // an abandoned cut
  // Only the trainers the cut asked, once each, and only about the chunks they hold: a position
  // from anyone else cannot complete a cut, nor one naming chunks never granted mark them trained.
  if (member.role != wire::Role::Trainer || !cut_->AwaitsPosition(member.rank)) {
    return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                  member.Describe() + " sent a data position that checkpoint " +
                      std::to_string(cut_->options().number) + " did not ask it for");
  }
  if (const std::string foreign = ForeignChunk(member.rank, *position); !foreign.empty()) {
    const std::string why = member.Describe() + "'s data position " + foreign;
    Refuse(message, wire::ErrorCode::Refused, Refusal::Invalid, why);
    ++cut_misses_;
    return AbandonCut(why);
  }
  Status added = cut_->AddPosition(member.rank, *position);
  if (!added.ok()) {
    ++cut_misses_;
    return AbandonCut(added.message());
  }
  if (cut_->HasAllPositions() && !servers_asked_) AskServersForState();
  MaybeFinishCut();
}

void Scheduler::HandleServerReply(uint32_t rank, Message message) {
  Status valid = VerifyEnvelope(message, std::numeric_limits<size_t>::max());
  if (!valid.ok()) {
    HETPS_LOG(WARNING) << "server " << rank << " sent a malformed reply: " << valid.message();
    return;
  }
  if (HandleAdmissionReply(rank, message)) return;
  switch (message.kind()) {
    case wire::Body::CheckpointState: {
      const auto* state = message.body<wire::CheckpointState>();
      if (!cut_ || state->checkpoint() != cut_->options().number) return;
      Status added = cut_->AddState(rank, std::move(message));
      if (!added.ok()) return AbandonCut(added.message());
      return MaybeFinishCut();
    }
    case wire::Body::Ack: {
      // Answers to Memberships of earlier admissions, or to an earlier Restore, are late.
      auto restore = awaiting_restore_.find(rank);
      if (message.env().generation() != generation_ || restore == awaiting_restore_.end() ||
          restore->second != message.body<wire::Ack>()->seq()) {
        return;
      }
      awaiting_restore_.erase(restore);
      if (!awaiting_restore_.empty()) return;
      if (recovery_) return FinishRecovery();
      if (resume_ && phase_ == Phase::kStarting) return StartTraining();
      return;
    }
    case wire::Body::Error: {
      const auto* error = message.body<wire::Error>();
      const std::string reason = "server " + std::to_string(rank) + ": " + error->reason()->str();
      if (error->code() == wire::ErrorCode::Stale) {
        ++cut_misses_;
        if (cut_) AbandonCut(reason);
        return;
      }
      if (awaiting_restore_.count(rank) > 0) {
        return BeginShutdown(true, "cannot restore the servers from the checkpoint: " + reason);
      }
      HETPS_LOG(WARNING) << reason;
      return;
    }
    default:
      HETPS_LOG(WARNING) << "server " << rank << " sent an unexpected " << KindName(message.kind());
  }
}

void Scheduler::MaybeFinishCut() {
  if (!cut_ || !cut_->HasAllPositions() || !cut_->HasAllStates()) return;
  const CheckpointCut& cut = *cut_;
  const bool final = cut.options().final;
  Manifest m;
  m.created_utc = UtcNow();
  m.mode = ModeName(job_.mode);
  m.partition_bytes = job_.partition_bytes;
  m.servers = job_.servers;
  m.tensors = shard_map_->tensors();
  m.partitions = shard_map_->partitions();
  m.job_yaml = JobOptionsToYaml(WithoutRunPaths(job_, options_.run_dir));
  m.data = cut.Position(job_.epochs);
  if (final) m.data.samples_trained = SamplesTrained();
  std::vector<ServerState> states = cut.States();
  if (HasRounds(job_.mode, job_.diloco)) {
    for (const ServerState& s : states) m.round = std::max(m.round, s.round);
  }
  cut_misses_ = 0;
  if (!job_.checkpoint.dir.empty()) {
    samples_of_cut_.push_back(m.data.samples_trained);
    writer_->Write(m, states);
  }
  if (final && !job_.model_out.empty()) {
    // Written once the final evaluation has reported the model's buffers (FinishJob).
    pending_model_ =
        PendingModel{m.tensors,
                     m.partitions,
                     states,
                     {{"hetps_mode", m.mode}, {"hetps_weight_version", std::to_string(cut.Version())}}};
    // What the weights' shapes cannot tell (examples/gpt/sample.py reads it).
    if (job_.model == "gpt")
      pending_model_->metadata["hetps_gpt_heads"] = std::to_string(job_.model_options.heads);
  }
  HETPS_LOG(DEBUG) << "cut " << cut.options().number << " complete at version " << cut.Version();
  cut_.reset();
}

void Scheduler::AbandonCut(const std::string& why) {
  if (!cut_) return;
  ++summary_.checkpoints.failed;
  const bool final = cut_->options().final;
  cut_.reset();
  if (!final) {
    HETPS_LOG(INFO) << "checkpoint abandoned: " << why;
    return;
  }
  // The final checkpoint is asked for again (after a recovery, say), a few times.
  if (++final_cut_failures_ >= kFinalCutAttempts) {
    return BeginShutdown(true, "the final checkpoint failed " + std::to_string(final_cut_failures_) +
                                   " times; the last time: " + why);
  }
  HETPS_LOG(WARNING) << "final checkpoint abandoned (attempt " << final_cut_failures_ << " of "
                     << kFinalCutAttempts << "): " << why << "; asking for it again";
  final_cut_asked_ = false;
}

void Scheduler::PollWriter() {
  if (!writer_) return;
  for (const CheckpointWriter::Outcome& o : writer_->TakeFinished()) {
    const bool model = o.kind == CheckpointWriter::Outcome::Kind::kModel;
    CheckpointSummary& c = summary_.checkpoints;
    if (!o.status.ok()) {
      HETPS_LOG(ERROR) << (model ? "the model was not written: " : "a checkpoint was not written: ")
                       << o.status.message();
      if (model) output_error_ = "the model was not written: " + o.status.message();
      if (!model) ++c.failed;
    } else if (model) {
      summary_.model_file = o.path;
      HETPS_LOG(INFO) << "the trained model is in " << o.path;
    } else {
      ++c.count;
      c.last_id = o.id;
      c.bytes = o.bytes;
      c.mean_write_seconds += (o.seconds - c.mean_write_seconds) / static_cast<double>(c.count);
      restorable_checkpoint_ = o.path;
      HETPS_LOG(INFO) << "checkpoint " << o.id << " committed in " << o.path << " (" << o.bytes / (1 << 20)
                      << " MiB in " << o.seconds << " s)";
    }
    if (!model && !samples_of_cut_.empty()) {
      // Checkpoints reach the writer in the order of their cuts: the oldest cut is this one.
      if (o.status.ok()) samples_at_checkpoint_ = samples_of_cut_.front();
      samples_of_cut_.pop_front();
    }
  }
}

void Scheduler::FinishJob() {
  if (phase_ != Phase::kFinishing || !final_evaluated_) return;
  if (writer_) {
    // The final checkpoint and the model are written first; Tick calls again.
    if (!final_cut_asked_ || cut_ || writer_->Busy()) return;
    if (pending_model_) {
      writer_->WriteModel(job_.model_out, std::move(pending_model_->tensors),
                          std::move(pending_model_->partitions), std::move(pending_model_->states),
                          std::move(pending_model_->metadata), model_buffers_);
      pending_model_.reset();
      return;
    }
    PollWriter();
  }
  if (!output_error_.empty()) return BeginShutdown(true, output_error_);
  BeginShutdown(false, "");
}

void Scheduler::StopAfterCheckpoint() {
  // Finishing: the final checkpoint and the model are moments away; a second signal stops at once.
  if (phase_ == Phase::kShuttingDown || phase_ == Phase::kFinishing) return;
  const std::string stopped = "the scheduler was asked to stop (signal)";
  const auto now = Clock::now();
  if (!stop_asked_) {
    stop_asked_ = now;
    checkpoint_before_stop_ = restorable_checkpoint_;
    if (phase_ != Phase::kTraining || !writer_ || job_.checkpoint.dir.empty()) {
      return BeginShutdown(true, stopped + ResumeHint(), /*requested=*/true);
    }
    HETPS_LOG(WARNING) << "asked to stop: taking a checkpoint first (a second signal stops at once)";
    display_.Note("stopping: taking a checkpoint first");
  }
  if (stop_cut_ == 0) {
    // Ours begins once any other cut, an admission or a recovery is over.
    if (!cut_ && !admission_ && !recovery_) {
      BeginCheckpoint(/*final=*/false);
      stop_cut_ = cut_number_;
    }
  } else if (!cut_ && !writer_->Busy()) {
    PollWriter();
    const bool taken = restorable_checkpoint_ != checkpoint_before_stop_;
    return BeginShutdown(true,
                         stopped + (taken ? "" : "; the checkpoint before stopping failed") + ResumeHint(),
                         /*requested=*/true);
  }
  // A cut times out on its own (checkpoint.cut_timeout_s); this bounds the wait for one to begin.
  if (now - *stop_asked_ > std::chrono::seconds(2 * job_.checkpoint.cut_timeout_s)) {
    BeginShutdown(true, stopped + "; no checkpoint could be taken in time" + ResumeHint(),
                  /*requested=*/true);
  }
}

std::string Scheduler::ResumeHint() const {
  if (job_.checkpoint.dir.empty())
    return "; it takes no checkpoints (checkpoint.dir), so it cannot be resumed";
  if (restorable_checkpoint_.empty()) return "; no checkpoint was committed, so it cannot be resumed";
  return "; resume with: hetps-scheduler --resume " + restorable_checkpoint_;
}

bool Scheduler::CheckResume() {
  if (!resume_) return true;
  Status same = CheckSameJob(*resume_, shard_map_->tensors(), shard_map_->partitions());
  if (!same.ok()) {
    BeginShutdown(true, "cannot resume from " + options_.resume + ": " + same.message());
    return false;
  }
  return true;
}

void Scheduler::RestoreForResume() {
  auto loaded = LoadCheckpoint(fs_, options_.resume);
  if (!loaded.ok()) return BeginShutdown(true, "cannot resume: " + loaded.status().message());
  awaiting_restore_.clear();
  const Manifest& m = loaded->manifest;
  for (uint32_t rank = 0; rank < job_.servers; ++rank) {
    auto file = std::make_shared<SafetensorsFile>(std::move(loaded->files[rank]));
    Status sent = SendRestore(rank, file, m.id, m.round, /*reset=*/false);
    if (!sent.ok())
      return BeginShutdown(true, "cannot restore server " + std::to_string(rank) + ": " + sent.message());
  }
  chunks_.Restore(m.data);
  resume_clock_ = HasRounds(job_.mode, job_.diloco) ? m.round : 0;
  resume_epoch_ = std::min(m.data.epoch, job_.epochs - 1);
  next_epoch_to_evaluate_ = resume_epoch_;
  summary_.resumed_from = loaded->path;
  restorable_checkpoint_ = loaded->path;
  HETPS_LOG(INFO) << "resuming from " << loaded->path << ": epoch " << resume_epoch_ + 1
                  << (HasRounds(job_.mode, job_.diloco) ? ", round " + std::to_string(m.round)
                                                        : std::string())
                  << ", " << chunks_.completed_samples() << " samples already trained";
}

}  // namespace hetps
