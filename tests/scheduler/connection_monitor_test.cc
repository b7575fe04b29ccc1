// ConnectionMonitor over a real ROUTER on 127.0.0.1: which member's connection closed, including
// when the system hands a closed connection's descriptor to the next one before the scheduler has
// read the event of the close.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/transport.h"
#include "scheduler/connection_monitor.h"

namespace hetps {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Router {
  zmq::context_t context;
  zmq::socket_t socket{context, zmq::socket_type::router};
  std::string endpoint;
  ConnectionMonitor monitor{context, socket};

  Router() {
    auto bound = Bind(socket, "tcp://127.0.0.1:*");
    CATCH_REQUIRE(bound.ok());
    endpoint = *bound;
  }

  // A peer named `id`, connected, that has sent one message.
  zmq::socket_t Connect(const std::string& id) {
    zmq::socket_t peer(context, zmq::socket_type::dealer);
    peer.set(zmq::sockopt::routing_id, id);
    peer.set(zmq::sockopt::linger, 0);
    CATCH_REQUIRE(hetps::Connect(peer, endpoint).ok());
    peer.send(zmq::str_buffer("hello"), zmq::send_flags::none);
    return peer;
  }

  // The next message's sender and the descriptor it came on (fails the test after 5 s).
  std::pair<std::string, int> Receive() {
    for (const auto start = Clock::now(); Clock::now() - start < std::chrono::seconds(5);) {
      PollReadable({&socket}, milliseconds(50));
      auto received = TryReceive(socket, /*router=*/true);
      CATCH_REQUIRE(received.ok());
      if (received->has_value()) return {(*received)->routing_id.to_string(), (*received)->source_fd};
    }
    CATCH_FAIL("no message within 5 s");
    return {};
  }

  // Every member reported dropped within `wait`.
  std::vector<std::string> DroppedWithin(milliseconds wait) {
    std::vector<std::string> all;
    for (const auto start = Clock::now(); Clock::now() - start < wait;) {
      PollReadable({&monitor.socket()}, milliseconds(20));
      for (std::string& id : monitor.TakeDropped()) all.push_back(std::move(id));
    }
    return all;
  }
};

// A process that connects to `endpoint` as `id`, sends one message, and exits after `alive`. It
// starts a ZeroMQ context of its own and touches nothing of its parent's.
pid_t SpawnPeer(const std::string& endpoint, const std::string& id, milliseconds alive) {
  const pid_t pid = ::fork();
  CATCH_REQUIRE(pid >= 0);
  if (pid > 0) return pid;
  {
    zmq::context_t context;
    zmq::socket_t peer(context, zmq::socket_type::dealer);
    peer.set(zmq::sockopt::routing_id, id);
    peer.set(zmq::sockopt::linger, 0);
    peer.connect(endpoint);
    peer.send(zmq::str_buffer("hello"), zmq::send_flags::none);
    std::this_thread::sleep_for(alive);
  }
  ::_exit(0);
}

}  // namespace

CATCH_TEST_CASE("A closed connection is reported as its member's, and only the latest connection counts",
                "[scheduler][monitor]") {
  Router router;
  zmq::socket_t a = router.Connect("a");
  auto [a_id, a_fd] = router.Receive();
  CATCH_REQUIRE(a_id == "a");
  CATCH_REQUIRE(a_fd >= 0);
  router.monitor.Note(a_id, a_fd);
  zmq::socket_t b = router.Connect("b");
  auto [b_id, b_fd] = router.Receive();
  router.monitor.Note(b_id, b_fd);
  CATCH_CHECK(router.DroppedWithin(milliseconds(200)).empty());

  a.close();
  CATCH_CHECK(router.DroppedWithin(milliseconds(500)) == std::vector<std::string>{"a"});
  // A forgotten member is not reported.
  router.monitor.Forget("b");
  b.close();
  CATCH_CHECK(router.DroppedWithin(milliseconds(500)).empty());
}

CATCH_TEST_CASE("A connection on a closed one's reused descriptor is not taken for the closed one",
                "[scheduler][monitor]") {
  Router router;
  for (int round = 0; round < 5; ++round) {
    const std::string old_id = "old-" + std::to_string(round);
    const std::string new_id = "new-" + std::to_string(round);
    // Peers in processes of their own, so that only the ROUTER's connections take descriptors
    // here: the system then gives the new connection the lowest free one, the old one's.
    const pid_t old_peer = SpawnPeer(router.endpoint, old_id, milliseconds(100));
    auto [first_id, old_fd] = router.Receive();
    CATCH_REQUIRE(first_id == old_id);
    router.monitor.Note(old_id, old_fd);
    // The old connection closes and the next one arrives while the scheduler reads no event: when
    // it handles the new member's first message, the close's event is waiting unread.
    CATCH_REQUIRE(::waitpid(old_peer, nullptr, 0) == old_peer);
    std::this_thread::sleep_for(milliseconds(100));
    const pid_t new_peer = SpawnPeer(router.endpoint, new_id, milliseconds(2000));
    auto [second_id, new_fd] = router.Receive();
    CATCH_REQUIRE(second_id == new_id);
    CATCH_REQUIRE(new_fd == old_fd);
    router.monitor.Note(new_id, new_fd);
    CATCH_CHECK(router.DroppedWithin(milliseconds(200)) == std::vector<std::string>{old_id});
    router.monitor.Forget(new_id);
    ::kill(new_peer, SIGKILL);
    ::waitpid(new_peer, nullptr, 0);
  }
}

}  // namespace hetps
