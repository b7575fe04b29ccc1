// The message cases of joining, the shard map, membership, heartbeats, leaving, errors and status.
#include "tests/common/message_cases.h"

#include <vector>

#include "common/shard_map.h"

namespace hetps::testing {
namespace {

void CheckStats(const wire::ServerStats* s) {
  CATCH_REQUIRE(s != nullptr);
  CATCH_CHECK(s->version() == 7);
  CATCH_CHECK(s->pushes() == 8);
  CATCH_CHECK(s->pulls() == 9);
  CATCH_CHECK(s->bad_messages() == 10);
  CATCH_CHECK(s->rounds() == 11);
}

std::vector<TensorInfo> SmallSignature() {
  TensorInfo w;
  w.name = "fc.weight";
  w.shape = {4, 3};
  TensorInfo b;
  b.name = "fc.bias";
  b.shape = {4};
  return {w, b};
}

}  // namespace

std::map<wire::Body, KindCase> ControlCases() {
  std::map<wire::Body, KindCase> cases;
  cases[wire::Body::Join] = {[](Builder& fbb) {
                               return wire::CreateJoinDirect(fbb, wire::Role::Server, "host-a", 4242,
                                                             "tcp://10.0.0.1:7501", "cpu")
                                   .Union();
                             },
                             [](const Message& m) {
                               const auto* b = m.body<wire::Join>();
                               CATCH_CHECK(b->role() == wire::Role::Server);
                               CATCH_CHECK(b->host()->str() == "host-a");
                               CATCH_CHECK(b->pid() == 4242);
                               CATCH_CHECK(b->endpoint()->str() == "tcp://10.0.0.1:7501");
                               CATCH_CHECK(b->device()->str() == "cpu");
                             }};
  cases[wire::Body::JoinAccepted] = {[](Builder& fbb) {
                                       auto job =
                                           wire::CreateTrainerJobDirect(fbb, "cnn", wire::Mode::Async, 3, 32,
                                                                        99, 512, 60000, 1000, 250, 120000);
                                       return wire::CreateJoinAccepted(fbb, 2, 1000, 15000, job).Union();
                                     },
                                     [](const Message& m) {
                                       const auto* b = m.body<wire::JoinAccepted>();
                                       CATCH_CHECK(b->rank() == 2);
                                       CATCH_CHECK(b->heartbeat_interval_ms() == 1000);
                                       CATCH_CHECK(b->scheduler_timeout_ms() == 15000);
                                       const wire::TrainerJob* job = b->job();
                                       CATCH_REQUIRE(job != nullptr);
                                       CATCH_CHECK(job->model()->str() == "cnn");
                                       CATCH_CHECK(job->mode() == wire::Mode::Async);
                                       CATCH_CHECK(job->epochs() == 3);
                                       CATCH_CHECK(job->batch_size() == 32);
                                       CATCH_CHECK(job->seed() == 99);
                                       CATCH_CHECK(job->chunk_samples() == 512);
                                       CATCH_CHECK(job->train_samples() == 60000);
                                       CATCH_CHECK(job->eval_batch_size() == 1000);
                                       CATCH_CHECK(job->progress_interval_ms() == 250);
                                       CATCH_CHECK(job->request_timeout_ms() == 120000);
                                     }};
  cases[wire::Body::RegisterModel] = {
      [](Builder& fbb) {
        return wire::CreateRegisterModel(fbb, SignatureToWire(fbb, SmallSignature())).Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::RegisterModel>();
        CATCH_CHECK(CompareSignatures(SmallSignature(), SignatureFromWire(*b->signature())).ok());
      }};
  cases[wire::Body::ShardMap] = {
      [](Builder& fbb) {
        const ShardMap map = ShardMap::Build(SmallSignature(), 2, 16).value();
        auto tensors = map.TensorsToWire(fbb);
        auto partitions = map.PartitionsToWire(fbb);
        std::vector<flatbuffers::Offset<wire::ServerEndpoint>> endpoints = {
            wire::CreateServerEndpointDirect(fbb, 0, "tcp://10.0.0.1:7501"),
            wire::CreateServerEndpointDirect(fbb, 1, "tcp://10.0.0.2:7501")};
        auto servers = fbb.CreateVector(endpoints);
        auto optimizer = wire::CreateOptimizerConfig(fbb, wire::OptimizerKind::AdamW, 0.002, 0.5, 0.25, true,
                                                     0.01, 0.8, 0.99, 1e-6, true, 0.125, 0.0625);
        auto trainers = fbb.CreateVector(std::vector<uint32_t>{0, 2});
        return wire::CreateShardMap(fbb, 5, tensors, partitions, servers, optimizer, wire::Mode::Async,
                                    trainers, 4, uint64_t{1} << 26)
            .Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::ShardMap>();
        CATCH_CHECK(b->version() == 5);
        CATCH_CHECK(b->mode() == wire::Mode::Async);
        CATCH_CHECK(Vec(b->trainers()) == std::vector<uint32_t>{0, 2});
        CATCH_CHECK(b->membership_epoch() == 4);
        CATCH_CHECK(b->max_message_bytes() == uint64_t{1} << 26);
        CATCH_REQUIRE(b->servers()->size() == 2);
        CATCH_CHECK(b->servers()->Get(1)->rank() == 1);
        CATCH_CHECK(b->servers()->Get(1)->endpoint()->str() == "tcp://10.0.0.2:7501");
        const wire::OptimizerConfig* o = b->optimizer();
        CATCH_REQUIRE(o != nullptr);
        CATCH_CHECK(o->kind() == wire::OptimizerKind::AdamW);
        CATCH_CHECK(o->lr() == 0.002);
        CATCH_CHECK(o->momentum() == 0.5);
        CATCH_CHECK(o->dampening() == 0.25);
        CATCH_CHECK(o->nesterov());
        CATCH_CHECK(o->weight_decay() == 0.01);
        CATCH_CHECK(o->beta1() == 0.8);
        CATCH_CHECK(o->beta2() == 0.99);
        CATCH_CHECK(o->eps() == 1e-6);
        CATCH_CHECK(o->amsgrad());
        CATCH_CHECK(o->lr_decay() == 0.125);
        CATCH_CHECK(o->initial_accumulator_value() == 0.0625);
        Result<ShardMap> map = ShardMap::FromWire(*b);
        CATCH_REQUIRE(map.ok());
        CATCH_CHECK(map->partitions().size() == 4);  // 12 + 4 elements in 4-element partitions
      }};
  cases[wire::Body::ShardReady] = {
      [](Builder& fbb) { return wire::CreateShardReady(fbb).Union(); },
      [](const Message& m) { CATCH_CHECK(m.body<wire::ShardReady>() != nullptr); }};
  cases[wire::Body::Membership] = {[](Builder& fbb) {
                                     const std::vector<uint32_t> trainers = {0, 1, 3};
                                     return wire::CreateMembershipDirect(fbb, 9, &trainers).Union();
                                   },
                                   [](const Message& m) {
                                     const auto* b = m.body<wire::Membership>();
                                     CATCH_CHECK(b->membership_epoch() == 9);
                                     CATCH_CHECK(Vec(b->trainers()) == std::vector<uint32_t>{0, 1, 3});
                                   }};
  cases[wire::Body::Heartbeat] = {
      [](Builder& fbb) {
        return wire::CreateHeartbeat(fbb, wire::CreateServerStats(fbb, 7, 8, 9, 10, 11)).Union();
      },
      [](const Message& m) { CheckStats(m.body<wire::Heartbeat>()->server_stats()); }};
  cases[wire::Body::HeartbeatAck] = {
      [](Builder& fbb) { return wire::CreateHeartbeatAck(fbb).Union(); },
      [](const Message& m) { CATCH_CHECK(m.body<wire::HeartbeatAck>() != nullptr); }};
  cases[wire::Body::Shutdown] = {
      [](Builder& fbb) { return wire::CreateShutdownDirect(fbb, true, "trainer 1 died").Union(); },
      [](const Message& m) {
        const auto* b = m.body<wire::Shutdown>();
        CATCH_CHECK(b->failed());
        CATCH_CHECK(b->reason()->str() == "trainer 1 died");
      }};
  cases[wire::Body::Goodbye] = {
      [](Builder& fbb) {
        return wire::CreateGoodbye(fbb, wire::CreateServerStats(fbb, 7, 8, 9, 10, 11)).Union();
      },
      [](const Message& m) { CheckStats(m.body<wire::Goodbye>()->server_stats()); }};
  cases[wire::Body::Error] = {
      [](Builder& fbb) {
        return wire::CreateErrorDirect(fbb, wire::ErrorCode::Refused, "model signature differs", 77).Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::Error>();
        CATCH_CHECK(b->code() == wire::ErrorCode::Refused);
        CATCH_CHECK(b->reason()->str() == "model signature differs");
        CATCH_CHECK(b->seq() == 77);
      }};
  cases[wire::Body::StatusRequest] = {
      [](Builder& fbb) { return wire::CreateStatusRequest(fbb).Union(); },
      [](const Message& m) { CATCH_CHECK(m.body<wire::StatusRequest>() != nullptr); }};
  cases[wire::Body::StatusReply] = {
      [](Builder& fbb) { return wire::CreateStatusReplyDirect(fbb, "{\"members\": []}").Union(); },
      [](const Message& m) {
        CATCH_CHECK(m.body<wire::StatusReply>()->json()->str() == "{\"members\": []}");
      }};
  return cases;
}

}  // namespace hetps::testing
