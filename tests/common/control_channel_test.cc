// ControlChannel against a scheduler that is not there, and against a fake scheduler: a ROUTER
// socket owned by the test thread, while the channel runs on a thread of its own. Each socket
// stays on the thread that made it; the channel's thread reports what it saw as a value, and only
// the test thread asserts.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/control_channel.h"
#include "common/shard_map.h"
#include "common/transport.h"

namespace hetps {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A TCP port on 127.0.0.1 that nothing listens on (it was free a moment ago).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  CATCH_REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = 0;
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  CATCH_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  socklen_t length = sizeof(address);
  CATCH_REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

ControlChannel::JoinInfo TrainerInfo() {
  ControlChannel::JoinInfo info;
  info.role = wire::Role::Trainer;
  info.device = "cpu";
  return info;
}

// The scheduler's side of the control plane, driven by the test thread.
class FakeScheduler {
 public:
  explicit FakeScheduler(zmq::context_t& context)
      : socket_(MakeSocket(context, zmq::socket_type::router, SocketOptions{})) {
    auto bound = Bind(socket_, "tcp://127.0.0.1:*");
    CATCH_REQUIRE(bound.ok());
    endpoint_ = *bound;
  }

  const std::string& endpoint() const { return endpoint_; }

  // The next message of `kind` that arrives within `timeout`; other kinds are dropped.
  std::optional<Message> Next(wire::Body kind, milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (!PollReadable({&socket_}, std::max(left, milliseconds(1)))[0]) continue;
      auto received = TryReceive(socket_, /*router=*/true);
      CATCH_REQUIRE(received.ok());
      if (!received->has_value()) continue;
      Message message = std::move(**received);
      CATCH_REQUIRE(VerifyEnvelope(message).ok());
      if (message.kind() == kind) return message;
    }
    return std::nullopt;
  }

  void Reply(const Message& to, zmq::message_t envelope) {
    Message message;
    message.routing_id = CopyFrame(to.routing_id);
    message.envelope = std::move(envelope);
    const Status sent = Send(socket_, std::move(message));
    CATCH_REQUIRE(sent.ok());
  }

  // Waits for a Join and admits its sender.
  Message Admit(uint32_t rank, uint32_t heartbeat_interval_ms, uint32_t scheduler_timeout_ms) {
    auto join = Next(wire::Body::Join, milliseconds(5000));
    CATCH_REQUIRE(join.has_value());
    flatbuffers::FlatBufferBuilder fbb(128);
    auto body = wire::CreateJoinAccepted(fbb, rank, heartbeat_interval_ms, scheduler_timeout_ms);
    Reply(*join, sender_.Seal(fbb, wire::Body::JoinAccepted, body.Union()));
    return std::move(*join);
  }

  Sender& sender() { return sender_; }

 private:
  Sender sender_{wire::Role::Scheduler};
  zmq::socket_t socket_;
  std::string endpoint_;
};

// Runs `script` on a thread of its own with a trainer's channel to `endpoint`, not yet joined.
template <typename Script>
auto RunMember(zmq::context_t& context, const std::string& endpoint, Script script) {
  return std::async(std::launch::async, [&context, endpoint, script] {
    Sender sender(wire::Role::Trainer);
    ControlChannel::Options options{endpoint, milliseconds(10000)};
    ControlChannel channel(context, options, &sender);
    return script(channel, sender);
  });
}

std::vector<wire::Body> DrainInbox(ControlChannel& channel) {
  std::vector<wire::Body> kinds;
  while (auto message = channel.TakeInbox()) kinds.push_back(message->kind());
  return kinds;
}

}  // namespace

CATCH_TEST_CASE("Joining a scheduler that is not there gives up after connect_timeout", "[common][control]") {
  zmq::context_t context(1);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(FreePort());
  Sender sender(wire::Role::Server);
  ControlChannel::Options options{endpoint, milliseconds(1500)};
  // The unsent Joins have nowhere to go; do not let them hold up the context's shutdown.
  options.linger = milliseconds(0);
  ControlChannel channel(context, options, &sender);
  ControlChannel::JoinInfo info;
  info.role = wire::Role::Server;
  info.endpoint = "tcp://127.0.0.1:1";

  const auto start = Clock::now();
  auto joined = channel.Join(info);
  const double waited = SecondsSince(start);
  CATCH_INFO(joined.status().ToString());
  CATCH_REQUIRE_FALSE(joined.ok());
  CATCH_CHECK(joined.status().code() == Status::Code::kUnavailable);
  CATCH_CHECK(Contains(joined.status().message(), endpoint));
  CATCH_CHECK(Contains(joined.status().message(), "check that hetps-scheduler runs"));
  CATCH_CHECK(waited >= 1.45);
  CATCH_CHECK(waited < 4.0);
}

CATCH_TEST_CASE("Join is resent from the same routing id until the scheduler answers", "[common][control]") {
  zmq::context_t context(1);
  FakeScheduler fake(context);
  auto member = RunMember(context, fake.endpoint(), [](ControlChannel& channel, Sender& sender) {
    auto joined = channel.Join(TrainerInfo());
    return std::make_pair(joined.ok() ? Status::Ok() : joined.status(), sender.rank());
  });

  auto first = fake.Next(wire::Body::Join, milliseconds(5000));
  CATCH_REQUIRE(first.has_value());
  const auto first_at = Clock::now();
  auto second = fake.Next(wire::Body::Join, milliseconds(5000));
  CATCH_REQUIRE(second.has_value());
  const double gap = SecondsSince(first_at);
  const auto id = [](const Message& m) {
    return std::string(static_cast<const char*>(m.routing_id.data()), m.routing_id.size());
  };
  CATCH_CHECK(id(*first) == id(*second));
  CATCH_CHECK(Contains(id(*first), "trainer-"));
  CATCH_CHECK(second->env().seq() > first->env().seq());
  CATCH_CHECK(second->body<wire::Join>()->role() == wire::Role::Trainer);
  CATCH_CHECK(second->body<wire::Join>()->device()->str() == "cpu");
  CATCH_INFO("second Join " << gap << " s after the first");
  CATCH_CHECK(gap >= 0.4);
  CATCH_CHECK(gap < 1.5);

  flatbuffers::FlatBufferBuilder fbb(128);
  auto body = wire::CreateJoinAccepted(fbb, 3, 1000, 30000);
  fake.Reply(*second, fake.sender().Seal(fbb, wire::Body::JoinAccepted, body.Union()));
  auto [status, rank] = member.get();
  CATCH_INFO(status.ToString());
  CATCH_CHECK(status.ok());
  CATCH_CHECK(rank == 3);
}

CATCH_TEST_CASE("A member joining a job that recovered from a lost server takes the job's generation",
                "[common][control]") {
  zmq::context_t context(1);
  FakeScheduler fake(context);
  fake.sender().set_generation(2);  // two servers were lost before this member joined
  auto member = RunMember(context, fake.endpoint(), [](ControlChannel& channel, Sender& sender) {
    auto joined = channel.Join(TrainerInfo());
    if (!joined.ok()) return std::make_pair(joined.status(), uint32_t{0});
    // What it sends next carries that generation, as the servers' data plane requires.
    flatbuffers::FlatBufferBuilder fbb(64);
    auto body = wire::CreateGoodbye(fbb);
    Message sealed;
    sealed.envelope = sender.Seal(fbb, wire::Body::Goodbye, body.Union());
    return std::make_pair(Status::Ok(), sealed.env().generation());
  });
  fake.Admit(1, 1000, 30000);
  auto [status, generation] = member.get();
  CATCH_INFO(status.ToString());
  CATCH_REQUIRE(status.ok());
  CATCH_CHECK(generation == 2);
}

CATCH_TEST_CASE("A request returns its reply and queues the other messages in order", "[common][control]") {
  struct Seen {
    Status status;
    uint32_t chunk = 0;
    std::vector<wire::Body> inbox;
  };
  zmq::context_t context(1);
  FakeScheduler fake(context);
  auto member = RunMember(context, fake.endpoint(), [](ControlChannel& channel, Sender& sender) {
    Seen seen;
    auto joined = channel.Join(TrainerInfo());
    if (!joined.ok()) {
      seen.status = joined.status();
      return seen;
    }
    flatbuffers::FlatBufferBuilder fbb(64);
    auto body = wire::CreateChunkRequest(fbb, 0);
    auto reply = channel.Request(sender.Seal(fbb, wire::Body::ChunkRequest, body.Union()),
                                 wire::Body::ChunkGrant, milliseconds(5000));
    if (!reply.ok()) {
      seen.status = reply.status();
      return seen;
    }
    seen.chunk = reply->body<wire::ChunkGrant>()->chunk();
    seen.inbox = DrainInbox(channel);
    // Stamped with the membership epoch that arrived meanwhile.
    seen.status = channel.Send(sender.MakeEmpty(wire::Body::ShardReady));
    return seen;
  });

  fake.Admit(0, 1000, 30000);
  auto request = fake.Next(wire::Body::ChunkRequest, milliseconds(5000));
  CATCH_REQUIRE(request.has_value());
  {
    flatbuffers::FlatBufferBuilder fbb(64);
    auto body = wire::CreateEvalRequest(fbb, 4, false);
    fake.Reply(*request, fake.sender().Seal(fbb, wire::Body::EvalRequest, body.Union()));
  }
  {
    flatbuffers::FlatBufferBuilder fbb(64);
    std::vector<uint32_t> trainers = {0, 2};
    auto body = wire::CreateMembershipDirect(fbb, 7, &trainers);
    fake.Reply(*request, fake.sender().Seal(fbb, wire::Body::Membership, body.Union()));
  }
  {
    flatbuffers::FlatBufferBuilder fbb(64);
    auto body = wire::CreateChunkGrant(fbb, 0, 9, 4608, 5120);
    fake.Reply(*request, fake.sender().Seal(fbb, wire::Body::ChunkGrant, body.Union()));
  }
  auto after = fake.Next(wire::Body::ShardReady, milliseconds(5000));
  const Seen seen = member.get();
  CATCH_INFO(seen.status.ToString());
  CATCH_REQUIRE(seen.status.ok());
  CATCH_CHECK(seen.chunk == 9);
  CATCH_CHECK(seen.inbox == std::vector<wire::Body>{wire::Body::EvalRequest, wire::Body::Membership});
  CATCH_REQUIRE(after.has_value());
  CATCH_CHECK(after->env().membership_epoch() == 7);
}

CATCH_TEST_CASE("An Error answering a request fails it with the scheduler's reason", "[common][control]") {
  struct Seen {
    Status status;
    std::vector<std::string> inbox_errors;
  };
  zmq::context_t context(1);
  FakeScheduler fake(context);
  auto member = RunMember(context, fake.endpoint(), [](ControlChannel& channel, Sender& sender) {
    Seen seen;
    auto joined = channel.Join(TrainerInfo());
    if (!joined.ok()) {
      seen.status = joined.status();
      return seen;
    }
    flatbuffers::FlatBufferBuilder fbb(256);
    const std::vector<TensorInfo> model = {{"w", {4, 5}, wire::DType::F32}};
    auto body = wire::CreateRegisterModel(fbb, SignatureToWire(fbb, model));
    auto reply = channel.Request(sender.Seal(fbb, wire::Body::RegisterModel, body.Union()),
                                 wire::Body::ShardMap, milliseconds(5000));
    seen.status = reply.ok() ? Status::Internal("the request succeeded") : reply.status();
    while (auto message = channel.TakeInbox()) {
      if (message->kind() == wire::Body::Error) {
        seen.inbox_errors.push_back(message->body<wire::Error>()->reason()->str());
      }
    }
    return seen;
  });

  fake.Admit(0, 1000, 30000);
  auto request = fake.Next(wire::Body::RegisterModel, milliseconds(5000));
  CATCH_REQUIRE(request.has_value());
  const uint64_t seq = request->env().seq();
  // An Error about some other message is not the answer; it waits in the inbox.
  fake.Reply(*request,
             fake.sender().MakeError(wire::ErrorCode::Unexpected, "about another message", seq + 100));
  fake.Reply(*request,
             fake.sender().MakeError(wire::ErrorCode::Refused, "model differs: got w [4, 5] float32", seq));
  const Seen seen = member.get();
  CATCH_INFO(seen.status.ToString());
  CATCH_CHECK(seen.status.code() == Status::Code::kFailedPrecondition);
  CATCH_CHECK(Contains(seen.status.message(), "model differs: got w [4, 5] float32"));
  CATCH_CHECK(seen.inbox_errors == std::vector<std::string>{"about another message"});
}

CATCH_TEST_CASE("Heartbeats follow the interval the scheduler gives while the owner does something else",
                "[common][control]") {
  zmq::context_t context(1);
  FakeScheduler fake(context);
  constexpr auto kBusyFor = milliseconds(1600);
  auto service = [kBusyFor](ControlChannel& channel, Sender&) {
    auto joined = channel.Join(TrainerInfo());
    if (!joined.ok()) return joined.status();
    // A long training step: the owner does not touch the channel at all.
    std::this_thread::sleep_for(kBusyFor);
    return channel.Check();
  };
  auto member = RunMember(context, fake.endpoint(), service);

  // The channel's own default is one heartbeat a second; the scheduler asks for 100 ms.
  fake.Admit(0, 100, 30000);
  std::vector<Clock::time_point> arrivals;
  const auto until = Clock::now() + kBusyFor - milliseconds(100);
  while (Clock::now() < until) {
    const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now());
    auto heartbeat = fake.Next(wire::Body::Heartbeat, left);
    if (!heartbeat) break;
    arrivals.push_back(Clock::now());
    fake.Reply(*heartbeat, fake.sender().MakeEmpty(wire::Body::HeartbeatAck));
  }
  Status status = member.get();
  CATCH_INFO(status.ToString());
  CATCH_CHECK(status.ok());
  CATCH_INFO(arrivals.size() << " heartbeats in 1.5 s");
  CATCH_REQUIRE(arrivals.size() >= 8);
  CATCH_CHECK(arrivals.size() <= 17);
  std::vector<double> gaps_ms;
  for (size_t i = 1; i < arrivals.size(); ++i) {
    const auto gap = arrivals[i] - arrivals[i - 1];
    gaps_ms.push_back(std::chrono::duration<double, std::milli>(gap).count());
  }
  std::sort(gaps_ms.begin(), gaps_ms.end());
  const double median_ms = gaps_ms[gaps_ms.size() / 2];
  CATCH_INFO("median gap " << median_ms << " ms");
  CATCH_CHECK(median_ms >= 80);
  CATCH_CHECK(median_ms <= 160);
}

CATCH_TEST_CASE("A Shutdown from the scheduler is remembered and ends later requests", "[common][control]") {
  struct Seen {
    Status status;
    std::optional<ShutdownNotice> notice;
    std::vector<wire::Body> inbox;
  };
  zmq::context_t context(1);
  FakeScheduler fake(context);
  auto member = RunMember(context, fake.endpoint(), [](ControlChannel& channel, Sender& sender) {
    Seen seen;
    auto joined = channel.Join(TrainerInfo());
    if (!joined.ok()) {
      seen.status = joined.status();
      return seen;
    }
    const auto until = Clock::now() + milliseconds(5000);
    while (!channel.shutdown() && Clock::now() < until) {
      channel.WaitForInbox(milliseconds(20));
      if (Status s = channel.Check(); !s.ok()) {
        seen.status = s;
        return seen;
      }
    }
    seen.notice = channel.shutdown();
    seen.inbox = DrainInbox(channel);
    flatbuffers::FlatBufferBuilder fbb(64);
    auto body = wire::CreateChunkRequest(fbb, 0);
    auto reply = channel.Request(sender.Seal(fbb, wire::Body::ChunkRequest, body.Union()),
                                 wire::Body::ChunkGrant, milliseconds(2000));
    seen.status = reply.ok() ? Status::Internal("the request succeeded") : reply.status();
    return seen;
  });

  const Message join = fake.Admit(0, 1000, 30000);
  flatbuffers::FlatBufferBuilder fbb(128);
  auto body = wire::CreateShutdownDirect(fbb, /*failed=*/true, "server 1 stopped");
  fake.Reply(join, fake.sender().Seal(fbb, wire::Body::Shutdown, body.Union()));
  const Seen seen = member.get();
  CATCH_REQUIRE(seen.notice.has_value());
  CATCH_CHECK(seen.notice->failed);
  CATCH_CHECK(seen.notice->reason == "server 1 stopped");
  CATCH_CHECK(seen.inbox == std::vector<wire::Body>{wire::Body::Shutdown});
  CATCH_INFO(seen.status.ToString());
  CATCH_CHECK(seen.status.code() == Status::Code::kUnavailable);
  CATCH_CHECK(Contains(seen.status.message(), "server 1 stopped"));
}

CATCH_TEST_CASE("A scheduler silent for longer than its timeout makes the channel fail",
                "[common][control]") {
  struct Seen {
    Status status;
    double seconds_after_join = 0;
  };
  zmq::context_t context(1);
  FakeScheduler fake(context);
  auto member = RunMember(context, fake.endpoint(), [](ControlChannel& channel, Sender&) {
    Seen seen;
    auto joined = channel.Join(TrainerInfo());
    if (!joined.ok()) {
      seen.status = joined.status();
      return seen;
    }
    const auto start = Clock::now();
    while (seen.status.ok() && SecondsSince(start) < 5) {
      channel.WaitForInbox(milliseconds(20));
      seen.status = channel.Check();
    }
    seen.seconds_after_join = SecondsSince(start);
    return seen;
  });

  // Admitted with a 500 ms timeout, then never another word (heartbeats go unanswered).
  fake.Admit(0, 100, 500);
  const Seen seen = member.get();
  CATCH_INFO(seen.status.ToString());
  CATCH_CHECK(seen.status.code() == Status::Code::kUnavailable);
  CATCH_CHECK(Contains(seen.status.message(), fake.endpoint()));
  CATCH_CHECK(Contains(seen.status.message(), "no word from the scheduler"));
  CATCH_CHECK(seen.seconds_after_join >= 0.45);
  CATCH_CHECK(seen.seconds_after_join < 2.0);
}

CATCH_TEST_CASE("Leave sends the goodbye last, stops heartbeats and ends every wait at once",
                "[common][control]") {
  zmq::context_t context(1);
  FakeScheduler fake(context);
  auto service = [](ControlChannel& channel, Sender& sender) {
    auto joined = channel.Join(TrainerInfo());
    if (!joined.ok()) return joined.status();
    // Another thread (a signal watcher) makes the member leave while this one waits for a reply.
    std::thread leaver([&channel, &sender] {
      std::this_thread::sleep_for(milliseconds(200));
      channel.Leave(sender.MakeEmpty(wire::Body::Goodbye), "stopped by a signal");
    });
    const auto start = Clock::now();
    auto reply = channel.Request(sender.MakeEmpty(wire::Body::ChunkRequest), wire::Body::ChunkGrant,
                                 milliseconds(10000));
    leaver.join();
    if (reply.ok()) return Status::Internal("the request was answered");
    if (SecondsSince(start) > 2) return Status::Internal("the request did not end at once");
    std::this_thread::sleep_for(milliseconds(600));  // the channel lives on: no heartbeat may follow
    if (!channel.shutdown() || channel.shutdown()->failed ||
        channel.shutdown()->reason != "stopped by a signal")
      return Status::Internal("no shutdown notice after leaving");
    return Status::Ok();
  };
  auto member = RunMember(context, fake.endpoint(), service);
  fake.Admit(0, 50, 30000);
  CATCH_REQUIRE(fake.Next(wire::Body::Goodbye, milliseconds(5000)).has_value());
  // Nothing follows the goodbye: no heartbeat within several intervals.
  CATCH_CHECK_FALSE(fake.Next(wire::Body::Heartbeat, milliseconds(400)).has_value());
  Status status = member.get();
  CATCH_INFO(status.ToString());
  CATCH_CHECK(status.ok());
}

}  // namespace hetps
