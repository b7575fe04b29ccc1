// hetps-status: prints a running job's member table, once or every few seconds (--watch), from
// the scheduler's control endpoint or its HTTP endpoint; for a terminal without a browser.
#include <chrono>
#include <cstdio>
#include <thread>

#include "common/cli.h"
#include "http/status_client.h"
#include "http/status_json.h"
#include "security/member_curve.h"

namespace {

// A refused handshake, with what to give or change on this command line.
hetps::Status WithCurveHint(const hetps::Status& status, const hetps::MemberCurveFlags& curve) {
  if (status.code() != hetps::Status::Code::kFailedPrecondition) return status;
  if (curve.keys_dir.empty()) {
    return hetps::Status::FailedPrecondition(
        status.message() +
        "; a scheduler with CURVE answers only hetps-status --curve-keys DIR --key-name NAME, with a key "
        "it admits (docs/security.md)");
  }
  return hetps::Status::FailedPrecondition(
      status.message() + "; this was --curve-keys " + curve.keys_dir + " --key-name " + curve.key_name +
      ": the scheduler must run with CURVE and admit " + curve.key_name + ".pub, and " + curve.keys_dir +
      "/scheduler.pub must be its public key");
}

}  // namespace

int main(int argc, char** argv) {
  std::string scheduler, url;
  double watch_seconds = 0;
  bool watch = false;
  uint32_t timeout_ms = 3000;
  CLI::App app(
      "hetps status: prints the members of a running job (role, rank, host, device, state, speed, "
      "batch share, staleness, liveness)",
      "hetps-status");
  auto* scheduler_option =
      app.add_option("--scheduler", scheduler, "The scheduler's control endpoint, e.g. tcp://host:7400");
  app.add_option("--http", url, "The scheduler's HTTP endpoint, e.g. http://host:7480/")
      ->excludes(scheduler_option);
  app.add_flag("--watch", watch, "Print the table again every --interval seconds until interrupted");
  app.add_option("--interval", watch_seconds, "Seconds between tables with --watch (default 2)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--timeout-ms", timeout_ms, "Give up on an answer after this long")
      ->check(CLI::Range(100, 600000));
  hetps::MemberCurveFlags curve;
  hetps::AddMemberCurveFlags(app, "status", &curve);
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  if (scheduler.empty() && url.empty()) {
    std::fprintf(stderr, "hetps-status: give --scheduler tcp://HOST:PORT or --http http://HOST:PORT/\n");
    return 2;
  }
  if (!curve.keys_dir.empty() && scheduler.empty()) {
    std::fprintf(stderr, "hetps-status: --curve-keys is for --scheduler; the HTTP endpoint has no CURVE\n");
    return 2;
  }
  auto keys = hetps::LoadMemberCurve(curve);
  if (!keys.ok()) return hetps::FatalError("hetps-status", keys.status());
  if (watch_seconds <= 0) watch_seconds = 2;
  const auto timeout = std::chrono::milliseconds(timeout_ms);
  const std::string source = scheduler.empty() ? url : scheduler;
  while (true) {
    auto json = scheduler.empty() ? hetps::FetchStatusOverHttp(url, timeout)
                                  : hetps::FetchStatusOverZmq(scheduler, timeout, *keys);
    if (!json.ok()) {
      // A refused handshake is refused again: no point in watching.
      if (!watch || json.status().code() == hetps::Status::Code::kFailedPrecondition) {
        return hetps::FatalError("hetps-status", WithCurveHint(json.status(), curve));
      }
      std::fprintf(stderr, "hetps-status: %s\n", json.status().message().c_str());
    } else {
      auto snapshot = hetps::ParseStatusJson(*json, source);
      if (!snapshot.ok()) return hetps::FatalError("hetps-status", snapshot.status());
      if (watch) std::printf("\033[H\033[2J");  // a fresh screen for each table
      for (const std::string& line : hetps::MemberTableLines(*snapshot)) std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
    if (!watch) return 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(watch_seconds));
  }
}
