#include "tests/fuzz/fuzz_input.h"

#include <algorithm>

#include "common/check.h"

namespace hetps {
namespace fuzz {

uint8_t FuzzInput::U8() {
  return empty() ? 0 : data_[offset_++];
}

uint16_t FuzzInput::U16() {
  const uint16_t low = U8();
  return static_cast<uint16_t>(low | (U8() << 8));
}

std::string FuzzInput::Bytes(size_t n) {
  const size_t taken = std::min(n, size_ - offset_);
  std::string bytes(reinterpret_cast<const char*>(data_ + offset_), taken);
  offset_ += taken;
  return bytes;
}

std::optional<Message> NextMessage(FuzzInput& in) {
  if (in.empty()) return std::nullopt;
  Message message;
  // Copied into ZeroMQ's own buffers, as a received frame is: alignment and lifetime as in a
  // server, and AddressSanitizer sees a read beyond the frame.
  const std::string envelope = in.Bytes(in.U16());
  message.envelope = zmq::message_t(envelope.data(), envelope.size());
  const size_t frames = std::min<size_t>(in.U8(), kMaxFuzzFrames);
  for (size_t i = 0; i < frames && !in.empty(); ++i) {
    const std::string frame = in.Bytes(in.U16());
    message.tensors.emplace_back(frame.data(), frame.size());
  }
  return message;
}

namespace {

void AppendField(std::string& out, const void* data, size_t size) {
  HETPS_CHECK(size <= UINT16_MAX);
  out.push_back(static_cast<char>(size & 0xff));
  out.push_back(static_cast<char>(size >> 8));
  out.append(static_cast<const char*>(data), size);
}

}  // namespace

std::string EncodeMessage(const zmq::message_t& envelope, const std::vector<std::string>& frames) {
  HETPS_CHECK(frames.size() <= kMaxFuzzFrames);
  std::string out;
  AppendField(out, envelope.data(), envelope.size());
  out.push_back(static_cast<char>(frames.size()));
  for (const std::string& frame : frames) AppendField(out, frame.data(), frame.size());
  return out;
}

}  // namespace fuzz
}  // namespace hetps
