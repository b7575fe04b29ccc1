// The scheduler's side of identities: a member is bound at Join to its control connection (its
// routing id) and, with CURVE, to the name of the key it joined with; a trainer also gets a data
// token, which the servers learn from the shard map and the membership messages sent to them.
// Part of the Scheduler class (scheduler/scheduler.h), on its loop thread like the rest.
#include "scheduler/scheduler.h"

namespace hetps {

std::string Scheduler::ImpostorReason(const Member& member, const Message& message) const {
  if (message.user_id == member.key_name) return "";
  return "a connection with the key '" + message.user_id + "' speaks as " + member.Describe() +
         ", which joined with the key '" + member.key_name + "'";
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::TrainerIdentity>>>
Scheduler::TrainerIdentities(flatbuffers::FlatBufferBuilder& fbb) {
  std::vector<flatbuffers::Offset<wire::TrainerIdentity>> identities;
  for (Member* t : members_.Members(wire::Role::Trainer)) {
    identities.push_back(
        wire::CreateTrainerIdentityDirect(fbb, t->rank, t->data_token.c_str(), t->key_name.c_str()));
  }
  return fbb.CreateVector(identities);
}

}  // namespace hetps
