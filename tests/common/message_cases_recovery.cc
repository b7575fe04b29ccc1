// The message cases of checkpoints and recovery from a lost server.
#include "tests/common/message_cases.h"

#include <vector>

namespace hetps::testing {

std::map<wire::Body, KindCase> RecoveryCases() {
  std::map<wire::Body, KindCase> cases;
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
  return cases;
}

}  // namespace hetps::testing
