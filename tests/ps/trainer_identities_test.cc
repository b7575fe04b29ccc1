// TrainerIdentities (ps/trainer_identities.h): a data-plane message is a trainer's only over that
// trainer's connection, with its key, claiming its rank.
#include "ps/trainer_identities.h"

#include <catch2/catch.hpp>

namespace hetps {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct Identities {
  explicit Identities(const std::vector<std::tuple<uint32_t, std::string, std::string>>& trainers) {
    std::vector<flatbuffers::Offset<wire::TrainerIdentity>> entries;
    for (const auto& [rank, token, key] : trainers) {
      entries.push_back(wire::CreateTrainerIdentityDirect(fbb, rank, token.c_str(), key.c_str()));
    }
    fbb.Finish(fbb.CreateVector(entries));
  }
  const flatbuffers::Vector<flatbuffers::Offset<wire::TrainerIdentity>>* get() const {
    return flatbuffers::GetRoot<flatbuffers::Vector<flatbuffers::Offset<wire::TrainerIdentity>>>(
        fbb.GetBufferPointer());
  }
  flatbuffers::FlatBufferBuilder fbb;
};

// A Push from `routing_id` claiming trainer `rank`, over a connection with `user_id`.
Message Push(const std::string& routing_id, uint32_t rank, const std::string& user_id = "") {
  Sender sender(wire::Role::Trainer);
  sender.set_rank(rank);
  flatbuffers::FlatBufferBuilder fbb(128);
  std::vector<uint32_t> ids = {0};
  auto body = wire::CreatePushDirect(fbb, 0, 1, &ids);
  Message message;
  message.routing_id = zmq::message_t(routing_id.data(), routing_id.size());
  message.envelope = sender.Seal(fbb, wire::Body::Push, body.Union());
  message.user_id = user_id;
  CATCH_REQUIRE(VerifyEnvelope(message).ok());
  return message;
}

CATCH_TEST_CASE("A message is a trainer's only over its connection, claiming its own rank",
                "[ps][identity]") {
  TrainerIdentities known;
  const Identities two({{0, "token-a", ""}, {1, "token-b", ""}});
  known.Set(two.get());
  CATCH_CHECK(known.size() == 2);
  CATCH_CHECK(*known.Identify(Push("token-a", 0)) == 0);
  CATCH_CHECK(*known.Identify(Push("token-b", 1)) == 1);
  // A live rank claimed over a connection nobody was given.
  auto unknown = known.Identify(Push("guessed", 0));
  CATCH_REQUIRE_FALSE(unknown.ok());
  CATCH_CHECK(Contains(unknown.status().message(), "belongs to no trainer of this job"));
  // One trainer speaking as the other over its own connection.
  auto other = known.Identify(Push("token-b", 0));
  CATCH_REQUIRE_FALSE(other.ok());
  CATCH_CHECK(Contains(other.status().message(), "speaks as trainer 0 over the connection of trainer 1"));
  // Membership without a list leaves the known trainers; a new list replaces them.
  known.Set(nullptr);
  CATCH_CHECK(known.size() == 2);
  const Identities one({{1, "token-b", ""}});
  known.Set(one.get());
  CATCH_CHECK_FALSE(known.Identify(Push("token-a", 0)).ok());
}

CATCH_TEST_CASE("With CURVE the connection's key must be the trainer's", "[ps][identity]") {
  TrainerIdentities known;
  const Identities curve({{0, "token-a", "trainer-0"}});
  known.Set(curve.get());
  CATCH_CHECK(*known.Identify(Push("token-a", 0, "trainer-0")) == 0);
  auto stolen = known.Identify(Push("token-a", 0, "trainer-9"));
  CATCH_REQUIRE_FALSE(stolen.ok());
  CATCH_CHECK(Contains(stolen.status().message(), "uses the key 'trainer-9', not the trainer's 'trainer-0'"));
  CATCH_CHECK_FALSE(known.Identify(Push("token-a", 0)).ok());
}

}  // namespace
}  // namespace hetps
