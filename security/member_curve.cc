#include "security/member_curve.h"

namespace hetps {

void AddMemberCurveFlags(CLI::App& app, const std::string& default_name, MemberCurveFlags* flags) {
  flags->key_name = default_name;
  app.add_option("--curve-keys", flags->keys_dir,
                 "Use CURVE: the directory with this process's key pair (NAME.key, NAME.pub, from "
                 "hetps-keygen) and the scheduler's public key (scheduler.pub)");
  app.add_option("--key-name", flags->key_name, "With --curve-keys: the name of this process's key")
      ->default_val(default_name);
}

Result<CurveKeys> LoadMemberCurve(const MemberCurveFlags& flags, std::optional<KeyRole> role) {
  if (flags.keys_dir.empty()) return CurveKeys{};
  auto own = ReadCurveKeyPair(flags.keys_dir, flags.key_name);
  if (!own.ok()) return own.status().WithContext("--curve-keys");
  if (role && own->role != *role) {
    return Status::InvalidArgument(std::string("--curve-keys: the key '") + flags.key_name + "' is a " +
                                   KeyRoleName(own->role) + " key, and this process is a " +
                                   KeyRoleName(*role) + ": give --key-name NAME of a " + KeyRoleName(*role) +
                                   " key (`hetps-keygen " + flags.keys_dir + " NAME --role " +
                                   KeyRoleName(*role) + "`)");
  }
  auto scheduler = ReadCurvePublicKey(flags.keys_dir, "scheduler");
  if (!scheduler.ok()) return scheduler.status().WithContext("--curve-keys: the scheduler's public key");
  if (scheduler->role != KeyRole::kScheduler) {
    return Status::InvalidArgument("--curve-keys: " + flags.keys_dir + "/scheduler.pub is a " +
                                   KeyRoleName(scheduler->role) + " key, not the scheduler's");
  }
  CurveKeys keys;
  keys.public_key = own->public_key;
  keys.secret_key = own->secret_key;
  keys.server_key = scheduler->key;
  return keys;
}

}  // namespace hetps
