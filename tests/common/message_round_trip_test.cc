// Every message kind survives sealing and verification, and a Sender's envelopes name it.
#include "common/message.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "tests/common/message_cases.h"

namespace hetps {
namespace {

using testing::AllKinds;
using testing::KindCase;
using testing::Seal;

CATCH_TEST_CASE("Every message kind survives a seal and verify round trip", "[common][message]") {
  const std::map<wire::Body, KindCase> cases = AllKinds();
  // Body::NONE is not a message; every other member of the union needs a case.
  CATCH_REQUIRE(cases.size() == static_cast<size_t>(wire::Body::MAX));
  Sender sender(wire::Role::Trainer);
  sender.set_rank(3);
  sender.set_membership_epoch(7);
  uint64_t expected_seq = 0;
  for (int k = 1; k <= static_cast<int>(wire::Body::MAX); ++k) {
    const auto kind = static_cast<wire::Body>(k);
    CATCH_INFO("kind " << k << " (" << KindName(kind) << ")");
    CATCH_REQUIRE(cases.count(kind) == 1);
    CATCH_CHECK(std::string(KindName(kind)) == wire::EnumNameBody(kind));
    Message message;
    message.envelope = Seal(sender, kind, cases.at(kind));
    ++expected_seq;
    const Status status = VerifyEnvelope(message);
    CATCH_INFO(status.ToString());
    CATCH_REQUIRE(status.ok());
    CATCH_CHECK(message.kind() == kind);
    CATCH_CHECK(message.env().role() == wire::Role::Trainer);
    CATCH_CHECK(message.env().sender() == 3);
    CATCH_CHECK(message.env().seq() == expected_seq);
    CATCH_CHECK(message.env().membership_epoch() == 7);
    CATCH_CHECK(DescribeSender(message.env()) == "trainer 3");
    cases.at(kind).check(message);
  }
  CATCH_CHECK(sender.last_seq() == expected_seq);
}

CATCH_TEST_CASE("Sender's ready-made Error and empty messages verify", "[common][message]") {
  Sender sender(wire::Role::Server);
  sender.set_rank(1);
  Message error;
  error.envelope = sender.MakeError(wire::ErrorCode::BadLength, "partition 4: 12 bytes, expected 16", 41);
  CATCH_REQUIRE(VerifyEnvelope(error).ok());
  CATCH_CHECK(error.kind() == wire::Body::Error);
  CATCH_CHECK(error.body<wire::Error>()->code() == wire::ErrorCode::BadLength);
  CATCH_CHECK(error.body<wire::Error>()->reason()->str() == "partition 4: 12 bytes, expected 16");
  CATCH_CHECK(error.body<wire::Error>()->seq() == 41);
  CATCH_CHECK(DescribeSender(error.env()) == "server 1");
  for (wire::Body kind : {wire::Body::ShardReady, wire::Body::HeartbeatAck, wire::Body::Ack}) {
    CATCH_INFO(KindName(kind));
    Message empty;
    empty.envelope = sender.MakeEmpty(kind);
    CATCH_REQUIRE(VerifyEnvelope(empty).ok());
    CATCH_CHECK(empty.kind() == kind);
  }
  CATCH_CHECK(sender.last_seq() == 4);
  CATCH_CHECK(std::string(KindName(static_cast<wire::Body>(200))) == "unknown");
}

CATCH_TEST_CASE("DescribeSender names the scheduler and unknown peers", "[common][message]") {
  Sender scheduler(wire::Role::Scheduler);
  Message m;
  m.envelope = scheduler.MakeEmpty(wire::Body::Ack);
  CATCH_REQUIRE(VerifyEnvelope(m).ok());
  CATCH_CHECK(DescribeSender(m.env()) == "scheduler");
  Sender nobody(wire::Role::Unknown);
  m.envelope = nobody.MakeEmpty(wire::Body::Ack);
  CATCH_REQUIRE(VerifyEnvelope(m).ok());
  CATCH_CHECK(DescribeSender(m.env()) == "unknown peer");
}

}  // namespace
}  // namespace hetps
