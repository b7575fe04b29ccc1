// TrainerIdentities: which connection belongs to which trainer, as the scheduler told this server
// (ShardMap and Membership carry wire::TrainerIdentity). A data-plane message is trainer r's
// only when it comes over a connection whose routing id is r's data token and, with CURVE, whose
// key is named as r's; the rank its envelope claims must be r. Anything else is an impostor, and
// never counts as any trainer's push or pull.
//
// A plain value owned by the server's loop thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <flatbuffers/flatbuffers.h>

#include "common/message.h"
#include "common/status.h"

namespace hetps {

class TrainerIdentities {
 public:
  // Replaces the known trainers with `identities` (the live trainers); nullptr leaves them.
  void Set(const flatbuffers::Vector<flatbuffers::Offset<wire::TrainerIdentity>>* identities);

  // The rank of the trainer `message` (verified, from a ROUTER) comes from; FailedPrecondition
  // saying why it is not that of any trainer, or not of the one it claims to be.
  Result<uint32_t> Identify(const Message& message) const;

  size_t size() const { return by_token_.size(); }

 private:
  struct Trainer {
    uint32_t rank = 0;
    std::string key_name;  // empty without CURVE
  };
  std::map<std::string, Trainer> by_token_;
};

}  // namespace hetps
