// Tests of common/message.h: every message kind round trips, and broken envelopes are refused.
#include "common/message.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/shard_map.h"

namespace hetps {
namespace {

using Builder = flatbuffers::FlatBufferBuilder;

// How to build one message kind with distinctive field values, and how to check them on arrival.
struct KindCase {
  std::function<flatbuffers::Offset<void>(Builder&)> build;
  std::function<void(const Message&)> check;
};

template <typename T>
std::vector<T> Vec(const flatbuffers::Vector<T>* v) {
  CATCH_REQUIRE(v != nullptr);
  return std::vector<T>(v->begin(), v->end());
}

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

// One case per member of the Body union. A kind added to the schema without a case here makes
// "Every message kind survives a seal and verify round trip" fail.
std::map<wire::Body, KindCase> AllKinds() {
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
  cases[wire::Body::ChunkRequest] = {[](Builder& fbb) {
                                       const std::vector<uint32_t> completed = {4, 5};
                                       return wire::CreateChunkRequestDirect(fbb, 2, &completed).Union();
                                     },
                                     [](const Message& m) {
                                       const auto* b = m.body<wire::ChunkRequest>();
                                       CATCH_CHECK(b->epoch() == 2);
                                       CATCH_CHECK(Vec(b->completed()) == std::vector<uint32_t>{4, 5});
                                     }};
  cases[wire::Body::ChunkGrant] = {
      [](Builder& fbb) { return wire::CreateChunkGrant(fbb, 2, 17, 8704, 9216, true, true).Union(); },
      [](const Message& m) {
        const auto* b = m.body<wire::ChunkGrant>();
        CATCH_CHECK(b->epoch() == 2);
        CATCH_CHECK(b->chunk() == 17);
        CATCH_CHECK(b->begin() == 8704);
        CATCH_CHECK(b->end() == 9216);
        CATCH_CHECK(b->exhausted());
        CATCH_CHECK(b->epoch_complete());
      }};
  cases[wire::Body::Progress] = {
      [](Builder& fbb) { return wire::CreateProgress(fbb, 1, 321, 20480, 0.4375, 1234.5, 320).Union(); },
      [](const Message& m) {
        const auto* b = m.body<wire::Progress>();
        CATCH_CHECK(b->epoch() == 1);
        CATCH_CHECK(b->clock() == 321);
        CATCH_CHECK(b->samples() == 20480);
        CATCH_CHECK(b->loss() == 0.4375);
        CATCH_CHECK(b->samples_per_second() == 1234.5);
        CATCH_CHECK(b->weight_version() == 320);
      }};
  cases[wire::Body::Done] = {[](Builder& fbb) { return wire::CreateDone(fbb, 640, 120000).Union(); },
                             [](const Message& m) {
                               const auto* b = m.body<wire::Done>();
                               CATCH_CHECK(b->clock() == 640);
                               CATCH_CHECK(b->samples() == 120000);
                             }};
  cases[wire::Body::EvalRequest] = {
      [](Builder& fbb) { return wire::CreateEvalRequest(fbb, 2, true).Union(); },
      [](const Message& m) {
        const auto* b = m.body<wire::EvalRequest>();
        CATCH_CHECK(b->epoch() == 2);
        CATCH_CHECK(b->final());
      }};
  cases[wire::Body::EvalReport] = {
      [](Builder& fbb) { return wire::CreateEvalReport(fbb, 2, true, 640, 0.3125, 0.875, 10000).Union(); },
      [](const Message& m) {
        const auto* b = m.body<wire::EvalReport>();
        CATCH_CHECK(b->epoch() == 2);
        CATCH_CHECK(b->final());
        CATCH_CHECK(b->weight_version() == 640);
        CATCH_CHECK(b->test_loss() == 0.3125);
        CATCH_CHECK(b->test_accuracy() == 0.875);
        CATCH_CHECK(b->test_samples() == 10000);
      }};
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
  cases[wire::Body::InitWeights] = {
      [](Builder& fbb) {
        const std::vector<uint32_t> partitions = {0, 1, 2};
        return wire::CreateInitWeightsDirect(fbb, &partitions).Union();
      },
      [](const Message& m) {
        CATCH_CHECK(Vec(m.body<wire::InitWeights>()->partitions()) == std::vector<uint32_t>{0, 1, 2});
      }};
  cases[wire::Body::Push] = {
      [](Builder& fbb) {
        const std::vector<uint32_t> partitions = {1, 3};
        const std::vector<uint64_t> versions = {11, 12};
        return wire::CreatePushDirect(fbb, 12, 32, &partitions, &versions, wire::DType::F16, true).Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::Push>();
        CATCH_CHECK(b->clock() == 12);
        CATCH_CHECK(b->batch_size() == 32);
        CATCH_CHECK(Vec(b->partitions()) == std::vector<uint32_t>{1, 3});
        CATCH_CHECK(Vec(b->versions()) == std::vector<uint64_t>{11, 12});
        CATCH_CHECK(b->dtype() == wire::DType::F16);
        CATCH_CHECK(b->pull());
      }};
  cases[wire::Body::Pull] = {
      [](Builder& fbb) {
        const std::vector<uint32_t> partitions = {1, 3};
        return wire::CreatePullDirect(fbb, 12, true, &partitions, wire::DType::BF16).Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::Pull>();
        CATCH_CHECK(b->clock() == 12);
        CATCH_CHECK(b->latest());
        CATCH_CHECK(Vec(b->partitions()) == std::vector<uint32_t>{1, 3});
        CATCH_CHECK(b->dtype() == wire::DType::BF16);
      }};
  cases[wire::Body::Weights] = {
      [](Builder& fbb) {
        const std::vector<uint32_t> partitions = {1, 3};
        const std::vector<uint64_t> versions = {12, 13};
        return wire::CreateWeightsDirect(fbb, &partitions, &versions, 64, wire::DType::F64).Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::Weights>();
        CATCH_CHECK(Vec(b->partitions()) == std::vector<uint32_t>{1, 3});
        CATCH_CHECK(Vec(b->versions()) == std::vector<uint64_t>{12, 13});
        CATCH_CHECK(b->round_samples() == 64);
        CATCH_CHECK(b->dtype() == wire::DType::F64);
      }};
  cases[wire::Body::Ack] = {[](Builder& fbb) { return wire::CreateAck(fbb).Union(); },
                            [](const Message& m) { CATCH_CHECK(m.body<wire::Ack>() != nullptr); }};
  cases[wire::Body::Rebalance] = {[](Builder& fbb) {
                                    const std::vector<uint32_t> sizes = {48, 0, 16};
                                    return wire::CreateRebalanceDirect(fbb, 120, &sizes).Union();
                                  },
                                  [](const Message& m) {
                                    const auto* b = m.body<wire::Rebalance>();
                                    CATCH_CHECK(b->from_clock() == 120);
                                    CATCH_CHECK(Vec(b->batch_sizes()) == std::vector<uint32_t>{48, 0, 16});
                                  }};
  cases[wire::Body::CheckpointRequest] = {
      [](Builder& fbb) { return wire::CreateCheckpointRequest(fbb, 4, 120, true).Union(); },
      [](const Message& m) {
        const auto* b = m.body<wire::CheckpointRequest>();
        CATCH_CHECK(b->checkpoint() == 4);
        CATCH_CHECK(b->round() == 120);
        CATCH_CHECK(b->now());
      }};
  cases[wire::Body::CheckpointState] = {
      [](Builder& fbb) {
        const std::vector<int64_t> shape = {512};
        std::vector<flatbuffers::Offset<wire::TensorSpec>> tensors = {
            wire::CreateTensorSpecDirect(fbb, "fc1.bias[0:512]", &shape, wire::DType::F32)};
        return wire::CreateCheckpointStateDirect(fbb, 4, 130, 120, &tensors).Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::CheckpointState>();
        CATCH_CHECK(b->checkpoint() == 4);
        CATCH_CHECK(b->version() == 130);
        CATCH_CHECK(b->round() == 120);
        CATCH_REQUIRE(b->tensors()->size() == 1);
        CATCH_CHECK(b->tensors()->Get(0)->name()->str() == "fc1.bias[0:512]");
      }};
  cases[wire::Body::DataPosition] = {
      [](Builder& fbb) {
        const std::vector<uint32_t> finished = {3, 5};
        const std::vector<uint32_t> held = {7};
        const std::vector<uint64_t> held_next = {3700};
        return wire::CreateDataPositionDirect(fbb, 4, 120, 1, 7680, &finished, &held, &held_next).Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::DataPosition>();
        CATCH_CHECK(b->checkpoint() == 4);
        CATCH_CHECK(b->clock() == 120);
        CATCH_CHECK(b->epoch() == 1);
        CATCH_CHECK(b->samples() == 7680);
        CATCH_CHECK(Vec(b->finished()) == std::vector<uint32_t>{3, 5});
        CATCH_CHECK(Vec(b->held()) == std::vector<uint32_t>{7});
        CATCH_CHECK(Vec(b->held_next()) == std::vector<uint64_t>{3700});
      }};
  cases[wire::Body::Restore] = {
      [](Builder& fbb) { return wire::CreateRestoreDirect(fbb, 2, 4, 120, nullptr, true).Union(); },
      [](const Message& m) {
        const auto* b = m.body<wire::Restore>();
        CATCH_CHECK(b->generation() == 2);
        CATCH_CHECK(b->checkpoint() == 4);
        CATCH_CHECK(b->round() == 120);
        CATCH_CHECK(b->reset());
      }};
  cases[wire::Body::Pause] = {
      [](Builder& fbb) { return wire::CreatePauseDirect(fbb, 2, "server 1 lost").Union(); },
      [](const Message& m) {
        const auto* b = m.body<wire::Pause>();
        CATCH_CHECK(b->generation() == 2);
        CATCH_CHECK(b->reason()->str() == "server 1 lost");
      }};
  cases[wire::Body::Resume] = {
      [](Builder& fbb) {
        std::vector<flatbuffers::Offset<wire::ServerEndpoint>> endpoints = {
            wire::CreateServerEndpointDirect(fbb, 1, "tcp://10.0.0.2:7502")};
        return wire::CreateResumeDirect(fbb, 2, &endpoints, true, 120, 1, false).Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::Resume>();
        CATCH_CHECK(b->generation() == 2);
        CATCH_REQUIRE(b->servers()->size() == 1);
        CATCH_CHECK(b->servers()->Get(0)->endpoint()->str() == "tcp://10.0.0.2:7502");
        CATCH_CHECK(b->rollback());
        CATCH_CHECK(b->clock() == 120);
        CATCH_CHECK(b->epoch() == 1);
        CATCH_CHECK_FALSE(b->reinitialize());
      }};
  cases[wire::Body::StatusRequest] = {
      [](Builder& fbb) { return wire::CreateStatusRequest(fbb).Union(); },
      [](const Message& m) { CATCH_CHECK(m.body<wire::StatusRequest>() != nullptr); }};
  cases[wire::Body::StatusReply] = {
      [](Builder& fbb) { return wire::CreateStatusReplyDirect(fbb, "{\"members\": []}").Union(); },
      [](const Message& m) {
        CATCH_CHECK(m.body<wire::StatusReply>()->json()->str() == "{\"members\": []}");
      }};
  cases[wire::Body::DataRequest] = {
      [](Builder& fbb) {
        const std::vector<uint64_t> samples = {3, 59999};
        return wire::CreateDataRequestDirect(fbb, wire::DataSplit::Test, &samples).Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::DataRequest>();
        CATCH_CHECK(b->split() == wire::DataSplit::Test);
        CATCH_CHECK(std::vector<uint64_t>(b->samples()->begin(), b->samples()->end()) ==
                    std::vector<uint64_t>{3, 59999});
      }};
  cases[wire::Body::DataSamples] = {
      [](Builder& fbb) {
        const std::vector<uint64_t> samples = {7};
        const std::vector<uint8_t> features = {0, 128, 255};
        const std::vector<uint8_t> targets = {9, 0, 0, 0, 0, 0, 0, 0};
        return wire::CreateDataSamplesDirect(fbb, wire::DataSplit::Train, &samples, &features, &targets,
                                             0xdeadbeef)
            .Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::DataSamples>();
        CATCH_CHECK(b->split() == wire::DataSplit::Train);
        CATCH_CHECK(b->samples()->size() == 1);
        CATCH_CHECK(std::vector<uint8_t>(b->features()->begin(), b->features()->end()) ==
                    std::vector<uint8_t>{0, 128, 255});
        CATCH_CHECK(b->targets()->size() == 8);
        CATCH_CHECK(b->crc32() == 0xdeadbeef);
      }};
  cases[wire::Body::ModeSwitch] = {
      [](Builder& fbb) {
        return wire::CreateModeSwitchDirect(fbb, 300, wire::Mode::Ssp, 12, "a stall").Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::ModeSwitch>();
        CATCH_CHECK(b->from_clock() == 300);
        CATCH_CHECK(b->mode() == wire::Mode::Ssp);
        CATCH_CHECK(b->staleness() == 12);
        CATCH_CHECK(b->reason()->str() == "a stall");
      }};
  cases[wire::Body::ModelFileRequest] = {
      [](Builder& fbb) { return wire::CreateModelFileRequest(fbb, 4u << 20, 1024).Union(); },
      [](const Message& m) {
        const auto* b = m.body<wire::ModelFileRequest>();
        CATCH_CHECK(b->offset() == (4u << 20));
        CATCH_CHECK(b->length() == 1024);
      }};
  cases[wire::Body::ModelFilePiece] = {
      [](Builder& fbb) {
        const std::vector<uint8_t> bytes = {0x50, 0x4b, 3, 4};
        return wire::CreateModelFilePieceDirect(fbb, 8192, &bytes, 0x1a2b3c4d).Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::ModelFilePiece>();
        CATCH_CHECK(b->offset() == 8192);
        CATCH_CHECK(std::vector<uint8_t>(b->bytes()->begin(), b->bytes()->end()) ==
                    std::vector<uint8_t>{0x50, 0x4b, 3, 4});
        CATCH_CHECK(b->crc32() == 0x1a2b3c4d);
      }};
  return cases;
}

zmq::message_t Seal(Sender& sender, wire::Body kind, const KindCase& c) {
  Builder fbb;
  const flatbuffers::Offset<void> body = c.build(fbb);
  return sender.Seal(fbb, kind, body);
}

void FreeBytes(void* data, void* /*hint*/) {
  std::free(data);
}

// A Message whose envelope is `bytes` in a heap block of exactly that size, so that a read past
// the end is caught by AddressSanitizer even for envelopes small enough for ZeroMQ to store inline.
Message FromBytes(const std::string& bytes) {
  Message message;
  if (bytes.empty()) return message;
  void* data = std::malloc(bytes.size());
  std::memcpy(data, bytes.data(), bytes.size());
  message.envelope = zmq::message_t(data, bytes.size(), &FreeBytes, nullptr);
  return message;
}

std::string Bytes(const zmq::message_t& frame) {
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}

// A valid envelope of every kind, as bytes.
std::map<wire::Body, std::string> ValidEnvelopes() {
  Sender sender(wire::Role::Trainer);
  std::map<wire::Body, std::string> envelopes;
  for (const auto& [kind, c] : AllKinds()) envelopes[kind] = Bytes(Seal(sender, kind, c));
  return envelopes;
}

void RequireRefused(const Message& message, size_t max_bytes = kDefaultMaxEnvelopeBytes) {
  const Status status = VerifyEnvelope(message, max_bytes);
  CATCH_REQUIRE_FALSE(status.ok());
  CATCH_REQUIRE(status.code() == Status::Code::kProtocol);
  CATCH_REQUIRE_FALSE(status.message().empty());
}

CATCH_TEST_CASE("Every message kind survives a seal and verify round trip", "[common][message]") {
  const std::map<wire::Body, KindCase> cases = AllKinds();
  // Body::NONE is not a message; every other member of the union needs a case.
  CATCH_REQUIRE(cases.size() == static_cast<size_t>(wire::Body::MAX));
  Sender sender(wire::Role::Trainer);
  sender.set_rank(3);
  sender.set_membership_epoch(7);
  uint64_t expected_seq = 0;
  for (int k = 1; k <= static_cast<int>(wire::Body::MAX); ++k) {
    const auto kind = static_cast<wire::Body>(k);
    CATCH_INFO("kind " << k << " (" << KindName(kind) << ")");
    CATCH_REQUIRE(cases.count(kind) == 1);
    CATCH_CHECK(std::string(KindName(kind)) == wire::EnumNameBody(kind));
    Message message;
    message.envelope = Seal(sender, kind, cases.at(kind));
    ++expected_seq;
    const Status status = VerifyEnvelope(message);
    CATCH_INFO(status.ToString());
    CATCH_REQUIRE(status.ok());
    CATCH_CHECK(message.kind() == kind);
    CATCH_CHECK(message.env().role() == wire::Role::Trainer);
    CATCH_CHECK(message.env().sender() == 3);
    CATCH_CHECK(message.env().seq() == expected_seq);
    CATCH_CHECK(message.env().membership_epoch() == 7);
    CATCH_CHECK(DescribeSender(message.env()) == "trainer 3");
    cases.at(kind).check(message);
  }
  CATCH_CHECK(sender.last_seq() == expected_seq);
}

CATCH_TEST_CASE("Sender's ready-made Error and empty messages verify", "[common][message]") {
  Sender sender(wire::Role::Server);
  sender.set_rank(1);
  Message error;
  error.envelope = sender.MakeError(wire::ErrorCode::BadLength, "partition 4: 12 bytes, expected 16", 41);
  CATCH_REQUIRE(VerifyEnvelope(error).ok());
  CATCH_CHECK(error.kind() == wire::Body::Error);
  CATCH_CHECK(error.body<wire::Error>()->code() == wire::ErrorCode::BadLength);
  CATCH_CHECK(error.body<wire::Error>()->reason()->str() == "partition 4: 12 bytes, expected 16");
  CATCH_CHECK(error.body<wire::Error>()->seq() == 41);
  CATCH_CHECK(DescribeSender(error.env()) == "server 1");
  for (wire::Body kind : {wire::Body::ShardReady, wire::Body::HeartbeatAck, wire::Body::Ack}) {
    CATCH_INFO(KindName(kind));
    Message empty;
    empty.envelope = sender.MakeEmpty(kind);
    CATCH_REQUIRE(VerifyEnvelope(empty).ok());
    CATCH_CHECK(empty.kind() == kind);
  }
  CATCH_CHECK(sender.last_seq() == 4);
  CATCH_CHECK(std::string(KindName(static_cast<wire::Body>(200))) == "unknown");
}

CATCH_TEST_CASE("DescribeSender names the scheduler and unknown peers", "[common][message]") {
  Sender scheduler(wire::Role::Scheduler);
  Message m;
  m.envelope = scheduler.MakeEmpty(wire::Body::Ack);
  CATCH_REQUIRE(VerifyEnvelope(m).ok());
  CATCH_CHECK(DescribeSender(m.env()) == "scheduler");
  Sender nobody(wire::Role::Unknown);
  m.envelope = nobody.MakeEmpty(wire::Body::Ack);
  CATCH_REQUIRE(VerifyEnvelope(m).ok());
  CATCH_CHECK(DescribeSender(m.env()) == "unknown peer");
}

CATCH_TEST_CASE("An empty frame is refused", "[common][message]") {
  Message message;
  RequireRefused(message);
  CATCH_CHECK(VerifyEnvelope(message).message().find("empty") != std::string::npos);
}

CATCH_TEST_CASE("Every truncation of a valid envelope is refused unless only padding is cut",
                "[common][message]") {
  const std::map<wire::Body, KindCase> cases = AllKinds();
  for (const auto& [kind, valid] : ValidEnvelopes()) {
    CATCH_REQUIRE(VerifyEnvelope(FromBytes(valid)).ok());
    size_t refused = 0;
    for (size_t length = 0; length < valid.size(); ++length) {
      CATCH_INFO(KindName(kind) << ": prefix of " << length << " of " << valid.size() << " bytes");
      const Message prefix = FromBytes(valid.substr(0, length));
      const Status status = VerifyEnvelope(prefix);
      if (!status.ok()) {
        ++refused;
        CATCH_REQUIRE(status.code() == Status::Code::kProtocol);
        CATCH_REQUIRE_FALSE(status.message().empty());
        continue;
      }
      // FlatBuffers grows its buffer downwards: the last bytes can be alignment padding of the
      // first object written (a string's tail). Only such zero bytes may be cut, and the message
      // must then read back intact.
      CATCH_REQUIRE(valid.find_first_not_of('\0', length) == std::string::npos);
      CATCH_REQUIRE(valid.size() - length < 4);
      CATCH_REQUIRE(prefix.kind() == kind);
      cases.at(kind).check(prefix);
    }
    CATCH_CHECK(refused + 3 >= valid.size());
  }
}

CATCH_TEST_CASE("Envelopes with flipped bytes are refused or still readable, never a crash",
                "[common][message]") {
  std::mt19937_64 rng(12345);
  size_t refused = 0;
  size_t trials = 0;
  for (const auto& [kind, original] : ValidEnvelopes()) {
    for (int seed = 0; seed < 500; ++seed) {
      std::string bytes = original;
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int f = 0; f < flips; ++f) {
        bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
      }
      const Message message = FromBytes(bytes);
      const Status status = VerifyEnvelope(message);
      ++trials;
      if (!status.ok()) {
        ++refused;
        CATCH_REQUIRE(status.code() == Status::Code::kProtocol);
        CATCH_REQUIRE_FALSE(status.message().empty());
        continue;
      }
      // Whatever survived verification must be safe to read.
      CATCH_REQUIRE(message.kind() != wire::Body::NONE);
      CATCH_REQUIRE(KindName(message.kind()) != nullptr);
      (void)DescribeSender(message.env());
      (void)message.env().seq();
    }
  }
  CATCH_INFO(refused << " of " << trials << " corrupted envelopes refused");
  CATCH_CHECK(refused > trials / 4);
}

CATCH_TEST_CASE("Random bytes are refused", "[common][message]") {
  std::mt19937_64 rng(777);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes(1 + rng() % 600, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    CATCH_INFO("trial " << trial << ", " << bytes.size() << " bytes");
    RequireRefused(FromBytes(bytes));
  }
}

CATCH_TEST_CASE("An envelope over the size limit is refused before it is parsed", "[common][message]") {
  Sender sender(wire::Role::Scheduler);
  CATCH_SECTION("a caller's limit") {
    Builder fbb;
    const std::string reason(4096, 'x');
    Message message;
    message.envelope =
        sender.Seal(fbb, wire::Body::Shutdown, wire::CreateShutdownDirect(fbb, true, reason.c_str()).Union());
    CATCH_REQUIRE(VerifyEnvelope(message).ok());
    RequireRefused(message, 1024);
    CATCH_CHECK(VerifyEnvelope(message, 1024).message().find("exceeds") != std::string::npos);
  }
  CATCH_SECTION("the default limit") {
    Builder fbb;
    const std::string reason(kDefaultMaxEnvelopeBytes, 'x');
    Message message;
    message.envelope =
        sender.Seal(fbb, wire::Body::Shutdown, wire::CreateShutdownDirect(fbb, true, reason.c_str()).Union());
    CATCH_REQUIRE(message.envelope.size() > kDefaultMaxEnvelopeBytes);
    RequireRefused(message);
    CATCH_CHECK(VerifyEnvelope(message).message().find(std::to_string(kDefaultMaxEnvelopeBytes)) !=
                std::string::npos);
  }
}

CATCH_TEST_CASE("An envelope without a body kind is refused", "[common][message]") {
  Builder fbb;
  const auto start = fbb.StartTable();
  const flatbuffers::Offset<void> body(fbb.EndTable(start));
  fbb.Finish(wire::CreateEnvelope(fbb, wire::Role::Trainer, 0, 1, 0, wire::Body::NONE, body));
  Message message;
  message.envelope = zmq::message_t(fbb.GetBufferPointer(), fbb.GetSize());
  RequireRefused(message);
  CATCH_CHECK(VerifyEnvelope(message).message().find("no body") != std::string::npos);
}

}  // namespace
}  // namespace hetps
