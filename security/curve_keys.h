// CURVE keys on disk: DIR/NAME.key holds a secret key and DIR/NAME.pub its public key, each as 40
// characters of Z85 text and a newline (ZeroMQ's encoding). The key's name is the member's
// identity: the authentication handler admits a connection under the name of its public key.
//
// Pure functions over files; callable from any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace hetps {

struct CurveKeyPair {
  std::string name;
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};

// A fresh key pair from libsodium's random source, by way of ZeroMQ.
Result<CurveKeyPair> NewCurveKeyPair(const std::string& name);

// Writes DIR/NAME.key (mode 0600, created so) and DIR/NAME.pub (0644), creating DIR (0700) when
// missing. FailedPrecondition when either file exists: keys are never overwritten.
Status WriteCurveKeyPair(const std::string& dir, const CurveKeyPair& keys);

// Reads DIR/NAME.key and DIR/NAME.pub, checking each is a valid Z85 key and that they belong
// together. The error names the file and what is wrong with it; a secret key readable by others
// is refused.
Result<CurveKeyPair> ReadCurveKeyPair(const std::string& dir, const std::string& name);

// Reads DIR/NAME.pub.
Result<std::string> ReadCurvePublicKey(const std::string& dir, const std::string& name);

// The public keys a member admits, by name: those named in `allowed`, or with `allowed` empty,
// every DIR/*.pub. An allowed name without its file is an error naming it.
Result<std::map<std::string, std::string>> ReadAllowedKeys(const std::string& dir,
                                                           const std::vector<std::string>& allowed);

// Whether `name` may name a key: 1..64 characters of [A-Za-z0-9_.-], not starting with a dot.
bool IsValidKeyName(const std::string& name);

}  // namespace hetps
