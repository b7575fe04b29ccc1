// The scheduler against hostile reports and models, through real sockets on 127.0.0.1: a model
// whose size overflows or exceeds max_model_bytes is refused before anything is allocated, an
// absurd progress counter is refused instead of sending the snapshot loop round forever, so are
// absurd round and apply seconds in a heartbeat, and a server that cannot take the job's
// partitions ends the job at once with a clear reason; a trainer that asks for chunks without
// training them is refused beyond a batch and a chunk, and one that registered nothing gets none.
#include <catch2/catch.hpp>

#include <cmath>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "common/seconds_histogram.h"
#include "common/transport.h"
#include "tests/support/local_cluster.h"

namespace hetps {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::vector<TensorInfo> kModel = {{"w", {4, 4}, wire::DType::F32}, {"b", {4}, wire::DType::F32}};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sends `message` over the trainer's control channel, then asks for a chunk: the refusal of
// `message` (if any) arrives before the grant, as the scheduler handles a connection in order.
// Returns the refusal's reason, or "" when there was none; fails the test when no grant comes.
std::string SendThenAskForChunk(testing::ScriptedTrainer& trainer, Sender& sender, zmq::message_t message) {
  ControlChannel& control = trainer.control();
  const Status sent = control.Send(std::move(message));
  CATCH_REQUIRE(sent.ok());
  // The chunk granted last time is reported trained, as a trainer would: one that reports none
  // is refused more beyond a batch and a chunk.
  static std::vector<uint32_t> granted;
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateChunkRequestDirect(fbb, 0, &granted);
  CATCH_REQUIRE(control.Send(sender.Seal(fbb, wire::Body::ChunkRequest, body.Union())).ok());
  granted.clear();
  std::string refusal;
  for (const auto start = Clock::now(); SecondsSince(start) < 5;) {
    control.WaitForInbox(milliseconds(50));
    CATCH_REQUIRE(control.Check().ok());
    while (auto queued = control.TakeInbox()) {
      if (queued->kind() == wire::Body::Error) refusal = queued->body<wire::Error>()->reason()->str();
      if (queued->kind() == wire::Body::ChunkGrant) {
        const auto* grant = queued->body<wire::ChunkGrant>();
        if (!grant->exhausted()) granted.push_back(grant->chunk());
        return refusal;
      }
    }
  }
  CATCH_FAIL("no chunk grant within 5 s");
  return refusal;
}

// A trainer's control channel joined to `cluster`'s job, and nothing more (no model registered).
std::unique_ptr<ControlChannel> JoinAsTrainer(testing::LocalCluster& cluster, Sender& sender) {
  ControlChannel::Options options;
  options.scheduler = cluster.scheduler_endpoint();
  options.connect_timeout = seconds(30);
  auto channel = std::make_unique<ControlChannel>(cluster.context(), options, &sender);
  ControlChannel::JoinInfo info;
  info.role = wire::Role::Trainer;
  info.device = "cpu";
  CATCH_REQUIRE(channel->Join(info).ok());
  return channel;
}

// Asks for a chunk of epoch 0, reporting `completed`: the granted chunk's id, or the refusal's
// reason in `refusal`; fails the test when neither comes.
std::optional<uint32_t> AskForChunk(ControlChannel& control, Sender& sender,
                                    const std::vector<uint32_t>& completed, std::string* refusal) {
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateChunkRequestDirect(fbb, 0, &completed);
  CATCH_REQUIRE(control.Send(sender.Seal(fbb, wire::Body::ChunkRequest, body.Union())).ok());
  for (const auto start = Clock::now(); SecondsSince(start) < 5;) {
    control.WaitForInbox(milliseconds(50));
    CATCH_REQUIRE(control.Check().ok());
    while (auto queued = control.TakeInbox()) {
      if (queued->kind() == wire::Body::Error) {
        *refusal = queued->body<wire::Error>()->reason()->str();
        return std::nullopt;
      }
      if (queued->kind() == wire::Body::ChunkGrant) return queued->body<wire::ChunkGrant>()->chunk();
    }
  }
  CATCH_FAIL("no answer to a chunk request within 5 s");
  return std::nullopt;
}

}  // namespace

CATCH_TEST_CASE("A trainer that asks for chunks without training them holds a batch and a chunk at most",
                "[scheduler][limits]") {
  // A global batch of 64 in chunks of 512: an honest trainer holds less than 576 samples when it
  // asks, and the third chunk asked for without reporting any is refused.
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 2);
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  testing::ScriptedTrainer hoarder(cluster.context(), cluster.scheduler_endpoint());
  std::future<Status> hoarder_joined = std::async(std::launch::async, [&] { return hoarder.Setup(kModel); });
  {
    // Meanwhile a trainer that joined and registered nothing is handed no chunk.
    Sender sender(wire::Role::Trainer);
    const std::unique_ptr<ControlChannel> joined_only = JoinAsTrainer(cluster, sender);
    ControlChannel& outsider = *joined_only;
    std::string refusal;
    CATCH_CHECK_FALSE(AskForChunk(outsider, sender, {}, &refusal).has_value());
    CATCH_CHECK(Contains(refusal, "trainers that have registered the job's model only"));
  }
  testing::ScriptedTrainer second(cluster.context(), cluster.scheduler_endpoint());
  Status status;
  for (const auto start = Clock::now(); SecondsSince(start) < 20;
       std::this_thread::sleep_for(milliseconds(200))) {
    status = second.Setup(kModel);  // the outsider's place is free once its connection is seen gone
    if (status.ok() || !Contains(status.message(), "all the trainers it takes")) break;
  }
  CATCH_REQUIRE(status.ok());
  CATCH_REQUIRE(hoarder_joined.get().ok());

  std::string refusal;
  const std::optional<uint32_t> first = AskForChunk(hoarder.control(), hoarder.sender(), {}, &refusal);
  const std::optional<uint32_t> next = AskForChunk(hoarder.control(), hoarder.sender(), {}, &refusal);
  CATCH_REQUIRE(first.has_value());
  CATCH_REQUIRE(next.has_value());
  CATCH_CHECK_FALSE(AskForChunk(hoarder.control(), hoarder.sender(), {}, &refusal).has_value());
  CATCH_CHECK(Contains(refusal, "holds chunks of 1024 samples not reported trained"));
  CATCH_CHECK(Contains(refusal, "(576 samples)"));
  // The other trainer is served meanwhile; and once the hoarder reports its chunks, it is too.
  CATCH_CHECK(AskForChunk(second.control(), second.sender(), {}, &refusal).has_value());
  CATCH_CHECK(AskForChunk(hoarder.control(), hoarder.sender(), {*first, *next}, &refusal).has_value());
  cluster.Stop();
  // Counted with the refusals of the second trainer's joins while the outsider held its place.
  CATCH_CHECK(cluster.summary().scheduler_refusals.of(Refusal::OverLimit) >= 1);
}

CATCH_TEST_CASE("A model whose size overflows or exceeds max_model_bytes is refused and the job goes on",
                "[scheduler][limits]") {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 1);
  job.max_model_bytes = 64 << 20;
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());

  struct Case {
    std::vector<TensorInfo> model;
    std::string expected;
  };
  const std::vector<Case> cases = {
      // 3 x (2^62 + 1) elements wraps int64 to a negative count.
      {{{"huge", {3, (int64_t{1} << 62) + 1}, wire::DType::F32}}, "more elements than can be counted"},
      // 2^40 elements do fit in int64 but are 4 TiB: every server would have died allocating.
      {{{"w", {1 << 20, 1 << 20}, wire::DType::F32}}, "more than max_model_bytes (67108864)"},
      // Many tensors small enough each, too large together.
      {{{"a", {1 << 22}, wire::DType::F32},
        {"b", {1 << 22}, wire::DType::F32},
        {"c", {1 << 22}, wire::DType::F32},
        {"d", {1 << 22}, wire::DType::F32},
        {"e", {1, 1}, wire::DType::F32}},
       "at parameter e [1, 1] float32"},
  };
  for (const Case& c : cases) {
    testing::ScriptedTrainer hostile(cluster.context(), cluster.scheduler_endpoint());
    Status refused = hostile.Setup(c.model);
    CATCH_INFO(refused.ToString());
    CATCH_REQUIRE_FALSE(refused.ok());
    CATCH_CHECK(Contains(refused.message(), c.expected));
  }

  // The job then starts with an ordinary trainer, and its server works.
  testing::ScriptedTrainer trainer(cluster.context(), cluster.scheduler_endpoint());
  Status setup = trainer.Setup(kModel);
  CATCH_INFO(setup.ToString());
  CATCH_REQUIRE(setup.ok());
  CATCH_CHECK(trainer.max_message_bytes() == job.max_message_bytes);
  std::vector<float> w(16, 1.0f), b(4, 2.0f);
  auto owner = std::make_shared<int>(0);
  CATCH_REQUIRE(trainer.client().InitWeights({w.data(), b.data()}, owner).ok());
  auto pulled = trainer.client().Pull(0, false, {w.data(), b.data()});
  CATCH_INFO(pulled.status().ToString());
  CATCH_CHECK(pulled.ok());
  CATCH_CHECK(cluster.Stop().code() != Status::Code::kTimeout);
  CATCH_CHECK(cluster.summary().scheduler_refusals.of(Refusal::OverLimit) == 2);
  CATCH_CHECK(cluster.summary().scheduler_refusals.of(Refusal::Invalid) == 1);
}

CATCH_TEST_CASE("A model registered by a trainer that then left does not become the job's",
                "[scheduler][limits]") {
  testing::LocalCluster cluster(testing::TestJob("mlp", ConsistencyMode::kSync, 1, 2));
  CATCH_REQUIRE(cluster.Start().ok());
  {
    // An outsider joins, registers a model of 4 floats, and goes while the job waits for two.
    Sender sender(wire::Role::Trainer);
    const std::unique_ptr<ControlChannel> joined_only = JoinAsTrainer(cluster, sender);
    ControlChannel& outsider = *joined_only;
    flatbuffers::FlatBufferBuilder fbb(256);
    auto body = wire::CreateRegisterModel(fbb, SignatureToWire(fbb, {{"x", {4}, wire::DType::F32}}));
    CATCH_REQUIRE(outsider.Send(sender.Seal(fbb, wire::Body::RegisterModel, body.Union())).ok());
    std::this_thread::sleep_for(milliseconds(300));
  }
  // The job's trainers, with their own model, start it once the scheduler has seen the outsider
  // go (a connection closed; each tries again until then: until then the outsider's model is the
  // job's, and on a loaded host it may still hold one of the job's two places).
  auto setup = [&](testing::ScriptedTrainer& trainer) {
    Status status;
    for (const auto start = Clock::now(); SecondsSince(start) < 20;
         std::this_thread::sleep_for(milliseconds(200))) {
      status = trainer.Setup(kModel);
      if (status.ok()) break;
      if (!Contains(status.message(), "differs from") &&
          !Contains(status.message(), "all the trainers it takes"))
        break;
    }
    return status;
  };
  testing::ScriptedTrainer first(cluster.context(), cluster.scheduler_endpoint());
  testing::ScriptedTrainer second(cluster.context(), cluster.scheduler_endpoint());
  auto other = std::async(std::launch::async, [&] { return setup(second); });
  const Status one = setup(first);
  const Status two = other.get();
  CATCH_INFO(one.ToString() << " / " << two.ToString());
  CATCH_CHECK(one.ok());
  CATCH_CHECK(two.ok());
  CATCH_CHECK(cluster.Stop().code() != Status::Code::kTimeout);
}

CATCH_TEST_CASE("An absurd progress counter is refused and the scheduler keeps answering",
                "[scheduler][limits]") {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 1);
  job.eval_interval_samples = 1000;
  testing::LocalCluster cluster(job);
  CATCH_REQUIRE(cluster.Start().ok());
  testing::ScriptedTrainer trainer(cluster.context(), cluster.scheduler_endpoint());
  CATCH_REQUIRE(trainer.Setup(kModel).ok());

  Sender sender(wire::Role::Trainer);
  auto progress = [&](uint64_t samples, double rate, double timed_seconds = 0.1,
                      double paced_seconds = 0.12) {
    flatbuffers::FlatBufferBuilder fbb(128);
    auto body = wire::CreateProgress(fbb, 0, 1, samples, 0.5, rate, 0, rate, 32, 1, 32, timed_seconds, 0, 0,
                                     0, 0, paced_seconds);
    return sender.Seal(fbb, wire::Body::Progress, body.Union());
  };
  // Past 2^32 snapshots of 1000 samples, the snapshot counter used to wrap and loop forever.
  const auto start = Clock::now();
  std::string refusal = SendThenAskForChunk(trainer, sender, progress((uint64_t{1} << 32) * 1000 + 5, 100));
  CATCH_CHECK(Contains(refusal, "Progress.samples 4294967296005 is implausible for this job"));
  CATCH_CHECK(SecondsSince(start) < 5);
  refusal = SendThenAskForChunk(trainer, sender, progress(64, -1.0));
  CATCH_CHECK(Contains(refusal, "Progress.samples_per_second"));
  // 1e300 samples a second used to overflow a cast into the step a checkpoint is cut at.
  refusal = SendThenAskForChunk(trainer, sender, progress(64, 1e300));
  CATCH_CHECK(Contains(refusal, "Progress.samples_per_second 1e+300 is implausible"));
  // A NaN time would poison the balancer's speed estimate.
  refusal = SendThenAskForChunk(trainer, sender, progress(64, 100, std::nan("")));
  CATCH_CHECK(Contains(refusal, "Progress.timed_seconds"));
  refusal = SendThenAskForChunk(trainer, sender, progress(64, 100, 0.1, -0.5));
  CATCH_CHECK(Contains(refusal, "Progress.paced_seconds"));
  // An honest report is taken without complaint.
  CATCH_CHECK(SendThenAskForChunk(trainer, sender, progress(64, 100)).empty());
  cluster.Stop();
  CATCH_CHECK(cluster.summary().scheduler_refusals.of(Refusal::Invalid) == 5);
}

CATCH_TEST_CASE(
    "Round and apply seconds that are negative, NaN or beyond their buckets are refused and counted",
    "[scheduler][limits]") {
  testing::LocalCluster cluster(testing::TestJob("mlp", ConsistencyMode::kSync, 1, 1));
  CATCH_REQUIRE(cluster.Start().ok());
  testing::ScriptedTrainer member(cluster.context(), cluster.scheduler_endpoint());
  CATCH_REQUIRE(member.Setup(kModel).ok());

  Sender sender(wire::Role::Trainer);
  // A heartbeat whose apply seconds count `counts` durations with `sum` seconds in all.
  auto heartbeat = [&](const std::vector<uint64_t>& counts, double sum) {
    flatbuffers::FlatBufferBuilder fbb(256);
    auto apply = wire::CreateSecondsHistogram(fbb, fbb.CreateVector(counts), sum);
    wire::ServerStatsBuilder stats(fbb);
    stats.add_apply_seconds(apply);
    auto built = stats.Finish();
    auto body = wire::CreateHeartbeat(fbb, built);
    return sender.Seal(fbb, wire::Body::Heartbeat, body.Union());
  };
  std::string refusal = SendThenAskForChunk(member, sender, heartbeat({0, 0, 1}, -0.5));
  CATCH_CHECK(Contains(refusal, "ServerStats.apply_seconds.sum -0.5 is implausible"));
  refusal = SendThenAskForChunk(member, sender, heartbeat({1}, std::nan("")));
  CATCH_CHECK(Contains(refusal, "ServerStats.apply_seconds.sum nan"));
  // One duration of at most 10 us cannot add up to an hour; nor one longer than 60 s to a year.
  refusal = SendThenAskForChunk(member, sender, heartbeat({1}, 3600));
  CATCH_CHECK(Contains(refusal, "allowed 0..1e-05 seconds for its 1 durations' buckets"));
  std::vector<uint64_t> last_only(kSecondsBuckets, 0);
  last_only.back() = 1;
  refusal = SendThenAskForChunk(member, sender, heartbeat(last_only, 365 * 24 * 3600.0));
  CATCH_CHECK(Contains(refusal, "allowed 60..604800 seconds"));
  refusal = SendThenAskForChunk(member, sender, heartbeat(std::vector<uint64_t>(kSecondsBuckets + 1, 1), 1));
  CATCH_CHECK(Contains(refusal, "ServerStats.apply_seconds.counts " + std::to_string(kSecondsBuckets + 1) +
                                    " buckets is implausible"));
  refusal = SendThenAskForChunk(member, sender, heartbeat({UINT64_MAX, 2}, 1e-5));
  CATCH_CHECK(Contains(refusal, "totalling more than 2^64 - 1"));
  // Honest figures are taken without complaint, and the member stays alive throughout.
  CATCH_CHECK(SendThenAskForChunk(member, sender, heartbeat({0, 0, 0, 3}, 0.0002)).empty());
  CATCH_CHECK(SendThenAskForChunk(member, sender, heartbeat(last_only, 61)).empty());
  cluster.Stop();
  CATCH_CHECK(cluster.summary().scheduler_refusals.of(Refusal::Invalid) == 6);
}

CATCH_TEST_CASE("A server whose frame limit is below the job's partitions ends the job at once, naming it",
                "[scheduler][limits]") {
  JobOptions job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 1);
  // Long enough that only the server's own report can end the job in time.
  job.heartbeat_timeout_ms = 30000;
  job.partition_bytes = 2 << 20;
  job.max_message_bytes = 4 << 20;
  ServerOptions server_options;
  server_options.max_message_bytes = 1 << 20;
  testing::LocalCluster cluster(job, server_options);
  CATCH_REQUIRE(cluster.Start().ok());
  const auto start = Clock::now();
  testing::ScriptedTrainer trainer(cluster.context(), cluster.scheduler_endpoint());
  Status setup = trainer.Setup({{"w", {1024, 1024}, wire::DType::F32}});
  CATCH_CHECK_FALSE(setup.ok());
  Status status = cluster.WaitForJob(seconds(20));
  CATCH_INFO(status.ToString());
  CATCH_REQUIRE_FALSE(status.ok());
  CATCH_CHECK(Contains(status.message(), "server 0"));
  CATCH_CHECK(Contains(status.message(), "the job's partitions reach 2097152 bytes"));
  CATCH_CHECK(Contains(status.message(), "--max-message-bytes (1048576)"));
  // At once, not after a heartbeat timeout or a trainer's request timeout (the scheduler then
  // waits 5 s for goodbyes, which the failed server does not send).
  CATCH_CHECK(SecondsSince(start) < 10);
}

}  // namespace hetps
