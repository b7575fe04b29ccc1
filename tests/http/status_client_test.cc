// FetchStatusOverZmq against a real scheduler with CURVE, on a thread of the test on 127.0.0.1:
// an admitted key reads the status over CURVE; without keys, or with a key the scheduler does not
// admit, the refused handshake is an error saying so at once, not a wait for the timeout.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>

#include "http/status_client.h"
#include "http/status_json.h"
#include "scheduler/scheduler.h"
#include "security/curve_keys.h"
#include "tests/support/local_cluster.h"
#include "tests/support/temp_dir.h"

namespace hetps {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kTimeout{20000};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A client's keys: `own`'s pair and the scheduler's public key.
CurveKeys ClientKeys(const CurveKeyPair& own, const CurveKeyPair& scheduler) {
  return CurveKeys{own.public_key, own.secret_key, scheduler.public_key};
}

CATCH_TEST_CASE("hetps-status reads a CURVE scheduler with an admitted key and is told at once otherwise",
                "[http][status][curve]") {
  testing::TempDir dir("status-curve");
  const std::string keys = dir / "keys";
  std::map<std::string, CurveKeyPair> pairs;
  for (const char* name : {"scheduler", "status"}) {
    pairs[name] = *NewCurveKeyPair(name, *RoleOfKeyName(name));
    CATCH_REQUIRE(WriteCurveKeyPair(keys, pairs[name]).ok());
  }
  const CurveKeyPair intruder =
      *NewCurveKeyPair("intruder", KeyRole::kStatus);  // not in the scheduler's directory

  // The scheduler alone (one CURVE handler per ZeroMQ context: its servers would need their own).
  zmq::context_t context(1);
  std::atomic<bool> stop{false};
  SchedulerOptions options;
  options.job = testing::TestJob("mlp", ConsistencyMode::kSync, 1, 1);
  options.job.security.curve = true;
  options.job.security.keys_dir = keys;
  options.job.security.allowed = {"scheduler", "status"};
  options.progress_out = nullptr;
  options.stop = &stop;
  Scheduler scheduler(context, options);
  const Status started = scheduler.Start();
  CATCH_INFO(started.ToString());
  CATCH_REQUIRE(started.ok());
  auto run = std::async(std::launch::async, [&scheduler] { return scheduler.Run(); });
  const std::string endpoint = scheduler.endpoint();

  // The job waits for its members; its status is there all the same.
  auto json = FetchStatusOverZmq(endpoint, kTimeout, ClientKeys(pairs["status"], pairs["scheduler"]));
  CATCH_INFO(json.status().ToString());
  CATCH_REQUIRE(json.ok());
  auto status = ParseStatusJson(*json, endpoint);
  CATCH_REQUIRE(status.ok());
  CATCH_CHECK(status->mode == "sync");
  CATCH_CHECK(status->trainers == 1);

  auto start = Clock::now();
  auto plain = FetchStatusOverZmq(endpoint, kTimeout);
  CATCH_INFO(plain.status().ToString());
  CATCH_CHECK(plain.status().code() == Status::Code::kFailedPrecondition);
  CATCH_CHECK(Contains(plain.status().message(), "the scheduler at " + endpoint + " refused the connection"));
  CATCH_CHECK(Contains(plain.status().message(), "one side uses CURVE and the other does not"));
  CATCH_CHECK(Clock::now() - start < kTimeout / 2);

  start = Clock::now();
  auto unlisted = FetchStatusOverZmq(endpoint, kTimeout, ClientKeys(intruder, pairs["scheduler"]));
  CATCH_INFO(unlisted.status().ToString());
  CATCH_CHECK(unlisted.status().code() == Status::Code::kFailedPrecondition);
  CATCH_CHECK(Contains(unlisted.status().message(), "refused this process's CURVE key"));
  CATCH_CHECK(Clock::now() - start < kTimeout / 2);

  stop.store(true);
  run.wait();
  CATCH_CHECK(scheduler.summary().scheduler_refusals.of(Refusal::Unauthenticated) >= 2);
}

}  // namespace
}  // namespace hetps
