// The scheduler's verdicts on trainers by what they do, not whether they are heard: one whose
// gradients a server left out nonfinite_limit steps in a row (NaN or Inf), and one that held a
// round or a bound too long (StallWatch), left out of that step the first time, or an evaluation
// too long, passed over for it the first time. Part of the
// Scheduler class (scheduler/scheduler.h), on its loop thread like the rest.
#include <algorithm>
#include <cstdio>

#include "common/logging.h"
#include "scheduler/scheduler.h"

namespace hetps {

void Scheduler::DropTrainer(Member& trainer, const std::string& reason) {
  summary_.dropped.push_back({trainer.rank, reason});
  display_.Note(trainer.Describe() + " dropped: " + reason);
  flatbuffers::FlatBufferBuilder fbb(256 + reason.size());
  auto body =
      wire::CreateShutdownDirect(fbb, true, ("this trainer was dropped from the job: " + reason).c_str());
  SendTo(trainer.routing_id, sender_.Seal(fbb, wire::Body::Shutdown, body.Union()));
  TrainerGone(trainer, "dropped from the job: " + reason, /*left=*/false);
}

void Scheduler::DropTrainersLeftOut(const Member& server) {
  if (job_.nonfinite_limit == 0 || phase_ != Phase::kTraining) return;
  for (const auto& [rank, counts] : server.counters.left_out) {
    if (counts.in_a_row < job_.nonfinite_limit) continue;
    for (Member* trainer : members_.TrainersInJob()) {
      if (trainer->rank != rank || !trainer->alive) continue;
      DropTrainer(*trainer, server.Describe() + " left out its last " + std::to_string(counts.in_a_row) +
                                " steps, whose gradients held NaN or infinite values (nonfinite_limit " +
                                std::to_string(job_.nonfinite_limit) + ")");
      break;
    }
  }
}

void Scheduler::JudgeStalls(const Member& server, const wire::ServerStats& stats) {
  // A recovery pauses every trainer: nobody holds the job then.
  if (stats.waits() == nullptr || phase_ != Phase::kTraining || recovery_) return;
  auto trainer_of = [this](uint32_t rank) -> Member* {
    for (Member* t : members_.TrainersInJob()) {
      if (t->rank == rank && t->alive && t->started) return t;
    }
    return nullptr;
  };
  const auto verdicts = stalls_.Judge(server.Describe(), *stats.waits(), [&](uint32_t rank) {
    const Member* t = trainer_of(rank);
    // A trainer evaluating at the scheduler's request holds its steps for the scheduler.
    if (t == nullptr || t->routing_id == eval_member_) return std::optional<uint64_t>();
    return std::optional<uint64_t>(t->start_clock);
  });
  bool moved = false;
  for (const StallWatch::Verdict& v : verdicts) {
    Member* trainer = trainer_of(v.trainer);
    if (trainer == nullptr) continue;
    summary_.stalls.push_back({v.trainer, "step", v.step, v.waited_seconds, v.limit_seconds, v.drop});
    if (v.drop) {
      HETPS_LOG(WARNING) << trainer->Describe() << " held the job a second time: " << v.reason;
      DropTrainer(*trainer, "it held the job a second time: " + v.reason);
      continue;
    }
    HETPS_LOG(WARNING) << trainer->Describe() << " is left out of step " << v.step
                       << ", which it held: " << v.reason
                       << "; the job goes on without that step of it (a second time drops it)";
    display_.Note(trainer->Describe() + " left out of step " + std::to_string(v.step) + ": " + v.reason);
    trainer->start_clock = v.until;
    moved = true;
  }
  if (moved) {
    members_.BumpEpoch();
    BroadcastMembership();
  }
}

void Scheduler::JudgeEvaluation() {
  if (eval_member_.empty() || recovery_) return;
  Member* evaluator = members_.Find(eval_member_);
  if (evaluator == nullptr) return;
  // The test set's size: the served one's, or the largest an evaluation reported.
  uint64_t test_samples = options_.test_data ? static_cast<uint64_t>(options_.test_data->samples) : 0;
  for (const Evaluation& e : summary_.evaluations) test_samples = std::max(test_samples, e.test_samples);
  const double pace = evaluator->progress.samples_per_second;
  const double limit = stalls_.EvaluationLimitSeconds(test_samples, pace);
  const double waited = SecondsSince(eval_asked_);
  if (limit == 0 || waited <= limit) return;
  const EvalTask& task = evals_.front();
  char line[320];
  std::snprintf(line, sizeof(line),
                "it did not report %s%s within %.1f s (stall_pace_factor %u times the time its pace of %.0f "
                "samples/s takes to train on the %llu test samples, and at least stall_floor_s %u)",
                task.final ? "the final evaluation" : "the evaluation after epoch ",
                task.final ? "" : std::to_string(task.epoch + 1).c_str(), limit, job_.stall_pace_factor, pace,
                static_cast<unsigned long long>(test_samples), job_.stall_floor_s);
  const bool drop = stalls_.Count(evaluator->rank);
  summary_.stalls.push_back({evaluator->rank, "evaluation", evaluator->progress.clock, waited, limit, drop});
  if (drop) {
    HETPS_LOG(WARNING) << evaluator->Describe() << " held the job a second time: " << line;
    return DropTrainer(*evaluator, std::string("it held the job a second time: ") + line);  // asks another
  }
  HETPS_LOG(WARNING) << evaluator->Describe() << ": " << line
                     << "; asking another trainer (a second time drops it)";
  display_.Note(evaluator->Describe() + " passed over for an evaluation: " + line);
  eval_passed_over_ = eval_member_;
  eval_member_.clear();
  MaybeRequestEvaluation();
}

}  // namespace hetps
