// The scheduler's evaluations: which trainer evaluates when (after each epoch, at the end, and
// the periodic snapshots of eval_interval_samples), and what their reports record. Part of the
// Scheduler class (scheduler/scheduler.h), on its loop thread like the rest.
#include <algorithm>
#include <limits>

#include "common/logging.h"
#include "scheduler/scheduler.h"

namespace hetps {

void Scheduler::HandleEvalReport(Member& member, const Message& message) {
  const auto* report = message.body<wire::EvalReport>();
  if (report->snapshot() > 0) {
    auto it = snapshots_.find(report->snapshot());
    if (it == snapshots_.end()) {
      HETPS_LOG(WARNING) << "ignored an evaluation of snapshot " << report->snapshot() << " from "
                         << member.Describe() << " that was not asked for";
      return;
    }
    Evaluation e = it->second;  // taken when the snapshot was asked for
    snapshots_.erase(it);
    e.weight_version = report->weight_version();
    e.test_loss = report->test_loss();
    e.test_accuracy = report->test_accuracy();
    e.test_samples = report->test_samples();
    summary_.evaluations.push_back(e);
    char line[256];
    std::snprintf(line, sizeof(line), "at %s samples (%s): test accuracy %.4f, test loss %.4f",
                  WithThousands(e.samples_trained).c_str(), FormatDuration(e.wall_seconds).c_str(),
                  e.test_accuracy, e.test_loss);
    display_.Note(line);
    HETPS_LOG(INFO) << line;
    return;
  }
  if (evals_.empty() || eval_member_ != member.routing_id) {
    HETPS_LOG(WARNING) << "ignored an evaluation from " << member.Describe() << " that was not asked for";
    return;
  }
  Evaluation e;
  e.epoch = report->epoch();
  e.final = report->final();
  e.weight_version = report->weight_version();
  e.test_loss = report->test_loss();
  e.test_accuracy = report->test_accuracy();
  e.test_samples = report->test_samples();
  e.wall_seconds = SecondsSince(training_started_);
  e.samples_trained = SamplesTrained();
  summary_.evaluations.push_back(e);
  char line[256];
  std::snprintf(line, sizeof(line), "%s epoch %u: test accuracy %.4f, test loss %.4f (%s samples, %s)",
                e.final ? "final," : "after", e.epoch + 1, e.test_accuracy, e.test_loss,
                WithThousands(e.samples_trained).c_str(), FormatDuration(e.wall_seconds).c_str());
  display_.Note(line);
  HETPS_LOG(INFO) << line;
  evals_.pop_front();
  eval_member_.clear();
  if (e.final) {
    final_evaluated_ = true;
    return FinishJob();
  }
  MaybeRequestEvaluation();
}

uint64_t Scheduler::SamplesTrained() {
  uint64_t samples = 0;
  for (Member* t : members_.Members(wire::Role::Trainer, false)) samples += t->progress.samples;
  return samples;
}

void Scheduler::MaybeRequestSnapshot() {
  if (job_.eval_interval_samples == 0 || phase_ != Phase::kTraining) return;
  const uint64_t samples = SamplesTrained();
  // Multiples of the interval passed so far; computed, not counted up to, so that no report can
  // make this loop (reports are checked too, report_checks.h).
  const uint64_t passed = samples / job_.eval_interval_samples;
  if (passed < next_snapshot_ || passed >= std::numeric_limits<uint32_t>::max()) return;
  Member* evaluator = members_.LowestLiveTrainer();
  if (evaluator == nullptr) return;
  // Several multiples passed at once (a slow report) make one snapshot, not several.
  next_snapshot_ = static_cast<uint32_t>(passed) + 1;
  const uint32_t snapshot = next_snapshot_ - 1;
  Evaluation& e = snapshots_[snapshot];
  e.snapshot = snapshot;
  e.epoch = evaluator->progress.epoch;
  e.wall_seconds = SecondsSince(training_started_);
  e.samples_trained = samples;
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateEvalRequest(fbb, e.epoch, /*final=*/false, snapshot);
  SendTo(evaluator->routing_id, sender_.Seal(fbb, wire::Body::EvalRequest, body.Union()));
}

void Scheduler::MaybeRequestEvaluation() {
  if (phase_ != Phase::kTraining && phase_ != Phase::kFinishing) return;
  // Epochs that every trainer has finished, except the last: that one is the final evaluation.
  while (next_epoch_to_evaluate_ + 1 < job_.epochs && chunks_.EpochComplete(next_epoch_to_evaluate_)) {
    evals_.push_back({next_epoch_to_evaluate_++, false});
  }
  if (!final_eval_queued_) {
    // A trainer still joining counts: it trains what is left, if anything, and says Done too.
    const auto in_job = members_.TrainersInJob();
    bool all_done = !in_job.empty();
    for (Member* t : in_job) all_done = all_done && t->done;
    if (all_done) {
      final_eval_queued_ = true;
      all_done_ = Clock::now();
      phase_ = Phase::kFinishing;
      evals_.push_back({job_.epochs - 1, true});
    }
  }
  if (evals_.empty() || !eval_member_.empty()) return;
  Member* evaluator = members_.LowestLiveTrainer();
  if (evaluator == nullptr) return;
  eval_member_ = evaluator->routing_id;
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateEvalRequest(fbb, evals_.front().epoch, evals_.front().final);
  SendTo(eval_member_, sender_.Seal(fbb, wire::Body::EvalRequest, body.Union()));
}

}  // namespace hetps
