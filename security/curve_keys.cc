#include "security/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <zmq.h>

namespace hetps {
namespace {

namespace fs = std::filesystem;

constexpr size_t kZ85KeyChars = 40;

std::string PathOf(const std::string& dir, const std::string& name, const char* extension) {
  return (fs::path(dir) / (name + extension)).string();
}

// A Z85 key of 40 characters that decodes to 32 bytes.
bool IsZ85Key(const std::string& text) {
  if (text.size() != kZ85KeyChars) return false;
  uint8_t decoded[32];
  return zmq_z85_decode(decoded, text.c_str()) != nullptr;
}

// The first line of `path`, checked to be a Z85 key; `in` left after it.
Result<std::string> ReadKeyLine(std::ifstream& in, const std::string& path) {
  if (!in) return Status::NotFound("cannot read the key file " + path + ": " + std::strerror(errno));
  std::string text;
  std::getline(in, text);
  if (!IsZ85Key(text)) {
    return Status::InvalidArgument(path + ": not a CURVE key (expected 40 characters of Z85 text, as " +
                                   "hetps-keygen writes)");
  }
  return text;
}

Result<std::string> ReadKeyFile(const std::string& path) {
  std::ifstream in(path);
  return ReadKeyLine(in, path);
}

constexpr const char* kRolePrefix = "role: ";

// Writes `text` (its lines ended) into a new file `path` of `mode`.
Status WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
  if (fd < 0) {
    if (errno == EEXIST) return Status::FailedPrecondition(path + " exists; keys are never overwritten");
    return Status::IoError("cannot create " + path + ": " + std::strerror(errno));
  }
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) return Status::IoError("cannot write " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

const char* KeyRoleName(KeyRole role) {
  switch (role) {
    case KeyRole::kScheduler:
      return "scheduler";
    case KeyRole::kServer:
      return "server";
    case KeyRole::kTrainer:
      return "trainer";
    case KeyRole::kStatus:
      return "status";
  }
  return "unknown";
}

std::optional<KeyRole> ParseKeyRole(const std::string& text) {
  for (KeyRole role : {KeyRole::kScheduler, KeyRole::kServer, KeyRole::kTrainer, KeyRole::kStatus}) {
    if (text == KeyRoleName(role)) return role;
  }
  return std::nullopt;
}

std::optional<KeyRole> RoleOfKeyName(const std::string& name) {
  if (name == "scheduler") return KeyRole::kScheduler;
  if (name == "status") return KeyRole::kStatus;
  if (name.rfind("server", 0) == 0) return KeyRole::kServer;
  if (name.rfind("trainer", 0) == 0) return KeyRole::kTrainer;
  return std::nullopt;
}

bool IsValidKeyName(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '.') return false;
  for (char c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<CurveKeyPair> NewCurveKeyPair(const std::string& name, KeyRole role) {
  if (!IsValidKeyName(name)) {
    return Status::InvalidArgument("'" + name + "' cannot name a key: use 1..64 of A-Z a-z 0-9 _ . -");
  }
  if ((name == "scheduler") != (role == KeyRole::kScheduler)) {
    return Status::InvalidArgument(
        "the scheduler's key is named 'scheduler' and no other key is (members "
        "read DIR/scheduler.pub): '" +
        name + "' cannot be a " + KeyRoleName(role) + " key");
  }
  char public_key[kZ85KeyChars + 1];
  char secret_key[kZ85KeyChars + 1];
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    return Status::Internal(std::string("this ZeroMQ cannot make CURVE keys: ") + zmq_strerror(zmq_errno()));
  }
  return CurveKeyPair{name, role, public_key, secret_key};
}

Status WriteCurveKeyPair(const std::string& dir, const CurveKeyPair& keys) {
  std::error_code error;
  if (!fs::exists(dir, error)) {
    fs::create_directories(dir, error);
    if (error) return Status::IoError("cannot create the key directory " + dir + ": " + error.message());
    fs::permissions(dir, fs::perms::owner_all, error);
  }
  const std::string secret = PathOf(dir, keys.name, ".key");
  const std::string pub = PathOf(dir, keys.name, ".pub");
  if (fs::exists(secret, error) || fs::exists(pub, error)) {
    return Status::FailedPrecondition("a key named '" + keys.name + "' exists in " + dir +
                                      "; keys are never overwritten");
  }
  HETPS_RETURN_IF_ERROR(WriteFile(secret, keys.secret_key + "\n", 0600));
  return WriteFile(pub, keys.public_key + "\n" + kRolePrefix + KeyRoleName(keys.role) + "\n", 0644);
}

Result<CurveKeyPair> ReadCurveKeyPair(const std::string& dir, const std::string& name) {
  if (!IsValidKeyName(name)) {
    return Status::InvalidArgument("'" + name + "' cannot name a key: use 1..64 of A-Z a-z 0-9 _ . -");
  }
  const std::string secret_path = PathOf(dir, name, ".key");
  struct stat info {};
  if (::stat(secret_path.c_str(), &info) == 0 && (info.st_mode & 0077) != 0) {
    return Status::InvalidArgument(secret_path + ": the secret key is readable by others (mode " + [&] {
      std::ostringstream mode;
      mode << std::oct << (info.st_mode & 0777);
      return mode.str();
    }() + "); chmod 600 it");
  }
  auto secret = ReadKeyFile(secret_path);
  if (!secret.ok()) return secret.status();
  auto pub = ReadCurvePublicKey(dir, name);
  if (!pub.ok()) return pub.status();
  char derived[kZ85KeyChars + 1];
  if (zmq_curve_public(derived, secret->c_str()) != 0 || pub->key != derived) {
    return Status::InvalidArgument(PathOf(dir, name, ".pub") + " is not the public key of " + secret_path);
  }
  return CurveKeyPair{name, pub->role, pub->key, *secret};
}

Result<CurvePublicKey> ReadCurvePublicKey(const std::string& dir, const std::string& name) {
  const std::string path = PathOf(dir, name, ".pub");
  std::ifstream in(path);
  auto key = ReadKeyLine(in, path);
  if (!key.ok()) return key.status();
  std::string line;
  std::getline(in, line);
  const std::string remake = "make a new pair with `hetps-keygen " + dir + " " + name + " --role ROLE`";
  if (line.rfind(kRolePrefix, 0) != 0) {
    return Status::InvalidArgument(path + ": the key has no role (a key from before keys had roles); " +
                                   remake);
  }
  const std::string role_text = line.substr(std::strlen(kRolePrefix));
  const std::optional<KeyRole> role = ParseKeyRole(role_text);
  if (!role) {
    return Status::InvalidArgument(path + ": unknown role '" + role_text +
                                   "' (scheduler, server, trainer or status); " + remake);
  }
  return CurvePublicKey{*key, *role};
}

Result<AllowedKeys> ReadAllowedKeys(const std::string& dir, const std::vector<std::string>& allowed) {
  std::vector<std::string> names = allowed;
  if (names.empty()) {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(dir, error)) {
      if (entry.path().extension() == ".pub") names.push_back(entry.path().stem().string());
    }
    if (error) return Status::NotFound("cannot list the key directory " + dir + ": " + error.message());
  }
  AllowedKeys keys;
  for (const std::string& name : names) {
    if (!IsValidKeyName(name)) return Status::InvalidArgument("allowed: '" + name + "' cannot name a key");
    auto key = ReadCurvePublicKey(dir, name);
    if (!key.ok()) return key.status().WithContext("allowed key '" + name + "'");
    keys[name] = *key;
  }
  if (keys.empty()) return Status::NotFound("no public keys (*.pub) in " + dir + " to admit");
  return keys;
}

}  // namespace hetps
