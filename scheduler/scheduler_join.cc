// The scheduler's members joining and the start of the job: Join (a rank, the job for a trainer,
// a replacement for a lost server), the trainers' model registrations, the shard map, and the
// start once every server and `trainers` trainers are present (a trainer joining later is
// admitted by scheduler_trainers.cc). Part of the Scheduler class (scheduler/scheduler.h), on its
// loop thread like the rest.
#include <algorithm>

#include "common/logging.h"
#include "scheduler/scheduler.h"

namespace hetps {

void Scheduler::HandleJoin(const Message& message) {
  const std::string id = message.routing_id.to_string();
  const auto* join = message.body<wire::Join>();
  Member* member = members_.Find(id);
  if (member == nullptr) {
    if (join->role() != wire::Role::Server && join->role() != wire::Role::Trainer) {
      return Refuse(message, wire::ErrorCode::Refused, Refusal::Invalid,
                    "only servers and trainers can join");
    }
    if (join->role() == wire::Role::Server &&
        (join->endpoint() == nullptr || join->endpoint()->size() == 0)) {
      return Refuse(message, wire::ErrorCode::Malformed, Refusal::Invalid,
                    "a server must give its data endpoint");
    }
    const bool is_server = join->role() == wire::Role::Server;
    if (const std::string wrong = WrongRoleReason(message, join->role()); !wrong.empty()) {
      return Refuse(message, wire::ErrorCode::Refused, Refusal::Impostor, wrong);
    }
    if (is_server && phase_ != Phase::kGathering && !AwaitingReplacement()) {
      return Refuse(
          message, wire::ErrorCode::Refused, Refusal::OverLimit,
          "the job is already running with all of its " + std::to_string(job_.servers) + " servers");
    }
    if (!is_server) {
      if (const std::string ending = NoRoomForTrainers(); !ending.empty()) {
        return Refuse(message, wire::ErrorCode::Finished, Refusal::Unexpected, ending);
      }
    }
    member = members_.Admit(id, join->role());
    if (member == nullptr) {
      return Refuse(message, wire::ErrorCode::Refused, Refusal::OverLimit,
                    is_server
                        ? "the job expects " + std::to_string(job_.servers) + " servers and has them all"
                        : "the job has all the trainers it takes at once (max_trainers: " +
                              std::to_string(MaxTrainers(job_)) + ")");
    }
    member->joined_late = !is_server && phase_ != Phase::kGathering;
    member->key_name = message.user_id;  // with CURVE, the member is its key from now on
    member->host = join->host() ? join->host()->str() : "";
    member->pid = join->pid();
    member->endpoint = join->endpoint() ? join->endpoint()->str() : "";
    monitor_->Note(member->routing_id, message.source_fd);
    member->device = join->device() ? join->device()->str() : "";
    HETPS_LOG(INFO) << member->Describe() << " joined"
                    << (member->endpoint.empty() ? "" : " serving on " + member->endpoint);
  } else if (const std::string impostor = ImpostorReason(*member, message); !impostor.empty()) {
    return Refuse(message, wire::ErrorCode::Refused, Refusal::Impostor, impostor);
  }
  member->last_heard = Clock::now();
  flatbuffers::FlatBufferBuilder fbb(512);
  flatbuffers::Offset<wire::TrainerJob> trainer_job;
  if (member->role == wire::Role::Trainer) {
    // A late joiner's share in sync comes with the shard map (Rebalance from its first step).
    member->batch_size = UnbalancedBatch(CurrentMode(), AsyncBatchOf(job_), job_.global_batch_size,
                                         job_.trainers, member->rank % job_.trainers);
    const auto optimizer = OptimizerToWire(fbb, trainer_optimizer_);
    trainer_job = wire::CreateTrainerJobDirect(
        fbb, job_.model.c_str(), ToWire(job_.mode), job_.epochs, member->batch_size, job_.seed,
        job_.chunk_samples, chunks_.samples(), job_.eval_batch_size, job_.progress_interval_ms,
        job_.request_timeout_ms,
        job_.data.format.empty() && !job_.data.serve ? 0 : DataOptionsToWire(fbb, job_.data),
        job_.data.serve ? ServedLayout(fbb) : 0, job_.model_file.empty() ? nullptr : job_.model_file.c_str(),
        model_checksum_.empty() ? nullptr : model_checksum_.c_str(), ToWire(job_.loss), model_bytes_.size(),
        model_piece_bytes_, optimizer, job_.global_batch_size, DilocoToWire(fbb, job_.diloco),
        ModelOptionsToWire(fbb, job_.model_options), job_.clip_grad_norm, job_.eval_interval_samples);
  }
  const uint32_t scheduler_timeout_ms = std::max<uint32_t>(3 * job_.heartbeat_timeout_ms, 30000);
  auto token = member->data_token.empty() ? 0 : fbb.CreateString(member->data_token);
  auto body = wire::CreateJoinAccepted(fbb, member->rank, job_.heartbeat_interval_ms, scheduler_timeout_ms,
                                       trainer_job, token);
  SendTo(id, sender_.Seal(fbb, wire::Body::JoinAccepted, body.Union()));
  // The last server may join after every trainer has registered.
  if (member->role == wire::Role::Server) MaybeStartJob();
  // A replacement for a lost server: its shard at once.
  if (member->role == wire::Role::Server && recovery_ && shard_map_ && !member->ready &&
      !links_.Connected(member->rank)) {
    HETPS_LOG(INFO) << member->Describe() << " takes the place of the lost server " << member->rank;
    Status linked = LinkServer(*member);
    if (!linked.ok()) HETPS_LOG(WARNING) << linked.message();
    SendTo(member->routing_id, BuildShardMap(/*for_servers=*/true));
  }
}

void Scheduler::HandleRegisterModel(Member& member, const Message& message) {
  if (member.role != wire::Role::Trainer) {
    return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                  "only trainers register a model");
  }
  // What the list claims is bounded by the message before anything is copied from it; the copy
  // is then checked with overflow-safe arithmetic against the job's limits before anything is
  // built from it: the first signature decides what every server allocates.
  const auto& specs = *message.body<wire::RegisterModel>()->signature();
  Status status = CheckSignatureClaims(specs, message.envelope.size());
  std::vector<TensorInfo> signature;
  if (status.ok()) signature = SignatureFromWire(specs);
  if (status.ok()) status = ValidateSignature(signature, job_.max_model_bytes);
  if (status.ok()) status = CountPartitions(signature, job_.partition_bytes).status();
  const bool too_large = status.code() == Status::Code::kResourceExhausted;
  if (status.ok() && signature_) status = CompareSignatures(*signature_, signature);
  if (!status.ok()) {
    const std::string reason = member.Describe() + " has a model that " +
                               (too_large    ? "is too large: "
                                : signature_ ? "differs from " + signature_owner_ + "'s: "
                                             : "is invalid: ") +
                               status.message();
    HETPS_LOG(WARNING) << "refused " << reason;
    Refuse(message, wire::ErrorCode::Refused, too_large ? Refusal::OverLimit : Refusal::Invalid, reason);
    members_.Remove(member.routing_id);
    return;
  }
  if (!signature_) {
    signature_ = std::move(signature);
    signature_owner_ = "trainer " + std::to_string(member.rank);
  }
  member.register_seq = message.env().seq();
  if (member.registered) {
    // A repeated registration (the trainer resent it): answer with the map if it trains.
    if (member.started) SendTo(member.routing_id, BuildShardMap(/*for_servers=*/false, &member));
    return;
  }
  member.registered = true;
  MaybeStartJob();
  MaybeAdmitTrainer();
}

void Scheduler::MaybeStartJob() {
  if (phase_ != Phase::kGathering) return;
  size_t registered = 0;
  for (Member* t : members_.Members(wire::Role::Trainer)) registered += t->registered ? 1 : 0;
  if (registered >= job_.trainers && members_.Count(wire::Role::Server) == job_.servers) StartJob();
}

void Scheduler::StartJob() {
  // The trainers registered by now make up the job; any other joins it as it runs.
  for (Member* t : members_.Members(wire::Role::Trainer)) t->in_job = t->registered;
  auto map = ShardMap::Build(*signature_, job_.servers, job_.partition_bytes);
  if (!map.ok()) return BeginShutdown(true, "cannot shard the model: " + map.status().message());
  shard_map_ = std::make_unique<ShardMap>(std::move(*map));
  const size_t map_bytes = BuildShardMap(/*for_servers=*/true).size();
  if (map_bytes > kDefaultMaxEnvelopeBytes) {
    return BeginShutdown(true, "the shard map of " + std::to_string(shard_map_->partitions().size()) +
                                   " partitions takes " + std::to_string(map_bytes) +
                                   " bytes, more than a message may (" +
                                   std::to_string(kDefaultMaxEnvelopeBytes) + "); raise partition_bytes");
  }
  uint64_t total = 0;
  for (const TensorInfo& t : shard_map_->tensors()) total += static_cast<uint64_t>(t.numel());
  HETPS_LOG(INFO) << "all members present; model " << job_.model << " has " << shard_map_->tensors().size()
                  << " tensors, " << total << " parameters in " << shard_map_->partitions().size()
                  << " partitions";
  if (!CheckResume()) return;
  phase_ = Phase::kStarting;
  for (Member* server : members_.Members(wire::Role::Server)) {
    Status linked = LinkServer(*server);
    if (!linked.ok()) return BeginShutdown(true, linked.message());
    SendTo(server->routing_id, BuildShardMap(/*for_servers=*/true));
  }
}

void Scheduler::StartTraining() {
  phase_ = Phase::kTraining;
  training_started_ = Clock::now();
  HETPS_LOG(INFO) << "every server holds its shard; training starts (" << ModeName(job_.mode) << ", "
                  << job_.epochs << " epochs of " << chunks_.samples() << " samples"
                  << (LrScheduleEnabled(server_optimizer_.schedule)
                          ? "; the servers' " + DescribeLrSchedule(server_optimizer_.schedule)
                          : "")
                  << ")";
  for (Member* trainer : members_.TrainersInJob()) {
    trainer->started = true;
    SendTo(trainer->routing_id, BuildShardMap(/*for_servers=*/false));
  }
}

zmq::message_t Scheduler::BuildShardMap(bool for_servers, const Member* joiner) {
  flatbuffers::FlatBufferBuilder fbb(4096);
  auto servers = ServerEndpointsToWire(fbb);
  auto tensors = shard_map_->TensorsToWire(fbb);
  auto partitions = shard_map_->PartitionsToWire(fbb);
  auto optimizer = OptimizerToWire(fbb, server_optimizer_);
  auto diloco = DilocoToWire(fbb, job_.diloco);
  // Auto's servers hold a diloco phase's outer optimizer from the start: its switch needs no setup.
  auto outer =
      for_servers && job_.mode == ConsistencyMode::kAuto ? OptimizerToWire(fbb, job_.outer_optimizer) : 0;
  auto trainers = fbb.CreateVector(members_.LiveTrainerRanks());
  auto identities = for_servers ? TrainerIdentities(fbb) : 0;
  auto scheduler_token = for_servers ? fbb.CreateString(links_.token()) : 0;
  auto body = wire::CreateShardMap(
      fbb, /*version=*/1, tensors, partitions, servers, optimizer, ToWire(job_.mode), trainers,
      members_.epoch(), job_.max_message_bytes, job_.staleness, StalenessAwareLr(job_), job_.wire_dtype,
      job_.global_batch_size, identities, joiner != nullptr ? joiner->start_clock : resume_clock_,
      joiner != nullptr ? joiner->start_epoch : resume_epoch_, scheduler_token, diloco, outer);
  return sender_.Seal(fbb, wire::Body::ShardMap, body.Union());
}

}  // namespace hetps
