// The scheduler's side of served data, through real sockets on 127.0.0.1: a trainer that joined
// receives the samples it names with a CRC-32 of their bytes; a request beyond the split, for
// too many samples or for none is refused with a reason and counted.
#include <zlib.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <thread>

#include "common/control_channel.h"
#include "scheduler/scheduler.h"

namespace hetps {
namespace {

using std::chrono::seconds;

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

Result<Message> Ask(ControlChannel& control, Sender& sender, wire::DataSplit split,
                    const std::vector<uint64_t>& samples) {
  flatbuffers::FlatBufferBuilder fbb(64 + 8 * samples.size());
  auto body = wire::CreateDataRequestDirect(fbb, split, &samples);
  return control.Request(sender.Seal(fbb, wire::Body::DataRequest, body.Union()), wire::Body::DataSamples,
                         seconds(5));
}

}  // namespace

CATCH_TEST_CASE("The scheduler serves the samples a trainer names, and refuses and counts bad requests",
                "[scheduler][data]") {
  JobOptions job;
  job.listen = "tcp://127.0.0.1:*";
  job.trainers = 1;
  job.data.serve = true;
  SchedulerOptions options;
  options.job = job;
  options.progress_out = nullptr;
  const int64_t width = 100000;  // 42 samples fill a 4 MiB reply
  options.train_data = SmallSplit(50, width);
  options.test_data = SmallSplit(7, width);
  std::atomic<bool> stop{false};
  options.stop = &stop;
  zmq::context_t context(1);
  Scheduler scheduler(context, options);
  CATCH_REQUIRE(scheduler.Start().ok());
  std::thread loop([&] { (void)scheduler.Run(); });

  Sender sender(wire::Role::Trainer);
  ControlChannel::Options control_options;
  control_options.scheduler = scheduler.endpoint();
  {
    ControlChannel control(context, control_options, &sender);
    ControlChannel::JoinInfo info;
    info.role = wire::Role::Trainer;
    info.device = "cpu";
    auto accepted = control.Join(info);
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
  stop = true;
  loop.join();
}

}  // namespace hetps
