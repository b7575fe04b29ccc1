// The scheduler's status snapshots: built on the loop thread from the members' reports and
// published for the HTTP server (SchedulerOptions::status_board) and hetps-status, which asks over
// the control socket (StatusRequest). Part of the Scheduler class (scheduler/scheduler.h).
#include <algorithm>

#include "common/logging.h"
#include "http/status_json.h"
#include "scheduler/scheduler.h"

namespace hetps {
namespace {

constexpr auto kStatusInterval = std::chrono::milliseconds(500);
constexpr size_t kHistoryPoints = 300;  // then thinned to half, and taken half as often

constexpr const char* kPhaseNames[] = {"waiting for members", "starting", "training", "final evaluation",
                                       "shutting down"};

std::map<std::string, uint64_t> RefusalMap(const RefusalTally& tally) {
  std::map<std::string, uint64_t> out;
  for (size_t i = 0; i < kRefusalReasons; ++i) {
    if (tally.counts[i] > 0) out[RefusalName(static_cast<Refusal>(i))] = tally.counts[i];
  }
  return out;
}

std::string TrainerStateName(const Member& t) {
  if (t.left) return "left";
  if (!t.alive) return "dead";
  if (t.done) return "done";
  if (t.started) return "training";
  if (t.registered) return "waiting";
  return "joining";
}

std::string ServerStateName(const Member& s) {
  if (!s.alive) return "dead";
  if (s.said_goodbye) return "gone";
  return s.ready ? "serving" : "joining";
}

}  // namespace

const char* Scheduler::PhaseName() const {
  return kPhaseNames[static_cast<int>(phase_)];
}

void Scheduler::MaybePublishStatus(bool force) {
  const auto now = Clock::now();
  if (!force && status_ && now - last_status_ < kStatusInterval) return;
  last_status_ = now;
  auto snapshot = std::make_shared<StatusSnapshot>();
  StatusSnapshot& s = *snapshot;
  s.mode = ModeName(job_.mode);
  s.model = job_.model;
  s.metric = MetricName();
  s.optimizer = OptimizerKindName(job_.optimizer.kind);
  s.lr = job_.optimizer.lr;
  s.balance = BalanceName(job_.balance);
  s.async_batch = AsyncBatchName(AsyncBatchOf(job_));
  s.wire_dtype = WireDTypeName(job_.wire_dtype);
  s.listen = endpoint_;
  s.epochs = job_.epochs;
  s.global_batch_size = job_.global_batch_size;
  s.servers = job_.servers;
  s.trainers = job_.trainers;
  s.staleness_bound = job_.staleness;
  s.phase = PhaseName();
  s.failed = failed_;
  s.failure = failure_;
  s.membership_epoch = members_.epoch();
  const bool started = training_started_ != Clock::time_point{};
  s.elapsed_seconds = started ? SecondsSince(training_started_) : 0;
  s.samples_trained = SamplesTrained();
  s.samples_total = uint64_t{job_.epochs} * chunks_.samples();
  s.progress_ratio =
      s.samples_total > 0 ? std::min(1.0, static_cast<double>(s.samples_trained) / s.samples_total) : 0;
  s.checkpoints = summary_.checkpoints.count;
  s.checkpoints_failed = summary_.checkpoints.failed;
  s.last_checkpoint = summary_.checkpoints.last_id;
  s.checkpoint_write_seconds = summary_.checkpoints.mean_write_seconds;
  s.scheduler_refusals = RefusalMap(refusals_.Snapshot());

  for (Member* m : members_.Members(wire::Role::Server, false)) {
    MemberStatus ms;
    ms.role = "server";
    ms.rank = m->rank;
    ms.host = m->host;
    ms.device = "cpu";
    ms.state = ServerStateName(*m);
    ms.alive = m->alive;
    ms.last_heard_seconds = SecondsSince(m->last_heard);
    const ServerCounters& c = m->counters;
    ms.weight_version = c.version;
    ms.pushes = c.pushes;
    ms.pulls = c.pulls;
    ms.rounds = c.rounds;
    ms.max_clock_gap = c.max_clock_gap;
    ms.staleness_counts = c.staleness_counts;
    ms.staleness_sum = c.staleness_sum;
    ms.staleness_max = c.staleness_max;
    ms.round_seconds = c.round_seconds;
    ms.apply_seconds = c.apply_seconds;
    ms.refusals = RefusalMap(c.refusals);
    s.members.push_back(std::move(ms));
  }
  uint64_t fastest_clock = 0;
  for (Member* t : members_.Training()) fastest_clock = std::max(fastest_clock, t->progress.clock);
  HistoryPoint point;
  point.wall_seconds = s.elapsed_seconds;
  double loss_sum = 0;
  int losses = 0;
  for (Member* t : members_.Members(wire::Role::Trainer, false)) {
    MemberStatus ms;
    ms.role = "trainer";
    ms.rank = t->rank;
    ms.host = t->host;
    ms.device = t->device;
    ms.state = TrainerStateName(*t);
    ms.alive = t->alive;
    ms.last_heard_seconds = SecondsSince(t->last_heard);
    const TrainerProgress& p = t->progress;
    const bool training = t->alive && t->started && !t->done;
    ms.epoch = p.epoch;
    ms.steps = p.clock - std::min(p.clock, t->first_step);
    ms.samples = p.samples;
    ms.loss = p.loss;
    ms.samples_per_second = training ? p.samples_per_second : 0;
    ms.compute_samples_per_second = p.ComputeSamplesPerSecond();
    ms.pace_samples_per_second = p.PaceSamplesPerSecond();
    ms.batch_size = p.batch_size != 0 ? p.batch_size : t->batch_size;
    ms.batch_share =
        job_.global_batch_size > 0 ? static_cast<double>(ms.batch_size) / job_.global_batch_size : 0;
    ms.clock_gap = training ? fastest_clock - std::min(fastest_clock, p.clock) : 0;
    ms.step_seconds = p.step_seconds;
    ms.wait_seconds = p.wait_seconds;
    ms.bytes_pushed = p.bytes_pushed;
    ms.bytes_pulled = p.bytes_pulled;
    ms.inner_steps = p.inner_steps;
    ms.last_round_inner_steps = p.last_round_inner_steps;
    s.epoch = std::max(s.epoch, p.epoch);
    s.samples_per_second += ms.samples_per_second;
    if (training) {
      point.trainer_speed[t->rank] = ms.samples_per_second;
      if (p.samples > 0) loss_sum += p.loss, ++losses;
    }
    s.members.push_back(std::move(ms));
  }
  s.epoch = std::min(s.epoch, job_.epochs > 0 ? job_.epochs - 1 : 0);
  for (const Evaluation& e : summary_.evaluations) {
    s.evaluations.push_back({e.epoch, e.final, e.wall_seconds, e.samples_trained, e.test_loss,
                             e.test_accuracy, s.metric == "perplexity" ? Perplexity(e.test_loss) : 0});
  }
  // From the first report on (before it, every figure is 0).
  if (phase_ == Phase::kTraining && losses > 0 &&
      (history_.empty() || now - last_history_ >= history_interval_)) {
    last_history_ = now;
    point.samples_per_second = s.samples_per_second;
    point.loss = losses > 0 ? loss_sum / losses : 0;
    history_.push_back(std::move(point));
    if (history_.size() > kHistoryPoints) {
      // A long job keeps its whole course at a coarser grain.
      std::vector<HistoryPoint> thinned;
      for (size_t i = 0; i < history_.size(); i += 2) thinned.push_back(std::move(history_[i]));
      history_ = std::move(thinned);
      history_interval_ *= 2;
    }
  }
  s.history = history_;
  s.published_unix_seconds =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  status_ = std::move(snapshot);
  ++status_number_;
  if (options_.status_board != nullptr) options_.status_board->Publish(status_);
}

void Scheduler::HandleStatusRequest(const Message& message) {
  MaybePublishStatus(/*force=*/false);
  // Rendered once per snapshot: a flood of requests costs a copy each, not a rendering.
  if (status_json_of_ != status_number_) {
    status_json_ = RenderStatusJson(*status_);
    status_json_of_ = status_number_;
  }
  const std::string& json = status_json_;
  flatbuffers::FlatBufferBuilder fbb(256 + json.size());
  auto body = wire::CreateStatusReplyDirect(fbb, json.c_str());
  SendTo(message.routing_id.to_string(), sender_.Seal(fbb, wire::Body::StatusReply, body.Union()));
}

}  // namespace hetps
