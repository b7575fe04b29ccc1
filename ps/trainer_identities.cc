#include "ps/trainer_identities.h"

namespace hetps {

void TrainerIdentities::Set(
    const flatbuffers::Vector<flatbuffers::Offset<wire::TrainerIdentity>>* identities) {
  if (identities == nullptr) return;
  by_token_.clear();
  for (const wire::TrainerIdentity* identity : *identities) {
    by_token_[identity->token()->str()] =
        Trainer{identity->rank(), identity->key_name() ? identity->key_name()->str() : ""};
  }
}

Result<uint32_t> TrainerIdentities::Identify(const Message& message) const {
  const std::string token(static_cast<const char*>(message.routing_id.data()), message.routing_id.size());
  const uint32_t claimed = message.env().sender();
  auto it = by_token_.find(token);
  if (it == by_token_.end()) {
    return Status::FailedPrecondition("speaks as trainer " + std::to_string(claimed) +
                                      " over a connection that belongs to no trainer of this job");
  }
  const Trainer& trainer = it->second;
  if (message.user_id != trainer.key_name) {
    return Status::FailedPrecondition("the connection of trainer " + std::to_string(trainer.rank) +
                                      " uses the key '" + message.user_id + "', not the trainer's '" +
                                      trainer.key_name + "'");
  }
  if (claimed != trainer.rank) {
    return Status::FailedPrecondition("speaks as trainer " + std::to_string(claimed) +
                                      " over the connection of trainer " + std::to_string(trainer.rank));
  }
  return trainer.rank;
}

}  // namespace hetps
