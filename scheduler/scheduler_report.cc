// What the scheduler reports and is reported: trainers' progress reports as they arrive, the run
// summary and the progress display, both read off the members' latest progress and the servers'
// counters. Part of the Scheduler class (scheduler/scheduler.h), on its loop thread like the rest.
#include <algorithm>

#include "scheduler/scheduler.h"

namespace hetps {

// A trainer's progress report: its figures, its step rate, the history, and what balancing,
// mode auto and periodic evaluations make of it.
void Scheduler::HandleProgress(Member& member, const Message& message) {
  const auto* p = message.body<wire::Progress>();
  if (RefuseImplausible(message, CheckProgress(*p, bounds_))) return;
  const TrainerProgress before = member.progress;
  member.progress = {p->epoch(),
                     p->clock(),
                     p->samples(),
                     p->loss(),
                     p->samples_per_second(),
                     p->weight_version(),
                     p->batch_size(),
                     before.timed_samples + p->timed_samples(),
                     before.timed_seconds + p->timed_seconds(),
                     before.paced_seconds + PacedSeconds(*p),
                     p->step_seconds(),
                     p->wait_seconds(),
                     p->bytes_pushed(),
                     p->bytes_pulled(),
                     p->inner_steps(),
                     p->last_round_inner_steps()};
  member.progress.reported_at = Clock::now();
  member.progress.steps_per_second = before.steps_per_second;
  if (before.reported_at != Clock::time_point{} && p->clock() > before.clock) {
    const double seconds =
        std::chrono::duration<double>(member.progress.reported_at - before.reported_at).count();
    if (seconds > 0)
      member.progress.steps_per_second = static_cast<double>(p->clock() - before.clock) / seconds;
  }
  if (member.role == wire::Role::Trainer) LogProgress(member);
  if (balancer_) {
    balancer_->Observe(member.rank, p->timed_samples(), PacedSeconds(*p), p->timed_steps());
    MaybeRebalance();
  }
  if (chooser_) ObserveForAuto(member, *p);
  MaybeRequestSnapshot();
}

void Scheduler::FillSummary() {
  RunSummary& s = summary_;
  s.ok = !failed_;
  s.error = failure_;
  s.mode = ModeName(job_.mode);
  s.model = job_.model;
  s.torchscript = job_.model_file;
  s.loss = LossName(job_.loss);
  s.metric = MetricName();
  s.optimizer = OptimizerKindName(job_.optimizer.kind);
  s.outer_optimizer = OptimizerKindName(job_.outer_optimizer.kind);
  s.async_rounds = CurrentMode() == ConsistencyMode::kDiloco && job_.diloco.async_rounds();
  s.epochs = job_.epochs;
  s.global_batch_size = job_.global_batch_size;
  s.servers = job_.servers;
  s.trainers = job_.trainers;
  s.max_trainers = MaxTrainers(job_);
  const bool started = training_started_ != Clock::time_point{};
  s.wall_seconds = started ? SecondsSince(training_started_) : 0;
  const auto train_end = all_done_ != Clock::time_point{} ? all_done_ : Clock::now();
  s.train_seconds = started ? std::chrono::duration<double>(train_end - training_started_).count() : 0;
  uint64_t samples = 0;
  s.trainer_details.clear();
  s.batch_share.clear();
  for (Member* t : members_.Members(wire::Role::Trainer, false)) {
    if (t->joined_late && !t->started) continue;  // never trained: it came too late, or died waiting
    samples += t->progress.samples;
    const uint32_t batch = t->progress.batch_size != 0 ? t->progress.batch_size : t->batch_size;
    // A late joiner's clock starts at its first step: its own steps are the difference.
    const uint64_t steps = t->progress.clock - std::min(t->progress.clock, t->first_step);
    s.trainer_details.push_back({t->rank, t->host, t->device, batch, steps, t->progress.samples, t->alive,
                                 t->progress.ComputeSamplesPerSecond(), t->progress.PaceSamplesPerSecond(),
                                 t->joined_late, t->first_step, t->left, t->progress.inner_steps,
                                 t->progress.last_round_inner_steps,
                                 t->progress.bytes_pushed + t->progress.bytes_pulled,
                                 t->progress.step_seconds, t->progress.wait_seconds});
    // The share as balanced, not what the last epoch's tail left to the trainers with data.
    const uint32_t share = t->balanced_batch != 0 ? t->balanced_batch : batch;
    s.batch_share.push_back(static_cast<double>(share) / job_.global_batch_size);
  }
  s.samples_per_second = s.train_seconds > 0 ? samples / s.train_seconds : 0;
  s.samples_completed = chunks_.completed_samples();
  s.served_requests = served_requests_;
  s.served_bytes = served_bytes_;
  s.server_details.clear();
  s.nonfinite_pushes.clear();
  s.weight_version = 0;
  s.scheduler_refusals = refusals_.Snapshot();
  s.refusals = s.scheduler_refusals;
  for (Member* m : members_.Members(wire::Role::Server, false)) {
    const ServerCounters& c = m->counters;
    s.server_details.push_back(
        {m->rank, m->endpoint, c.version, c.pushes, c.pulls, c.bad_messages, c.rounds, c.refusals});
    s.weight_version = std::max(s.weight_version, c.version);
    s.rounds = std::max(s.rounds, c.rounds);
    s.refusals.Add(c.refusals);
    for (const auto& [trainer, counts] : c.left_out) {
      uint64_t& steps = s.nonfinite_pushes[trainer];
      steps = std::max(steps, counts.steps);
    }
  }
  s.staleness = Staleness(&s.max_clock_gap);
  for (const Evaluation& e : s.evaluations) {
    if (e.final) {
      s.final_test_loss = e.test_loss;
      s.final_test_accuracy = e.test_accuracy;
      s.final_test_r2 = e.test_r2;
      s.final_test_perplexity = Perplexity(e.test_loss);
      s.final_test_bits_per_token = BitsPerToken(e.test_loss);
    }
  }
}

StalenessSummary Scheduler::Staleness(uint64_t* max_clock_gap) {
  std::vector<uint64_t> counts;
  uint64_t max = 0;
  *max_clock_gap = 0;
  for (Member* m : members_.Members(wire::Role::Server, false)) {
    const ServerCounters& c = m->counters;
    if (counts.size() < c.staleness_counts.size()) counts.resize(c.staleness_counts.size());
    for (size_t k = 0; k < c.staleness_counts.size(); ++k) counts[k] += c.staleness_counts[k];
    max = std::max(max, c.staleness_max);
    *max_clock_gap = std::max(*max_clock_gap, c.max_clock_gap);
  }
  return SummarizeStaleness(counts, max);
}

void Scheduler::ShowProgress(bool force) {
  if (options_.progress_out == nullptr) return;
  JobView view;
  view.mode = ModeName(job_.mode);
  if (chooser_) view.mode += std::string(": ") + ModeName(auto_rule_.mode);  // the rule in force
  view.model = job_.model;
  view.epochs = job_.epochs;
  view.servers = job_.servers;
  view.samples_per_epoch = chunks_.samples();
  if (resume_) view.samples_before = resume_->data.samples_trained;
  view.elapsed_seconds = training_started_ != Clock::time_point{} ? SecondsSince(training_started_) : 0;
  view.phase = PhaseName();
  view.rounds = job_.mode == ConsistencyMode::kDiloco;
  if (view.rounds) {
    // The tensor bytes a round moves, over every trainer, so far.
    uint64_t bytes = 0, rounds = 0;
    for (Member* t : members_.Members(wire::Role::Trainer, false)) {
      bytes += t->progress.bytes_pushed + t->progress.bytes_pulled;
    }
    for (Member* s : members_.Members(wire::Role::Server, false))
      rounds = std::max(rounds, s->counters.rounds);
    char text[160];
    std::snprintf(text, sizeof(text), "%llu rounds, %.1f MB moved per round",
                  static_cast<unsigned long long>(rounds), rounds > 0 ? bytes / 1e6 / rounds : 0.0);
    view.detail = text;
  } else if (!HasRounds(job_.mode, job_.diloco)) {
    uint64_t gap = 0;
    const StalenessSummary staleness = Staleness(&gap);
    char text[160];
    std::snprintf(text, sizeof(text), "staleness p50 %llu p99 %llu max %llu, clock gap %llu",
                  static_cast<unsigned long long>(staleness.p50),
                  static_cast<unsigned long long>(staleness.p99),
                  static_cast<unsigned long long>(staleness.max), static_cast<unsigned long long>(gap));
    view.detail = text;
  }
  std::vector<const Member*> trainers;
  for (Member* t : members_.Members(wire::Role::Trainer, false)) trainers.push_back(t);
  if (phase_ == Phase::kGathering && !force) {
    // Nothing moves yet; a plain line now and then says what is awaited.
    view.phase = "waiting for members: " + std::to_string(members_.Count(wire::Role::Server)) + "/" +
                 std::to_string(job_.servers) + " servers, " + std::to_string(trainers.size()) + "/" +
                 std::to_string(job_.trainers) + " trainers";
  }
  display_.Show(ProgressLines(view, trainers), force);
}

}  // namespace hetps
