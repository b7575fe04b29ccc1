// A server's limits per trainer, through real sockets on 127.0.0.1: pulls a trainer may keep
// waiting, and the frames and bytes one message may hold. Beyond them a message is refused with a
// reason and counted; the server keeps serving.
#include <catch2/catch.hpp>

#include <future>

#include "common/transport.h"
#include "tests/support/local_cluster.h"

namespace hetps {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const std::vector<TensorInfo> kModel = {{"w", {4, 4}, wire::DType::F32}, {"b", {4}, wire::DType::F32}};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A sync job of one server and two scripted trainers, both set up.
struct TwoTrainerJob {
  TwoTrainerJob() : cluster(testing::TestJob("mlp", ConsistencyMode::kSync, 1, 2)) {
    CATCH_REQUIRE(cluster.Start().ok());
    trainers.push_back(
        std::make_unique<testing::ScriptedTrainer>(cluster.context(), cluster.scheduler_endpoint()));
    trainers.push_back(
        std::make_unique<testing::ScriptedTrainer>(cluster.context(), cluster.scheduler_endpoint()));
    auto other = std::async(std::launch::async, [this] { return trainers[1]->Setup(kModel); });
    Status setup = trainers[0]->Setup(kModel);
    CATCH_INFO(setup.ToString());
    CATCH_REQUIRE(setup.ok());
    CATCH_REQUIRE(other.get().ok());
  }
  ~TwoTrainerJob() { cluster.Stop(); }

  testing::LocalCluster cluster;
  std::vector<std::unique_ptr<testing::ScriptedTrainer>> trainers;
};

// A connection of the test's own to the server, speaking as `trainer` with its data token (the
// trainer's own connections closed), or with no token at all.
class RawTrainer {
 public:
  RawTrainer(zmq::context_t& context, const std::string& endpoint, const testing::ScriptedTrainer* trainer)
      : sender_(wire::Role::Trainer) {
    SocketOptions options;
    options.router_mandatory = false;
    options.linger_ms = 0;
    if (trainer != nullptr) {
      options.routing_id = trainer->data_token();
      sender_.set_rank(trainer->rank());
    }
    // A server admits one connection per token: until it has seen the trainer's own connection
    // close, it ignores this one. An empty pull is answered at once once it is admitted.
    for (int attempt = 0; attempt < 20; ++attempt) {
      socket_ = MakeSocket(context, zmq::socket_type::dealer, options);
      CATCH_REQUIRE(Connect(socket_, endpoint).ok());
      if (trainer == nullptr) return;
      SendPull(0, {}, /*latest=*/true);
      if (PollReadable({&socket_}, milliseconds(500))[0]) {
        auto reply = TryReceive(socket_, false);
        CATCH_REQUIRE(reply.ok());
        CATCH_REQUIRE(reply->has_value());
        CATCH_REQUIRE(VerifyEnvelope(**reply).ok());
        CATCH_REQUIRE((*reply)->kind() == wire::Body::Weights);
        return;
      }
    }
    CATCH_FAIL("the server never admitted a connection with trainer " << trainer->rank() << "'s token");
  }

  void SendPull(uint64_t clock, const std::vector<uint32_t>& partitions, bool latest = false) {
    flatbuffers::FlatBufferBuilder fbb(128);
    auto body = wire::CreatePullDirect(fbb, clock, latest, &partitions);
    Message message;
    message.envelope = sender_.Seal(fbb, wire::Body::Pull, body.Union());
    const Status sent = Send(socket_, std::move(message));
    CATCH_REQUIRE(sent.ok());
  }

  void SendInit(const std::vector<uint32_t>& partitions, const std::vector<size_t>& frame_bytes) {
    flatbuffers::FlatBufferBuilder fbb(128);
    auto body = wire::CreateInitWeightsDirect(fbb, &partitions);
    Message message;
    message.envelope = sender_.Seal(fbb, wire::Body::InitWeights, body.Union());
    for (size_t bytes : frame_bytes) message.tensors.emplace_back(bytes);
    const Status sent = Send(socket_, std::move(message));
    CATCH_REQUIRE(sent.ok());
  }

  // The reasons of the Errors that arrive within `wait`.
  std::vector<std::string> Refusals(milliseconds wait) {
    std::vector<std::string> reasons;
    while (PollReadable({&socket_}, wait)[0]) {
      auto reply = TryReceive(socket_, false);
      CATCH_REQUIRE(reply.ok());
      if (!reply->has_value()) break;
      CATCH_REQUIRE(VerifyEnvelope(**reply).ok());
      CATCH_REQUIRE((*reply)->kind() == wire::Body::Error);
      reasons.push_back((*reply)->body<wire::Error>()->reason()->str());
    }
    return reasons;
  }

 private:
  Sender sender_;
  zmq::socket_t socket_;
};

}  // namespace

CATCH_TEST_CASE("A trainer cannot keep more pulls waiting than the server has partitions, and a few",
                "[ps][server][limits]") {
  TwoTrainerJob job;
  const ShardMap& map = job.trainers[0]->map();
  std::vector<uint32_t> all = map.PartitionsOf(0);
  job.trainers[0]->CloseClient();
  RawTrainer raw(job.cluster.context(), job.trainers[0]->client_endpoint(0), job.trainers[0].get());
  // Round 5 is far away: each pull waits. The server keeps partitions + 2 of them.
  const size_t kept = all.size() + 2;
  for (size_t i = 0; i < kept + 3; ++i) raw.SendPull(5, all);
  const std::vector<std::string> refused = raw.Refusals(milliseconds(1000));
  CATCH_REQUIRE(refused.size() == 3);
  for (const std::string& reason : refused) CATCH_CHECK(Contains(reason, "pulls waiting"));
  CATCH_CHECK(job.cluster.server(0).refusals().of(Refusal::OverLimit) == 3);
}

CATCH_TEST_CASE("A message of more frames or bytes than a trainer may send is refused as oversized",
                "[ps][server][limits]") {
  TwoTrainerJob job;
  const std::vector<uint32_t> all = job.trainers[0]->map().PartitionsOf(0);
  // Checked before the sender is identified: any connection may be refused as oversized.
  RawTrainer raw(job.cluster.context(), job.trainers[0]->client_endpoint(0), nullptr);
  // One frame per partition of the server is the most a message carries.
  raw.SendInit(all, std::vector<size_t>(all.size() + 1, 4));
  // Its bytes are at most the server's share of the model besides the largest envelope.
  raw.SendInit(all, {kDefaultMaxEnvelopeBytes / 2 + 64, kDefaultMaxEnvelopeBytes / 2 + 64});
  const std::vector<std::string> refused = raw.Refusals(milliseconds(2000));
  CATCH_REQUIRE(refused.size() == 2);
  CATCH_CHECK(Contains(refused[0], "more than " + std::to_string(all.size() + 1) + " frames"));
  CATCH_CHECK(Contains(refused[1], "bytes)"));
  CATCH_CHECK(job.cluster.server(0).refusals().of(Refusal::Oversized) == 2);
  // Refused whole: nothing was stored, and a trainer's initial weights still win.
  std::vector<float> w(16, 1.5f), b(4, -1.0f);
  auto owner = std::make_shared<int>(0);
  CATCH_REQUIRE(job.trainers[1]->client().InitWeights({w.data(), b.data()}, owner).ok());
  std::vector<float> w_back(16), b_back(4);
  auto pulled = job.trainers[1]->client().Pull(0, /*latest=*/true, {w_back.data(), b_back.data()});
  CATCH_REQUIRE(pulled.ok());
  CATCH_CHECK(w_back == w);
  CATCH_CHECK(b_back == b);
}

}  // namespace hetps
