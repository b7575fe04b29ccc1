// A server's or trainer's CURVE settings from its command line: --curve-keys DIR turns CURVE on,
// with the member's key pair DIR/NAME.key and DIR/NAME.pub (--key-name NAME) and the scheduler's
// public key DIR/scheduler.pub. Called from main() only.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "common/status.h"
#include "common/transport.h"
#include "security/curve_keys.h"

namespace hetps {

struct MemberCurveFlags {
  std::string keys_dir;  // empty: no CURVE
  std::string key_name;
};

// Adds --curve-keys and --key-name (default `default_name`, e.g. "server") to `app`.
void AddMemberCurveFlags(CLI::App& app, const std::string& default_name, MemberCurveFlags* flags);

// The member's keys, with server_key the scheduler's public key; empty keys without --curve-keys.
// The member's key must have `role` (any role when nullopt: hetps-status may use any admitted
// key) and DIR/scheduler.pub the scheduler's. The error names the file that is missing or wrong.
Result<CurveKeys> LoadMemberCurve(const MemberCurveFlags& flags, std::optional<KeyRole> role);

}  // namespace hetps
