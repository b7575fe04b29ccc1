#include "ps/server.h"

#include <algorithm>
#include <cerrno>

#include "common/exposure.h"
#include "common/logging.h"
#include "common/refusal_log.h"
#include "common/transport.h"

namespace hetps {
namespace {

// Replaces a wildcard host so the advertised endpoint is one a trainer elsewhere can dial.
std::string Advertised(const std::string& bound) {
  const std::string wildcard = "tcp://0.0.0.0:";
  if (bound.rfind(wildcard, 0) != 0) return bound;
  return "tcp://" + HostName() + ":" + bound.substr(wildcard.size());
}

// Whole messages queued per trainer connection: a trainer waits for its replies every step, so
// more than a step's pushes are never in flight; beyond it, the connection meets back-pressure.
constexpr int kDataReceiveHwm = 256;
// Replies queued per trainer: one per push of a step, and small Errors.
constexpr int kDataSendHwm = 10000;
// Pulls a trainer may have waiting beyond one per partition of this server (a step asks for
// each partition once; an evaluation or snapshot adds one).
constexpr size_t kPendingPullSlack = 2;

}  // namespace

Server::Server(zmq::context_t& context, ServerOptions options)
    : context_(context), options_(std::move(options)) {}

Server::~Server() {
  // First: the channel's thread builds heartbeats from members declared after it.
  control_.reset();
}

Status Server::Start() {
  SocketOptions socket_options;
  socket_options.max_message_bytes = options_.max_message_bytes;
  socket_options.receive_hwm = kDataReceiveHwm;
  socket_options.send_hwm = kDataSendHwm;
  if (options_.curve.on()) {
    // The handler answers every CURVE handshake of this context, so it starts first.
    auto zap = ZapHandler::Start(context_, options_.curve_allowed, &refusals_, "this server");
    if (!zap.ok()) return zap.status();
    zap_ = std::move(*zap);
    socket_options.curve_server = true;
    socket_options.curve.secret_key = options_.curve.secret_key;
  }
  data_ = MakeSocket(context_, zmq::socket_type::router, socket_options);
  if (zap_) zap_->Watch(data_);
  // Until the shard map says what trainers will send, nothing valid has tensor frames.
  data_limits_ = ReceiveLimits{1, kDefaultMaxEnvelopeBytes};
  auto bound = Bind(data_, options_.bind);
  if (!bound.ok()) return bound.status();
  WarnIfExposed("this server", *bound, options_.curve.on());
  endpoint_ = options_.advertise.empty() ? Advertised(*bound) : options_.advertise;
  return Status::Ok();
}

Status Server::Run() {
  Status status = Serve();
  // Whichever way the loop ended, no task outlives it: the workers finish what is queued and end.
  if (shard_) shard_->workers().Stop();
  return status;
}

Status Server::Serve() {
  if (endpoint_.empty()) HETPS_RETURN_IF_ERROR(Start());
  ControlChannel::Options control_options;
  control_options.scheduler = options_.scheduler;
  control_options.connect_timeout = options_.connect_timeout;
  control_options.curve = options_.curve;
  control_ = std::make_unique<ControlChannel>(context_, control_options, &sender_);
  // Heartbeats go out from the channel's thread, with the counters PublishStats() last copied.
  control_->set_heartbeat_builder([this](Sender& s) { return BuildHeartbeat(s, PublishedStats(), false); });
  SetThreadLogTag("server");
  ControlChannel::JoinInfo info;
  info.role = wire::Role::Server;
  info.endpoint = endpoint_;
  auto accepted = control_->Join(info);
  if (!accepted.ok()) return accepted.status();
  SetThreadLogTag("server " + std::to_string(sender_.rank()));
  HETPS_LOG(INFO) << "joined the scheduler at " << options_.scheduler << "; serving on " << endpoint_;

  while (true) {
    const bool data_readable = Poll(std::chrono::milliseconds(200));
    if (shard_) {
      shard_->workers().RunFinished();
      SettleRounds();
    }
    HETPS_RETURN_IF_ERROR(control_->Check());
    PublishStats();
    while (auto message = control_->TakeInbox()) {
      Status status = HandleControl(std::move(*message));
      if (!status.ok()) return status;
      if (const auto notice = control_->shutdown()) {
        HETPS_RETURN_IF_ERROR(control_->Send(BuildHeartbeat(sender_, CurrentStats(), true)));
        if (notice->failed) return Status::Aborted("the scheduler ended the job: " + notice->reason);
        HETPS_LOG(INFO) << "shutting down: the job is finished";
        return Status::Ok();
      }
    }
    if (!data_readable) continue;
    // Drain what has arrived, but come back to the control socket regularly under heavy load.
    for (int i = 0; i < 256; ++i) {
      auto received = TryReceive(data_, /*router=*/true, data_limits_);
      if (!received.ok()) return received.status();
      if (!received->has_value()) break;
      HandleDataGuarded(std::move(**received));
    }
  }
}

bool Server::Poll(std::chrono::milliseconds timeout) {
  const int wake_fd = shard_ ? shard_->workers().wake_fd() : -1;
  zmq::pollitem_t items[] = {{nullptr, control_->wake_fd(), ZMQ_POLLIN, 0},
                             {static_cast<void*>(data_), 0, ZMQ_POLLIN, 0},
                             {nullptr, wake_fd, ZMQ_POLLIN, 0}};
  try {
    zmq::poll(items, wake_fd >= 0 ? 3 : 2, timeout);
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) throw;
    return false;
  }
  return (items[1].revents & ZMQ_POLLIN) != 0;
}

Status Server::HandleControl(Message message) {
  switch (message.kind()) {
    case wire::Body::ShardMap:
      return HandleShardMap(message);
    case wire::Body::Membership: {
      Status adopted = ApplyMembership(*message.body<wire::Membership>());
      if (!adopted.ok()) HETPS_LOG(WARNING) << adopted.message();
      return Status::Ok();
    }
    case wire::Body::ModeSwitch:
      SwitchMode(*message.body<wire::ModeSwitch>());
      return Status::Ok();
    case wire::Body::Shutdown:
      return Status::Ok();
    case wire::Body::Error:
      HETPS_LOG(WARNING) << "the scheduler reported: " << message.body<wire::Error>()->reason()->str();
      return Status::Ok();
    default:
      HETPS_LOG(WARNING) << "ignored an unexpected " << KindName(message.kind()) << " from the scheduler";
      return Status::Ok();
  }
}

void Server::HandleDataGuarded(Message message) {
  try {
    HandleData(std::move(message));
  } catch (const zmq::error_t&) {
    throw;  // the sockets' own failures end the process as before
  } catch (const std::exception& e) {
    const uint64_t count = refusals_.Add(Refusal::Unexpected);
    HETPS_LOG(ERROR) << "a data-plane message could not be handled and was dropped (" << count
                     << " refused so far): " << e.what();
  }
}

void Server::HandleData(Message message) {
  if (message.routing_id.size() == 0) return;  // cannot happen on a ROUTER; nothing to answer
  if (!message.over_limit.empty()) {
    return Refuse(message, wire::ErrorCode::Refused, Refusal::Oversized, message.over_limit);
  }
  Status valid = VerifyEnvelope(message);
  if (!valid.ok()) return Refuse(message, wire::ErrorCode::Malformed, Refusal::Unverified, valid.message());
  const wire::Envelope& env = message.env();
  if (env.role() == wire::Role::Scheduler) {
    // The scheduler's only over its own connection, whose routing id the shard map gave, and
    // with CURVE only with the scheduler's key.
    if (scheduler_token_.empty() || message.routing_id.to_string() != scheduler_token_) {
      return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Impostor,
                    "a message claiming to be the scheduler's over a connection that is not");
    }
    if (options_.curve.on() && message.user_id != "scheduler") {
      return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Impostor,
                    "a message claiming to be the scheduler's with the key '" + message.user_id + "'");
    }
    return HandleSchedulerRequest(std::move(message));
  }
  if (env.generation() < sender_.generation()) {
    // Sent before a recovery that rolled this server back: its effects are undone, so is it.
    if (++stale_messages_ <= 10 || (stale_messages_ & (stale_messages_ - 1)) == 0) {
      HETPS_LOG(INFO) << "dropped a " << KindName(message.kind()) << " of generation " << env.generation()
                      << " from " << DescribeSender(env) << " (" << stale_messages_ << " so far)";
    }
    return;
  }
  if (env.role() != wire::Role::Trainer) {
    return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                  std::string(KindName(message.kind())) + " from a non-trainer");
  }
  if (!shard_) {
    return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                  "this server has no shard map yet; the job has not started");
  }
  // The trainer is who its connection says, never just what its envelope claims.
  Result<uint32_t> identified = identities_.Identify(message);
  if (!identified.ok()) {
    return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Impostor, identified.status().message());
  }
  const uint32_t trainer = *identified;
  // The tensor frames stay alive, and are read in place, until the last task reading them ran.
  auto frames = std::make_shared<const std::vector<zmq::message_t>>(std::move(message.tensors));
  switch (message.kind()) {
    case wire::Body::InitWeights: {
      Status status = shard_->Init(*message.body<wire::InitWeights>(), frames);
      if (!status.ok()) return Refuse(message, status);
      Reply(std::move(message.routing_id), sender_.MakeEmpty(wire::Body::Ack));
      AnswerReadyPulls();
      return;
    }
    case wire::Body::Push: {
      const auto* push = message.body<wire::Push>();
      // Checked before the push is applied, so that a refused message changes nothing.
      Status status = push->pull() ? CheckPendingPulls(trainer) : Status::Ok();
      Shard::Pushed pushed;
      if (status.ok()) status = shard_->Push(trainer, *push, frames, &pushed);
      if (!status.ok()) return Refuse(message, status);
      if (!pushed.left_out.empty()) {
        // Accepted as a push of no samples, so the job goes on; counted and said, not answered
        // with an error (docs/errors.md, "nonfinite").
        NoteRefusal(refusals_, message, Refusal::NonFinite,
                    "trainer " + std::to_string(trainer) + "'s gradients of step " +
                        std::to_string(push->clock()) + " left out (" +
                        std::to_string(shard_->LeftOutSteps(trainer)) +
                        " of its steps so far): " + pushed.left_out);
      }
      const auto now = std::chrono::steady_clock::now();
      if (pushed.late) {
        // Accepted, so that the trainer goes on with the weights of the steps that went on.
        NoteRefusal(refusals_, message, Refusal::Late,
                    "trainer " + std::to_string(trainer) + "'s push of step " +
                        std::to_string(push->clock()) +
                        " came after the job went on without it (it held that step too long; docs/errors.md, "
                        "\"stalled\"): nothing of it applied");
      } else {
        paces_.Pushed(trainer, push->clock(), now);
        if (shard_->IsSyncStep(push->clock())) rounds_.Pushed(push->clock(), now);
      }
      if (push->pull()) {
        PendingPull pull;
        pull.routing_id = std::move(message.routing_id);
        pull.trainer = trainer;
        pull.partitions.assign(push->partitions()->begin(), push->partitions()->end());
        pull.clock = push->clock() + 1 + push->ahead();
        pull.dtype = push->dtype() == wire::DType::I8 ? push->weights_dtype() : push->dtype();
        pull.arrived = now;
        pending_.push_back(std::move(pull));
      } else {
        Reply(std::move(message.routing_id), sender_.MakeEmpty(wire::Body::Ack));
      }
      AnswerReadyPulls();
      return;
    }
    case wire::Body::Pull: {
      const auto* body = message.body<wire::Pull>();
      Status status = shard_->ValidatePull(trainer, *body);
      if (status.ok()) status = CheckPendingPulls(trainer);
      if (!status.ok()) return Refuse(message, status);
      PendingPull pull;
      pull.routing_id = std::move(message.routing_id);
      pull.trainer = trainer;
      pull.partitions.assign(body->partitions()->begin(), body->partitions()->end());
      pull.clock = body->clock();
      pull.latest = body->latest();
      pull.dtype = body->dtype();
      pull.arrived = std::chrono::steady_clock::now();
      pending_.push_back(std::move(pull));
      AnswerReadyPulls();
      return;
    }
    default:
      return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                    std::string(KindName(message.kind())) + " is not a data-plane request");
  }
}

void Server::SwitchMode(const wire::ModeSwitch& change) {
  const ConsistencyMode mode = FromWire(change.mode());
  if (!shard_) {
    HETPS_LOG(WARNING) << "ignored a switch to " << ModeName(mode) << " before the shard map";
    return;
  }
  auto from = shard_->SwitchMode(change.from_clock(), mode, change.staleness());
  if (!from.ok()) {
    HETPS_LOG(WARNING) << "ignored a mode switch: " << from.status().message();
    return;
  }
  HETPS_LOG(INFO) << "from step " << *from << " (asked: " << change.from_clock() << "): " << ModeName(mode)
                  << (mode == ConsistencyMode::kDiloco ? " rounds to the end of the job" : "")
                  << (mode == ConsistencyMode::kSsp ? " staleness " + std::to_string(change.staleness()) : "")
                  << (change.reason() ? " (" + change.reason()->str() + ")" : "");
  AnswerReadyPulls();  // a looser rule may free pulls that wait
}

Status Server::ApplyMembership(const wire::Membership& membership) {
  if (membership.membership_epoch() < membership_epoch_) return Status::Ok();  // overtaken by a newer one
  std::map<uint32_t, uint64_t> from_clocks;
  if (membership.identities() != nullptr) {
    for (const wire::TrainerIdentity* t : *membership.identities()) {
      if (t->from_clock() > 0) from_clocks[t->rank()] = t->from_clock();
    }
  }
  std::vector<uint32_t> live;
  std::string refused;
  if (membership.trainers() != nullptr) {
    for (uint32_t t : *membership.trainers()) {
      auto from = from_clocks.find(t);
      const uint64_t first = from == from_clocks.end() ? 0 : from->second;
      Status fits = shard_ ? shard_->CheckFromClock(t, first) : Status::Ok();
      if (fits.ok()) {
        live.push_back(t);
      } else {
        refused += (refused.empty() ? "" : "; ") + fits.message();
        from_clocks.erase(t);
      }
    }
  }
  membership_epoch_ = membership.membership_epoch();
  sender_.set_membership_epoch(membership_epoch_);
  identities_.Set(membership.identities());
  live_trainers_ = std::move(live);
  from_clocks_ = std::move(from_clocks);
  HETPS_LOG(INFO) << "membership epoch " << membership_epoch_ << ": " << live_trainers_.size()
                  << " live trainers" << (from_clocks_.empty() ? "" : ", some from a later round");
  if (shard_) UpdateShardTrainers();
  if (!refused.empty()) return Status::FailedPrecondition(refused);
  return Status::Ok();
}

void Server::UpdateShardTrainers() {
  shard_->SetLiveTrainers(live_trainers_, from_clocks_);
  std::vector<uint32_t> live = live_trainers_;
  std::sort(live.begin(), live.end());
  paces_.Keep(live);
  // Pulls from trainers that left will never be collected.
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [&](const PendingPull& p) { return !shard_->IsLive(p.trainer); }),
                 pending_.end());
  AnswerReadyPulls();
}

void Server::AnswerReadyPulls() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!shard_->PullReady(it->partitions, it->clock, it->latest)) {
      ++it;
      continue;
    }
    if (!it->latest) {
      shard_->RecordAdmission(it->clock);
      rounds_.ReplyStarted(it->clock);
    }
    auto routing_id = std::make_shared<zmq::message_t>(std::move(it->routing_id));
    const uint32_t generation = sender_.generation();
    const uint64_t clock = it->latest ? 0 : it->clock;
    const uint64_t left_out = shard_->LeftOutSteps(it->trainer);
    const auto held =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - it->arrived);
    auto send = [this, routing_id, generation, clock, held, left_out](Shard::WeightsReply& weights) {
      if (generation != sender_.generation()) return;  // answers a request a restore cancelled
      rounds_.ReplyDone(clock);
      weights.held_us = static_cast<uint64_t>(std::max<int64_t>(0, held.count()));
      weights.left_out = left_out;
      flatbuffers::FlatBufferBuilder fbb(256 + 12 * weights.partitions.size());
      auto body = weights.Write(fbb);
      Reply(std::move(*routing_id), sender_.Seal(fbb, wire::Body::Weights, body.Union()),
            std::move(weights.frames));
    };
    shard_->BuildWeights(it->partitions, it->dtype, std::move(send));
    ++pulls_answered_;
    it = pending_.erase(it);
  }
  SettleRounds();
}

void Server::SettleRounds() {
  rounds_.Settle(
      shard_->CompletedRounds(),
      [this](uint64_t clock) {
        return std::any_of(pending_.begin(), pending_.end(),
                           [clock](const PendingPull& p) { return !p.latest && p.clock == clock; });
      },
      std::chrono::steady_clock::now());
}

void Server::Refuse(const Message& message, wire::ErrorCode code, Refusal why, const std::string& reason) {
  const uint64_t seq = NoteRefusal(refusals_, message, why, reason);
  Reply(CopyFrame(message.routing_id), sender_.MakeError(code, reason, seq));
}

void Server::Refuse(const Message& message, const Status& status) {
  Refuse(message, RefusalCode(status), RefusalReasonOf(status), status.message());
}

Status Server::CheckPendingPulls(uint32_t trainer) const {
  const size_t limit = shard_->partition_ids().size() + kPendingPullSlack;
  const auto waiting = static_cast<size_t>(std::count_if(
      pending_.begin(), pending_.end(), [&](const PendingPull& p) { return p.trainer == trainer; }));
  if (waiting < limit) return Status::Ok();
  return Status::ResourceExhausted("trainer " + std::to_string(trainer) + " already has " +
                                   std::to_string(waiting) +
                                   " pulls waiting, the most this server keeps for one trainer");
}

void Server::Reply(zmq::message_t routing_id, zmq::message_t envelope, std::vector<zmq::message_t> frames) {
  Message reply;
  reply.routing_id = std::move(routing_id);
  reply.envelope = std::move(envelope);
  reply.tensors = std::move(frames);
  Status status = Send(data_, std::move(reply), SendMode::kDontWait);
  if (status.ok()) return;
  // A trainer that does not read fills its queue; said sparsely, so that it cannot fill the log.
  if (ShouldLogRefusal(++undelivered_)) {
    HETPS_LOG(WARNING) << "reply not delivered (" << undelivered_ << " so far): " << status.message();
  }
}

Server::Counters Server::CurrentStats() const {
  Counters counters;
  if (shard_) counters.shard = shard_->stats();
  counters.pulls = pulls_answered_;
  counters.refusals = refusals_.Snapshot();
  counters.round_seconds = rounds_.seconds();
  counters.waits = Waits(std::chrono::steady_clock::now());
  return counters;
}

std::vector<Server::Wait> Server::Waits(std::chrono::steady_clock::time_point now) const {
  std::map<uint32_t, Wait> by_trainer;
  if (!shard_) return {};
  for (const PendingPull& pull : pending_) {
    if (pull.latest) continue;
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - pull.arrived);
    for (const Shard::Hold& hold : shard_->Holders(pull.partitions, pull.clock)) {
      Wait& wait = by_trainer[hold.trainer];
      if (waited < wait.waited) continue;
      wait.hold = hold;
      wait.waited = waited;
    }
  }
  std::vector<Wait> waits;
  for (auto& [trainer, wait] : by_trainer) {
    wait.pace = paces_.Of(trainer);
    waits.push_back(wait);
  }
  return waits;
}

void Server::PublishStats() {
  const auto now = std::chrono::steady_clock::now();
  if (now - stats_published_ < kStatsPublishInterval) return;
  stats_published_ = now;
  Counters counters = CurrentStats();
  std::lock_guard<std::mutex> lock(stats_mutex_);
  published_ = std::move(counters);
}

Server::Counters Server::PublishedStats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return published_;
}

zmq::message_t Server::BuildHeartbeat(Sender& sender, const Counters& counters, bool goodbye) {
  flatbuffers::FlatBufferBuilder fbb(128);
  const Shard::Stats& stats = counters.shard;
  std::vector<flatbuffers::Offset<wire::TrainerNonFinite>> left_out;
  for (const auto& [trainer, counts] : stats.left_out) {
    left_out.push_back(wire::CreateTrainerNonFinite(fbb, trainer, counts.steps, counts.in_a_row));
  }
  std::vector<flatbuffers::Offset<wire::TrainerWait>> waits;
  for (const Wait& w : counters.waits) {
    waits.push_back(wire::CreateTrainerWait(fbb, w.hold.trainer, w.hold.step, w.hold.until,
                                            static_cast<uint64_t>(w.waited.count()),
                                            static_cast<uint64_t>(w.pace.count())));
  }
  auto server_stats = wire::CreateServerStats(
      fbb, stats.version, stats.pushes, counters.pulls, counters.refusals.total(), stats.rounds,
      fbb.CreateVector(stats.staleness_counts), stats.staleness_max, stats.max_clock_gap,
      counters.refusals.ToWire(fbb), stats.staleness_sum, counters.round_seconds.ToWire(fbb),
      stats.apply_seconds.ToWire(fbb), fbb.CreateVector(left_out), fbb.CreateVector(waits));
  if (goodbye) {
    auto body = wire::CreateGoodbye(fbb, server_stats);
    return sender.Seal(fbb, wire::Body::Goodbye, body.Union());
  }
  auto body = wire::CreateHeartbeat(fbb, server_stats);
  return sender.Seal(fbb, wire::Body::Heartbeat, body.Union());
}

}  // namespace hetps
