// FuzzInput: a fuzzer's bytes read as a stream of fields, and the wire messages the message
// targets take from it. Reading past the end yields zeros and empty strings, never bytes outside
// the input, so every input is a valid stream.
//
// A message is encoded as: a 2-byte little-endian envelope length and the envelope bytes, a 1-byte
// frame count (at most kMaxFuzzFrames are kept) and, per frame, a 2-byte length and its bytes.
// EncodeMessage writes that form (the seed corpus generator uses it). Plain values; one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "common/message.h"

namespace hetps {
namespace fuzz {

constexpr size_t kMaxFuzzFrames = 16;

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return offset_ >= size_; }
  uint8_t U8();
  uint16_t U16();  // little-endian
  // The next `n` bytes, or what is left when fewer remain.
  std::string Bytes(size_t n);

 private:
  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
};

// The next message (envelope and tensor frames, as received from a DEALER: no routing id), or
// nothing once the input is used up.
std::optional<Message> NextMessage(FuzzInput& in);

// `envelope` and `frames` in the form NextMessage reads. Frames beyond kMaxFuzzFrames and bytes
// beyond 65535 in one field are a caller's error (HETPS_CHECK).
std::string EncodeMessage(const zmq::message_t& envelope, const std::vector<std::string>& frames = {});

}  // namespace fuzz
}  // namespace hetps
