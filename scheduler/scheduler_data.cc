// Scheduler: serving the job's data (data.serve) and its TorchScript file to trainers that do not
// have them. The scheduler holds both splits and the model file in memory (read at start) and
// answers each DataRequest with the samples' bytes and each ModelFileRequest with a piece of the
// file, each with its CRC-32; see docs/protocol.md, "Served data" and "The model file".
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "checkpoint/checksum.h"
#include "common/logging.h"
#include "scheduler/scheduler.h"

namespace hetps {
namespace {

// Room for a ModelFilePiece's envelope around its bytes.
constexpr uint64_t kPieceEnvelopeBytes = 4096;

// The CRC-32 of a split's layout (sample count, shape, feature type, kind and width of the
// targets) followed by its features and targets: two data sets with the same bytes in another
// shape differ too.
uint32_t SplitChecksum(const HostDataset& data) {
  std::vector<int64_t> layout = {data.samples, static_cast<int64_t>(data.feature_type),
                                 data.float_targets ? 1 : 0, data.target_width};
  layout.insert(layout.end(), data.sample_shape.begin(), data.sample_shape.end());
  uint32_t crc = Crc32(layout.data(), layout.size() * sizeof(int64_t));
  crc = ExtendCrc32(crc, data.features.data(), data.features.size());
  if (data.float_targets) {
    return ExtendCrc32(crc, data.float_targets_values.data(),
                       data.float_targets_values.size() * sizeof(float));
  }
  return ExtendCrc32(crc, data.class_targets.data(), data.class_targets.size() * sizeof(int64_t));
}

}  // namespace

uint64_t ModelPieceBytes(uint64_t max_message_bytes) {
  if (max_message_bytes <= 2 * kPieceEnvelopeBytes) return std::max<uint64_t>(1, max_message_bytes / 2);
  return std::min(kMaxServedReplyBytes, max_message_bytes - kPieceEnvelopeBytes);
}

void Scheduler::ComputeServedChecksum() {
  char text[32];
  std::snprintf(text, sizeof(text), "crc32:%08x%08x", SplitChecksum(*options_.train_data),
                SplitChecksum(*options_.test_data));
  served_checksum_ = text;
  HETPS_LOG(INFO) << "serving the data to trainers without it: " << options_.train_data->samples
                  << " training and " << options_.test_data->samples << " test samples (" << served_checksum_
                  << ")";
}

flatbuffers::Offset<wire::DataLayout> Scheduler::ServedLayout(flatbuffers::FlatBufferBuilder& fbb) const {
  const HostDataset& train = *options_.train_data;
  const uint64_t per_sample = train.sample_bytes() + train.target_bytes();
  return wire::CreateDataLayoutDirect(
      fbb, static_cast<uint64_t>(train.samples), static_cast<uint64_t>(options_.test_data->samples),
      &train.sample_shape, train.feature_type == FeatureType::kUInt8 ? wire::DType::U8 : wire::DType::F32,
      train.float_targets, train.target_width, train.classes, train.divide_by, train.mean, train.std,
      ServedReplyBytes(per_sample), served_checksum_.empty() ? nullptr : served_checksum_.c_str());
}

bool Scheduler::RefuseUnread(Member& member, uint64_t receipt, const Message& message) {
  std::deque<uint64_t>& unread = member.unread_served;
  // Replies reach a trainer in the order sent, so the one it names arrived after every earlier one
  // (or they were lost with a connection): none of them is queued here any more. A receipt that
  // names no outstanding reply acknowledges nothing.
  auto named = std::find(unread.begin(), unread.end(), receipt);
  if (receipt != 0 && named != unread.end()) unread.erase(unread.begin(), named + 1);
  if (unread.size() < kMaxUnreadServedReplies) return false;
  Refuse(message, wire::ErrorCode::Refused, Refusal::OverLimit,
         std::to_string(unread.size()) +
             " served replies sent to this trainer are still unacknowledged; a request's receipt must "
             "name the newest it has received before the scheduler serves more");
  return true;
}

uint64_t Scheduler::NewServedToken(Member& member) {
  uint64_t token = 0;
  while (token == 0) token = (uint64_t{served_random_()} << 32) | served_random_();
  member.unread_served.push_back(token);
  return token;
}

void Scheduler::HandleDataRequest(Member& member, const Message& message) {
  const auto* request = message.body<wire::DataRequest>();
  if (!job_.data.serve || !options_.train_data || !options_.test_data) {
    return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                  "this job's data is not served (the job file's data section has no serve: true)");
  }
  if (member.role != wire::Role::Trainer) {
    return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                  "data is served to trainers only");
  }
  const bool train = request->split() == wire::DataSplit::Train;
  if (!train && request->split() != wire::DataSplit::Test) {
    return Refuse(message, wire::ErrorCode::Refused, Refusal::Invalid, "no such data split");
  }
  if (RefuseUnread(member, request->receipt(), message)) return;
  const HostDataset& data = train ? *options_.train_data : *options_.test_data;
  const size_t sample_bytes = data.sample_bytes();
  const size_t target_bytes = data.target_bytes();
  const size_t count = request->samples() ? request->samples()->size() : 0;
  const uint64_t limit = ServedReplyBytes(sample_bytes + target_bytes);
  if (count == 0 || count * (sample_bytes + target_bytes) > limit) {
    return Refuse(message, wire::ErrorCode::Refused, Refusal::OverLimit,
                  "a data request must ask for 1 to " +
                      std::to_string(limit / (sample_bytes + target_bytes)) + " samples, not " +
                      std::to_string(count));
  }
  for (uint64_t index : *request->samples()) {
    if (index >= static_cast<uint64_t>(data.samples)) {
      return Refuse(message, wire::ErrorCode::Refused, Refusal::Invalid,
                    "sample " + std::to_string(index) + " is beyond the " +
                        DatasetSplitName(train ? DatasetSplit::kTrain : DatasetSplit::kTest) + " split's " +
                        std::to_string(data.samples));
    }
  }
  flatbuffers::FlatBufferBuilder fbb(count * (sample_bytes + target_bytes) + 1024);
  uint8_t* features = nullptr;
  uint8_t* targets = nullptr;
  auto features_vector = fbb.CreateUninitializedVector(count * sample_bytes, &features);
  auto targets_vector = fbb.CreateUninitializedVector(count * target_bytes, &targets);
  size_t i = 0;
  for (uint64_t index : *request->samples()) {
    std::memcpy(features + i * sample_bytes, data.features.data() + index * sample_bytes, sample_bytes);
    data.CopyTarget(static_cast<int64_t>(index), targets + i * target_bytes);
    ++i;
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32_z(crc, features, count * sample_bytes);
  crc = crc32_z(crc, targets, count * target_bytes);
  if (options_.corrupt_served_replies > 0 && count * sample_bytes > 0) {
    // Fault injection for tests: the bytes change after the checksum, as a bad link would.
    --options_.corrupt_served_replies;
    features[count * sample_bytes / 2] ^= 0x5a;
    HETPS_LOG(WARNING) << "corrupting the data served to " << member.Describe() << " (fault injection)";
  }
  auto samples = fbb.CreateVector(request->samples()->data(), count);
  auto body = wire::CreateDataSamples(fbb, request->split(), samples, features_vector, targets_vector,
                                      static_cast<uint32_t>(crc), NewServedToken(member));
  ++served_requests_;
  served_bytes_ += count * (sample_bytes + target_bytes);
  SendTo(member.routing_id, sender_.Seal(fbb, wire::Body::DataSamples, body.Union()));
}

void Scheduler::HandleModelFileRequest(Member& member, const Message& message) {
  const auto* request = message.body<wire::ModelFileRequest>();
  if (job_.model_file.empty()) {
    return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                  "this job trains the built-in model " + job_.model + ": it has no model file to send");
  }
  if (member.role != wire::Role::Trainer) {
    return Refuse(message, wire::ErrorCode::Unexpected, Refusal::Unexpected,
                  "the model file is sent to trainers only");
  }
  const uint64_t size = model_bytes_.size();
  const uint64_t offset = request->offset();
  const uint64_t length = request->length();
  if (length == 0 || length > model_piece_bytes_) {
    return Refuse(message, wire::ErrorCode::Refused, Refusal::OverLimit,
                  "a model file request must ask for 1 to " + std::to_string(model_piece_bytes_) +
                      " bytes, not " + std::to_string(length));
  }
  // Written so that no sum can wrap around, whatever the two numbers are.
  if (offset > size || length > size - offset) {
    return Refuse(message, wire::ErrorCode::Refused, Refusal::Invalid,
                  std::to_string(length) + " bytes from byte " + std::to_string(offset) +
                      " are beyond the end of the model file " + job_.model_file + " (" +
                      std::to_string(size) + " bytes)");
  }
  if (RefuseUnread(member, request->receipt(), message)) return;
  flatbuffers::FlatBufferBuilder fbb(length + 1024);
  uint8_t* bytes = nullptr;
  auto bytes_vector = fbb.CreateUninitializedVector(length, &bytes);
  std::memcpy(bytes, model_bytes_.data() + offset, length);
  const uint32_t crc = Crc32(bytes, length);
  if (options_.corrupt_served_replies > 0) {
    // Fault injection for tests: the bytes change after the checksum, as a bad link would.
    --options_.corrupt_served_replies;
    bytes[length / 2] ^= 0x5a;
    HETPS_LOG(WARNING) << "corrupting the model file piece served to " << member.Describe()
                       << " (fault injection)";
  }
  auto body = wire::CreateModelFilePiece(fbb, offset, bytes_vector, crc, NewServedToken(member));
  SendTo(member.routing_id, sender_.Seal(fbb, wire::Body::ModelFilePiece, body.Union()));
  // Said for the first trainers, then sparsely: a trainer asking for the same piece in a loop
  // cannot fill the log.
  if (offset + length == size && ShouldLogRefusal(++model_files_sent_)) {
    HETPS_LOG(INFO) << "sent the last piece of the model file " << job_.model_file << " (" << size
                    << " bytes) to " << member.Describe();
  }
}

}  // namespace hetps
