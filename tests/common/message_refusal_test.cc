// Broken envelopes are refused: empty, truncated, corrupted, random, too large or without a body.
#include "common/message.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "tests/common/message_cases.h"

namespace hetps {
namespace {

using testing::AllKinds;
using testing::Builder;
using testing::KindCase;
using testing::Seal;

void FreeBytes(void* data, void* /*hint*/) {
  std::free(data);
}

// A Message whose envelope is `bytes` in a heap block of exactly that size, so that a read past
// the end is caught by AddressSanitizer even for envelopes small enough for ZeroMQ to store inline.
Message FromBytes(const std::string& bytes) {
  Message message;
  if (bytes.empty()) return message;
  void* data = std::malloc(bytes.size());
  std::memcpy(data, bytes.data(), bytes.size());  // NOLINT: envelope bytes, not a C string
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
