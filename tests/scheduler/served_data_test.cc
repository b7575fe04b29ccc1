// The scheduler's side of served data, through real sockets on 127.0.0.1: a trainer that joined
// receives the samples it names with a CRC-32 of their bytes; a request beyond the split, for
// too many samples or for none is refused with a reason and counted; so is one from a trainer
// that leaves 4 replies unacknowledged, while the others are served.
#include <zlib.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <optional>
#include <set>

#include "common/control_channel.h"
#include "scheduler/scheduler.h"
#include "tests/support/scheduler_thread.h"

namespace hetps {
namespace {

using std::chrono::seconds;
using testing::JoinAs;
using testing::SchedulerThread;

// A split of `samples` samples of `width` bytes each: byte j of sample i is (i * 7 + j) % 251;
// label i % 3.
std::shared_ptr<HostDataset> SmallSplit(int64_t samples, int64_t width) {
  auto data = std::make_shared<HostDataset>();
  data->samples = samples;
  data->sample_shape = {width};
  data->features.resize(static_cast<size_t>(samples * width));
  for (int64_t i = 0; i < samples * width; ++i)
    data->features[i] = static_cast<uint8_t>(((i / width) * 7 + i % width) % 251);
  for (int64_t i = 0; i < samples; ++i) data->class_targets.push_back(i % 3);
  data->classes = 3;
  data->divide_by = 255;
  return data;
}

// Asks for `samples` with `receipt`, by default the newest served reply received, as a trainer does.
Result<Message> Ask(ControlChannel& control, Sender& sender, wire::DataSplit split,
                    const std::vector<uint64_t>& samples, std::optional<uint64_t> receipt = std::nullopt) {
  flatbuffers::FlatBufferBuilder fbb(64 + 8 * samples.size());
  auto body = wire::CreateDataRequestDirect(fbb, split, &samples, receipt.value_or(control.served_receipt()));
  return control.Request(sender.Seal(fbb, wire::Body::DataRequest, body.Union()), wire::Body::DataSamples,
                         seconds(5));
}

// A job that serves 50 training and 7 test samples of SmallSplit, `width` bytes each.
SchedulerOptions ServingJob(uint32_t trainers, int64_t width) {
  SchedulerOptions options;
  options.job.listen = "tcp://127.0.0.1:*";
  options.job.trainers = trainers;
  options.job.data.serve = true;
  options.train_data = SmallSplit(50, width);
  options.test_data = SmallSplit(7, width);
  return options;
}

}  // namespace

CATCH_TEST_CASE("The scheduler serves the samples a trainer names, and refuses and counts bad requests",
                "[scheduler][data]") {
  const int64_t width = 100000;  // 42 samples fill a 4 MiB reply
  const SchedulerOptions options = ServingJob(1, width);
  SchedulerThread serving(options);
  CATCH_REQUIRE(serving.Start().ok());
  Scheduler& scheduler = serving.scheduler();

  Sender sender(wire::Role::Trainer);
  ControlChannel::Options control_options;
  control_options.scheduler = scheduler.endpoint();
  {
    ControlChannel control(serving.context(), control_options, &sender);
    auto accepted = JoinAs(control, wire::Role::Trainer);
    CATCH_REQUIRE(accepted.ok());
    const wire::DataLayout* layout = accepted->body<wire::JoinAccepted>()->job()->served();
    CATCH_REQUIRE(layout != nullptr);
    CATCH_CHECK(layout->train_samples() == 50);
    CATCH_CHECK(layout->test_samples() == 7);
    CATCH_CHECK(layout->feature_dtype() == wire::DType::U8);
    CATCH_CHECK(layout->max_reply_bytes() == kMaxServedReplyBytes);

    auto reply = Ask(control, sender, wire::DataSplit::Train, {49, 3, 3});
    CATCH_REQUIRE(reply.ok());
    const auto* samples = reply->body<wire::DataSamples>();
    CATCH_REQUIRE(samples->features()->size() == 3 * width);
    CATCH_REQUIRE(samples->targets()->size() == 3 * 8);
    CATCH_CHECK(std::memcmp(samples->features()->data(), options.train_data->features.data() + 49 * width,
                            width) == 0);
    CATCH_CHECK(std::memcmp(samples->features()->data() + width,
                            options.train_data->features.data() + 3 * width, width) == 0);
    int64_t label = 0;
    std::memcpy(&label, samples->targets()->data(), 8);
    CATCH_CHECK(label == 49 % 3);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32_z(crc, samples->features()->data(), samples->features()->size());
    crc = crc32_z(crc, samples->targets()->data(), samples->targets()->size());
    CATCH_CHECK(static_cast<uint32_t>(crc) == samples->crc32());

    CATCH_CHECK(Ask(control, sender, wire::DataSplit::Test, {6}).ok());
    auto beyond = Ask(control, sender, wire::DataSplit::Test, {7});
    CATCH_REQUIRE_FALSE(beyond.ok());
    CATCH_INFO(beyond.status().message());
    CATCH_CHECK(beyond.status().message().find("sample 7 is beyond the test split's 7") != std::string::npos);
    std::vector<uint64_t> too_many(42);
    CATCH_CHECK(Ask(control, sender, wire::DataSplit::Train, std::vector<uint64_t>(41)).ok());
    auto over = Ask(control, sender, wire::DataSplit::Train, too_many);
    CATCH_REQUIRE_FALSE(over.ok());
    CATCH_CHECK(over.status().message().find("1 to 41 samples, not 42") != std::string::npos);
    CATCH_CHECK_FALSE(Ask(control, sender, wire::DataSplit::Train, {}).ok());
  }
  const RefusalTally refusals = scheduler.refusals();
  CATCH_CHECK(refusals.of(Refusal::Invalid) == 1);
  CATCH_CHECK(refusals.of(Refusal::OverLimit) == 2);
}

CATCH_TEST_CASE("A trainer with 4 served replies unacknowledged is refused; the others are served",
                "[scheduler][data]") {
  SchedulerThread serving(ServingJob(2, 1000));
  CATCH_REQUIRE(serving.Start().ok());
  Scheduler& scheduler = serving.scheduler();
  Sender greedy_sender(wire::Role::Trainer);
  Sender honest_sender(wire::Role::Trainer);
  ControlChannel::Options control_options;
  control_options.scheduler = scheduler.endpoint();
  ControlChannel greedy(serving.context(), control_options, &greedy_sender);
  ControlChannel honest(serving.context(), control_options, &honest_sender);
  CATCH_REQUIRE(JoinAs(greedy, wire::Role::Trainer).ok());
  CATCH_REQUIRE(JoinAs(honest, wire::Role::Trainer).ok());

  // As a trainer that never reads its socket looks to the scheduler: no receipt, ever.
  std::vector<uint64_t> tokens;
  for (uint64_t i = 0; i < kMaxUnreadServedReplies; ++i) {
    auto reply = Ask(greedy, greedy_sender, wire::DataSplit::Train, {i}, 0);
    CATCH_REQUIRE(reply.ok());
    tokens.push_back(reply->body<wire::DataSamples>()->token());
    CATCH_CHECK(tokens.back() != 0);
  }
  CATCH_CHECK(std::set<uint64_t>(tokens.begin(), tokens.end()).size() == tokens.size());
  for (int i = 0; i < 20; ++i) {
    auto refused = Ask(greedy, greedy_sender, wire::DataSplit::Train, {1}, 0);
    CATCH_REQUIRE_FALSE(refused.ok());
    CATCH_INFO(refused.status().message());
    CATCH_CHECK(refused.status().message().find(
                    "4 served replies sent to this trainer are still unacknowledged") != std::string::npos);
    // A receipt no reply carried acknowledges nothing.
    CATCH_CHECK_FALSE(Ask(greedy, greedy_sender, wire::DataSplit::Test, {1}, tokens.back() + 1).ok());
  }
  // Meanwhile another trainer is served, acknowledging as it goes, far beyond 4 replies.
  for (uint64_t i = 0; i < 3 * kMaxUnreadServedReplies; ++i) {
    CATCH_REQUIRE(Ask(honest, honest_sender, wire::DataSplit::Train, {i % 50}).ok());
  }
  // Naming the second reply acknowledges it and the first: two more may be outstanding.
  CATCH_CHECK(Ask(greedy, greedy_sender, wire::DataSplit::Test, {2}, tokens[1]).ok());
  CATCH_CHECK(Ask(greedy, greedy_sender, wire::DataSplit::Test, {3}, 0).ok());
  CATCH_CHECK_FALSE(Ask(greedy, greedy_sender, wire::DataSplit::Test, {4}, 0).ok());
  // Naming the newest received acknowledges them all.
  CATCH_CHECK(Ask(greedy, greedy_sender, wire::DataSplit::Test, {5}, greedy.served_receipt()).ok());
  CATCH_CHECK(scheduler.refusals().of(Refusal::OverLimit) == 41);
}

}  // namespace hetps
