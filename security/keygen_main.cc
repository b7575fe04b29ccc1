// hetps-keygen: writes a CURVE key pair for one member of a job: DIR/NAME.key (the secret key,
// mode 0600) and DIR/NAME.pub (its public key). Copy NAME.pub to every machine of the job; keep
// NAME.key on the member's machine only.
#include <cstdio>

#include "common/cli.h"
#include "security/curve_keys.h"

int main(int argc, char** argv) {
  std::string dir, name;
  CLI::App app(
      "hetps-keygen: writes a CURVE key pair, DIR/NAME.key (secret, mode 0600) and DIR/NAME.pub. "
      "The scheduler's key must be named 'scheduler'; the name of a member's key is its identity.",
      "hetps-keygen");
  app.add_option("dir", dir, "Key directory (created when missing)")->required();
  app.add_option("name", name, "Key name, e.g. scheduler, server-0, trainer-laptop")->required();
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  auto keys = hetps::NewCurveKeyPair(name);
  if (!keys.ok()) return hetps::FatalError("hetps-keygen", keys.status());
  hetps::Status written = hetps::WriteCurveKeyPair(dir, *keys);
  if (!written.ok()) return hetps::FatalError("hetps-keygen", written);
  std::printf("wrote %s/%s.key (secret) and %s/%s.pub\n", dir.c_str(), name.c_str(), dir.c_str(),
              name.c_str());
  return 0;
}
