// The message cases of weights and gradients between trainers and servers.
#include "tests/common/message_cases.h"

#include <vector>

namespace hetps::testing {

std::map<wire::Body, KindCase> DataPlaneCases() {
  std::map<wire::Body, KindCase> cases;
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
  return cases;
}

}  // namespace hetps::testing
