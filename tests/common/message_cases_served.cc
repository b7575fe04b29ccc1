// The message cases of the samples and the TorchScript file the scheduler serves to trainers.
#include "tests/common/message_cases.h"

#include <cstdint>
#include <vector>

namespace hetps::testing {

std::map<wire::Body, KindCase> ServedCases() {
  std::map<wire::Body, KindCase> cases;
  cases[wire::Body::DataRequest] = {
      [](Builder& fbb) {
        const std::vector<uint64_t> samples = {3, 59999};
        return wire::CreateDataRequestDirect(fbb, wire::DataSplit::Test, &samples, 0x0123456789abcdefULL)
            .Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::DataRequest>();
        CATCH_CHECK(b->split() == wire::DataSplit::Test);
        CATCH_CHECK(std::vector<uint64_t>(b->samples()->begin(), b->samples()->end()) ==
                    std::vector<uint64_t>{3, 59999});
        CATCH_CHECK(b->receipt() == 0x0123456789abcdefULL);
      }};
  cases[wire::Body::DataSamples] = {
      [](Builder& fbb) {
        const std::vector<uint64_t> samples = {7};
        const std::vector<uint8_t> features = {0, 128, 255};
        const std::vector<uint8_t> targets = {9, 0, 0, 0, 0, 0, 0, 0};
        return wire::CreateDataSamplesDirect(fbb, wire::DataSplit::Train, &samples, &features, &targets,
                                             0xdeadbeef, 0xfedcba9876543210ULL)
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
        CATCH_CHECK(b->token() == 0xfedcba9876543210ULL);
      }};
  cases[wire::Body::ModelFileRequest] = {
      [](Builder& fbb) { return wire::CreateModelFileRequest(fbb, 4u << 20, 1024, 42).Union(); },
      [](const Message& m) {
        const auto* b = m.body<wire::ModelFileRequest>();
        CATCH_CHECK(b->offset() == (4u << 20));
        CATCH_CHECK(b->length() == 1024);
        CATCH_CHECK(b->receipt() == 42);
      }};
  cases[wire::Body::ModelFilePiece] = {
      [](Builder& fbb) {
        const std::vector<uint8_t> bytes = {0x50, 0x4b, 3, 4};
        return wire::CreateModelFilePieceDirect(fbb, 8192, &bytes, 0x1a2b3c4d, UINT64_MAX).Union();
      },
      [](const Message& m) {
        const auto* b = m.body<wire::ModelFilePiece>();
        CATCH_CHECK(b->offset() == 8192);
        CATCH_CHECK(std::vector<uint8_t>(b->bytes()->begin(), b->bytes()->end()) ==
                    std::vector<uint8_t>{0x50, 0x4b, 3, 4});
        CATCH_CHECK(b->crc32() == 0x1a2b3c4d);
        CATCH_CHECK(b->token() == UINT64_MAX);
      }};
  return cases;
}

}  // namespace hetps::testing
