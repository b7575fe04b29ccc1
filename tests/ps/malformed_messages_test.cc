// A server under a stream of garbage — random TCP bytes, random and truncated envelopes, requests
// for partitions it does not hold, wrong tensor lengths, oversized frames — keeps serving a real
// training job (scheduler, server and two trainers on 127.0.0.1) to its end.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <future>
#include <random>

#include "common/transport.h"
#include "tests/support/local_cluster.h"
#include "trainer/trainer.h"

namespace hetps {
namespace {

// Writes random bytes straight onto the server's TCP port: not even the ZeroMQ handshake.
void SendRawGarbage(const std::string& endpoint, std::mt19937& rng) {
  const auto colon = endpoint.rfind(':');
  const int port = std::stoi(endpoint.substr(colon + 1));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    std::vector<char> bytes(1 + rng() % 4096);
    for (char& b : bytes) b = static_cast<char>(rng());
    [[maybe_unused]] auto written = ::write(fd, bytes.data(), bytes.size());
  }
  ::close(fd);
}

zmq::message_t ValidPush(Sender& sender, uint32_t partition, uint64_t clock) {
  flatbuffers::FlatBufferBuilder fbb(128);
  std::vector<uint32_t> ids = {partition};
  std::vector<uint64_t> versions = {0};
  auto body = wire::CreatePushDirect(fbb, clock, 1, &ids, &versions, wire::DType::F32, true);
  return sender.Seal(fbb, wire::Body::Push, body.Union());
}

struct FuzzReport {
  int answerable_sent = 0;  // messages that deserve an Error reply
  int errors_received = 0;
};

// Sends bursts of malformed messages to `endpoint` for a few seconds while training runs.
FuzzReport Fuzz(zmq::context_t& context, const std::string& endpoint) {
  std::mt19937 rng(1234);
  FuzzReport report;
  SocketOptions options;
  options.router_mandatory = false;
  zmq::socket_t dealer = MakeSocket(context, zmq::socket_type::dealer, options);
  CATCH_REQUIRE(Connect(dealer, endpoint).ok());
  Sender impostor(wire::Role::Trainer);
  impostor.set_rank(7);  // not a member of the job
  Sender server_role(wire::Role::Server);
  auto send = [&](std::vector<zmq::message_t> frames, bool answerable) {
    Message message;
    message.envelope = std::move(frames[0]);
    for (size_t i = 1; i < frames.size(); ++i) message.tensors.push_back(std::move(frames[i]));
    const Status sent = Send(dealer, std::move(message));
    CATCH_REQUIRE(sent.ok());
    report.answerable_sent += answerable ? 1 : 0;
  };
  for (int burst = 0; burst < 10; ++burst) {
    for (int i = 0; i < 5; ++i) SendRawGarbage(endpoint, rng);
    for (int i = 0; i < 20; ++i) {
      zmq::message_t random(1 + rng() % 512);
      for (size_t j = 0; j < random.size(); ++j) static_cast<uint8_t*>(random.data())[j] = rng();
      std::vector<zmq::message_t> frames;
      frames.push_back(std::move(random));
      send(std::move(frames), true);
    }
    {
      // Every prefix of a valid envelope, most of which fail verification.
      zmq::message_t valid = ValidPush(impostor, 0, 0);
      for (size_t cut = 1; cut < valid.size(); cut += 7) {
        std::vector<zmq::message_t> frames;
        frames.emplace_back(valid.data(), cut);
        send(std::move(frames), true);
      }
    }
    std::vector<zmq::message_t> frames;
    frames.emplace_back();  // an empty envelope frame
    send(std::move(frames), true);
    frames.clear();
    frames.push_back(ValidPush(impostor, 999999, 0));  // unknown partition
    frames.emplace_back(16);
    send(std::move(frames), true);
    frames.clear();
    frames.push_back(ValidPush(impostor, 0, 0));  // wrong length, and not a live trainer
    frames.emplace_back(12);
    send(std::move(frames), true);
    frames.clear();
    frames.push_back(ValidPush(server_role, 0, 0));  // not from a trainer
    frames.emplace_back(4);
    send(std::move(frames), true);
    frames.clear();
    {
      flatbuffers::FlatBufferBuilder fbb(64);
      std::vector<uint32_t> ids = {0, 0};
      auto body = wire::CreatePullDirect(fbb, 0, true, &ids, wire::DType::F32);  // duplicate ids
      frames.push_back(impostor.Seal(fbb, wire::Body::Pull, body.Union()));
      send(std::move(frames), true);
      frames.clear();
    }
    // Larger than the server's max_message_bytes: ZeroMQ drops the connection and nothing
    // answers. Sent on a connection of its own, whose loss takes no other replies with it.
    if (burst == 5) {
      zmq::socket_t oversized = MakeSocket(context, zmq::socket_type::dealer, options);
      CATCH_REQUIRE(Connect(oversized, endpoint).ok());
      Message message;
      message.envelope = ValidPush(impostor, 0, 0);
      message.tensors.emplace_back(size_t{9} << 20);
      const Status sent = Send(oversized, std::move(message));
      CATCH_REQUIRE(sent.ok());
    }
    // Collect the answers that have come back so far.
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
         std::chrono::steady_clock::now() < deadline;) {
      if (!PollReadable({&dealer}, std::chrono::milliseconds(50))[0]) continue;
      while (true) {
        auto reply = TryReceive(dealer, false);
        CATCH_REQUIRE(reply.ok());
        if (!reply->has_value()) break;
        const Message& m = **reply;
        CATCH_REQUIRE(VerifyEnvelope(m).ok());
        CATCH_REQUIRE(m.kind() == wire::Body::Error);
        CATCH_REQUIRE(m.body<wire::Error>()->reason()->size() > 0);
        ++report.errors_received;
      }
    }
  }
  return report;
}

}  // namespace

CATCH_TEST_CASE("A server flooded with malformed messages keeps serving a training job to its end",
                "[ps][robustness]") {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 2);
  job.optimizer.lr = 0.05;
  job.optimizer.momentum = 0.9;
  job.max_train_samples = 30000;
  ServerOptions server_options;
  server_options.max_message_bytes = 8 << 20;
  // Worker threads, so that refusals (sent at once) interleave with replies finished later.
  server_options.threads = 2;
  testing::LocalCluster cluster(job, server_options);
  CATCH_REQUIRE(cluster.Start().ok());

  std::vector<std::future<Status>> trainers;
  for (int t = 0; t < 2; ++t) {
    trainers.push_back(std::async(std::launch::async, [&cluster] {
      TrainerOptions options;
      options.scheduler = cluster.scheduler_endpoint();
      options.device = "cpu";
      // Slowed down so that the job outlasts the flood (about 4 s) by a wide margin: a server
      // that has shut down answers nothing.
      options.slowdown = 8;
      Trainer trainer(cluster.context(), options);
      return trainer.Run();
    }));
  }
  const FuzzReport report = Fuzz(cluster.context(), cluster.server(0).endpoint());

  Status job_status = cluster.WaitForJob(std::chrono::seconds(300));
  CATCH_INFO(job_status.ToString());
  CATCH_REQUIRE(job_status.ok());
  for (auto& trainer : trainers) CATCH_CHECK(trainer.get().ok());
  const RunSummary& summary = cluster.summary();
  CATCH_CHECK(summary.final_test_accuracy > 0.75);
  CATCH_CHECK(summary.samples_per_second > 0);
  // Every answerable message was refused with a reason, and counted by the server.
  CATCH_CHECK(report.errors_received == report.answerable_sent);
  CATCH_CHECK(cluster.server(0).bad_messages() >= static_cast<uint64_t>(report.answerable_sent));
  CATCH_REQUIRE(summary.server_details.size() == 1);
  CATCH_CHECK(summary.server_details[0].bad_messages >= static_cast<uint64_t>(report.answerable_sent));
}

}  // namespace hetps
