// hetps-status: prints a running job's member table, once or, with --watch, redrawn in place
// every few seconds until the job ends, from the scheduler's control endpoint or its HTTP
// endpoint; for a terminal without a browser.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/cli.h"
#include "http/status_client.h"
#include "http/status_json.h"
#include "http/status_watch.h"
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
  auto* scheduler_option = hetps::AddEndpointOption(
      app, "--scheduler", &scheduler, "The scheduler's control endpoint, HOST:PORT or tcp://HOST:PORT");
  app.add_option("--http", url, "The scheduler's HTTP endpoint, HOST:PORT or http://HOST:PORT/")
      ->excludes(scheduler_option);
  app.add_flag("--watch", watch,
               "Redraw the table every --interval seconds (in place on a terminal) until the job ends, then "
               "say how it ended and exit 0");
  app.add_option("--interval", watch_seconds, "Seconds between tables with --watch (default 2)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--timeout-ms", timeout_ms, "Give up on an answer after this long")
      ->check(CLI::Range(100, 600000));
  hetps::MemberCurveFlags curve;
  hetps::AddMemberCurveFlags(app, "status", &curve);
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  if (scheduler.empty() && url.empty()) {
    std::fprintf(stderr,
                 "hetps-status: give --scheduler HOST:PORT (its control endpoint) or --http HOST:PORT (its "
                 "status page)\n");
    return 2;
  }
  if (!curve.keys_dir.empty() && scheduler.empty()) {
    std::fprintf(stderr, "hetps-status: --curve-keys is for --scheduler; the HTTP endpoint has no CURVE\n");
    return 2;
  }
  if (!url.empty() && url.find("://") == std::string::npos) url = "http://" + url;  // HOST:PORT
  auto keys = hetps::LoadMemberCurve(curve, std::nullopt);  // any key the scheduler admits
  if (!keys.ok()) return hetps::FatalError("hetps-status", keys.status());
  if (watch_seconds <= 0) watch_seconds = 2;
  const auto timeout = std::chrono::milliseconds(timeout_ms);
  const std::string source = scheduler.empty() ? url : scheduler;
  auto fetch = [&] {
    return scheduler.empty() ? hetps::FetchStatusOverHttp(url, timeout)
                             : hetps::FetchStatusOverZmq(scheduler, timeout, *keys);
  };
  if (!watch) {
    auto json = fetch();
    if (!json.ok()) return hetps::FatalError("hetps-status", WithCurveHint(json.status(), curve));
    auto snapshot = hetps::ParseStatusJson(*json, source);
    if (!snapshot.ok()) return hetps::FatalError("hetps-status", snapshot.status());
    for (const std::string& line : hetps::MemberTableLines(*snapshot)) std::printf("%s\n", line.c_str());
    return 0;
  }
  const bool terminal = ::isatty(STDOUT_FILENO) == 1;
  if (terminal) std::printf("\033[H\033[2J");  // one clean screen, redrawn in place from here on
  hetps::StatusWatch verdict;
  std::vector<std::string> screen;  // the last table drawn
  while (true) {
    auto json = fetch();
    std::optional<std::string> ended;
    if (!json.ok()) {
      // A refused handshake is refused again, a malformed URL stays so: no point in watching.
      if (json.status().code() == hetps::Status::Code::kFailedPrecondition ||
          json.status().code() == hetps::Status::Code::kInvalidArgument) {
        return hetps::FatalError("hetps-status", WithCurveHint(json.status(), curve));
      }
      ended = verdict.NoAnswer(json.status(), source);
      if (!ended) {
        if (terminal) {
          std::vector<std::string> lines = screen;
          lines.push_back("(no answer: " + json.status().message() + ")");
          hetps::DrawScreen(stdout, terminal, lines);
        } else {
          std::fprintf(stderr, "hetps-status: %s\n", json.status().message().c_str());
        }
      }
    } else {
      auto snapshot = hetps::ParseStatusJson(*json, source);
      if (!snapshot.ok()) return hetps::FatalError("hetps-status", snapshot.status());
      screen = hetps::MemberTableLines(*snapshot);
      hetps::DrawScreen(stdout, terminal, screen);
      ended = verdict.Answered(*snapshot);
    }
    if (ended) {
      std::printf("hetps-status: %s\n", ended->c_str());
      return 0;
    }
    if (!verdict.RetryAtOnce()) std::this_thread::sleep_for(std::chrono::duration<double>(watch_seconds));
  }
}
