// An impostor that pushes as the live trainer's rank while a real job runs, in sync and in async
// mode: every one of its messages is refused and counted, the real trainer never notices, and
// the job ends with exactly the weights (so the accuracy) of the same job without the impostor.
// Real scheduler, server and trainer on 127.0.0.1 (threads of this process).
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <thread>

#include "common/transport.h"
#include "tests/support/local_cluster.h"
#include "trainer/trainer.h"

namespace hetps {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// The built-in mlp's parameters, in order; the impostor shards them as the scheduler does.
const std::vector<TensorInfo> kMlp = {
    {"fc1.weight", {512, 784}, wire::DType::F32}, {"fc1.bias", {512}, wire::DType::F32},
    {"fc2.weight", {256, 512}, wire::DType::F32}, {"fc2.bias", {256}, wire::DType::F32},
    {"fc3.weight", {10, 256}, wire::DType::F32},  {"fc3.bias", {10}, wire::DType::F32}};

struct Outcome {
  Status job;
  Status trainer;
  RunSummary summary;
  RefusalTally server_refusals;  // the server's own count, once the impostor has stopped
  uint64_t impostor_pushes = 0;  // sent
  uint64_t impostor_errors = 0;  // Error replies it received
  uint64_t impostor_other = 0;   // any other reply (there must be none)
};

// Pushes well-formed gradients of absurd size for every partition, as trainer 0 at clock after
// clock, until `stop`: accepted even once, they would wreck the weights or make the real
// trainer's push of the same round "already pushed".
void Impersonate(zmq::context_t& context, const std::string& server, const JobOptions& job,
                 const std::atomic<bool>& stop, Outcome* outcome) {
  Result<ShardMap> map = ShardMap::Build(kMlp, 1, job.partition_bytes);
  CATCH_REQUIRE(map.ok());
  SocketOptions options;
  options.router_mandatory = false;
  options.linger_ms = 0;
  zmq::socket_t socket = MakeSocket(context, zmq::socket_type::dealer, options);
  CATCH_REQUIRE(Connect(socket, server).ok());
  Sender impostor(wire::Role::Trainer);
  impostor.set_rank(0);
  std::vector<uint32_t> ids = map->PartitionsOf(0);
  auto garbage = std::make_shared<std::vector<float>>(512 * 784, 1e6f);
  for (uint64_t clock = 0; !stop.load(); clock = (clock + 1) % 400) {
    flatbuffers::FlatBufferBuilder fbb(256);
    std::vector<uint64_t> versions(ids.size(), 0);
    auto body = wire::CreatePushDirect(fbb, clock, 64, &ids, &versions, wire::DType::F32, /*pull=*/true);
    Message push;
    push.envelope = impostor.Seal(fbb, wire::Body::Push, body.Union());
    for (uint32_t id : ids) {
      push.tensors.push_back(
          BorrowFrame(garbage->data(), map->partitions()[id].length * sizeof(float), garbage));
    }
    if (Send(socket, std::move(push), SendMode::kDontWait).ok()) ++outcome->impostor_pushes;
    // About a hundred pushes a second, each answered before the next few go out.
    for (auto wait = milliseconds(10); PollReadable({&socket}, wait)[0]; wait = milliseconds(0)) {
      auto reply = TryReceive(socket, false);
      if (!reply.ok() || !reply->has_value()) break;
      const bool error = VerifyEnvelope(**reply).ok() && (*reply)->kind() == wire::Body::Error;
      ++(error ? outcome->impostor_errors : outcome->impostor_other);
    }
  }
}

Outcome RunJob(ConsistencyMode mode, bool with_impostor) {
  JobOptions job = testing::TestJob("mlp", mode, 1, 1);
  job.optimizer.lr = 0.05;
  job.optimizer.momentum = 0.9;
  job.max_train_samples = 4000;
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  Outcome outcome;
  std::atomic<bool> stop{false};
  std::thread impostor;
  if (with_impostor) {
    impostor = std::thread(
        [&] { Impersonate(cluster.context(), cluster.server(0).endpoint(), job, stop, &outcome); });
  }
  TrainerOptions options;
  options.scheduler = cluster.scheduler_endpoint();
  options.device = "cpu";
  Trainer trainer(cluster.context(), options);
  outcome.trainer = trainer.Run();
  outcome.job = cluster.WaitForJob(seconds(120));
  stop.store(true);
  if (impostor.joinable()) impostor.join();
  outcome.summary = cluster.summary();
  outcome.server_refusals = cluster.server(0).refusals();
  return outcome;
}

void RequireUndisturbed(ConsistencyMode mode) {
  const Outcome clean = RunJob(mode, false);
  CATCH_REQUIRE(clean.job.ok());
  const Outcome attacked = RunJob(mode, true);
  CATCH_INFO(attacked.job.ToString() << "; trainer: " << attacked.trainer.ToString());
  CATCH_REQUIRE(attacked.job.ok());
  CATCH_CHECK(attacked.trainer.ok());
  // One trainer makes the job deterministic: the same weights, to the last bit.
  CATCH_CHECK(attacked.summary.final_test_accuracy == clean.summary.final_test_accuracy);
  CATCH_CHECK(attacked.summary.final_test_loss == clean.summary.final_test_loss);
  CATCH_CHECK(attacked.summary.weight_version == clean.summary.weight_version);
  // The impostor was busy throughout, every answer it got was a refusal, and the server counted
  // each (as an impostor; before the shard map arrived, as oversized or unexpected). The run
  // summary holds the server's count when the job ended; the impostor went on a little longer.
  CATCH_CHECK(attacked.impostor_errors > 50);
  CATCH_CHECK(attacked.impostor_other == 0);
  const uint64_t counted = attacked.server_refusals.of(Refusal::Impostor);
  CATCH_CHECK(attacked.server_refusals.total() >= attacked.impostor_errors);
  CATCH_CHECK(counted > 50);
  CATCH_CHECK(attacked.summary.refusals.of(Refusal::Impostor) > 0);
  CATCH_CHECK(attacked.summary.refusals.of(Refusal::Impostor) <= counted);
  CATCH_CHECK(clean.summary.refusals.total() == 0);
}

}  // namespace

CATCH_TEST_CASE("An impostor pushing as the live trainer in sync mode is refused and changes nothing",
                "[ps][identity][sync]") {
  RequireUndisturbed(ConsistencyMode::kSync);
}

CATCH_TEST_CASE("An impostor pushing as the live trainer in async mode is refused and changes nothing",
                "[ps][identity][async]") {
  RequireUndisturbed(ConsistencyMode::kAsync);
}

}  // namespace hetps
