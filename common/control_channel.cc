#include "common/control_channel.h"

#include <unistd.h>

#include <cstdio>
#include <random>
#include <thread>

#include "common/logging.h"
#include "common/transport.h"

namespace hetps {
namespace {

using Clock = std::chrono::steady_clock;

std::string MakeRoutingId(wire::Role role) {
  std::random_device device;
  const char* name = role == wire::Role::Server ? "server" : "trainer";
  // 64 random bits, so that another process cannot guess the id and take it over when this one
  // reconnects.
  const uint64_t random = (uint64_t{device()} << 32) | device();
  return std::string(name) + "-" + HostName() + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(random);
}

std::string Seconds(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", ms.count() / 1000.0);
  return text;
}

SocketOptions DealerOptions(wire::Role role) {
  SocketOptions options;
  // The scheduler sends envelopes only; the shard map is its largest.
  options.max_message_bytes = static_cast<int64_t>(kDefaultMaxEnvelopeBytes);
  options.routing_id = MakeRoutingId(role);
  options.router_mandatory = false;
  options.send_timeout = std::chrono::milliseconds(10000);
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
      socket_(MakeSocket(context, zmq::socket_type::dealer, DealerOptions(sender->role()))) {
  heartbeat_builder_ = [](Sender& s) {
    flatbuffers::FlatBufferBuilder fbb(64);
    auto body = wire::CreateHeartbeat(fbb);
    return s.Seal(fbb, wire::Body::Heartbeat, body.Union());
  };
}

void ControlChannel::set_heartbeat_builder(std::function<zmq::message_t(Sender&)> builder) {
  heartbeat_builder_ = std::move(builder);
}

Result<Message> ControlChannel::Join(const JoinInfo& info) {
  HETPS_RETURN_IF_ERROR(Connect(socket_, options_.scheduler));
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
    while (Clock::now() < wait_until) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(wait_until - Clock::now());
      if (!PollReadable({&socket_}, left)[0]) continue;
      HETPS_RETURN_IF_ERROR(ReceiveAll());
      for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
        if (it->kind() == wire::Body::Error) {
          return Status::FailedPrecondition("the scheduler refused to admit this process: " +
                                            it->body<wire::Error>()->reason()->str());
        }
        if (it->kind() != wire::Body::JoinAccepted) continue;
        Message accepted = std::move(*it);
        inbox_.erase(it);
        const auto* body = accepted.body<wire::JoinAccepted>();
        sender_->set_rank(body->rank());
        if (body->heartbeat_interval_ms() > 0) {
          options_.heartbeat_interval = std::chrono::milliseconds(body->heartbeat_interval_ms());
        }
        if (body->scheduler_timeout_ms() > 0) {
          options_.scheduler_timeout = std::chrono::milliseconds(body->scheduler_timeout_ms());
        }
        joined_ = true;
        last_heartbeat_ = Clock::now();
        return accepted;
      }
      if (shutdown_) {
        return Status::Unavailable("the scheduler shut the job down while this process joined: " +
                                   shutdown_->reason);
      }
    }
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
  Message message;
  message.envelope = std::move(envelope);
  Status status = hetps::Send(socket_, std::move(message));
  if (!status.ok()) {
    return Status::Unavailable("cannot send to the scheduler at " + options_.scheduler + ": " +
                               status.message());
  }
  return status;
}

Result<Message> ControlChannel::Request(zmq::message_t request, wire::Body reply,
                                        std::chrono::milliseconds timeout) {
  HETPS_RETURN_IF_ERROR(Send(std::move(request)));
  const uint64_t seq = sender_->last_seq();
  const auto deadline = Clock::now() + timeout;
  while (true) {
    for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
      if (it->kind() == reply) {
        Message found = std::move(*it);
        inbox_.erase(it);
        return found;
      }
      if (it->kind() == wire::Body::Error && it->body<wire::Error>()->seq() == seq) {
        std::string reason = it->body<wire::Error>()->reason()->str();
        inbox_.erase(it);
        return Status::FailedPrecondition("the scheduler refused " + std::string(KindName(reply)) +
                                          " request: " + reason);
      }
    }
    if (shutdown_) return Status::Unavailable("the job was shut down: " + shutdown_->reason);
    const auto now = Clock::now();
    if (now >= deadline) {
      return Status::Timeout("no " + std::string(KindName(reply)) + " from the scheduler at " +
                             options_.scheduler + " within " + Seconds(timeout));
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    PollReadable({&socket_}, std::min(left, options_.heartbeat_interval));
    HETPS_RETURN_IF_ERROR(Service());
  }
}

Status ControlChannel::Service() {
  HETPS_RETURN_IF_ERROR(ReceiveAll());
  SendHeartbeatIfDue();
  const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_heard_);
  if (joined_ && !shutdown_ && silent > options_.scheduler_timeout) {
    return Status::Unavailable("no word from the scheduler at " + options_.scheduler + " for " +
                               Seconds(silent) + "; it has stopped or the network is down");
  }
  return Status::Ok();
}

std::optional<Message> ControlChannel::TakeInbox() {
  if (inbox_.empty()) return std::nullopt;
  Message message = std::move(inbox_.front());
  inbox_.pop_front();
  return message;
}

Status ControlChannel::ReceiveAll() {
  while (true) {
    auto received = TryReceive(socket_, /*router=*/false, ReceiveLimits{1, kDefaultMaxEnvelopeBytes});
    if (!received.ok()) return received.status();
    if (!received->has_value()) return Status::Ok();
    Accept(std::move(**received));
  }
}

void ControlChannel::Accept(Message message) {
  Status valid = message.over_limit.empty() ? VerifyEnvelope(message) : Status::Protocol(message.over_limit);
  if (!valid.ok()) {
    ++bad_messages_;
    HETPS_LOG(WARNING) << "dropped a malformed message from the scheduler: " << valid.message();
    return;
  }
  last_heard_ = Clock::now();
  switch (message.kind()) {
    case wire::Body::HeartbeatAck:
      return;
    case wire::Body::Shutdown: {
      const auto* body = message.body<wire::Shutdown>();
      if (!shutdown_) {
        shutdown_ = ShutdownNotice{body->failed(), body->reason() ? body->reason()->str() : ""};
      }
      break;
    }
    case wire::Body::Membership:
      sender_->set_membership_epoch(message.body<wire::Membership>()->membership_epoch());
      break;
    default:
      break;
  }
  inbox_.push_back(std::move(message));
}

void ControlChannel::SendHeartbeatIfDue() {
  if (!joined_) return;
  const auto now = Clock::now();
  if (now - last_heartbeat_ < options_.heartbeat_interval) return;
  last_heartbeat_ = now;
  Status status = Send(heartbeat_builder_(*sender_));
  if (!status.ok()) HETPS_LOG(WARNING) << "heartbeat not sent: " << status.message();
}

}  // namespace hetps
