// The scheduler's side of CURVE and identities: with CURVE its socket admits only the listed
// keys; a member is bound at Join to its control connection (its routing id) and, with CURVE, to
// the name of the key it joined with; a trainer also gets a data token, which the servers learn
// from the shard map and the membership messages sent to them, as trainers learn each server's
// public key, and the scheduler's own links to the servers check theirs. Part of the Scheduler class
// (scheduler/scheduler.h), on its loop thread like the rest.
#include "scheduler/scheduler.h"

#include "common/logging.h"
#include "security/curve_keys.h"

namespace hetps {

Status Scheduler::SetUpCurve(SocketOptions* socket) {
  const SecurityOptions& security = job_.security;
  if (!security.curve) return Status::Ok();
  auto own = ReadCurveKeyPair(security.keys_dir, "scheduler");
  if (!own.ok()) return own.status().WithContext("the scheduler's CURVE key");
  if (own->role != KeyRole::kScheduler) {
    return Status::InvalidArgument(security.keys_dir + "/scheduler.pub is a " + KeyRoleName(own->role) +
                                   " key, not the scheduler's");
  }
  auto allowed = ReadAllowedKeys(security.keys_dir, security.allowed);
  if (!allowed.ok()) return allowed.status().WithContext("security.allowed");
  member_keys_ = std::move(*allowed);
  auto zap = ZapHandler::Start(context_, member_keys_, &refusals_, "the scheduler");
  if (!zap.ok()) return zap.status();
  zap_ = std::move(*zap);
  socket->curve_server = true;
  socket->curve.secret_key = own->secret_key;
  links_.UseCurve({own->public_key, own->secret_key, ""});
  HETPS_LOG(INFO) << "CURVE on: admitting " << member_keys_.size() << " keys from " << security.keys_dir;
  return Status::Ok();
}

Status Scheduler::LinkServer(const Member& server) {
  if (links_.Connected(server.rank)) return Status::Ok();
  Status linked = links_.Connect(server.rank, server.endpoint, PublicKeyOf(server.key_name));
  return linked.ok() ? linked : linked.WithContext(server.Describe());
}

std::string Scheduler::PublicKeyOf(const std::string& name) const {
  auto it = member_keys_.find(name);
  return it == member_keys_.end() ? "" : it->second.key;
}

std::string Scheduler::WrongRoleReason(const Message& message, wire::Role role) const {
  if (!job_.security.curve) return "";
  const KeyRole wanted = role == wire::Role::Server ? KeyRole::kServer : KeyRole::kTrainer;
  auto it = member_keys_.find(message.user_id);
  if (it != member_keys_.end() && it->second.role == wanted) return "";
  if (it == member_keys_.end()) return "the key '" + message.user_id + "' is not among the admitted keys";
  return "the key '" + message.user_id + "' is a " + KeyRoleName(it->second.role) +
         " key and cannot join as a " + KeyRoleName(wanted);
}

std::string Scheduler::ImpostorReason(const Member& member, const Message& message) const {
  if (message.user_id == member.key_name) return "";
  return "a connection with the key '" + message.user_id + "' speaks as " + member.Describe() +
         ", which joined with the key '" + member.key_name + "'";
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::TrainerIdentity>>>
Scheduler::TrainerIdentities(flatbuffers::FlatBufferBuilder& fbb) {
  std::vector<flatbuffers::Offset<wire::TrainerIdentity>> identities;
  for (Member* t : members_.TrainersInJob()) {
    identities.push_back(wire::CreateTrainerIdentityDirect(fbb, t->rank, t->data_token.c_str(),
                                                           t->key_name.c_str(), t->start_clock));
  }
  return fbb.CreateVector(identities);
}

}  // namespace hetps
