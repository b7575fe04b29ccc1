// The message cases of data chunks, progress, evaluation, rebalancing and mode switches.
#include "tests/common/message_cases.h"

#include <vector>

namespace hetps::testing {

std::map<wire::Body, KindCase> TrainingCases() {
  std::map<wire::Body, KindCase> cases;
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
  cases[wire::Body::Rebalance] = {[](Builder& fbb) {
                                    const std::vector<uint32_t> sizes = {48, 0, 16};
                                    return wire::CreateRebalanceDirect(fbb, 120, &sizes).Union();
                                  },
                                  [](const Message& m) {
                                    const auto* b = m.body<wire::Rebalance>();
                                    CATCH_CHECK(b->from_clock() == 120);
                                    CATCH_CHECK(Vec(b->batch_sizes()) == std::vector<uint32_t>{48, 0, 16});
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
  return cases;
}

}  // namespace hetps::testing
