#include "common/control_channel.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <random>

#include "common/handshake_monitor.h"
#include "common/logging.h"
#include "common/transport.h"

namespace hetps {
namespace {

using Clock = std::chrono::steady_clock;

// The scheduler's Error answering `what`: Aborted when the job has finished its work (the process
// did nothing wrong and exits as when the job ends), FailedPrecondition otherwise.
Status Refusal(const Message& error, const std::string& what) {
  const wire::Error* body = error.body<wire::Error>();
  const std::string message = "the scheduler refused " + what + ": " + body->reason()->str();
  if (body->code() == wire::ErrorCode::Finished) return Status::Aborted(message);
  return Status::FailedPrecondition(message);
}

// The receipt token of a reply the scheduler served, 0 for any other message.
uint64_t ServedToken(const Message& message) {
  if (message.kind() == wire::Body::DataSamples) return message.body<wire::DataSamples>()->token();
  if (message.kind() == wire::Body::ModelFilePiece) return message.body<wire::ModelFilePiece>()->token();
  return 0;
}

// The loop thread wakes at least this often, whatever the heartbeat interval.
constexpr auto kLoopTick = std::chrono::milliseconds(100);

const char* RoleName(wire::Role role) {
  return role == wire::Role::Server ? "server" : "trainer";
}

std::string MakeRoutingId(wire::Role role) {
  std::random_device device;
  // 64 random bits, so that another process cannot guess the id and take it over when this one
  // reconnects.
  const uint64_t random = (uint64_t{device()} << 32) | device();
  return std::string(RoleName(role)) + "-" + HostName() + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(random);
}

std::string Seconds(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", ms.count() / 1000.0);
  return text;
}

SocketOptions DealerOptions(wire::Role role, std::chrono::milliseconds linger, const CurveKeys& curve) {
  SocketOptions options;
  options.curve = curve;
  options.linger_ms = static_cast<int>(linger.count());
  // The scheduler sends envelopes only; the shard map is its largest.
  options.max_message_bytes = static_cast<int64_t>(kDefaultMaxEnvelopeBytes);
  options.routing_id = MakeRoutingId(role);
  options.router_mandatory = false;
  return options;
}

}  // namespace

std::string HostName() {
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

ControlChannel::ControlChannel(zmq::context_t& context, Options options, Sender* sender)
    : options_(std::move(options)),
      sender_(sender),
      context_(context),
      heartbeat_interval_(options_.heartbeat_interval),
      scheduler_timeout_(options_.scheduler_timeout) {
  heartbeat_builder_ = [](Sender& s) {
    flatbuffers::FlatBufferBuilder fbb(64);
    auto body = wire::CreateHeartbeat(fbb);
    return s.Seal(fbb, wire::Body::Heartbeat, body.Union());
  };
  thread_ = std::thread([this] { Loop(); });
}

ControlChannel::~ControlChannel() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  outbox_wake_.Notify();
  thread_.join();
}

void ControlChannel::set_heartbeat_builder(std::function<zmq::message_t(Sender&)> builder) {
  std::lock_guard<std::mutex> lock(mutex_);
  heartbeat_builder_ = std::move(builder);
}

Result<Message> ControlChannel::Join(const JoinInfo& info) {
  const auto start = Clock::now();
  auto backoff = std::chrono::milliseconds(500);
  int attempts = 0;
  while (true) {
    flatbuffers::FlatBufferBuilder fbb(256);
    const std::string host = HostName();
    auto body = wire::CreateJoinDirect(fbb, info.role, host.c_str(), static_cast<uint32_t>(::getpid()),
                                       info.endpoint.c_str(), info.device.c_str());
    HETPS_RETURN_IF_ERROR(Send(sender_->Seal(fbb, wire::Body::Join, body.Union())));
    ++attempts;
    const auto wait_until = Clock::now() + backoff;
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      if (!failure_.ok()) return failure_;
      auto answer = TakeMatching([](const Message& m) {
        return m.kind() == wire::Body::JoinAccepted || m.kind() == wire::Body::Error;
      });
      if (answer && answer->kind() == wire::Body::Error) return Refusal(*answer, "to admit this process");
      if (answer) {
        const auto* body = answer->body<wire::JoinAccepted>();
        sender_->set_rank(body->rank());
        // A job that recovered from a lost server before this process joined is at a later
        // generation; data-plane messages of an older one would be dropped.
        sender_->set_generation(answer->env().generation());
        if (body->heartbeat_interval_ms() > 0) {
          heartbeat_interval_ = std::chrono::milliseconds(body->heartbeat_interval_ms());
        }
        if (body->scheduler_timeout_ms() > 0) {
          scheduler_timeout_ = std::chrono::milliseconds(body->scheduler_timeout_ms());
        }
        joined_ = true;
        lock.unlock();
        outbox_wake_.Notify();  // the loop thread starts heartbeating now
        return std::move(*answer);
      }
      if (shutdown_) {
        return Status::Unavailable("the scheduler shut the job down while this process joined: " +
                                   shutdown_->reason);
      }
      if (changed_.wait_until(lock, wait_until) == std::cv_status::timeout) break;
    }
    lock.unlock();
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (waited >= options_.connect_timeout) {
      return Status::Unavailable("no answer from the scheduler at " + options_.scheduler + " after " +
                                 std::to_string(attempts) + " attempts in " + Seconds(waited) +
                                 "; check that hetps-scheduler runs there and the address is right");
    }
    if (attempts == 3) {
      HETPS_LOG(INFO) << "still waiting for the scheduler at " << options_.scheduler;
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(8000));
  }
}

Status ControlChannel::Send(zmq::message_t envelope) {
  bool was_empty = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.ok()) return failure_;
    was_empty = outbox_.empty();
    outbox_.push_back(std::move(envelope));
  }
  if (was_empty) outbox_wake_.Notify();
  return Status::Ok();
}

Result<Message> ControlChannel::Request(zmq::message_t request, wire::Body reply,
                                        std::chrono::milliseconds timeout) {
  // The caller sealed it, so it is a valid envelope; an Error answering it names this number.
  const uint64_t seq = wire::GetEnvelope(request.data())->seq();
  HETPS_RETURN_IF_ERROR(Send(std::move(request)));
  const auto deadline = Clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    auto found = TakeMatching([&](const Message& m) {
      return m.kind() == reply || (m.kind() == wire::Body::Error && m.body<wire::Error>()->seq() == seq);
    });
    if (found && found->kind() == reply) return std::move(*found);
    if (found) return Refusal(*found, std::string(KindName(reply)) + " request");
    if (shutdown_) return Status::Unavailable("the job was shut down: " + shutdown_->reason);
    if (paused_ != 0) return Status::Unavailable("the scheduler paused the job (a server was lost)");
    if (!failure_.ok()) return failure_;
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      return Status::Timeout("no " + std::string(KindName(reply)) + " from the scheduler at " +
                             options_.scheduler + " within " + Seconds(timeout));
    }
  }
}

std::optional<Message> ControlChannel::TakeMatching(const std::function<bool(const Message&)>& match) {
  for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
    if (!match(*it)) continue;
    Message found = std::move(*it);
    inbox_.erase(it);
    return found;
  }
  return std::nullopt;
}

uint64_t ControlChannel::served_receipt() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return served_receipt_;
}

Status ControlChannel::Check() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

std::optional<Message> ControlChannel::TakeInbox() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (inbox_.empty()) {
    // Under the lock, so a message queued meanwhile has written its byte after this drain.
    if (failure_.ok()) inbox_wake_.Drain();
    return std::nullopt;
  }
  Message message = std::move(inbox_.front());
  inbox_.pop_front();
  return message;
}

void ControlChannel::WaitForInbox(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, timeout, [this] { return !inbox_.empty() || shutdown_ || !failure_.ok(); });
}

std::optional<ShutdownNotice> ControlChannel::shutdown() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shutdown_;
}

uint32_t ControlChannel::paused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return paused_;
}

void ControlChannel::ClearPause() {
  std::lock_guard<std::mutex> lock(mutex_);
  paused_ = 0;
}

void ControlChannel::Leave(zmq::message_t goodbye, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (left_) return;
    left_ = true;
    // A scheduler that has not admitted this member has nothing to forget.
    if (joined_ && !shutdown_) outbox_.push_back(std::move(goodbye));
    if (!shutdown_) shutdown_ = ShutdownNotice{false, reason};
  }
  outbox_wake_.Notify();
  changed_.notify_all();
  inbox_wake_.Notify();
}

void ControlChannel::Fail(Status status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.ok()) return;
    failure_ = std::move(status);
  }
  changed_.notify_all();
  inbox_wake_.Notify();
}

void ControlChannel::Loop() {
  const wire::Role role = sender_->role();
  SetThreadLogTag(std::string(RoleName(role)) + " control");
  zmq::socket_t socket =
      MakeSocket(context_, zmq::socket_type::dealer, DealerOptions(role, options_.linger, options_.curve));
  auto monitor = std::make_unique<HandshakeMonitor>(context_, socket);
  Status connected = Connect(socket, options_.scheduler);
  if (!connected.ok()) Fail(connected);
  last_heard_ = Clock::now();
  bool tagged = false;
  while (true) {
    outbox_wake_.Drain();  // before taking the outbox: a later Send wakes the next poll
    if (SendQueued(socket)) break;
    bool joined = false;
    std::chrono::milliseconds interval;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      joined = joined_;
      interval = heartbeat_interval_;
    }
    if (joined && !tagged) {
      SetThreadLogTag(std::string(RoleName(role)) + " " + std::to_string(sender_->rank()) + " control");
      tagged = true;
    }
    auto timeout = kLoopTick;
    if (joined) {
      SendHeartbeatIfDue(socket);
      CheckSchedulerSilence();
      const auto next = last_heartbeat_ + interval - Clock::now();
      timeout = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(next),
                           std::chrono::milliseconds(1), kLoopTick);
    }
    zmq::pollitem_t items[] = {{static_cast<void*>(socket), 0, ZMQ_POLLIN, 0},
                               {nullptr, outbox_wake_.read_fd(), ZMQ_POLLIN, 0},
                               {static_cast<void*>(monitor->socket()), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 3, timeout);
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) {
        Fail(Status::Unavailable(std::string("polling the connection to the scheduler failed: ") + e.what()));
        break;
      }
    }
    if ((items[0].revents & ZMQ_POLLIN) != 0) ReceiveAll(socket);
    if ((items[2].revents & ZMQ_POLLIN) != 0) {
      if (auto failure = monitor->TakeFailure()) {
        Fail(Status::FailedPrecondition("the scheduler at " + options_.scheduler +
                                        " refused the connection: " + *failure));
      }
    }
  }
  monitor.reset();
  // Closing with the socket's linger: what was sent last (a Goodbye) still goes out.
  socket.close();
}

bool ControlChannel::SendQueued(zmq::socket_t& socket) {
  std::deque<zmq::message_t> queued;
  bool stopping = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queued.swap(outbox_);
    stopping = stopping_;
  }
  for (zmq::message_t& envelope : queued) {
    Message message;
    message.envelope = std::move(envelope);
    // Never blocks the loop, so heartbeats keep their pace; a full queue (1,000 messages to a
    // scheduler that does not read) drops the message.
    Status sent = hetps::Send(socket, std::move(message), SendMode::kDontWait);
    if (!sent.ok()) {
      HETPS_LOG(WARNING) << "a message to the scheduler at " << options_.scheduler
                         << " was not sent: " << sent.message();
    }
  }
  return stopping;
}

void ControlChannel::ReceiveAll(zmq::socket_t& socket) {
  while (true) {
    auto received = TryReceive(socket, /*router=*/false, ReceiveLimits{1, kDefaultMaxEnvelopeBytes});
    if (!received.ok()) return Fail(received.status());
    if (!received->has_value()) return;
    Accept(std::move(**received));
  }
}

void ControlChannel::Accept(Message message) {
  Status valid = message.over_limit.empty() ? VerifyEnvelope(message) : Status::Protocol(message.over_limit);
  if (!valid.ok()) {
    ++bad_messages_;
    HETPS_LOG(WARNING) << "dropped a malformed message from the scheduler (" << bad_messages_
                       << " so far): " << valid.message();
    return;
  }
  last_heard_ = Clock::now();
  if (message.kind() == wire::Body::HeartbeatAck) return;
  if (message.kind() == wire::Body::Membership) {
    sender_->set_membership_epoch(message.body<wire::Membership>()->membership_epoch());
  }
  bool was_empty = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (message.kind() == wire::Body::Shutdown && !shutdown_) {
      const auto* body = message.body<wire::Shutdown>();
      shutdown_ = ShutdownNotice{body->failed(), body->reason() ? body->reason()->str() : ""};
    }
    if (message.kind() == wire::Body::Pause) {
      paused_ = std::max(paused_, message.body<wire::Pause>()->generation());
    }
    const uint64_t token = ServedToken(message);
    if (token != 0) served_receipt_ = token;
    was_empty = inbox_.empty();
    inbox_.push_back(std::move(message));
  }
  changed_.notify_all();
  if (was_empty) inbox_wake_.Notify();
}

void ControlChannel::SendHeartbeatIfDue(zmq::socket_t& socket) {
  std::function<zmq::message_t(Sender&)> builder;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (left_ || Clock::now() - last_heartbeat_ < heartbeat_interval_) return;
    builder = heartbeat_builder_;
  }
  last_heartbeat_ = Clock::now();
  Message message;
  message.envelope = builder(*sender_);
  Status sent = hetps::Send(socket, std::move(message), SendMode::kDontWait);
  if (!sent.ok()) HETPS_LOG(WARNING) << "heartbeat not sent: " << sent.message();
}

void ControlChannel::CheckSchedulerSilence() {
  std::chrono::milliseconds timeout;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shutdown_) return;
    timeout = scheduler_timeout_;
  }
  const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_heard_);
  if (silent > timeout) {
    Fail(Status::Unavailable("no word from the scheduler at " + options_.scheduler + " for " +
                             Seconds(silent) + "; it has stopped or the network is down"));
  }
}

}  // namespace hetps
