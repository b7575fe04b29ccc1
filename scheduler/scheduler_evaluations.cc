// The scheduler's evaluations: which trainer evaluates when (after each epoch, at the end, and
// the periodic snapshots of eval_interval_samples), and what their reports record. Part of the
// Scheduler class (scheduler/scheduler.h), on its loop thread like the rest.
#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "checkpoint/safetensors_dtype.h"
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
    e.test_r2 = report->r_squared();
    e.test_samples = report->test_samples();
    e.test_positions = report->test_positions();
    e.evaluated_seconds = SecondsSince(training_started_);
    summary_.evaluations.push_back(e);
    LogEvaluation(e);
    char line[256];
    std::snprintf(line, sizeof(line), "at %s samples (%s): %s, test loss %.4f",
                  WithThousands(e.samples_trained).c_str(), FormatDuration(e.wall_seconds).c_str(),
                  MetricText(e).c_str(), e.test_loss);
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
  e.test_r2 = report->r_squared();
  e.test_samples = report->test_samples();
  e.test_positions = report->test_positions();
  e.wall_seconds = SecondsSince(training_started_);
  e.evaluated_seconds = e.wall_seconds;
  e.samples_trained = SamplesTrained();
  summary_.evaluations.push_back(e);
  LogEvaluation(e);
  if (e.final) {
    Status kept = KeepModelBuffers(*report);
    if (!kept.ok()) {
      HETPS_LOG(WARNING) << "the model's buffers from " << member.Describe()
                         << " are left out of the exported model: " << kept.message();
    }
  }
  char line[256];
  std::snprintf(line, sizeof(line), "%s epoch %u: %s, test loss %.4f (%s samples, %s)",
                e.final ? "final," : "after", e.epoch + 1, MetricText(e).c_str(), e.test_loss,
                WithThousands(e.samples_trained).c_str(), FormatDuration(e.wall_seconds).c_str());
  display_.Note(line);
  HETPS_LOG(INFO) << line;
  evals_.pop_front();
  eval_member_.clear();
  eval_passed_over_.clear();
  if (e.final) {
    final_evaluated_ = true;
    return FinishJob();
  }
  MaybeRequestEvaluation();
}

const char* Scheduler::MetricName() const {
  if (job_.loss == Loss::kMse) return "r2";
  return job_.data.format == "tokens" ? "perplexity" : "accuracy";
}

std::string Scheduler::MetricText(const Evaluation& e) const {
  char text[96];
  if (job_.data.format == "tokens" && job_.loss != Loss::kMse) {
    std::snprintf(text, sizeof(text), "test perplexity %.3f (%.3f bits/token)", Perplexity(e.test_loss),
                  BitsPerToken(e.test_loss));
  } else if (job_.loss == Loss::kMse) {
    std::snprintf(text, sizeof(text), "test R2 %.4f", e.test_r2);
  } else {
    std::snprintf(text, sizeof(text), "test accuracy %.4f", e.test_accuracy);
  }
  return text;
}

Status Scheduler::KeepModelBuffers(const wire::EvalReport& report) {
  model_buffers_.clear();
  if (report.buffers() == nullptr) return Status::Ok();
  std::vector<ModelBuffer> buffers;
  for (const wire::BufferValue* value : *report.buffers()) {
    ModelBuffer buffer;
    buffer.info.name = value->spec()->name()->str();
    if (value->spec()->shape())
      buffer.info.shape.assign(value->spec()->shape()->begin(), value->spec()->shape()->end());
    buffer.info.dtype = value->spec()->dtype();
    buffer.dtype = SafetensorsDType(buffer.info.dtype);
    const size_t element_bytes = SafetensorsDTypeSize(buffer.dtype);
    if (element_bytes == 0)
      return Status::InvalidArgument("buffer " + buffer.info.name + " has an unknown dtype");
    int64_t elements = 1;
    for (int64_t d : buffer.info.shape) {
      if (d < 0 || (d > 0 && elements > (int64_t{1} << 40) / d)) {
        return Status::InvalidArgument("buffer " + buffer.info.name + " has an impossible shape");
      }
      elements *= d;
    }
    if (value->data()->size() != static_cast<uint64_t>(elements) * element_bytes) {
      return Status::InvalidArgument("buffer " + buffer.info.name + " holds " +
                                     std::to_string(value->data()->size()) + " bytes, not " +
                                     std::to_string(elements * element_bytes));
    }
    if (shard_map_) {
      for (const TensorInfo& t : shard_map_->tensors()) {
        if (t.name == buffer.info.name) {
          return Status::InvalidArgument("buffer " + buffer.info.name + " has the name of a parameter");
        }
      }
    }
    buffer.bytes.assign(value->data()->begin(), value->data()->end());
    buffers.push_back(std::move(buffer));
  }
  model_buffers_ = std::move(buffers);
  return Status::Ok();
}

uint64_t Scheduler::SamplesTrained() {
  uint64_t samples = 0;
  for (Member* t : members_.Members(wire::Role::Trainer, false)) samples += t->progress.samples;
  return samples;
}

Member* Scheduler::SnapshotEvaluator() {
  const std::vector<Member*> training = members_.Training();  // by rank
  for (Member* t : training) {
    if (t->routing_id == snapshot_member_) return t;
  }
  // The smallest share of the samples: the time its evaluations take costs the job least.
  Member* chosen = nullptr;
  for (Member* t : training) {
    if (chosen == nullptr || t->progress.samples_per_second < chosen->progress.samples_per_second) chosen = t;
  }
  if (chosen != nullptr) snapshot_member_ = chosen->routing_id;
  return chosen;
}

void Scheduler::MaybeRequestSnapshot() {
  if (job_.eval_interval_samples == 0 || phase_ != Phase::kTraining) return;
  const uint64_t samples = SamplesTrained();
  // Multiples of the interval passed so far; computed, not counted up to, so that no report can
  // make this loop (reports are checked too, report_checks.h).
  const uint64_t passed = samples / job_.eval_interval_samples;
  if (passed < next_snapshot_ || passed >= std::numeric_limits<uint32_t>::max()) return;
  Member* evaluator = SnapshotEvaluator();
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
  // The trainer that holds the snapshots (a final evaluation reports them first), else the
  // lowest live one; not one that let this evaluation wait too long, while another lives.
  const auto order = [this](const Member* t) {
    return std::make_pair(t->routing_id == eval_passed_over_, t->routing_id != snapshot_member_);
  };
  Member* evaluator = nullptr;
  for (Member* t : members_.Training()) {
    if (evaluator == nullptr || order(t) < order(evaluator)) evaluator = t;
  }
  if (evaluator == nullptr) return;
  eval_member_ = evaluator->routing_id;
  eval_asked_ = Clock::now();
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateEvalRequest(fbb, evals_.front().epoch, evals_.front().final);
  SendTo(eval_member_, sender_.Seal(fbb, wire::Body::EvalRequest, body.Union()));
}

}  // namespace hetps
