// hetps-server: one parameter-server shard. Needs only the scheduler's address; the partitions it
// holds, the optimizer and the consistency mode arrive from the scheduler.
#include <csignal>
#include <exception>
#include <iostream>
#include <string>

#include "common/allocator.h"
#include "common/cli.h"
#include "common/logging.h"
#include "ps/server.h"
#include "security/curve_keys.h"
#include "security/member_curve.h"

namespace {

// A whole number of at least `min` for a test-only flag; false after saying what is wrong.
bool ReadCount(const std::string& flag, const std::string& text, int min, int* out) {
  size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < min || value > 1000000) {
    std::cerr << "hetps-server: error: " << flag << " '" << text << "' is not a whole number in " << min
              << "..1000000\n";
    return false;
  }
  *out = static_cast<int>(value);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  hetps::KeepLargeBuffersMapped();  // first, before any thread or large buffer exists
  hetps::ServerOptions options;
  std::string log_level;
  double connect_timeout_s = 60;
  CLI::App app(
      "hetps parameter server: holds a shard of the model's weights and applies the "
      "optimizer to the gradients trainers push.",
      "hetps-server");
  hetps::AddEndpointOption(app, "--scheduler", &options.scheduler,
                           "Scheduler control endpoint, HOST:PORT or tcp://HOST:PORT")
      ->default_val(options.scheduler);
  hetps::AddEndpointOption(app, "--bind", &options.bind,
                           "Endpoint to serve trainers on; port * picks a free port (use 0.0.0.0:PORT "
                           "to accept other machines)")
      ->default_val(options.bind);
  hetps::AddEndpointOption(app, "--advertise", &options.advertise,
                           "Endpoint trainers should dial, when it differs from --bind (NAT, several NICs)");
  app.add_option("--max-message-bytes", options.max_message_bytes,
                 "Largest frame accepted from a trainer; a larger one drops its connection")
      ->default_val(options.max_message_bytes)
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 40));
  app.add_option("--threads", options.threads,
                 "Worker threads that own the partitions and apply the optimizer, besides the "
                 "thread that owns the sockets; 1 does all on one thread (best when trainers share "
                 "the host)")
      ->default_val(options.threads)
      ->check(CLI::Range(size_t{1}, size_t{256}));
  app.add_option("--connect-timeout", connect_timeout_s, "Seconds to keep trying to reach the scheduler")
      ->default_val(connect_timeout_s)
      ->check(CLI::Range(0.1, 86400.0));
  std::string ignore_cuts = "0", ignore_cuts_after = "0";
  app.add_option("--inject-ignore-cuts", ignore_cuts,
                 "Testing: leave N of the scheduler's checkpoint requests unanswered (-1: every one), "
                 "while serving pushes, pulls and heartbeats")
      ->group("");
  app.add_option("--inject-ignore-cuts-after", ignore_cuts_after,
                 "Testing: answer this many checkpoint requests before --inject-ignore-cuts applies")
      ->group("");
  hetps::MemberCurveFlags curve;
  hetps::AddMemberCurveFlags(app, "server", &curve);
  hetps::AddLogLevelFlag(app, &log_level);
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  // Read here rather than by CLI11, which leaves a hidden flag's name out of its errors.
  if (!ReadCount("--inject-ignore-cuts", ignore_cuts, -1, &options.ignore_cuts) ||
      !ReadCount("--inject-ignore-cuts-after", ignore_cuts_after, 0, &options.ignore_cuts_after)) {
    return 2;
  }
  hetps::ApplyLogLevel(log_level);
  auto keys = hetps::LoadMemberCurve(curve, hetps::KeyRole::kServer);
  if (!keys.ok()) return hetps::FatalError("hetps-server", keys.status());
  options.curve = *keys;
  if (options.curve.on()) {
    // Trainers' keys: every trainer's public key in the directory (the scheduler admits only the
    // job's), and the scheduler's, for its links; no server or status key has business here.
    auto allowed = hetps::ReadAllowedKeys(curve.keys_dir, {});
    if (!allowed.ok()) return hetps::FatalError("hetps-server", allowed.status());
    for (const auto& [name, key] : *allowed) {
      if (key.role == hetps::KeyRole::kTrainer || key.role == hetps::KeyRole::kScheduler) {
        options.curve_allowed.emplace(name, key);
      }
    }
  }
  options.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(connect_timeout_s * 1000));

  zmq::context_t context(1);
  hetps::Server server(context, options);
  hetps::Status status = server.Run();
  if (!status.ok()) return hetps::FatalError("hetps-server", status);
  return 0;
}
