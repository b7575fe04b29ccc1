// mode: auto: the scheduler measures the trainers while the job runs as async, then switches the
// servers between balanced sync, ssp with a chosen bound and async as the chooser's rule says
// (scheduler/mode_chooser.h), at a step a little ahead, logging each decision with its
// reason and recording it in the run summary. A switch to diloco is the last: servers and
// trainers run its rounds from that step to the end of the job. Part of the Scheduler class
// (scheduler/scheduler.h), on its loop thread.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "common/logging.h"
#include "scheduler/scheduler.h"

namespace hetps {
namespace {

// How far ahead a switch takes effect. A switch into or out of sync must reach every server
// before any of them sees the step it starts at, so that a round is one on all of them; between
// ssp and async, a server or trainer that hears of it a step late (it then switches from its
// next step) changes nothing that matters.
constexpr double kSyncSwitchLeadSeconds = 1.0;
constexpr double kSwitchLeadSeconds = 0.2;
// The longest a switch to sync or ssp may hold the trainers ahead while the one behind catches up
// to the bound (async lets clocks drift apart: after a few seconds of trainers 4x apart, the slow
// one is hundreds of steps behind).
constexpr double kMaxCatchUpSeconds = 1.0;

const ModeChooser::TrainerMeasure* MeasureOf(const std::vector<ModeChooser::TrainerMeasure>& measures,
                                             uint32_t rank) {
  for (const ModeChooser::TrainerMeasure& m : measures) {
    if (m.rank == rank) return &m;
  }
  return nullptr;
}

std::string RuleName(const ModeChooser::Decision& d) {
  std::string name = ModeName(d.mode);
  if (d.mode == ConsistencyMode::kSsp) name += " (staleness " + std::to_string(d.staleness) + ")";
  if (d.mode == ConsistencyMode::kSync) name += " (balanced)";
  return name;
}

}  // namespace

ConsistencyMode Scheduler::CurrentMode() const {
  return job_.mode == ConsistencyMode::kAuto ? auto_rule_.mode : job_.mode;
}

void Scheduler::SendMode(const Member& member, uint64_t from_clock) {
  if (summary_.mode_decisions.size() <= 1) return;  // still the start's rule, which the map implies
  flatbuffers::FlatBufferBuilder fbb(256);
  auto body = wire::CreateModeSwitchDirect(fbb, from_clock, ToWire(auto_rule_.mode), auto_rule_.staleness,
                                           auto_rule_.reason.c_str());
  SendTo(member.routing_id, sender_.Seal(fbb, wire::Body::ModeSwitch, body.Union()));
}

std::string Scheduler::AutoDilocoRefusal(const JobOptions& job) {
  if (!job.checkpoint.dir.empty()) {
    return "it checkpoints (checkpoint.dir), and auto's checkpoints and recovery cut and roll back by "
           "version, not at a round";
  }
  if (MaxTrainers(job) > job.trainers) {
    return "trainers may join it late (max_trainers " + std::to_string(MaxTrainers(job)) +
           "), and a joiner would not start in its rounds";
  }
  return "";
}

void Scheduler::ObserveForAuto(const Member& trainer, const wire::Progress& progress) {
  if (summary_.mode_decisions.empty()) {
    summary_.mode_decisions.push_back(
        {0, 0, ModeName(auto_rule_.mode), auto_rule_.staleness, auto_rule_.reason});
  }
  chooser_->Observe(trainer.rank, SecondsSince(training_started_),
                    static_cast<double>(progress.timed_samples()), progress.timed_steps(),
                    PacedSeconds(progress), progress.timed_seconds());
  MaybeSwitchMode();
}

void Scheduler::MaybeSwitchMode() {
  if (phase_ != Phase::kTraining || admission_ || recovery_ || cut_) return;
  if (auto_rule_.mode == ConsistencyMode::kDiloco) return;  // for good: no look after it
  const ModeChooser::Options& options = chooser_->options();
  const double since_start = SecondsSince(training_started_);
  if (since_start < options.measure_seconds) return;
  const bool first = summary_.mode_decisions.size() <= 1;
  if (first && !EveryTrainerMeasured()) return;  // not a look: the next report may complete it
  if (auto_last_look_ != Clock::time_point{} &&
      SecondsSince(auto_last_look_) < options.decide_interval_seconds) {
    return;
  }
  const auto training = members_.Training();
  for (Member* t : training) {
    if (t->done) return;  // the job is ending: no switch in its last steps
  }
  // Near the end trainers run out of data (and mark themselves idle): the rule stays as it is.
  const uint64_t all = chunks_.samples() * chunks_.epochs();
  const uint64_t left = all - std::min(all, chunks_.completed_samples());
  if (left < 2 * static_cast<uint64_t>(job_.chunk_samples) * training.size()) return;
  const bool first_look = auto_last_look_ == Clock::time_point{};
  auto_last_look_ = Clock::now();
  ModeChooser::Decision decision = ModeChooser::Decide(chooser_->Measures(), options);
  if (decision.SameRule(auto_rule_)) {
    if (first_look) {  // the start's rule stays: say why, once
      HETPS_LOG(INFO) << "mode auto: staying " << RuleName(auto_rule_) << ": " << decision.reason;
      summary_.mode_decisions.front().reason += "; kept at the first look: " + decision.reason;
    }
    auto_candidate_.reset();
    return;
  }
  if (const std::string behind = TooFarBehindFor(decision); !behind.empty()) {
    HETPS_LOG(INFO) << "mode auto: " << RuleName(decision) << " would suit (" << decision.reason << "), but "
                    << behind << "; staying " << RuleName(auto_rule_);
    auto_candidate_.reset();
    return;
  }
  // The first decision is taken at once; later ones must be seen twice in a row, so that one
  // noisy look does not flip the mode back and forth.
  if (!first && !(auto_candidate_ && auto_candidate_->SameRule(decision))) {
    HETPS_LOG(INFO) << "mode auto: " << RuleName(decision) << " would suit (" << decision.reason
                    << "); switching if the next look agrees";
    auto_candidate_ = decision;
    return;
  }
  auto_candidate_.reset();
  SwitchMode(decision);
}

bool Scheduler::EveryTrainerMeasured() {
  const auto measures = chooser_->Measures();
  for (const Member* t : members_.Training()) {
    const ModeChooser::TrainerMeasure* measure = MeasureOf(measures, t->rank);
    if (measure == nullptr || measure->reports < ModeChooser::kMinReports) return false;
  }
  return true;
}

std::string Scheduler::TooFarBehindFor(const ModeChooser::Decision& decision) {
  // Into diloco nobody waits: a trainer behind the switch's step jumps to it and starts its
  // rounds at once (trainer/session_rounds.cc), as the servers take any step's push in async.
  if (decision.mode == ConsistencyMode::kAsync || decision.mode == ConsistencyMode::kDiloco) return "";
  const uint64_t bound = decision.mode == ConsistencyMode::kSsp ? decision.staleness : 0;
  const auto training = members_.Training();
  uint64_t newest = 0;
  for (const Member* t : training) newest = std::max(newest, t->progress.clock);
  const auto measures = chooser_->Measures();
  for (const Member* t : training) {
    const uint64_t behind = newest - std::min(newest, t->progress.clock);
    if (behind <= bound) continue;
    const ModeChooser::TrainerMeasure* measure = MeasureOf(measures, t->rank);
    const double steps_per_second = measure == nullptr ? 0 : measure->steps_per_second;
    const double seconds = steps_per_second > 0 ? static_cast<double>(behind - bound) / steps_per_second : 0;
    if (steps_per_second > 0 && seconds <= kMaxCatchUpSeconds) continue;
    std::ostringstream why;
    why << std::fixed << std::setprecision(1) << "trainer " << t->rank << " is " << behind << " steps behind";
    if (steps_per_second > 0) {
      why << ", " << seconds << " s of its steps that the others would wait (at most " << kMaxCatchUpSeconds
          << " s)";
    } else {
      why << " at a speed not measured";
    }
    return why.str();
  }
  return "";
}

void Scheduler::SwitchMode(const ModeChooser::Decision& decision) {
  // Into diloco (its rounds synchronous or not: a server must know a pseudo-gradient from a
  // gradient), as into sync, every server and trainer must hear of it before the step it starts.
  const bool sync = decision.mode == ConsistencyMode::kDiloco || HasRounds(decision.mode, job_.diloco) ||
                    auto_rule_.mode == ConsistencyMode::kSync;
  const uint64_t from_clock = StepAhead(sync ? kSyncSwitchLeadSeconds : kSwitchLeadSeconds);
  HETPS_LOG(INFO) << "mode auto: " << RuleName(auto_rule_) << " -> " << RuleName(decision) << " from step "
                  << from_clock << ": " << decision.reason;
  display_.Note("mode auto: " + RuleName(decision) + " from step " + std::to_string(from_clock));
  const ConsistencyMode before = auto_rule_.mode;
  auto_rule_ = decision;
  summary_.mode_decisions.push_back({SecondsSince(training_started_), from_clock, ModeName(decision.mode),
                                     decision.staleness, decision.reason});
  LogModeDecision(summary_.mode_decisions.back());
  for (Member* server : members_.Members(wire::Role::Server)) SendMode(*server, from_clock);
  if (decision.mode == ConsistencyMode::kDiloco) {
    // The trainers leave their per-step loop at from_clock (or, behind it, at once) and run rounds
    // of inner steps of the whole global batch, as in mode diloco. The batch goes first: a
    // trainer that jumps to from_clock on the switch has it in already.
    std::map<uint32_t, uint32_t> sizes;
    for (Member* t : members_.Training()) {
      if (t->batch_size != job_.global_batch_size) sizes[t->rank] = job_.global_batch_size;
    }
    SendBatchSizes(from_clock, sizes);
    for (Member* trainer : members_.Training()) SendMode(*trainer, from_clock);
  } else if (decision.mode == ConsistencyMode::kSync) {
    Resplit(from_clock);  // by the speeds measured so far; the balancer refines it
  } else if (before == ConsistencyMode::kSync) {
    // Back to each trainer's even share, or all of the global batch with async_batch: whole.
    const auto training = members_.Training();
    std::map<uint32_t, uint32_t> sizes;
    for (size_t i = 0; i < training.size(); ++i) {
      sizes[training[i]->rank] =
          UnbalancedBatch(decision.mode, AsyncBatchOf(job_), job_.global_batch_size,
                          static_cast<uint32_t>(training.size()), static_cast<uint32_t>(i));
    }
    SendBatchSizes(from_clock, sizes);
  }
}

}  // namespace hetps
