// Trainer::Session in mode diloco: the loop of rounds (the rest of Session: trainer/session.h).
// A round is a run of inner steps on this trainer's own copy of the weights (DilocoRound), taking
// its data chunk by chunk as any step does, and ends in one push of the round's pseudo-gradient,
// answered by the weights of the next round once every live trainer has pushed. Rounds are this
// trainer's clock: round r is its r-th push, as step r is in sync mode, so checkpoints, a
// recovery's rollback and a joiner's first round work as in sync. With async rounds
// (diloco.async) the servers answer each push alone, and checkpoints, recovery and joiners work
// as in async.
#include <algorithm>
#include <chrono>

#include "common/logging.h"
#include "trainer/session.h"

namespace hetps {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Status Trainer::Session::TrainRounds() {
  model_->train();
  progress_ = std::make_unique<ProgressReporter>(control_.get(), &sender_, job_.progress_interval);
  return RunRounds();
}

void Trainer::Session::NoteModeSwitch(const wire::ModeSwitch& change) {
  if (job_.mode != ConsistencyMode::kAuto || change.mode() != wire::Mode::Diloco || rounds_from_) return;
  rounds_from_ = change.from_clock();
  HETPS_LOG(INFO) << "mode auto: diloco rounds from step " << *rounds_from_
                  << (change.reason() ? " (" + change.reason()->str() + ")" : "");
}

void Trainer::Session::JumpToRounds() {
  // Async lets the trainers' clocks drift apart (a slow one is hundreds of steps behind after a
  // few seconds): a trainer that stepped on to the switch's step would hold the rounds, whose
  // first is that step on every trainer, for as long as it takes. The servers take a push of any
  // step before the switch as async, so skipping the steps in between is safe.
  HETPS_LOG(INFO) << "mode auto: at step " << clock_ << ", on to step " << *rounds_from_
                  << " at once, where diloco's rounds start";
  clock_ = *rounds_from_;
}

Status Trainer::Session::EnterRounds() {
  if (clock_ > *rounds_from_) {
    HETPS_LOG(WARNING) << "the switch to diloco was due at step " << *rounds_from_ << " but arrived at step "
                       << clock_;
  }
  // The last step's weights in: the servers' of the switch's step, where the rounds start.
  HETPS_RETURN_IF_ERROR(Drain());
  if (!job_.has_optimizer) {
    return Status::Protocol("mode auto: the scheduler did not send the optimizer diloco's rounds step with");
  }
  try {
    // The lr schedule goes on from this trainer's steps so far.
    auto round = DilocoRound::Create(buffers_->parameters(), job_.optimizer, job_.diloco, clock_);
    if (!round.ok()) return round.status().WithContext("auto's diloco rounds' inner optimizer");
    round_ = std::move(*round);
    step_->BeginRounds(round_.get());
    round_->Restart();
  } catch (const c10::Error& e) {
    return Status::Internal(std::string("LibTorch failed starting diloco's rounds: ") +
                            e.what_without_backtrace());
  }
  job_.mode = ConsistencyMode::kDiloco;  // to this trainer, for the rest of the job
  HETPS_LOG(INFO) << "mode auto: diloco from step " << clock_ << ": rounds of inner steps of "
                  << job_.batch_size << " samples, inner optimizer " << OptimizerKindName(job_.optimizer.kind)
                  << " lr " << job_.optimizer.lr
                  << (job_.diloco.overlap ? "; each round runs while the last one's weights travel" : "")
                  << (job_.diloco.async_rounds() ? "; asynchronous rounds: each pushes on its own clock"
                                                 : "");
  return RunRounds();
}

Status Trainer::Session::RunRounds() {
  while (epoch_ < job_.epochs) {
    Status handled = HandleControl();
    if (!handled.ok()) {
      HETPS_RETURN_IF_ERROR(RecoverIfPaused(handled));
      continue;
    }
    HETPS_RETURN_IF_ERROR(position_->MaybeReport(clock_, epoch_, samples_, *sampler_));
    uint64_t round_samples = 0;
    Status rounded = Round(&round_samples);
    if (!rounded.ok()) {
      HETPS_RETURN_IF_ERROR(RecoverIfPaused(rounded));
      continue;
    }
    if (round_samples == 0) {
      if (Status ended = AfterEmptyRound(); !ended.ok()) {  // as in sync
        HETPS_RETURN_IF_ERROR(RecoverIfPaused(ended));
        continue;
      }
    }
    progress_->Report(Position(), /*force=*/false);
  }
  // The last round's weights in before Done (after a recovery, the weights pulled then).
  if (Status drained = Drain(); !drained.ok()) HETPS_RETURN_IF_ERROR(RecoverIfPaused(drained));
  return FinishTraining();
}

Status Trainer::Session::Round(uint64_t* round_samples) {
  const auto started = std::chrono::steady_clock::now();
  round_->Begin(round_seconds_);
  while (!round_->Over()) {
    HETPS_RETURN_IF_ERROR(HandleControlInRound());
    HETPS_RETURN_IF_ERROR(step_->PollRound());  // the last round's weights, when they are in
    NoteRoundWeights();
    auto indices = sampler_->Next(epoch_, job_.batch_size, clock_);
    if (!indices.ok()) return indices.status();
    if (indices->empty()) {
      if (epoch_ + 1 < job_.epochs) {
        ++epoch_;  // out of this epoch's data: the round goes on with the next
        continue;
      }
      if (!out_of_data_) {
        HETPS_LOG(INFO) << "no data left to take in the last epoch; "
                        << (job_.diloco.async_rounds() ? "waiting for the others to finish theirs"
                                                       : "pushing empty rounds until the others finish");
        out_of_data_ = true;
      }
      break;
    }
    if (fetcher_)
      HETPS_RETURN_IF_ERROR(fetcher_->Ensure(DatasetSplit::kTrain, indices->data(), indices->size()));
    double loss = 0;
    double seconds = 0;
    HETPS_RETURN_IF_ERROR(step_->InnerStep(*indices, &loss, &seconds));
    samples_ += indices->size();
    ++inner_steps_;
    progress_->AddStep(indices->size(), loss, seconds, seconds);
    progress_->Report(Position(), /*force=*/false);
  }
  if (job_.diloco.async_rounds() && round_->steps() == 0) {
    // Asynchronous rounds: out of data, this trainer has nothing to push and no round waits
    // for it; it waits for the epoch's end as async does (AfterEmptyRound).
    *round_samples = 0;
    return Status::Ok();
  }
  const auto pushed = std::chrono::steady_clock::now();
  auto outcome = step_->FinishRound(clock_, job_.diloco.overlap);
  if (!outcome.ok()) return outcome.status();
  step_seconds_ += SecondsSince(started);
  wait_seconds_ += SecondsSince(pushed);
  ++clock_;
  last_round_inner_steps_ = round_->steps();
  NoteRoundWeights();
  // Overlapped, the round's weights are yet to come; but this trainer had data, so the round did.
  // Asynchronous rounds are this trainer's alone.
  *round_samples = outcome->weights_written && !job_.diloco.async_rounds() ? outcome->pulled.round_samples
                                                                           : round_->samples();
  return Status::Ok();
}

void Trainer::Session::NoteRoundWeights() {
  const PsClient::PullResult& pulled = step_->round_pulled();
  weight_version_ = std::max(weight_version_, pulled.weight_version);
  if (pulled.round_seconds > 0) round_seconds_ = pulled.round_seconds;
}

Status Trainer::Session::HandleControlInRound() {
  HETPS_RETURN_IF_ERROR(control_->Check());
  HETPS_RETURN_IF_ERROR(evaluator_->SendFinished());
  while (control_->paused() == 0) {
    auto message = control_->TakeInbox();
    if (!message) break;
    if (message->kind() != wire::Body::EvalRequest) {
      HETPS_RETURN_IF_ERROR(HandleMessage(*message));
      continue;
    }
    const wire::EvalRequest& request = *message->body<wire::EvalRequest>();
    if (request.snapshot() > 0) {
      // The newest servers' weights this trainer has: theirs until it pushes again (with overlap,
      // up to the round in flight behind theirs; a snapshot is never ahead of the servers).
      evaluator_->KeepSnapshot(request, weight_version_, round_->ServersWeightsOnHost());
    } else {
      deferred_.push_back(std::move(*message));
    }
  }
  if (control_->paused() != 0 && !control_->shutdown()) return Status::Unavailable("paused by the scheduler");
  if (control_->shutdown()) return Status::Aborted("the scheduler shut the job down");
  return Status::Ok();
}

}  // namespace hetps
