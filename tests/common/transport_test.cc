// Tests of common/transport.h: configured sockets, whole messages in and out, and borrowed
// (zero-copy) tensor frames whose owners are released once ZeroMQ is done with them.
#include "common/transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace hetps {
namespace {

using Builder = flatbuffers::FlatBufferBuilder;

std::string Bytes(const zmq::message_t& frame) {
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}
// Polls `done` until it holds or `timeout` passes; ZeroMQ releases frames on its I/O thread.
bool Eventually(const std::function<bool()>& done,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A plain TCP socket listening on a loopback port, never accepting.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    CATCH_REQUIRE(fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    CATCH_REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
    CATCH_REQUIRE(::listen(fd_, 4) == 0);
    socklen_t length = sizeof(address);
    CATCH_REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port_ = ntohs(address.sin_port);
  }
  ~SilentListener() { ::close(fd_); }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;

  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Waits up to five seconds for one whole message on `socket`.
std::optional<Message> ReceiveWithin(zmq::socket_t& socket, bool router) {
  if (!PollReadable({&socket}, std::chrono::milliseconds(5000))[0]) return std::nullopt;
  Result<std::optional<Message>> received = TryReceive(socket, router);
  CATCH_REQUIRE(received.ok());
  return std::move(received).value();
}

CATCH_TEST_CASE("A ROUTER and a DEALER exchange a message with borrowed tensor frames",
                "[common][transport]") {
  zmq::context_t context;
  zmq::socket_t router = MakeSocket(context, zmq::socket_type::router, SocketOptions{});
  Result<std::string> endpoint = Bind(router, "tcp://127.0.0.1:*");
  CATCH_INFO(endpoint.status().ToString());
  CATCH_REQUIRE(endpoint.ok());
  CATCH_CHECK(endpoint->rfind("tcp://127.0.0.1:", 0) == 0);
  CATCH_CHECK(endpoint->find('*') == std::string::npos);

  SocketOptions dealer_options;
  dealer_options.routing_id = "trainer-a";
  zmq::socket_t dealer = MakeSocket(context, zmq::socket_type::dealer, dealer_options);
  CATCH_REQUIRE(Connect(dealer, *endpoint).ok());

  // Nothing has been sent yet: "would block" is an empty optional, not an error.
  Result<std::optional<Message>> nothing = TryReceive(router, true);
  CATCH_REQUIRE(nothing.ok());
  CATCH_CHECK_FALSE(nothing->has_value());

  auto gradient = std::make_shared<std::vector<float>>(std::vector<float>{1.5f, -2.0f, 3.25f});
  auto bias = std::make_shared<std::vector<float>>(std::vector<float>(1000, 0.5f));
  const std::weak_ptr<std::vector<float>> gradient_alive = gradient;
  const std::weak_ptr<std::vector<float>> bias_alive = bias;

  Sender trainer(wire::Role::Trainer);
  trainer.set_rank(1);
  Message push;
  {
    Builder fbb;
    const std::vector<uint32_t> partitions = {0, 1};
    push.envelope =
        trainer.Seal(fbb, wire::Body::Push, wire::CreatePushDirect(fbb, 4, 16, &partitions).Union());
  }
  push.tensors.push_back(BorrowFrame(gradient->data(), gradient->size() * sizeof(float), gradient));
  push.tensors.push_back(BorrowFrame(bias->data(), bias->size() * sizeof(float), bias));
  const std::vector<float> expected_gradient = *gradient;
  const std::vector<float> expected_bias = *bias;
  gradient.reset();
  bias.reset();
  // The frames keep the buffers alive until ZeroMQ is done with them.
  CATCH_REQUIRE_FALSE(gradient_alive.expired());
  CATCH_REQUIRE_FALSE(bias_alive.expired());
  const Status sent = Send(dealer, std::move(push));
  CATCH_REQUIRE(sent.ok());

  std::optional<Message> received = ReceiveWithin(router, true);
  CATCH_REQUIRE(received.has_value());
  CATCH_CHECK(Bytes(received->routing_id) == "trainer-a");
  CATCH_REQUIRE(VerifyEnvelope(*received).ok());
  CATCH_CHECK(received->kind() == wire::Body::Push);
  CATCH_CHECK(received->body<wire::Push>()->clock() == 4);
  CATCH_CHECK(DescribeSender(received->env()) == "trainer 1");
  CATCH_REQUIRE(received->tensors.size() == 2);
  CATCH_REQUIRE(received->tensors[0].size() == expected_gradient.size() * sizeof(float));
  CATCH_CHECK(
      std::memcmp(received->tensors[0].data(), expected_gradient.data(), received->tensors[0].size()) == 0);
  CATCH_REQUIRE(received->tensors[1].size() == expected_bias.size() * sizeof(float));
  CATCH_CHECK(std::memcmp(received->tensors[1].data(), expected_bias.data(), received->tensors[1].size()) ==
              0);
  CATCH_CHECK(Eventually([&] { return gradient_alive.expired() && bias_alive.expired(); }));

  // The reply goes back through the routing id.
  Sender server(wire::Role::Server);
  Message ack;
  ack.routing_id = CopyFrame(received->routing_id);
  ack.envelope = server.MakeEmpty(wire::Body::Ack);
  const Status ack_sent = Send(router, std::move(ack));
  CATCH_REQUIRE(ack_sent.ok());
  std::optional<Message> reply = ReceiveWithin(dealer, false);
  CATCH_REQUIRE(reply.has_value());
  CATCH_CHECK(reply->routing_id.size() == 0);
  CATCH_REQUIRE(VerifyEnvelope(*reply).ok());
  CATCH_CHECK(reply->kind() == wire::Body::Ack);
  CATCH_CHECK(reply->tensors.empty());

  Result<std::optional<Message>> drained = TryReceive(dealer, false);
  CATCH_REQUIRE(drained.ok());
  CATCH_CHECK_FALSE(drained->has_value());
}

CATCH_TEST_CASE("A borrowed buffer that is never delivered is released when the socket closes",
                "[common][transport]") {
  // A peer that accepts TCP connections but never speaks ZeroMQ: the DEALER's handshake never
  // completes, so what it sends stays queued.
  SilentListener silent;
  zmq::context_t context;
  SocketOptions options;
  options.linger_ms = 0;
  zmq::socket_t dealer = MakeSocket(context, zmq::socket_type::dealer, options);
  CATCH_REQUIRE(Connect(dealer, silent.endpoint()).ok());

  auto weights = std::make_shared<std::vector<float>>(256, 1.0f);
  const std::weak_ptr<std::vector<float>> alive = weights;
  Sender sender(wire::Role::Trainer);
  Message message;
  message.envelope = sender.MakeEmpty(wire::Body::Ack);
  message.tensors.push_back(BorrowFrame(weights->data(), weights->size() * sizeof(float), weights));
  weights.reset();
  // The message waits in the connecting pipe, so the buffer is still in use.
  const Status sent = Send(dealer, std::move(message), SendMode::kDontWait);
  CATCH_REQUIRE(sent.ok());
  CATCH_CHECK_FALSE(alive.expired());
  dealer.close();
  CATCH_CHECK(Eventually([&] { return alive.expired(); }));
}

CATCH_TEST_CASE("A failed send releases its borrowed buffers at once", "[common][transport]") {
  zmq::context_t context;
  zmq::socket_t router = MakeSocket(context, zmq::socket_type::router, SocketOptions{});
  CATCH_REQUIRE(Bind(router, "tcp://127.0.0.1:*").ok());

  auto weights = std::make_shared<std::vector<float>>(64, 2.0f);
  const std::weak_ptr<std::vector<float>> alive = weights;
  Sender sender(wire::Role::Server);
  Message message;
  message.routing_id = zmq::message_t(std::string("nobody"));
  message.envelope = sender.MakeEmpty(wire::Body::Ack);
  message.tensors.push_back(BorrowFrame(weights->data(), weights->size() * sizeof(float), weights));
  weights.reset();
  const Status status = Send(router, std::move(message));
  CATCH_CHECK(status.code() == Status::Code::kUnavailable);
  CATCH_CHECK(alive.expired());
}

CATCH_TEST_CASE("An empty borrowed frame does not keep its owner", "[common][transport]") {
  auto owner = std::make_shared<int>(1);
  const std::weak_ptr<int> alive = owner;
  zmq::message_t frame = BorrowFrame(owner.get(), 0, owner);
  owner.reset();
  CATCH_CHECK(frame.size() == 0);
  CATCH_CHECK(alive.expired());
}

CATCH_TEST_CASE("Binding a malformed endpoint is an error naming it", "[common][transport]") {
  zmq::context_t context;
  zmq::socket_t router = MakeSocket(context, zmq::socket_type::router, SocketOptions{});
  Result<std::string> bound = Bind(router, "tcp://not an address");
  CATCH_REQUIRE_FALSE(bound.ok());
  CATCH_CHECK(bound.status().code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(bound.status().message().find("tcp://not an address") != std::string::npos);
  CATCH_CHECK_FALSE(Connect(router, "nonsense://x").ok());
  CATCH_CHECK_FALSE(PollReadable({&router}, std::chrono::milliseconds(10))[0]);
}

CATCH_TEST_CASE("A message over the receive limits is marked, keeping only its envelope",
                "[common][transport][limits]") {
  zmq::context_t context;
  zmq::socket_t router = MakeSocket(context, zmq::socket_type::router, SocketOptions{});
  Result<std::string> endpoint = Bind(router, "tcp://127.0.0.1:*");
  CATCH_REQUIRE(endpoint.ok());
  zmq::socket_t dealer = MakeSocket(context, zmq::socket_type::dealer, SocketOptions{});
  CATCH_REQUIRE(Connect(dealer, *endpoint).ok());
  Sender trainer(wire::Role::Trainer);
  auto send = [&](size_t frames, size_t frame_bytes) {
    Message message;
    message.envelope = trainer.MakeEmpty(wire::Body::Ack);
    for (size_t i = 0; i < frames; ++i) message.tensors.emplace_back(frame_bytes);
    const Status sent = Send(dealer, std::move(message));
    CATCH_REQUIRE(sent.ok());
  };
  const ReceiveLimits limits{3, 4096};
  auto receive = [&] {
    CATCH_REQUIRE(PollReadable({&router}, std::chrono::milliseconds(5000))[0]);
    Result<std::optional<Message>> received = TryReceive(router, true, limits);
    CATCH_REQUIRE(received.ok());
    CATCH_REQUIRE(received->has_value());
    return std::move(**received);
  };

  send(2, 1000);  // within both limits
  Message within = receive();
  CATCH_CHECK(within.over_limit.empty());
  CATCH_CHECK(within.tensors.size() == 2);
  // ZeroMQ tells where the connection comes from.
  CATCH_CHECK(within.peer_address == "127.0.0.1");
  CATCH_CHECK(within.user_id.empty());

  send(10, 8);  // too many frames
  Message many = receive();
  CATCH_CHECK(many.over_limit == "a message of 11 frames and " + std::to_string(many.envelope.size() + 80) +
                                     " bytes is over the limit (more than 3 frames)");
  CATCH_CHECK(many.tensors.empty());
  CATCH_REQUIRE(VerifyEnvelope(many).ok());
  CATCH_CHECK(many.kind() == wire::Body::Ack);

  send(2, 3000);  // too many bytes
  Message large = receive();
  CATCH_CHECK(large.over_limit.find("(more than 4096 bytes)") != std::string::npos);
  CATCH_CHECK(large.tensors.empty());

  // The socket goes on delivering whole messages after refused ones.
  send(1, 16);
  Message next = receive();
  CATCH_CHECK(next.over_limit.empty());
  CATCH_CHECK(next.tensors.size() == 1);
}

CATCH_TEST_CASE("A send timeout longer than ZeroMQ can express saturates instead of meaning never",
                "[common][transport][limits]") {
  zmq::context_t context;
  SocketOptions options;
  // The longest request_timeout_ms a job file once allowed; as an int it wraps to -1: never.
  options.send_timeout = std::chrono::milliseconds(std::numeric_limits<uint32_t>::max());
  options.send_hwm = 7;
  options.receive_hwm = 9;
  zmq::socket_t dealer = MakeSocket(context, zmq::socket_type::dealer, options);
  CATCH_CHECK(dealer.get(zmq::sockopt::sndtimeo) == std::numeric_limits<int>::max());
  CATCH_CHECK(dealer.get(zmq::sockopt::sndhwm) == 7);
  CATCH_CHECK(dealer.get(zmq::sockopt::rcvhwm) == 9);
  options.send_timeout = std::chrono::milliseconds(1500);
  CATCH_CHECK(MakeSocket(context, zmq::socket_type::dealer, options).get(zmq::sockopt::sndtimeo) == 1500);
  options.send_timeout = std::chrono::milliseconds(-1);
  CATCH_CHECK(MakeSocket(context, zmq::socket_type::dealer, options).get(zmq::sockopt::sndtimeo) == -1);
}

}  // namespace
}  // namespace hetps
