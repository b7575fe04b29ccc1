// The lr schedule's values at known steps, its checks naming the field, the default end of its
// decay, and its trip over the wire.
#include "common/lr_schedule.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "common/optimizer_options.h"

namespace hetps {
namespace {

using Decay = LrScheduleOptions::Decay;

LrScheduleOptions Cosine(uint64_t warmup, uint64_t decay_steps, double min_lr) {
  LrScheduleOptions s;
  s.warmup_steps = warmup;
  s.decay = Decay::kCosine;
  s.decay_steps = decay_steps;
  s.min_lr = min_lr;
  return s;
}

CATCH_TEST_CASE("The warm-up climbs linearly to lr and the cosine decay ends at min_lr",
                "[common][lr_schedule]") {
  const LrScheduleOptions s = Cosine(10, 110, 0.1);
  const double lr = 1.0;
  CATCH_CHECK(ScheduledLr(s, lr, 0) == Approx(0.1));  // the first step: lr / warmup_steps, not 0
  CATCH_CHECK(ScheduledLr(s, lr, 4) == Approx(0.5));
  CATCH_CHECK(ScheduledLr(s, lr, 9) == Approx(1.0));   // the warm-up's last step
  CATCH_CHECK(ScheduledLr(s, lr, 10) == Approx(1.0));  // the decay's first
  // Halfway through the decay the cosine is at its middle: (lr + min_lr) / 2.
  CATCH_CHECK(ScheduledLr(s, lr, 60) == Approx(0.55));
  CATCH_CHECK(ScheduledLr(s, lr, 35) == Approx(0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI / 4))));
  CATCH_CHECK(ScheduledLr(s, lr, 110) == Approx(0.1));
  CATCH_CHECK(ScheduledLr(s, lr, 1e6) == Approx(0.1));  // beyond decay_steps: min_lr
  // Fractional steps (a share of the global batch) interpolate.
  CATCH_CHECK(ScheduledLr(s, lr, 0.5) == Approx(0.15));
}

CATCH_TEST_CASE("Without a decay the lr stays at lr after the warm-up; with neither it never changes",
                "[common][lr_schedule]") {
  LrScheduleOptions s;
  CATCH_CHECK_FALSE(LrScheduleEnabled(s));
  CATCH_CHECK(ScheduledLr(s, 0.3, 0) == 0.3);
  CATCH_CHECK(ScheduledLr(s, 0.3, 1e9) == 0.3);
  s.warmup_steps = 4;
  CATCH_CHECK(LrScheduleEnabled(s));
  CATCH_CHECK(ScheduledLr(s, 0.4, 0) == Approx(0.1));
  CATCH_CHECK(ScheduledLr(s, 0.4, 3) == Approx(0.4));
  CATCH_CHECK(ScheduledLr(s, 0.4, 1000) == Approx(0.4));
  // A decay without a warm-up starts at lr.
  CATCH_CHECK(ScheduledLr(Cosine(0, 100, 0), 2.0, 0) == Approx(2.0));
  CATCH_CHECK(ScheduledLr(Cosine(0, 100, 0), 2.0, 50) == Approx(1.0));
}

CATCH_TEST_CASE("A bad schedule is refused naming its field", "[common][lr_schedule]") {
  auto message = [](const LrScheduleOptions& s, double lr) { return ValidateLrSchedule(s, lr).message(); };
  CATCH_CHECK(ValidateLrSchedule(Cosine(10, 100, 0.01), 0.1).ok());
  CATCH_CHECK(ValidateLrSchedule(Cosine(10, 0, 0.01), 0.1).ok());  // the end: the job's steps
  CATCH_CHECK_THAT(message(Cosine(10, 100, 0.5), 0.1),
                   Catch::Contains("lr_schedule.min_lr: 0.5 is larger than optimizer.lr (0.1)"));
  CATCH_CHECK_THAT(message(Cosine(10, 100, -1), 0.1), Catch::Contains("lr_schedule.min_lr: -1"));
  CATCH_CHECK_THAT(message(Cosine(10, 10, 0), 0.1),
                   Catch::Contains("lr_schedule.decay_steps: 10 is not larger than warmup_steps (10)"));
  LrScheduleOptions none;
  none.min_lr = 0.01;
  CATCH_CHECK_THAT(message(none, 0.1), Catch::Contains("lr_schedule.min_lr: 0.01 needs decay: cosine"));
  none.min_lr = 0;
  none.decay_steps = 5;
  CATCH_CHECK_THAT(message(none, 0.1), Catch::Contains("lr_schedule.decay_steps: 5 needs decay: cosine"));
  // The optimizer's check covers its schedule.
  OptimizerOptions o = DefaultOptimizerOptions(OptimizerOptions::Kind::kAdamW);
  o.schedule = Cosine(0, 10, 1.0);
  CATCH_CHECK_THAT(ValidateOptimizerOptions(o).message(), Catch::Contains("lr_schedule.min_lr"));
}

CATCH_TEST_CASE("A cosine decay without decay_steps ends at the job's steps", "[common][lr_schedule]") {
  CATCH_CHECK(TotalSteps(3, 1000, 64) == 3 * 16);  // ceil(1000 / 64) steps an epoch
  CATCH_CHECK(TotalSteps(1, 1024, 64) == 16);
  auto resolved = ResolveLrSchedule(Cosine(10, 0, 0), 48);
  CATCH_REQUIRE(resolved.ok());
  CATCH_CHECK(resolved->decay_steps == 48);
  auto given = ResolveLrSchedule(Cosine(10, 500, 0), 48);
  CATCH_REQUIRE(given.ok());
  CATCH_CHECK(given->decay_steps == 500);  // as the job file says
  auto short_job = ResolveLrSchedule(Cosine(100, 0, 0), 48);
  CATCH_REQUIRE_FALSE(short_job.ok());
  CATCH_CHECK_THAT(short_job.status().message(), Catch::Contains("lr_schedule.decay_steps: unset"));
  CATCH_CHECK_THAT(short_job.status().message(), Catch::Contains("48 steps"));
  LrScheduleOptions warmup_only;
  warmup_only.warmup_steps = 1000;
  CATCH_CHECK(ResolveLrSchedule(warmup_only, 48).ok());  // no decay to end
}

CATCH_TEST_CASE("A schedule is described for the logs", "[common][lr_schedule]") {
  CATCH_CHECK(DescribeLrSchedule(Cosine(30, 384, 0.0002)) ==
              "lr warm-up over 30 steps, then cosine decay to 0.0002 at step 384");
  CATCH_CHECK(DescribeLrSchedule(Cosine(0, 100, 0)) == "lr cosine decay to 0 at step 100");
  CATCH_CHECK(DescribeLrSchedule(LrScheduleOptions{}).empty());
}

CATCH_TEST_CASE("The schedule travels with the optimizer over the wire", "[common][lr_schedule]") {
  OptimizerOptions o = DefaultOptimizerOptions(OptimizerOptions::Kind::kAdamW);
  o.schedule = Cosine(7, 700, 1e-5);
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(OptimizerToWire(fbb, o));
  const OptimizerOptions back =
      OptimizerFromWire(*flatbuffers::GetRoot<wire::OptimizerConfig>(fbb.GetBufferPointer()));
  CATCH_CHECK(back.schedule.warmup_steps == 7);
  CATCH_CHECK(back.schedule.decay == Decay::kCosine);
  CATCH_CHECK(back.schedule.min_lr == 1e-5);
  CATCH_CHECK(back.schedule.decay_steps == 700);
  // No schedule: none on the wire, and none back.
  flatbuffers::FlatBufferBuilder plain;
  plain.Finish(OptimizerToWire(plain, DefaultOptimizerOptions(OptimizerOptions::Kind::kSgd)));
  const auto* config = flatbuffers::GetRoot<wire::OptimizerConfig>(plain.GetBufferPointer());
  CATCH_CHECK(config->schedule() == nullptr);
  CATCH_CHECK_FALSE(LrScheduleEnabled(OptimizerFromWire(*config).schedule));
}

}  // namespace
}  // namespace hetps
