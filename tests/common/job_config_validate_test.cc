// The relations between a job's fields (ValidateJobOptions) and what is derived from them.
#include "common/job_config.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "tests/common/job_config_checks.h"

namespace hetps {
namespace {

using testing::Contains;
using testing::ParseOrFail;
using testing::RequireRejected;

CATCH_TEST_CASE("max_trainers defaults to trainers and may not be below it", "[common][job_config]") {
  CATCH_CHECK(MaxTrainers(ParseOrFail("trainers: 3\n")) == 3);
  CATCH_CHECK(MaxTrainers(ParseOrFail("trainers: 3\nmax_trainers: 3\n")) == 3);
  RequireRejected("trainers: 3\nmax_trainers: 2\n", {"max_trainers: 2 is smaller than trainers (3)"});
  RequireRejected("max_trainers: 1025\n", {"job.yaml:1: max_trainers", "1025", "0..1024"});
  // Every trainer that may take part needs a sample of each step.
  RequireRejected("trainers: 2\nmax_trainers: 9\nglobal_batch_size: 8\n",
                  {"global_batch_size: 8 is smaller than max_trainers (9)"});
  // The resolved job keeps it.
  CATCH_CHECK(ParseOrFail(JobOptionsToYaml(ParseOrFail("trainers: 2\nmax_trainers: 4\n"))).max_trainers == 4);
}

CATCH_TEST_CASE("Fields are checked against each other", "[common][job_config]") {
  RequireRejected("trainers: 4\nglobal_batch_size: 3\n",
                  {"job.yaml", "global_batch_size: 3", "trainers (4)"});
  CATCH_CHECK(ParseOrFail("trainers: 4\nglobal_batch_size: 4\n").trainers == 4);
  RequireRejected("heartbeat_interval_ms: 1000\nheartbeat_timeout_ms: 1999\n",
                  {"job.yaml", "heartbeat_timeout_ms: 1999", "heartbeat_interval_ms (1000)"});
  CATCH_CHECK(ParseOrFail("heartbeat_interval_ms: 1000\nheartbeat_timeout_ms: 2000\n").heartbeat_timeout_ms ==
              2000);

  JobOptions o;
  o.trainers = 10;
  o.global_batch_size = 9;
  CATCH_CHECK(ValidateJobOptions(o).code() == Status::Code::kInvalidArgument);
  o.global_batch_size = 10;
  CATCH_CHECK(ValidateJobOptions(o).ok());
  o.listen.clear();
  CATCH_CHECK(Contains(ValidateJobOptions(o).message(), "listen"));
}

CATCH_TEST_CASE("A partition larger than a data-plane frame may be is refused at load",
                "[common][job_config][limits]") {
  // Servers drop frames over max_message_bytes; such partitions used to stall the job until the
  // request timeout.
  RequireRejected("partition_bytes: 134217728\n",
                  {"job.yaml", "partition_bytes: 134217728", "larger than max_message_bytes (67108864)"});
  RequireRejected("partition_bytes: 3000000\nmax_message_bytes: 2000000\n",
                  {"partition_bytes: 3000000", "max_message_bytes (2000000)"});
  const JobOptions o = ParseOrFail("partition_bytes: 134217728\nmax_message_bytes: 134217728\n");
  CATCH_CHECK(o.partition_bytes == o.max_message_bytes);
  // What the scheduler resolves and prints reads back the same.
  CATCH_CHECK(ParseOrFail(JobOptionsToYaml(o)).max_message_bytes == 134217728);
}

CATCH_TEST_CASE("Even batch shares sum to the global batch and differ by at most one",
                "[common][job_config]") {
  for (uint32_t global = 1; global <= 300; ++global) {
    for (uint32_t trainers = 1; trainers <= std::min<uint32_t>(global, 40); ++trainers) {
      CATCH_INFO("global " << global << ", trainers " << trainers);
      uint32_t sum = 0;
      uint32_t previous = EvenBatchShare(global, trainers, 0);
      for (uint32_t rank = 0; rank < trainers; ++rank) {
        const uint32_t share = EvenBatchShare(global, trainers, rank);
        CATCH_REQUIRE(share >= global / trainers);
        CATCH_REQUIRE(share <= global / trainers + 1);
        CATCH_REQUIRE(share <= previous);  // the first ranks take the remainder
        previous = share;
        sum += share;
      }
      CATCH_REQUIRE(sum == global);
    }
  }
  CATCH_CHECK(EvenBatchShare(64, 3, 0) == 22);
  CATCH_CHECK(EvenBatchShare(64, 3, 2) == 21);
}

CATCH_TEST_CASE("async_batch: whole gives each async or ssp trainer all of the global batch, sync its share",
                "[common][job_config]") {
  for (const AsyncBatch rule : {AsyncBatch::kShare, AsyncBatch::kWhole}) {
    CATCH_CHECK(UnbalancedBatch(ConsistencyMode::kSync, rule, 64, 3, 0) == 22);
    CATCH_CHECK(UnbalancedBatch(ConsistencyMode::kSync, rule, 64, 3, 2) == 21);
  }
  CATCH_CHECK(UnbalancedBatch(ConsistencyMode::kAsync, AsyncBatch::kShare, 64, 3, 2) == 21);
  CATCH_CHECK(UnbalancedBatch(ConsistencyMode::kSsp, AsyncBatch::kShare, 64, 3, 0) == 22);
  CATCH_CHECK(UnbalancedBatch(ConsistencyMode::kAsync, AsyncBatch::kWhole, 64, 3, 2) == 64);
  CATCH_CHECK(UnbalancedBatch(ConsistencyMode::kSsp, AsyncBatch::kWhole, 64, 3, 0) == 64);
}

CATCH_TEST_CASE("mode auto defaults to whole batches and the staleness-aware rate; other modes to neither",
                "[common][job_config]") {
  const JobOptions automatic = ParseOrFail("mode: auto\n");
  CATCH_CHECK(AsyncBatchOf(automatic) == AsyncBatch::kWhole);
  CATCH_CHECK(StalenessAwareLr(automatic));
  for (const char* mode : {"sync", "async", "ssp"}) {
    CATCH_INFO(mode);
    const JobOptions o = ParseOrFail(std::string("mode: ") + mode + "\n");
    CATCH_CHECK(AsyncBatchOf(o) == AsyncBatch::kShare);
    CATCH_CHECK(!StalenessAwareLr(o));
  }
  // What the job file says wins, in auto as elsewhere.
  const JobOptions told = ParseOrFail("mode: auto\nasync_batch: share\nstaleness_aware_lr: false\n");
  CATCH_CHECK(AsyncBatchOf(told) == AsyncBatch::kShare);
  CATCH_CHECK(!StalenessAwareLr(told));
  CATCH_CHECK(AsyncBatchOf(ParseOrFail("mode: async\nasync_batch: whole\n")) == AsyncBatch::kWhole);
  // The resolved job names the values the mode chose, and reads back to them.
  const JobOptions again = ParseOrFail(JobOptionsToYaml(automatic));
  CATCH_CHECK(again.async_batch == AsyncBatch::kWhole);
  CATCH_CHECK(again.staleness_aware_lr == true);
  // A sync job refuses them only when the job file asks for them.
  RequireRejected("mode: sync\nstaleness_aware_lr: true\n", {"staleness_aware_lr: true needs mode async"});
  CATCH_CHECK(ParseOrFail("mode: sync\nstaleness_aware_lr: false\n").staleness_aware_lr == false);
}

CATCH_TEST_CASE("The lr schedule goes to whoever steps the job's optimizer, its end resolved",
                "[common][job_config][lr_schedule]") {
  const std::string schedule = "lr_schedule: {warmup_steps: 10, decay: cosine, min_lr: 0.0001}\n";
  // 2 epochs of 1000 samples in batches of 64: 2 * 16 steps.
  const JobOptions sync = ParseOrFail("epochs: 2\nglobal_batch_size: 64\n" + schedule);
  auto servers = ScheduledOptimizer(sync, 1000, /*for_servers=*/true);
  CATCH_REQUIRE(servers.ok());
  CATCH_CHECK(servers->schedule.decay_steps == 32);
  CATCH_CHECK(servers->schedule.warmup_steps == 10);
  auto trainers = ScheduledOptimizer(sync, 1000, /*for_servers=*/false);
  CATCH_REQUIRE(trainers.ok());
  CATCH_CHECK(trainers->schedule.decay_steps == 32);
  // Diloco: the outer lr stays constant; each of 4 trainers counts its own inner steps, a
  // quarter of the job's.
  const JobOptions diloco =
      ParseOrFail("mode: diloco\ntrainers: 4\nepochs: 2\nglobal_batch_size: 64\n" + schedule);
  auto outer = ScheduledOptimizer(diloco, 1000, /*for_servers=*/true);
  CATCH_REQUIRE(outer.ok());
  CATCH_CHECK_FALSE(LrScheduleEnabled(outer->schedule));
  CATCH_CHECK(outer->lr == diloco.outer_optimizer.lr);
  auto inner = ScheduledOptimizer(diloco, 1000, /*for_servers=*/false);
  CATCH_REQUIRE(inner.ok());
  CATCH_CHECK(inner->schedule.decay_steps == 8);
  CATCH_CHECK(inner->schedule.warmup_steps == 3);  // ceil(10 / 4)
  // A job too short for its warm-up needs decay_steps.
  const JobOptions short_job = ParseOrFail("epochs: 1\nglobal_batch_size: 500\n" + schedule);
  auto refused = ScheduledOptimizer(short_job, 1000, /*for_servers=*/true);
  CATCH_REQUIRE_FALSE(refused.ok());
  CATCH_CHECK(Contains(refused.status().message(), "lr_schedule.decay_steps"));
}

}  // namespace
}  // namespace hetps
