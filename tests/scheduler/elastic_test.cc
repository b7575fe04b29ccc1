// Elastic trainers through real sockets on 127.0.0.1, a scheduler and a server as threads and
// trainers driven step by step: a trainer that joins a sync job is counted by the server from the
// step the scheduler gave it and not before, and a trainer's Goodbye takes it out of the job at
// once, without the heartbeat timeout.
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "tests/support/local_cluster.h"

namespace hetps {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::vector<TensorInfo> kModel = {{"w", {4, 4}, wire::DType::F32}, {"b", {4}, wire::DType::F32}};

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Takes `trainer`'s messages from the scheduler until one of `kind` arrives.
std::optional<Message> WaitFor(testing::ScriptedTrainer& trainer, wire::Body kind, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    trainer.control().WaitForInbox(milliseconds(50));
    while (auto message = trainer.control().TakeInbox()) {
      if (message->kind() == kind) return message;
    }
  }
  return std::nullopt;
}

// The model's host buffers, its gradient all ones.
struct Buffers {
  std::vector<float> w = std::vector<float>(16, 0.5f), b = std::vector<float>(4, 0.5f);
  std::vector<float> grad_w = std::vector<float>(16, 1.0f), grad_b = std::vector<float>(4, 1.0f);
  std::vector<float*> weights() { return {w.data(), b.data()}; }
  std::vector<const float*> grads() const { return {grad_w.data(), grad_b.data()}; }
};

Status Progress(testing::ScriptedTrainer& trainer, uint64_t clock) {
  flatbuffers::FlatBufferBuilder fbb(128);
  wire::ProgressBuilder progress(fbb);
  progress.add_clock(clock);
  progress.add_batch_size(32);
  auto body = progress.Finish();
  Sender sender(wire::Role::Trainer);
  sender.set_rank(trainer.rank());
  return trainer.control().Send(sender.Seal(fbb, wire::Body::Progress, body.Union()));
}

}  // namespace

CATCH_TEST_CASE("A trainer joining a sync job is counted from the step the scheduler gives it",
                "[scheduler][elastic]") {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 1);
  job.max_trainers = 2;
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  testing::ScriptedTrainer first(cluster.context(), cluster.scheduler_endpoint());
  CATCH_REQUIRE(first.Setup(kModel).ok());
  CATCH_CHECK(first.start_clock() == 0);
  Buffers a;
  CATCH_REQUIRE(first.client().InitWeights(a.grads(), nullptr).ok());
  for (uint64_t clock = 0; clock < 3; ++clock) {
    CATCH_REQUIRE(first.client().PushPull(clock, 32, a.grads(), nullptr, a.weights()).ok());
  }
  // A joiner's first step is placed ahead of the trainers' reported steps.
  CATCH_REQUIRE(Progress(first, 3).ok());

  testing::ScriptedTrainer joiner(cluster.context(), cluster.scheduler_endpoint());
  const Status joined = joiner.Setup(kModel);
  CATCH_INFO(joined.ToString());
  CATCH_REQUIRE(joined.ok());
  const uint64_t start = joiner.start_clock();
  CATCH_CHECK(start >= 5);  // at least two steps ahead of the report
  CATCH_CHECK(start < 100);
  // Both are told their share of the global batch from that step on.
  for (testing::ScriptedTrainer* t : {&first, &joiner}) {
    auto rebalance = WaitFor(*t, wire::Body::Rebalance, milliseconds(5000));
    CATCH_REQUIRE(rebalance.has_value());
    CATCH_CHECK(rebalance->body<wire::Rebalance>()->from_clock() == start);
    const auto* sizes = rebalance->body<wire::Rebalance>()->batch_sizes();
    CATCH_CHECK(std::vector<uint32_t>(sizes->begin(), sizes->end()) == std::vector<uint32_t>{32, 32});
  }

  // The rounds before its step complete without it.
  for (uint64_t clock = 3; clock < start; ++clock) {
    auto stepped = first.client().PushPull(clock, 32, a.grads(), nullptr, a.weights());
    CATCH_INFO("round " << clock << ": " << stepped.status().ToString());
    CATCH_REQUIRE(stepped.ok());
  }
  // It pulls the weights of its first round, then the round waits for both.
  Buffers b;
  auto pulled = joiner.client().Pull(start, /*latest=*/false, b.weights());
  CATCH_REQUIRE(pulled.ok());
  CATCH_CHECK(b.w == a.w);
  CATCH_CHECK(pulled->weight_version == start);
  auto first_round = std::async(std::launch::async, [&] {
    return first.client().PushPull(start, 32, a.grads(), nullptr, a.weights());
  });
  CATCH_CHECK(first_round.wait_for(milliseconds(500)) == std::future_status::timeout);
  auto joined_round = joiner.client().PushPull(start, 32, b.grads(), nullptr, b.weights());
  CATCH_REQUIRE(joined_round.ok());
  CATCH_REQUIRE(first_round.get().ok());
  CATCH_CHECK(joined_round->round_samples == 64);
  CATCH_CHECK(b.w == a.w);
  cluster.Stop();
}

CATCH_TEST_CASE("A trainer's Goodbye takes it out of the job at once, not after the heartbeat timeout",
                "[scheduler][elastic]") {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 2);
  job.heartbeat_timeout_ms = 20000;
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  testing::ScriptedTrainer stays(cluster.context(), cluster.scheduler_endpoint());
  testing::ScriptedTrainer leaves(cluster.context(), cluster.scheduler_endpoint());
  auto setup = std::async(std::launch::async, [&] { return leaves.Setup(kModel); });
  CATCH_REQUIRE(stays.Setup(kModel).ok());
  CATCH_REQUIRE(setup.get().ok());
  Buffers a, b;
  CATCH_REQUIRE(stays.client().InitWeights(a.grads(), nullptr).ok());
  // Both have pushed round 0; then one leaves while the other pushes round 1.
  auto round0 = std::async(std::launch::async,
                           [&] { return leaves.client().PushPull(0, 32, b.grads(), nullptr, b.weights()); });
  CATCH_REQUIRE(stays.client().PushPull(0, 32, a.grads(), nullptr, a.weights()).ok());
  CATCH_REQUIRE(round0.get().ok());

  const auto left_at = Clock::now();
  Sender sender(wire::Role::Trainer);
  sender.set_rank(leaves.rank());
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateGoodbye(fbb);
  leaves.control().Leave(sender.Seal(fbb, wire::Body::Goodbye, body.Union()), "leaving");
  CATCH_CHECK(leaves.control().shutdown().has_value());
  CATCH_CHECK_FALSE(leaves.control().shutdown()->failed);

  // The round goes on without it long before the 20 s timeout, and the trainer that stays hears.
  auto round1 = stays.client().PushPull(1, 32, a.grads(), nullptr, a.weights());
  CATCH_INFO(round1.status().ToString());
  CATCH_REQUIRE(round1.ok());
  CATCH_CHECK(round1->round_samples == 32);
  CATCH_CHECK(SecondsSince(left_at) < 3);
  auto membership = WaitFor(stays, wire::Body::Membership, milliseconds(5000));
  CATCH_REQUIRE(membership.has_value());
  const auto* trainers = membership->body<wire::Membership>()->trainers();
  CATCH_CHECK(std::vector<uint32_t>(trainers->begin(), trainers->end()) ==
              std::vector<uint32_t>{stays.rank()});

  cluster.Stop();
  const RunSummary& s = cluster.summary();
  CATCH_REQUIRE(s.trainer_details.size() == 2);
  const TrainerSummary& gone = s.trainer_details[leaves.rank()];
  CATCH_CHECK(gone.left);
  CATCH_CHECK_FALSE(gone.alive);
  CATCH_CHECK(s.refusals.total() == 0);  // its heartbeats stopped with the goodbye
}

}  // namespace hetps
