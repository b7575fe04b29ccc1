// CURVE keys on disk: DIR/NAME.key holds a secret key as 40 characters of Z85 text (ZeroMQ's
// encoding) and a newline; DIR/NAME.pub its public key likewise, then a line `role: ROLE`. The
// key's name is the member's identity: the authentication handler admits a connection under the
// name of its public key. Its role (scheduler, server, trainer, status) is what the key may be:
// the scheduler lets a key join only in its role, and servers admit only trainers' keys and the
// scheduler's (docs/security.md, "Roles").
//
// Pure functions over files; callable from any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace hetps {

enum class KeyRole { kScheduler, kServer, kTrainer, kStatus };

// "scheduler", "server", "trainer", "status".
const char* KeyRoleName(KeyRole role);
// The role named `text` (as KeyRoleName writes it); nullopt for any other text.
std::optional<KeyRole> ParseKeyRole(const std::string& text);
// The role a key's name implies: `scheduler` and `status` by name, and a name starting with
// `server` or `trainer` (server-0, trainer-laptop); nullopt for any other name.
std::optional<KeyRole> RoleOfKeyName(const std::string& name);

struct CurveKeyPair {
  std::string name;
  KeyRole role = KeyRole::kTrainer;
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};

struct CurvePublicKey {
  std::string key;  // Z85, 40 characters
  KeyRole role = KeyRole::kTrainer;
};

// A fresh key pair from libsodium's random source, by way of ZeroMQ. The key named `scheduler`
// is the scheduler's, and the scheduler's key is named so (members read DIR/scheduler.pub):
// InvalidArgument for either without the other.
Result<CurveKeyPair> NewCurveKeyPair(const std::string& name, KeyRole role);

// Writes DIR/NAME.key (mode 0600, created so) and DIR/NAME.pub (0644), creating DIR (0700) when
// missing. FailedPrecondition when either file exists: keys are never overwritten.
Status WriteCurveKeyPair(const std::string& dir, const CurveKeyPair& keys);

// Reads DIR/NAME.key and DIR/NAME.pub, checking each is a valid Z85 key and that they belong
// together. The error names the file and what is wrong with it; a secret key readable by others
// is refused.
Result<CurveKeyPair> ReadCurveKeyPair(const std::string& dir, const std::string& name);

// Reads DIR/NAME.pub: its key and its role. A file without a role line (written before keys had
// roles) or with an unknown role is an error that names the file and the hetps-keygen command that
// makes a new pair.
Result<CurvePublicKey> ReadCurvePublicKey(const std::string& dir, const std::string& name);

// The public keys a member admits, by name: those named in `allowed`, or with `allowed` empty,
// every DIR/*.pub. An allowed name without its file is an error naming it.
using AllowedKeys = std::map<std::string, CurvePublicKey>;
Result<AllowedKeys> ReadAllowedKeys(const std::string& dir, const std::vector<std::string>& allowed);

// Whether `name` may name a key: 1..64 characters of [A-Za-z0-9_.-], not starting with a dot.
bool IsValidKeyName(const std::string& name);

}  // namespace hetps
