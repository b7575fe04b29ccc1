// hetps-keygen: writes a CURVE key pair for one member of a job: DIR/NAME.key (the secret key,
// mode 0600) and DIR/NAME.pub (its public key and its role). Copy NAME.pub to every machine of
// the job; keep NAME.key on the member's machine only.
#include <cstdio>

#include "common/cli.h"
#include "security/curve_keys.h"

int main(int argc, char** argv) {
  std::string dir, name, role_text;
  CLI::App app(
      "hetps-keygen: writes a CURVE key pair, DIR/NAME.key (secret, mode 0600) and DIR/NAME.pub, for "
      "one role: the scheduler's key is named 'scheduler'; a member's key name is its identity, and "
      "the key lets it join only in its role.",
      "hetps-keygen");
  app.add_option("dir", dir, "Key directory (created when missing)")->required();
  app.add_option("name", name, "Key name, e.g. scheduler, server-0, trainer-laptop, status")->required();
  app.add_option("--role", role_text,
                 "scheduler, server, trainer or status (hetps-status only); default: the name's "
                 "(scheduler, status, server*, trainer*)")
      ->check(CLI::IsMember({"scheduler", "server", "trainer", "status"}));
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  std::optional<hetps::KeyRole> role =
      role_text.empty() ? hetps::RoleOfKeyName(name) : hetps::ParseKeyRole(role_text);
  if (!role) {
    return hetps::FatalError("hetps-keygen",
                             hetps::Status::InvalidArgument("the name '" + name +
                                                            "' does not say the key's role: give "
                                                            "--role scheduler|server|trainer|status"));
  }
  auto keys = hetps::NewCurveKeyPair(name, *role);
  if (!keys.ok()) return hetps::FatalError("hetps-keygen", keys.status());
  hetps::Status written = hetps::WriteCurveKeyPair(dir, *keys);
  if (!written.ok()) return hetps::FatalError("hetps-keygen", written);
  std::printf("wrote %s/%s.key (secret) and %s/%s.pub (a %s key)\n", dir.c_str(), name.c_str(), dir.c_str(),
              name.c_str(), hetps::KeyRoleName(*role));
  return 0;
}
