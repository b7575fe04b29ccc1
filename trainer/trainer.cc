// Trainer, and Trainer::Session's run and step loop (the rest of Session: trainer/session.h).
#include "trainer/trainer.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/logging.h"
#include "trainer/session.h"

namespace hetps {
namespace {

zmq::message_t Goodbye(Sender& sender) {
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateGoodbye(fbb);
  return sender.Seal(fbb, wire::Body::Goodbye, body.Union());
}

constexpr const char* kLeftReason = "this trainer left the job";

}  // namespace

Trainer::Trainer(zmq::context_t& context, TrainerOptions options)
    : context_(context), options_(std::move(options)) {}

Trainer::~Trainer() = default;

Status Trainer::Run() {
  Session session(*this, context_, options_);
  return session.Run();
}

void Trainer::Leave() {
  std::lock_guard<std::mutex> lock(leave_mutex_);
  if (leaving_) return;
  leaving_ = true;
  HETPS_LOG(INFO) << "leaving the job";
  if (control_ != nullptr) control_->Leave(Goodbye(*sender_), kLeftReason);
}

void Trainer::Attach(ControlChannel* control, Sender* sender) {
  std::lock_guard<std::mutex> lock(leave_mutex_);
  control_ = control;
  sender_ = sender;
  if (leaving_ && control_ != nullptr) control_->Leave(Goodbye(*sender_), kLeftReason);
}

Status Trainer::Session::Run() {
  SetThreadLogTag("trainer");
  Status status = Setup();
  // WaitForShutdown returns OK only when a recovery sent training back.
  while (status.ok()) {
    status = job_.mode == ConsistencyMode::kDiloco ? TrainRounds() : TrainEpochs();
    if (status.ok()) status = WaitForShutdown();
  }
  // Whatever was under way, a Shutdown from the scheduler decides how this trainer ends.
  if (control_ && control_->shutdown()) return ShutdownStatus();
  return status;
}

Status Trainer::Session::ShutdownStatus() const {
  const ShutdownNotice notice = *control_->shutdown();
  if (!notice.failed) return Status::Ok();
  return Status::Aborted("the scheduler ended the job: " + notice.reason);
}

Status Trainer::Session::TrainEpochs() {
  const bool sync = job_.mode == ConsistencyMode::kSync;
  model_->train();
  progress_ = std::make_unique<ProgressReporter>(control_.get(), &sender_, job_.progress_interval);
  while (epoch_ < job_.epochs) {
    Status handled = HandleControl();
    if (!handled.ok()) {
      HETPS_RETURN_IF_ERROR(RecoverIfPaused(handled));
      continue;
    }
    if (rounds_from_ && clock_ < *rounds_from_) JumpToRounds();
    ApplyPendingBatch();
    if (rounds_from_ && clock_ >= *rounds_from_) return EnterRounds();
    HETPS_RETURN_IF_ERROR(position_->MaybeReport(clock_, epoch_, samples_, *sampler_));
    // With local steps a step takes the samples of all of them, and pushes once.
    auto indices = sampler_->Next(epoch_, job_.batch_size * options_.local_steps, clock_);
    if (!indices.ok()) {
      HETPS_RETURN_IF_ERROR(RecoverIfPaused(indices.status()));
      continue;
    }
    if (indices->empty() && epoch_ + 1 < job_.epochs) {
      // Out of this epoch's data: on to the next at once, in every mode. Chunks that others still
      // hold, or give back when they die or leave, go to whoever asks next, whatever its epoch.
      ++epoch_;
      continue;
    }
    if (indices->empty() && !out_of_data_) {
      HETPS_LOG(INFO) << "no data left to take in the last epoch; waiting for the others to finish theirs";
      out_of_data_ = true;
    }
    if (indices->empty() && !sync) {
      // The weights of the last step, before the idle mark and the wait.
      Status drained = Drain();
      if (!drained.ok()) {
        HETPS_RETURN_IF_ERROR(RecoverIfPaused(drained));
        continue;
      }
      if ((job_.mode == ConsistencyMode::kSsp || job_.mode == ConsistencyMode::kAuto) && !idle_) {
        // Out of data: the others must not wait for this trainer's clock.
        Status marked = client_->MarkIdle(clock_);
        if (!marked.ok()) {
          HETPS_RETURN_IF_ERROR(RecoverIfPaused(marked));
          continue;
        }
        idle_ = true;
      }
      // Out of data in the last epoch: wait until every chunk is trained (a trainer that dies
      // returns its chunks, which this trainer then takes).
      auto complete = sampler_->FlushAndCheckComplete(epoch_, clock_);
      if (!complete.ok()) {
        HETPS_RETURN_IF_ERROR(RecoverIfPaused(complete.status()));
        continue;
      }
      if (*complete) break;
      if (!sampler_->holds_chunks()) {
        control_->WaitForInbox(std::chrono::milliseconds(200));
        HETPS_RETURN_IF_ERROR(control_->Check());
      }
      continue;
    }
    uint64_t round_samples = 0;
    Status stepped = Step(*indices, &round_samples);
    if (!stepped.ok()) {
      HETPS_RETURN_IF_ERROR(RecoverIfPaused(stepped));
      continue;
    }
    if (sync && round_samples == 0) {
      if (Status ended = AfterEmptyRound(); !ended.ok()) {
        HETPS_RETURN_IF_ERROR(RecoverIfPaused(ended));
        continue;
      }
    }
    progress_->Report(Position(), /*force=*/false);
  }
  // The last step's push applied before Done (after a recovery, the weights pulled then).
  if (Status drained = Drain(); !drained.ok()) HETPS_RETURN_IF_ERROR(RecoverIfPaused(drained));
  return FinishTraining();
}

Status Trainer::Session::FinishTraining() {
  progress_->Report(Position(), /*force=*/true);
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateDone(fbb, clock_, samples_);
  HETPS_RETURN_IF_ERROR(control_->Send(sender_.Seal(fbb, wire::Body::Done, body.Union())));
  HETPS_LOG(INFO) << "trained " << job_.epochs << " epochs: " << clock_ << " steps, " << samples_
                  << " samples; step time: " << step_->timings().ToString();
  if (fetcher_) {
    for (uint32_t epoch = 0; epoch < job_.epochs; ++epoch) {
      const DataFetcher::EpochCounts counts = fetcher_->counts_in_epoch(epoch);
      HETPS_LOG(INFO) << "served data in epoch " << epoch << ": " << counts.requests << " requests, "
                      << counts.bytes << " bytes; " << counts.fetched_samples << " samples fetched, "
                      << counts.held_samples << " held already";
    }
    HETPS_LOG(INFO) << "served data in all: " << fetcher_->requests() << " requests, "
                    << fetcher_->bytes_received() << " bytes, " << fetcher_->checksum_failures()
                    << " replies that failed their checksum";
  }
  return Status::Ok();
}

Status Trainer::Session::AfterEmptyRound() {
  // The last epoch ends for everyone at a round in which nobody had data, once the scheduler
  // says every chunk is trained: a chunk given back by a trainer that died or left is trained
  // first, and a trainer that joins at a later step is waited for.
  HETPS_ASSIGN_OR_RETURN(const bool complete, sampler_->FlushAndCheckComplete(epoch_, clock_));
  if (complete) {
    ++epoch_;
  } else if (!sampler_->holds_chunks()) {
    control_->WaitForInbox(std::chrono::milliseconds(20));  // empty rounds until it is decided
  }
  return Status::Ok();
}

Status Trainer::Session::Step(const std::vector<int64_t>& indices, uint64_t* round_samples) {
  const auto started = std::chrono::steady_clock::now();
  // Chunks arrive when granted; this catches positions restored from a checkpoint.
  if (fetcher_) HETPS_RETURN_IF_ERROR(fetcher_->Ensure(DatasetSplit::kTrain, indices.data(), indices.size()));
  // The next step's samples, when the chunks held already cover them (and, with served data, the
  // samples are here): their batch is assembled while this step waits for its weights.
  std::vector<int64_t> next;
  if (!indices.empty() && options_.local_steps == 1) next = sampler_->Peek(job_.batch_size);
  if (fetcher_ && !fetcher_->Holds(DatasetSplit::kTrain, next.data(), next.size())) next.clear();
  auto outcome = step_->Run(clock_, indices, next);
  if (!outcome.ok()) return outcome.status();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double waited = std::max(0.0, seconds - outcome->compute_seconds);
  step_seconds_ += seconds;
  wait_seconds_ += waited;
  if (!indices.empty()) idle_ = false;
  ++clock_;
  samples_ += indices.size();
  if (outcome->weights_written) weight_version_ = outcome->pulled.weight_version;
  *round_samples = outcome->pulled.round_samples;
  // The step's pace: its time less what the servers spent waiting for other trainers.
  const double paced = seconds - std::min(waited, outcome->pulled.held_seconds);
  progress_->AddStep(indices.size(), outcome->loss, outcome->compute_seconds, paced);
  return Status::Ok();
}

Status Trainer::Session::Drain() {
  auto drained = step_->Drain();
  if (!drained.ok()) return drained.status();
  if (*drained) weight_version_ = (*drained)->weight_version;
  return Status::Ok();
}

void Trainer::Session::ApplyPendingBatch() {
  if (!pending_batch_ || clock_ < pending_batch_->from_clock) return;
  if (clock_ > pending_batch_->from_clock) {
    HETPS_LOG(WARNING) << "batch " << pending_batch_->batch_size << " was due at step "
                       << pending_batch_->from_clock << " but arrived at step " << clock_;
  }
  job_.batch_size = pending_batch_->batch_size;
  pending_batch_.reset();
  HETPS_LOG(INFO) << "batch per step is now " << job_.batch_size << " from step " << clock_;
}

TrainerPosition Trainer::Session::Position() const {
  return TrainerPosition{epoch_,
                         clock_,
                         samples_,
                         weight_version_,
                         job_.batch_size,
                         step_seconds_,
                         wait_seconds_,
                         client_ ? client_->bytes_pushed() : 0,
                         client_ ? client_->bytes_pulled() : 0,
                         inner_steps_,
                         last_round_inner_steps_};
}

Status Trainer::Session::HandleControl() {
  HETPS_RETURN_IF_ERROR(control_->Check());
  HETPS_RETURN_IF_ERROR(evaluator_->SendFinished());
  // After a Pause the inbox is left to Recover(), which looks for the Resume in it.
  // Messages a diloco round kept for its end first, in the order they came.
  for (Message& message : std::exchange(deferred_, {})) HETPS_RETURN_IF_ERROR(HandleMessage(message));
  while (control_->paused() == 0) {
    auto message = control_->TakeInbox();
    if (!message) break;
    HETPS_RETURN_IF_ERROR(HandleMessage(*message));
  }
  if (control_->paused() != 0 && !control_->shutdown()) return Status::Unavailable("paused by the scheduler");
  // Run() turns this into the right final status, OK for a job that finished.
  if (control_->shutdown()) return Status::Aborted("the scheduler shut the job down");
  return Status::Ok();
}

Status Trainer::Session::HandleMessage(const Message& message) {
  switch (message.kind()) {
    case wire::Body::EvalRequest: {
      HETPS_RETURN_IF_ERROR(Drain());  // the evaluation pulls: no step may still be travelling
      const wire::EvalRequest& request = *message.body<wire::EvalRequest>();
      if (request.snapshot() > 0) return evaluator_->TakeSnapshot(request, clock_);
      auto version = evaluator_->Evaluate(request, clock_);
      if (!version.ok()) return version.status();
      weight_version_ = *version;
      break;
    }
    case wire::Body::Rebalance:
      NoteRebalance(*message.body<wire::Rebalance>());
      break;
    case wire::Body::ModeSwitch:
      NoteModeSwitch(*message.body<wire::ModeSwitch>());
      break;
    case wire::Body::CheckpointRequest:
      if (position_) position_->Note(*message.body<wire::CheckpointRequest>());
      break;
    case wire::Body::Membership:
      HETPS_LOG(INFO) << "membership epoch " << message.body<wire::Membership>()->membership_epoch() << ": "
                      << message.body<wire::Membership>()->trainers()->size() << " live trainers";
      break;
    case wire::Body::Error:
      HETPS_LOG(WARNING) << "the scheduler reported: " << message.body<wire::Error>()->reason()->str();
      break;
    default:
      break;  // e.g. the answer to a chunk request that a pause interrupted: the chunk was not given
  }
  return Status::Ok();
}

void Trainer::Session::NoteRebalance(const wire::Rebalance& rebalance) {
  const uint32_t rank = sender_.rank();
  const auto* sizes = rebalance.batch_sizes();
  if (rank >= sizes->size() || sizes->Get(rank) == 0) {
    HETPS_LOG(WARNING) << "ignored a rebalance that gives this trainer (rank " << rank << ") no batch";
    return;
  }
  pending_batch_ = PendingBatch{rebalance.from_clock(), sizes->Get(rank)};
}

}  // namespace hetps
