#include "scheduler/scheduler.h"

#include <algorithm>
#include <filesystem>

#include "checkpoint/checksum.h"
#include "common/exposure.h"
#include "common/logging.h"
#include "common/refusal_log.h"
#include "common/transport.h"

namespace hetps {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(100);
constexpr auto kGoodbyeWait = std::chrono::seconds(5);
// Messages queued per member connection: members send a few a second and wait for answers, so
// a flood from one connection meets back-pressure long before it costs memory.
constexpr int kControlReceiveHwm = 64;
const ReceiveLimits kControlLimits{1, kDefaultMaxEnvelopeBytes};

uint64_t TrainSamples(const SchedulerOptions& options) {
  const JobOptions& job = options.job;
  const uint64_t all = options.train_data ? static_cast<uint64_t>(options.train_data->samples)
                                          : DatasetTrainSamples(job.dataset);
  return job.max_train_samples > 0 ? std::min(all, job.max_train_samples) : all;
}

}  // namespace

Scheduler::Scheduler(zmq::context_t& context, SchedulerOptions options)
    : context_(context),
      options_(std::move(options)),
      job_(options_.job),
      members_(job_.servers, MaxTrainers(job_)),
      chunks_(TrainSamples(options_), job_.chunk_samples, job_.epochs),
      display_(options_.progress_out, options_.progress_in_place, std::chrono::seconds(5)),
      bounds_(BoundsOf(job_, chunks_.samples())),
      fs_(options_.fs != nullptr ? *options_.fs : PosixFileSystem()),
      links_(context, NewDataToken()),
      stalls_({std::chrono::seconds(job_.stall_floor_s), job_.stall_pace_factor}) {
  job_.diloco.async = AsyncRoundsOf(job_);  // as servers and trainers are told it
  if ((job_.mode == ConsistencyMode::kSync && job_.balance == Balance::kSpeed) ||
      job_.mode == ConsistencyMode::kAuto) {
    balancer_.emplace(job_.global_batch_size);
  }
  if (job_.mode == ConsistencyMode::kAuto) {
    ModeChooser::Options rule;
    rule.measure_seconds = job_.auto_mode.measure_seconds;
    rule.decide_interval_seconds = job_.auto_mode.decide_interval_seconds;
    rule.steady_variation = job_.auto_mode.steady_variation;
    rule.sync_min_speed_ratio = job_.auto_mode.sync_min_speed_ratio;
    rule.max_staleness = job_.auto_mode.max_staleness;
    rule.stall_memory_seconds = job_.auto_mode.stall_memory_seconds;
    rule.async_whole = AsyncBatchOf(job_) == AsyncBatch::kWhole;
    rule.global_batch = job_.global_batch_size;
    rule.async_min_transfer_share = job_.auto_mode.async_min_transfer_share;
    rule.diloco_min_speedup = job_.auto_mode.diloco_min_speedup;
    rule.diloco_sync_share = job_.diloco.sync_share;
    auto_diloco_refusal_ = AutoDilocoRefusal(job_);
    rule.diloco = auto_diloco_refusal_.empty();
    if (!rule.diloco) HETPS_LOG(INFO) << "mode auto: never diloco in this job: " << auto_diloco_refusal_;
    chooser_.emplace(rule, job_.progress_interval_ms / 1000.0);
    auto_rule_.mode = ConsistencyMode::kAsync;
    auto_rule_.reason = "the start: async while the trainers are measured";
  }
}

Scheduler::~Scheduler() = default;

Status Scheduler::Start() {
  HETPS_RETURN_IF_ERROR(ValidateJobOptions(job_));
  {
    auto servers = ScheduledOptimizer(job_, chunks_.samples(), /*for_servers=*/true);
    auto trainers = ScheduledOptimizer(job_, chunks_.samples(), /*for_servers=*/false);
    if (!servers.ok()) return servers.status();
    if (!trainers.ok()) return trainers.status();
    server_optimizer_ = *servers;
    trainer_optimizer_ = *trainers;
  }
  if (!job_.model_file.empty()) {
    // Trainers started elsewhere on this machine (another working directory) find it too.
    job_.model_file = std::filesystem::absolute(job_.model_file).lexically_normal().string();
    // Held from now on: the bytes checksummed are the bytes trainers without a copy receive, even
    // if the file changes or goes away while the job runs.
    auto bytes = fs_.ReadFile(job_.model_file);
    if (!bytes.ok()) return bytes.status().WithContext("model.torchscript");
    model_bytes_ = std::move(*bytes);
    model_checksum_ = FormatCrc32(Crc32(model_bytes_.data(), model_bytes_.size()));
    model_piece_bytes_ = ModelPieceBytes(job_.max_message_bytes);
    HETPS_LOG(INFO) << "model: TorchScript file " << job_.model_file << " (" << model_checksum_ << ", "
                    << model_bytes_.size() << " bytes), loss " << LossName(job_.loss);
  }
  if (job_.data.serve && options_.train_data && options_.test_data) ComputeServedChecksum();
  // Members send the scheduler envelopes only, each at most kDefaultMaxEnvelopeBytes.
  SocketOptions socket_options;
  socket_options.max_message_bytes = static_cast<int64_t>(kDefaultMaxEnvelopeBytes);
  socket_options.receive_hwm = kControlReceiveHwm;
  HETPS_RETURN_IF_ERROR(SetUpCurve(&socket_options));
  socket_ = MakeSocket(context_, zmq::socket_type::router, socket_options);
  auto bound = Bind(socket_, job_.listen);
  if (!bound.ok()) {
    return Status(
        bound.status().code(),
        bound.status().message() + " (is another scheduler using it? choose another with --listen)");
  }
  endpoint_ = *bound;
  WarnIfExposed("the scheduler", endpoint_, job_.security.curve);
  if (zap_) {
    // The ROUTER's one monitor reports both closed connections and CURVE's failed handshakes.
    ZapHandler* zap = zap_.get();
    monitor_ = std::make_unique<ConnectionMonitor>(
        context_, socket_,
        [zap](uint16_t event, uint32_t value, const std::string& address) {
          zap->HandshakeFailed(event, value, address);
        },
        ZapHandler::kHandshakeFailureEvents);
  } else {
    monitor_ = std::make_unique<ConnectionMonitor>(context_, socket_);
  }
  if (!options_.resume.empty()) {
    auto manifest = LoadManifest(fs_, options_.resume);
    if (!manifest.ok()) return manifest.status().WithContext("cannot resume");
    resume_ = std::move(*manifest);
  }
  summary_.checkpoints.dir = job_.checkpoint.dir;
  if (!job_.checkpoint.dir.empty() || !job_.model_out.empty()) {
    CheckpointWriter::Options writer_options;
    writer_options.keep = job_.checkpoint.keep;
    writer_ = std::make_unique<CheckpointWriter>(fs_, job_.checkpoint.dir, writer_options);
  }
  HETPS_RETURN_IF_ERROR(OpenHistory());
  if (!options_.endpoint_file.empty()) {
    HETPS_RETURN_IF_ERROR(WriteFileAtomically(options_.endpoint_file, endpoint_ + "\n"));
  }
  return Status::Ok();
}

Status Scheduler::Run() {
  SetThreadLogTag("scheduler");
  if (endpoint_.empty()) HETPS_RETURN_IF_ERROR(Start());
  HETPS_LOG(INFO) << "listening on " << endpoint_ << "; waiting for " << job_.servers << " servers and "
                  << job_.trainers << " trainers"
                  << (MaxTrainers(job_) > job_.trainers
                          ? " (up to " + std::to_string(MaxTrainers(job_)) + " may train at once)"
                          : std::string());
  while (true) {
    std::vector<zmq::socket_t*> polled = {&socket_, &monitor_->socket()};
    for (zmq::socket_t* link : links_.sockets()) polled.push_back(link);
    if (PollReadable(polled, kPollInterval)[0]) {
      // Bounded, so liveness checks and the display keep running under a flood of messages.
      for (int i = 0; i < 1024; ++i) {
        auto received = TryReceive(socket_, /*router=*/true, kControlLimits);
        if (!received.ok()) return received.status();
        if (!received->has_value()) break;
        HandleGuarded(std::move(**received));
      }
    }
    for (auto& [rank, reply] : links_.ReceiveAll()) HandleServerReply(rank, std::move(reply));
    // A closed connection is a member whose process ended (a process that hangs or is slow keeps
    // its connection): a trainer's place is free at once for a restarted one.
    for (const std::string& id : monitor_->TakeDropped()) {
      Member* member = members_.Find(id);
      if (member != nullptr && member->alive && phase_ != Phase::kShuttingDown) {
        DeclareDead(*member, "its connection closed");
      }
    }
    Tick();
    if (options_.stop != nullptr && options_.stop->load()) {
      BeginShutdown(true, "the scheduler was asked to stop (signal)" + ResumeHint(), /*requested=*/true);
    } else if (options_.stop_after_checkpoint != nullptr && options_.stop_after_checkpoint->load()) {
      StopAfterCheckpoint();
    }
    if (phase_ == Phase::kShuttingDown) {
      bool all_gone = true;
      for (Member* server : members_.Members(wire::Role::Server)) {
        all_gone = all_gone && server->said_goodbye;
      }
      if (all_gone || Clock::now() > shutdown_deadline_) break;
    }
  }
  FillSummary();
  CloseHistory();
  ShowProgress(/*force=*/true);
  MaybePublishStatus(/*force=*/true);
  SaveStatusPage();
  if (!job_.summary.empty()) {
    Status written = WriteFileAtomically(job_.summary, summary_.ToJson());
    if (!written.ok()) {
      HETPS_LOG(ERROR) << written.message();
      if (!failed_) return written;
    }
  }
  if (failed_) return Status::Unavailable(failure_);
  return Status::Ok();
}

void Scheduler::HandleGuarded(Message message) {
  try {
    Handle(std::move(message));
  } catch (const zmq::error_t&) {
    throw;  // the sockets' own failures end the process as before
  } catch (const std::exception& e) {
    const uint64_t count = refusals_.Add(Refusal::Unexpected);
    HETPS_LOG(ERROR) << "a message could not be handled and was dropped (" << count
                     << " refused so far): " << e.what();
  }
}

void Scheduler::Handle(Message message) {
  if (message.routing_id.size() == 0) return;
  if (!message.over_limit.empty()) {
    return Refuse(message, wire::ErrorCode::Refused, Refusal::Oversized, message.over_limit);
  }
  Status valid = VerifyEnvelope(message);
  if (!valid.ok()) return Refuse(message, wire::ErrorCode::Malformed, Refusal::Unverified, valid.message());
  if (message.kind() == wire::Body::Join) return HandleJoin(message);
  if (message.kind() == wire::Body::StatusRequest) return HandleStatusRequest(message);
  Member* member = members_.Find(message.routing_id.to_string());
  if (member == nullptr && replaced_.count(message.routing_id.to_string()) > 0) {
    // A server declared lost that still runs (it hung, or its connection dropped): it was replaced.
    flatbuffers::FlatBufferBuilder fbb(128);
    auto body = wire::CreateShutdownDirect(fbb, true, "this server was declared lost and replaced");
    return SendTo(message.routing_id.to_string(), sender_.Seal(fbb, wire::Body::Shutdown, body.Union()));
  }
  if (member == nullptr) {
    return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                  std::string(KindName(message.kind())) + " from a process that has not joined");
  }
  if (const std::string impostor = ImpostorReason(*member, message); !impostor.empty()) {
    return Refuse(message, wire::ErrorCode::Refused, Refusal::Impostor, impostor);
  }
  if (!member->alive) {
    if (member->left) return;  // what it sent before its Goodbye arrived
    return Refuse(message, wire::ErrorCode::Refused, Refusal::Unexpected,
                  member->Describe() + " was declared dead; restart it to rejoin");
  }
  member->last_heard = Clock::now();
  monitor_->Note(member->routing_id, message.source_fd);
  switch (message.kind()) {
    case wire::Body::Heartbeat: {
      // Implausible figures are refused, the last plausible ones kept; the heartbeat still counts.
      const auto* stats = message.body<wire::Heartbeat>()->server_stats();
      if (stats != nullptr && !RefuseImplausible(message, CheckServerStats(*stats)) &&
          member->role == wire::Role::Server) {  // only a server's figures count
        member->counters = CountersFromWire(*stats);
        DropTrainersLeftOut(*member);
        JudgeStalls(*member, *stats);
      }
      SendTo(member->routing_id, sender_.MakeEmpty(wire::Body::HeartbeatAck));
      return;
    }
    case wire::Body::RegisterModel:
      return HandleRegisterModel(*member, message);
    case wire::Body::ShardReady:
      member->ready = true;
      if (chooser_) SendMode(*member, 0);  // a replacement server takes the rule in force
      if (recovery_) return MaybeRestoreServers();
      if (phase_ == Phase::kStarting) {
        for (Member* server : members_.Members(wire::Role::Server)) {
          if (!server->ready) return;
        }
        if (resume_) return RestoreForResume();
        StartTraining();
      }
      return;
    case wire::Body::ChunkRequest:
      // Unanswered while servers are restored, and from before the last restore: the trainer asks
      // again once it goes on, reporting the same finished chunks.
      if (recovery_ || message.env().generation() < generation_) return;
      return HandleChunkRequest(*member, message);
    case wire::Body::DataPosition:
      return HandleDataPosition(*member, message);
    case wire::Body::DataRequest:
      return HandleDataRequest(*member, message);
    case wire::Body::ModelFileRequest:
      return HandleModelFileRequest(*member, message);
    case wire::Body::Progress:
      return HandleProgress(*member, message);
    case wire::Body::Done:
      if (RefuseImplausible(message, CheckDone(*message.body<wire::Done>(), bounds_))) return;
      return HandleDone(*member, message);
    case wire::Body::EvalReport:
      if (RefuseImplausible(message, CheckEvalReport(*message.body<wire::EvalReport>(), bounds_))) return;
      return HandleEvalReport(*member, message);
    case wire::Body::Goodbye: {
      const auto* stats = message.body<wire::Goodbye>()->server_stats();
      if (stats != nullptr && !RefuseImplausible(message, CheckServerStats(*stats))) {
        member->counters = CountersFromWire(*stats);
      }
      member->said_goodbye = true;
      // A trainer leaves on its own (stopped by a signal): out of the job now, not after the
      // heartbeat timeout.
      if (member->role == wire::Role::Trainer && phase_ != Phase::kShuttingDown) {
        TrainerGone(*member, "it left the job (Goodbye)", /*left=*/true);
      }
      return;
    }
    case wire::Body::Error: {
      const std::string reason = message.body<wire::Error>()->reason()->str();
      HETPS_LOG(WARNING) << member->Describe() << " reported: " << reason;
      // A server that cannot take its shard ends the job now, with its reason, rather than
      // leaving the trainers to wait for it.
      if (member->role == wire::Role::Server && phase_ == Phase::kStarting) {
        member->said_goodbye = true;  // it leaves after saying so
        BeginShutdown(true, member->Describe() + " cannot hold its shard: " + reason);
      }
      return;
    }
    default:
      return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                    std::string(KindName(message.kind())) + " is not a request the scheduler serves");
  }
}

void Scheduler::HandleChunkRequest(Member& member, const Message& message) {
  const auto* request = message.body<wire::ChunkRequest>();
  if (member.role != wire::Role::Trainer || !member.registered) {
    return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                  "data chunks go to trainers that have registered the job's model only");
  }
  if (request->completed() != nullptr) {
    size_t foreign = 0;
    uint32_t first_foreign = 0;
    for (uint32_t chunk : *request->completed()) {
      if (!chunks_.Complete(member.rank, chunk)) {
        if (foreign++ == 0) first_foreign = chunk;
      } else if (cut_) {
        cut_->NoteCompleted(member.rank, chunk);
      }
    }
    if (foreign > 0) {
      HETPS_LOG(WARNING) << member.Describe() << " reported " << foreign
                         << " chunks done that it did not hold"
                         << " (the first: " << first_foreign << ")";
    }
  }
  // A trainer asks when the chunks it holds are used up, so it holds less than a batch (taken in
  // the step it asks for) and the chunk its batch began in: one that asks for more hoards the
  // epoch, which the others would then wait for.
  const uint64_t held = chunks_.HeldSamples(member.rank);
  const uint64_t most = uint64_t{job_.global_batch_size} + job_.chunk_samples;
  if (held >= most) {
    return Refuse(message, wire::ErrorCode::Refused, Refusal::OverLimit,
                  member.Describe() + " holds chunks of " + std::to_string(held) +
                      " samples not reported trained; a trainer holds less than a global batch and a "
                      "chunk (" +
                      std::to_string(most) + " samples) when it asks for more");
  }
  flatbuffers::FlatBufferBuilder fbb(128);
  flatbuffers::Offset<wire::ChunkGrant> body;
  if (auto grant = chunks_.Next(member.rank, request->epoch())) {
    member.out_of_data = false;  // a chunk given back by a trainer that died or left
    body = wire::CreateChunkGrant(fbb, grant->epoch, grant->chunk, grant->begin, grant->end, false);
  } else {
    const uint32_t epoch = std::min(request->epoch(), job_.epochs - 1);
    bool complete = chunks_.EpochComplete(epoch);
    if (complete && HasRounds(job_.mode, job_.diloco) && epoch + 1 == job_.epochs) {
      // The last sync epoch ends when a round without samples finds it complete; a trainer yet
      // to take its first step would then wait for rounds nobody pushes.
      if (TrainerStartsAtOrAfter(request->clock())) {
        complete = false;
      } else {
        final_epoch_over_ = true;
      }
    }
    body = wire::CreateChunkGrant(fbb, request->epoch(), 0, 0, 0, /*exhausted=*/true, complete);
    if (!complete && epoch + 1 == job_.epochs) LeaveShareToTrainersWithData(member, request->clock());
  }
  SendTo(member.routing_id, sender_.Seal(fbb, wire::Body::ChunkGrant, body.Union()));
  MaybeRequestSnapshot();
  MaybeRequestEvaluation();
}

void Scheduler::HandleDone(Member& member, const Message& message) {
  const auto* done = message.body<wire::Done>();
  member.done = true;
  member.progress.clock = done->clock();
  member.progress.samples = done->samples();
  HETPS_LOG(INFO) << member.Describe() << " finished its epochs after " << done->clock() << " steps";
  MaybeRequestEvaluation();
}

void Scheduler::Tick() {
  const auto now = Clock::now();
  if (phase_ != Phase::kShuttingDown) {
    for (Member* member : members_.Silent(now, std::chrono::milliseconds(job_.heartbeat_timeout_ms))) {
      DeclareDead(*member, "silent for more than " + std::to_string(job_.heartbeat_timeout_ms) + " ms");
      if (phase_ == Phase::kShuttingDown) break;
    }
  }
  if (phase_ == Phase::kGathering && now - created_ > std::chrono::seconds(job_.join_timeout_s)) {
    size_t trainers = 0;
    for (Member* t : members_.Members(wire::Role::Trainer)) trainers += t->registered ? 1 : 0;
    BeginShutdown(true, "only " + std::to_string(members_.Count(wire::Role::Server)) + " of " +
                            std::to_string(job_.servers) + " servers and " + std::to_string(trainers) +
                            " of " + std::to_string(job_.trainers) + " trainers joined within " +
                            std::to_string(job_.join_timeout_s) + " s (join_timeout_s)");
  }
  if (phase_ != Phase::kShuttingDown) {
    CheckRecoveryTimeout();
    JudgeEvaluation();
    PollWriter();
    // A trainer waiting to join goes first: no periodic cut starts while it is admitted, and cuts
    // that take longer than their interval follow each other at once, which would keep it out.
    MaybeAdmitTrainer();
    MaybeCheckpoint();
    FinishJob();
  }
  ShowProgress(false);
  MaybePublishStatus(/*force=*/false);
  MaybeLogJob();
}

void Scheduler::DeclareDead(Member& member, const std::string& why) {
  if (member.role == wire::Role::Server) return ServerLost(member, why);
  TrainerGone(member, why, /*left=*/false);
}

void Scheduler::BeginShutdown(bool failed, const std::string& reason, bool requested) {
  if (phase_ == Phase::kShuttingDown) return;
  phase_ = Phase::kShuttingDown;
  failed_ = failed;
  failure_ = reason;
  shutdown_deadline_ = Clock::now() + kGoodbyeWait;
  if (requested) {
    HETPS_LOG(WARNING) << "stopping the job before it completed: " << reason;
    display_.Note("job stopped: " + reason);
  } else if (failed) {
    HETPS_LOG(ERROR) << "the job failed: " << reason;
    display_.Note("job failed: " + reason);
  } else {
    HETPS_LOG(INFO) << "the job is complete; shutting the members down";
  }
  for (wire::Role role : {wire::Role::Trainer, wire::Role::Server}) {
    for (Member* m : members_.Members(role)) {
      flatbuffers::FlatBufferBuilder fbb(128 + reason.size());
      auto body = wire::CreateShutdownDirect(fbb, failed, reason.c_str());
      SendTo(m->routing_id, sender_.Seal(fbb, wire::Body::Shutdown, body.Union()));
    }
  }
}

void Scheduler::SendTo(const std::string& routing_id, zmq::message_t envelope) {
  Message message;
  message.routing_id = zmq::message_t(routing_id.data(), routing_id.size());
  message.envelope = std::move(envelope);
  Status status = Send(socket_, std::move(message), SendMode::kDontWait);
  if (status.ok()) return;
  // A member that does not read fills its queue; said sparsely, so that it cannot fill the log.
  if (ShouldLogRefusal(++undelivered_)) {
    HETPS_LOG(WARNING) << "message to a member not delivered (" << undelivered_
                       << " so far): " << status.message();
  }
}

void Scheduler::Refuse(const Message& message, wire::ErrorCode code, Refusal why, const std::string& reason) {
  const uint64_t seq = NoteRefusal(refusals_, message, why, reason);
  SendTo(message.routing_id.to_string(), sender_.MakeError(code, reason, seq));
}

bool Scheduler::RefuseImplausible(const Message& message, const Status& check) {
  if (check.ok()) return false;
  Refuse(message, wire::ErrorCode::Refused, Refusal::Invalid, check.message());
  return true;
}

double Scheduler::SecondsSince(Clock::time_point start) const {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace hetps
