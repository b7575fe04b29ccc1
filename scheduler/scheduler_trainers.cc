// The scheduler's elastic trainers: a trainer joining a running job, a trainer leaving it (on its
// own with Goodbye, or declared dead), and how the global batch is split over the trainers.
//
// A joiner is admitted at a step of its own: in sync mode a step a little ahead of the fastest
// trainer, which every server must still be able to count it from (a server whose partitions
// have already completed that round refuses, and the next proposal lies further ahead); in async
// and ssp the fastest trainer's step, so that ssp does not hold the others back for it. Once every
// server has agreed, the joiner gets the shard map with its first step and pulls the weights of
// that round (sync) or the newest ones, and in sync every trainer takes a new share of the global
// batch from that step. Part of the Scheduler class (scheduler/scheduler.h), on its loop thread.
#include <algorithm>
#include <cmath>

#include "common/logging.h"
#include "scheduler/scheduler.h"

namespace hetps {
namespace {

// balance: speed: at most one new split per interval; it takes effect at a step this far ahead
// of the fastest trainer.
constexpr auto kRebalanceInterval = std::chrono::seconds(2);
constexpr double kRebalanceLeadSeconds = 1.0;
constexpr double kTailLeadSeconds = 0.1;
// A sync joiner's first step lies this far ahead of the fastest trainer (doubled after each
// proposal a server was already past), so that every server hears of it before reaching it.
constexpr double kJoinLeadSeconds = 1.0;
// Servers answer a proposal in milliseconds; one unanswered this long is made again.
constexpr auto kAdmissionTimeout = std::chrono::seconds(10);

}  // namespace

std::string Scheduler::NoRoomForTrainers() const {
  if (phase_ == Phase::kFinishing || phase_ == Phase::kShuttingDown || final_epoch_over_) {
    return "the job has trained all of its data and is finishing; no trainer can join it now";
  }
  return "";
}

void Scheduler::MaybeAdmitTrainer() {
  if (admission_ && Clock::now() - admission_->proposed > kAdmissionTimeout) {
    // A server's answer went missing (a send failed): ask them all again.
    if (Member* trainer = members_.Find(admission_->routing_id)) {
      ++admission_->misses;
      return ProposeAdmission(*trainer);
    }
    admission_.reset();
  }
  if (phase_ != Phase::kTraining || recovery_ || admission_ || cut_) return;
  Member* joiner = nullptr;
  for (Member* t : members_.Members(wire::Role::Trainer)) {
    if (t->registered && !t->in_job) {
      joiner = t;
      break;
    }
  }
  if (joiner == nullptr) return;
  if (const std::string ending = NoRoomForTrainers(); !ending.empty()) {
    // Answers its registration, which waits for the shard map: it leaves with this reason.
    SendTo(joiner->routing_id, sender_.MakeError(wire::ErrorCode::Finished, ending, joiner->register_seq));
    HETPS_LOG(INFO) << joiner->Describe() << " came too late: " << ending;
    members_.Remove(joiner->routing_id);
    return;
  }
  const auto training = members_.Training();
  if (training.empty()) return;
  // A sync joiner's first step is placed by the trainers' speed: wait for their first reports.
  uint64_t newest_clock = 0;
  for (Member* t : training) newest_clock = std::max(newest_clock, t->progress.clock);
  if (HasRounds(job_.mode, job_.diloco) && newest_clock == 0) return;
  ProposeAdmission(*joiner);
}

uint64_t Scheduler::StepAhead(double lead_seconds) {
  uint64_t newest_clock = 0;
  double steps_per_second = 0;
  for (Member* t : members_.Training()) {
    newest_clock = std::max(newest_clock, t->progress.clock);
    if (t->progress.steps_per_second > 0) {
      steps_per_second = std::max(steps_per_second, t->progress.steps_per_second);
    } else if (t->progress.batch_size > 0 && job_.mode != ConsistencyMode::kDiloco) {
      // One report so far. (A diloco round takes many batches: its pace is unknown until two.)
      steps_per_second = std::max(steps_per_second, t->progress.samples_per_second / t->progress.batch_size);
    }
  }
  // Servers count rounds too (in heartbeats), which may be newer than the trainers' reports.
  for (Member* s : members_.Members(wire::Role::Server))
    newest_clock = std::max(newest_clock, s->counters.rounds);
  // Reports are checked (at most 1e9 samples a second), so this stays far inside uint64_t.
  const double ahead = std::min(std::ceil(steps_per_second * lead_seconds), 1e15);
  return newest_clock + 2 + static_cast<uint64_t>(ahead);
}

void Scheduler::ProposeAdmission(Member& trainer) {
  const auto training = members_.Training();
  const uint32_t misses = admission_ ? admission_->misses : 0;
  uint64_t first_step = 0;
  uint32_t epoch = job_.epochs - 1;
  for (Member* t : training) {
    // The lowest epoch: a joiner behind the others finds its epoch handed out and moves on at once.
    epoch = std::min(epoch, t->progress.epoch);
    if (!t->done) first_step = std::max(first_step, t->progress.clock);
  }
  if (HasRounds(job_.mode, job_.diloco)) {
    // Progress reports are up to one interval old: the trainers are that much further on. The
    // steps added after a miss keep the proposals moving when the speeds say little (empty rounds).
    const double doubling = static_cast<double>(1u << std::min<uint32_t>(misses, 5));
    first_step = StepAhead(kJoinLeadSeconds * doubling + job_.progress_interval_ms / 1000.0) +
                 (uint64_t{1} << std::min<uint32_t>(misses, 10)) - 1;
  }
  trainer.in_job = true;
  trainer.start_clock = first_step;
  trainer.start_epoch = epoch;
  trainer.progress.clock = first_step;
  trainer.progress.epoch = epoch;
  members_.BumpEpoch();
  // Not emplace(): clang rejects it for a nested struct with member initialisers (as Recovery).
  Admission admission;
  admission.routing_id = trainer.routing_id;
  admission.misses = misses;
  admission.proposed = Clock::now();
  admission_ = std::move(admission);
  HETPS_LOG(INFO) << trainer.Describe() << " joins the running job; proposing step " << first_step
                  << " (epoch " << epoch + 1 << ") to the servers";
  BroadcastMembership();
}

bool Scheduler::HandleAdmissionReply(uint32_t server, const Message& reply) {
  if (!admission_) return false;
  auto awaited = admission_->awaiting.find(server);
  if (awaited == admission_->awaiting.end()) return false;
  const uint64_t seq = reply.kind() == wire::Body::Ack     ? reply.body<wire::Ack>()->seq()
                       : reply.kind() == wire::Body::Error ? reply.body<wire::Error>()->seq()
                                                           : 0;
  if (seq != awaited->second) return false;
  Member* trainer = members_.Find(admission_->routing_id);
  if (trainer == nullptr || !trainer->alive) {
    admission_.reset();
    return true;
  }
  if (reply.kind() == wire::Body::Error) {
    // The server had already passed the proposed step: propose a later one to every server.
    HETPS_LOG(INFO) << "server " << server << " cannot count " << trainer->Describe() << " from step "
                    << trainer->start_clock << " (" << reply.body<wire::Error>()->reason()->str()
                    << "); proposing a later step";
    ++admission_->misses;
    ProposeAdmission(*trainer);
    return true;
  }
  admission_->awaiting.erase(awaited);
  if (admission_->awaiting.empty()) FinishAdmission();
  return true;
}

void Scheduler::FinishAdmission() {
  Member* trainer = members_.Find(admission_->routing_id);
  admission_.reset();
  if (trainer == nullptr || !trainer->alive) return;
  trainer->started = true;
  trainer->first_step = trainer->start_clock;
  HETPS_LOG(INFO) << trainer->Describe() << " joined the running job; it starts at step "
                  << trainer->start_clock;
  display_.Note(trainer->Describe() + " joined at step " + std::to_string(trainer->start_clock));
  SendTo(trainer->routing_id, BuildShardMap(/*for_servers=*/false, trainer));
  if (job_.mode == ConsistencyMode::kSync) Resplit(trainer->start_clock);
  MaybeRequestEvaluation();
}

void Scheduler::AbandonAdmission(const std::string& why) {
  if (!admission_) return;
  Member* trainer = members_.Find(admission_->routing_id);
  admission_.reset();
  if (trainer == nullptr || !trainer->alive) return;
  HETPS_LOG(INFO) << trainer->Describe() << " waits to join: " << why;
  trainer->in_job = false;
  trainer->start_clock = 0;
  members_.BumpEpoch();
  BroadcastMembership();  // servers that counted it forget it
}

void Scheduler::TrainerGone(Member& member, const std::string& why, bool left) {
  if (left) {
    HETPS_LOG(INFO) << member.Describe() << " left the job";
  } else {
    HETPS_LOG(WARNING) << member.Describe() << " is dead: " << why;
  }
  const bool was_in_job = member.in_job;
  members_.MarkDead(member);
  member.left = left;
  if (phase_ == Phase::kGathering) {
    // Not in the job yet: its place is free for another. A model no trainer still waiting holds
    // is nobody's: one that registered and left does not fix the job's model for those to come.
    members_.Remove(member.routing_id);
    const auto waiting = members_.Members(wire::Role::Trainer);
    if (signature_ &&
        std::none_of(waiting.begin(), waiting.end(), [](const Member* t) { return t->registered; })) {
      HETPS_LOG(INFO) << "no trainer holding " << signature_owner_
                      << "'s model is left; the next to register sets it";
      signature_.reset();
      signature_owner_.clear();
    }
    return;
  }
  if (admission_ && admission_->routing_id == member.routing_id) admission_.reset();
  if (!was_in_job) return;  // a joiner that was still waiting: nothing to hand back
  // A cut waiting for its data position would wait out its timeout, and keep joiners out so long.
  if (cut_ && cut_->AwaitsPosition(member.rank)) {
    AbandonCut(member.Describe() + (left ? " left" : " died") + " before reporting its data position");
  }
  if (balancer_) balancer_->Forget(member.rank);
  stalls_.Forget(member.rank);
  const size_t returned = chunks_.Requeue(member.rank);
  if (returned > 0)
    HETPS_LOG(INFO) << returned << " data chunks of " << member.Describe() << " returned to the queue";
  display_.Note(member.Describe() + (left ? " left" : " died") + "; " + std::to_string(returned) +
                " chunks returned to the queue");
  if (members_.TrainersInJob().empty()) {
    return BeginShutdown(true, "every trainer has stopped; the last was " + member.Describe() +
                                   (left ? ", which left" : " (" + why + ")"));
  }
  BroadcastMembership();
  if (chooser_) chooser_->Forget(member.rank);
  if (CurrentMode() == ConsistencyMode::kSync && phase_ == Phase::kTraining && !members_.Training().empty()) {
    Resplit(StepAhead(kRebalanceLeadSeconds));
  }
  if (eval_member_ == member.routing_id) eval_member_.clear();  // ask another trainer
  MaybeRequestEvaluation();
}

void Scheduler::BroadcastMembership() {
  const auto ranks = members_.LiveTrainerRanks();
  if (admission_) admission_->awaiting.clear();
  for (Member* server : members_.Members(wire::Role::Server)) {
    flatbuffers::FlatBufferBuilder fbb(256);
    auto body =
        wire::CreateMembership(fbb, members_.epoch(), fbb.CreateVector(ranks), TrainerIdentities(fbb));
    zmq::message_t envelope = sender_.Seal(fbb, wire::Body::Membership, body.Union());
    const uint64_t seq = sender_.last_seq();
    if (!links_.Connected(server->rank)) {
      // Not linked yet (a replacement still joining): its shard map will carry the trainers.
      SendTo(server->routing_id, std::move(envelope));
      continue;
    }
    Status sent = links_.Send(server->rank, std::move(envelope));
    if (!sent.ok()) {
      HETPS_LOG(WARNING) << server->Describe() << ": " << sent.message();
      continue;
    }
    if (admission_) admission_->awaiting[server->rank] = seq;
  }
  for (Member* trainer : members_.Training()) {
    flatbuffers::FlatBufferBuilder fbb(128);
    auto body = wire::CreateMembership(fbb, members_.epoch(), fbb.CreateVector(ranks));
    SendTo(trainer->routing_id, sender_.Seal(fbb, wire::Body::Membership, body.Union()));
  }
  if (admission_ && admission_->awaiting.empty()) FinishAdmission();
}

bool Scheduler::TrainerStartsAtOrAfter(uint64_t clock) {
  for (Member* t : members_.TrainersInJob()) {
    if (t->start_clock > 0 && t->start_clock >= clock) return true;
  }
  return false;
}

std::vector<Member*> Scheduler::TrainersWithData() {
  std::vector<Member*> with_data;
  for (Member* t : members_.Training()) {
    if (!t->out_of_data) with_data.push_back(t);
  }
  return with_data;
}

void Scheduler::LeaveShareToTrainersWithData(Member& trainer, uint64_t clock) {
  if (!balancer_ || CurrentMode() != ConsistencyMode::kSync || trainer.out_of_data) return;
  const std::vector<Member*> with_data = TrainersWithData();
  if (std::find(with_data.begin(), with_data.end(), &trainer) == with_data.end()) return;
  trainer.out_of_data = true;
  if (with_data.size() < 2) return;  // nobody else is left to take the share
  for (Member* t : with_data) {
    if (t->balanced_batch == 0) t->balanced_batch = t->batch_size;
  }
  std::vector<Member*> rest;
  for (Member* t : with_data) {
    if (t != &trainer) rest.push_back(t);
  }
  HETPS_LOG(INFO) << trainer.Describe()
                  << " has no data left in the last epoch; its share of the global batch "
                  << "goes to the trainers still training";
  // The trainers in sync are a step apart at most: a few steps ahead of the one that asked is
  // enough for the message to arrive first.
  Resplit(std::max(StepAhead(kTailLeadSeconds), clock + 2), rest);
}

void Scheduler::Resplit(uint64_t from_clock) {
  Resplit(from_clock, TrainersWithData());
}

void Scheduler::Resplit(uint64_t from_clock, const std::vector<Member*>& training) {
  if (training.empty()) return;
  std::vector<double> weights;
  double known = 0;
  size_t known_count = 0;
  for (Member* t : training) {
    const double speed = balancer_ ? balancer_->Speed(t->rank) : 0;
    weights.push_back(speed);
    if (speed > 0) {
      known += speed;
      ++known_count;
    }
  }
  // Equal shares, or shares by speed with a trainer not yet measured taken at the mean.
  const double mean = known_count > 0 ? known / static_cast<double>(known_count) : 1.0;
  for (double& w : weights) w = balancer_ && w > 0 ? w : mean;
  const std::vector<uint32_t> split = balancer_ ? Balancer::Split(job_.global_batch_size, weights) : [&] {
    std::vector<uint32_t> even;
    for (size_t i = 0; i < training.size(); ++i) {
      even.push_back(EvenBatchShare(job_.global_batch_size, static_cast<uint32_t>(training.size()),
                                    static_cast<uint32_t>(i)));
    }
    return even;
  }();
  std::map<uint32_t, uint32_t> sizes;
  std::string text;
  for (size_t i = 0; i < training.size(); ++i) {
    sizes[training[i]->rank] = split[i];
    text += (text.empty() ? "" : ", ") + std::string("trainer ") + std::to_string(training[i]->rank) + " " +
            std::to_string(split[i]);
  }
  HETPS_LOG(INFO) << "the global batch over " << training.size() << " trainers from step " << from_clock
                  << ": " << text;
  last_rebalance_ = Clock::now();
  SendBatchSizes(from_clock, sizes);
}

void Scheduler::MaybeRebalance() {
  if (phase_ != Phase::kTraining || admission_ || CurrentMode() != ConsistencyMode::kSync) return;
  const auto now = Clock::now();
  if (now - last_rebalance_ < kRebalanceInterval) return;
  std::vector<uint32_t> ranks;
  std::map<uint32_t, uint32_t> current;
  for (Member* t : TrainersWithData()) {
    if (t->done) return;  // the job is ending
    ranks.push_back(t->rank);
    current[t->rank] = t->batch_size;
  }
  if (ranks.empty()) return;
  auto proposal = balancer_->Propose(ranks, current);
  if (!proposal) return;
  last_rebalance_ = now;
  // Far enough ahead that every trainer has the message before it reaches that step.
  const uint64_t from_clock = StepAhead(kRebalanceLeadSeconds);
  std::string split;
  for (const auto& [rank, batch] : *proposal) {
    split += (split.empty() ? "" : ", ") + std::string("trainer ") + std::to_string(rank) + " " +
             std::to_string(batch);
  }
  HETPS_LOG(INFO) << "balancing the global batch by speed from step " << from_clock << ": " << split;
  SendBatchSizes(from_clock, *proposal);
  WarnOfFixedCosts(*proposal);
}

void Scheduler::WarnOfFixedCosts(const std::map<uint32_t, uint32_t>& split) {
  for (Member* t : members_.Training()) {
    auto batch = split.find(t->rank);
    const std::optional<Balancer::StepCost> cost = balancer_->Cost(t->rank);
    if (batch == split.end() || !cost || fixed_cost_warned_.count(t->rank) != 0 ||
        !Balancer::MostlyFixedCost(*cost, batch->second, job_.global_batch_size)) {
      continue;
    }
    fixed_cost_warned_.insert(t->rank);
    const double step_ms = 1e3 * cost->Seconds(batch->second), fixed_ms = 1e3 * cost->fixed_seconds;
    HETPS_LOG(WARNING) << t->Describe() << " takes " << batch->second << " samples of the global batch of "
                       << job_.global_batch_size << " and spends " << static_cast<int>(fixed_ms)
                       << " ms of its " << static_cast<int>(step_ms)
                       << " ms step on fixed costs (its transfers of the model, copies): every round waits "
                          "for them for a small share of the samples, and the others may run faster without "
                          "it. mode: async or auto lets a slow machine train at its own pace; a larger "
                          "global_batch_size spreads the fixed cost over more samples"
                       << (job_.wire_dtype == wire::DType::F32 ? "; wire_dtype: bf16 halves the transfers"
                                                               : "");
  }
}

void Scheduler::SendBatchSizes(uint64_t from_clock, const std::map<uint32_t, uint32_t>& sizes) {
  if (sizes.empty()) return;
  std::vector<uint32_t> by_rank(sizes.rbegin()->first + 1, 0);
  for (const auto& [rank, batch] : sizes) by_rank[rank] = batch;
  for (Member* t : members_.Training()) {
    auto it = sizes.find(t->rank);
    if (it == sizes.end()) continue;
    t->batch_size = it->second;
    flatbuffers::FlatBufferBuilder fbb(64 + 4 * by_rank.size());
    auto body = wire::CreateRebalanceDirect(fbb, from_clock, &by_rank);
    SendTo(t->routing_id, sender_.Seal(fbb, wire::Body::Rebalance, body.Union()));
  }
}

}  // namespace hetps
