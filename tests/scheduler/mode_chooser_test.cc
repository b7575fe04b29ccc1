// ModeChooser: mode: auto's rule on measured trainers (sync for steady, similar speeds; async for
// steady speeds far apart; ssp with a bound from the longest stall for variable or stalling
// trainers, async for a stall no bound may cover; diloco, when on the table, for trainers that
// would train 1.5x the samples/s in it) and the measures it takes from progress reports.
#include <catch2/catch.hpp>

#include "scheduler/mode_chooser.h"

namespace hetps {
namespace {

ModeChooser::TrainerMeasure Measure(uint32_t rank, double speed, double steps, double variation = 0.05,
                                    double stall = 0) {
  ModeChooser::TrainerMeasure m;
  m.rank = rank;
  m.samples_per_second = speed;
  m.steps_per_second = steps;
  m.variation = variation;
  m.longest_stall_seconds = stall;
  m.reports = 5;
  return m;
}

// Reports every 0.5 s of `speed` samples/s in steps of `batch`, from `from` to `to` seconds,
// `compute` of each step's time in compute (the rest its transfers).
void Feed(ModeChooser& chooser, uint32_t rank, double from, double to, double speed, double batch,
          double compute = 1) {
  for (double t = from; t < to; t += 0.5) {
    chooser.Observe(rank, t, speed * 0.5, speed * 0.5 / batch, 0.5, 0.5 * compute);
  }
}

}  // namespace

CATCH_TEST_CASE("Steady trainers of similar speed sync, far apart go async", "[scheduler][auto]") {
  const ModeChooser::Options options;
  auto d = ModeChooser::Decide({Measure(0, 1000, 30), Measure(1, 700, 20)}, options);
  CATCH_CHECK(d.mode == ConsistencyMode::kSync);
  CATCH_CHECK(d.reason.find("ratio 0.70") != std::string::npos);
  d = ModeChooser::Decide({Measure(0, 1000, 30), Measure(1, 250, 8)}, options);
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(d.reason.find("ratio 0.25") != std::string::npos);
  // The boundary is the option's.
  ModeChooser::Options strict;
  strict.sync_min_speed_ratio = 0.8;
  CATCH_CHECK(ModeChooser::Decide({Measure(0, 1000, 30), Measure(1, 700, 20)}, strict).mode ==
              ConsistencyMode::kAsync);
}

CATCH_TEST_CASE("A stalling or varying trainer makes it ssp with a bound from the stall",
                "[scheduler][auto]") {
  const ModeChooser::Options options;
  // A 4 s stall, the fastest at 5 steps/s: a bound of 20 steps.
  auto d = ModeChooser::Decide({Measure(0, 1000, 5), Measure(1, 1000, 5, 0.05, 4.0)}, options);
  CATCH_CHECK(d.mode == ConsistencyMode::kSsp);
  CATCH_CHECK(d.staleness == 20);
  CATCH_CHECK(d.reason.find("stalled for 4.0 s") != std::string::npos);
  // Varying without stalls: a second of the fastest's steps, at least 2 and at most the cap.
  d = ModeChooser::Decide({Measure(0, 1000, 1), Measure(1, 900, 1, 0.6)}, options);
  CATCH_CHECK(d.mode == ConsistencyMode::kSsp);
  CATCH_CHECK(d.staleness == 2);
  CATCH_CHECK(d.reason.find("varies by 60%") != std::string::npos);
  d = ModeChooser::Decide({Measure(0, 1000, 500), Measure(1, 900, 400, 0.6)}, options);
  CATCH_CHECK(d.staleness == options.max_staleness);
}

CATCH_TEST_CASE("A stall longer than any ssp bound may cover makes it async", "[scheduler][auto]") {
  ModeChooser::Options options;
  options.max_staleness = 32;
  // 4 s of a fastest trainer at 100 steps/s is 400 steps: ssp with 32 would hold it through most
  // of every stall.
  auto d = ModeChooser::Decide({Measure(0, 3200, 100), Measure(1, 2900, 90, 0.05, 4.0)}, options);
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(
      d.reason.find("stalled for 4.0 s (the longest stall in the last 60 s), 400 of the fastest's steps") !=
      std::string::npos);
  CATCH_CHECK(d.reason.find("auto.max_staleness 32") != std::string::npos);
  // With a cap that covers it, the same measures make it ssp with the bound.
  options.max_staleness = 400;
  d = ModeChooser::Decide({Measure(0, 3200, 100), Measure(1, 2900, 90, 0.05, 4.0)}, options);
  CATCH_CHECK(d.mode == ConsistencyMode::kSsp);
  CATCH_CHECK(d.staleness == 400);
  // Trainers far apart go async whatever the stall: a bound would hold the fast one for a slow
  // one that is always behind.
  d = ModeChooser::Decide({Measure(0, 3200, 100), Measure(1, 700, 22, 0.05, 4.0)}, options);
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(d.reason.find("far apart") != std::string::npos);
  CATCH_CHECK(d.reason.find("stalled for 4.0 s") != std::string::npos);
  // A varying speed without a stall still takes the capped bound (a second of steps).
  options.max_staleness = 32;
  d = ModeChooser::Decide({Measure(0, 3200, 100), Measure(1, 2900, 90, 0.6)}, options);
  CATCH_CHECK(d.mode == ConsistencyMode::kSsp);
  CATCH_CHECK(d.staleness == 32);
}

CATCH_TEST_CASE("Trainers whose steps of the whole batch are mostly transfers go async with whole batches",
                "[scheduler][auto]") {
  ModeChooser::Options whole;
  whole.async_whole = true;
  whole.global_batch = 64;
  // Two trainers of one speed, 64 samples a step, a tenth of each step in compute: of a step of
  // the whole batch, 90% is transfers.
  ModeChooser chooser(whole, 0.5);
  Feed(chooser, 0, 0, 5, 1000, 64, 0.1);
  Feed(chooser, 1, 0, 5, 950, 64, 0.1);
  auto measures = chooser.Measures();
  CATCH_CHECK(measures[0].transfer_share == Approx(0.9));
  auto d = ModeChooser::Decide(measures, whole);
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(d.reason.find("at least 90% is outside compute") != std::string::npos);
  // Measured at half the batch (a sync share), the same costs give the same share: the time
  // outside compute is per step, compute per sample.
  ModeChooser shares(whole, 0.5);
  Feed(shares, 0, 0, 5, 32 / 0.0608, 32, 0.0032 / 0.0608);  // 57.6 ms outside compute, 3.2 in it
  CATCH_CHECK(shares.Measures()[0].transfer_share == Approx(0.9));
  // A stall changes nothing: async lets the others run through it.
  Feed(chooser, 0, 5, 9, 1000, 64, 0.1);
  Feed(chooser, 1, 6.5, 9, 950, 64, 0.1);
  d = ModeChooser::Decide(chooser.Measures(), whole);
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(d.reason.find("which async lets the others run through") != std::string::npos);
  // Half compute (the CNN's steps on stalls-short.yaml are about that): balanced sync.
  ModeChooser compute(whole, 0.5);
  Feed(compute, 0, 0, 5, 1000, 64, 0.5);
  Feed(compute, 1, 0, 5, 950, 64, 0.5);
  CATCH_CHECK(ModeChooser::Decide(compute.Measures(), whole).mode == ConsistencyMode::kSync);
  // Async on shares pays the transfers per share too: balanced sync.
  ModeChooser::Options share = whole;
  share.async_whole = false;
  CATCH_CHECK(ModeChooser::Decide(measures, share).mode == ConsistencyMode::kSync);
}

CATCH_TEST_CASE("ssp rules with bounds within 1.5x of each other are the same rule", "[scheduler][auto]") {
  auto rule = [](ConsistencyMode mode, uint32_t staleness) {
    ModeChooser::Decision d;
    d.mode = mode;
    d.staleness = staleness;
    return d;
  };
  CATCH_CHECK(rule(ConsistencyMode::kSsp, 241).SameRule(rule(ConsistencyMode::kSsp, 286)));
  CATCH_CHECK(rule(ConsistencyMode::kSsp, 300).SameRule(rule(ConsistencyMode::kSsp, 200)));
  CATCH_CHECK_FALSE(rule(ConsistencyMode::kSsp, 3).SameRule(rule(ConsistencyMode::kSsp, 5)));
  CATCH_CHECK_FALSE(rule(ConsistencyMode::kSsp, 20).SameRule(rule(ConsistencyMode::kSsp, 32)));
  CATCH_CHECK_FALSE(rule(ConsistencyMode::kSsp, 32).SameRule(rule(ConsistencyMode::kAsync, 0)));
  CATCH_CHECK(rule(ConsistencyMode::kSync, 0).SameRule(rule(ConsistencyMode::kSync, 7)));
}

CATCH_TEST_CASE("Without two measured trainers the rule syncs", "[scheduler][auto]") {
  const ModeChooser::Options options;
  CATCH_CHECK(ModeChooser::Decide({}, options).mode == ConsistencyMode::kSync);
  auto lone = Measure(0, 1000, 30);
  auto unmeasured = Measure(1, 0, 0);
  unmeasured.reports = 0;
  auto d = ModeChooser::Decide({lone, unmeasured}, options);
  CATCH_CHECK(d.mode == ConsistencyMode::kSync);
  CATCH_CHECK(d.reason.find("one trainer") != std::string::npos);
}

CATCH_TEST_CASE("Measures come from the reports: speed, spread and stalls", "[scheduler][auto]") {
  ModeChooser chooser(ModeChooser::Options{}, 0.5);
  Feed(chooser, 0, 0, 5, 1000, 32);
  Feed(chooser, 1, 0, 5, 250, 32);
  auto measures = chooser.Measures();
  CATCH_REQUIRE(measures.size() == 2);
  CATCH_CHECK(measures[0].samples_per_second == Approx(1000));
  CATCH_CHECK(measures[0].steps_per_second == Approx(1000.0 / 32));
  CATCH_CHECK(measures[0].variation == Approx(0).margin(1e-9));
  CATCH_CHECK(measures[1].longest_stall_seconds == 0);
  CATCH_CHECK(ModeChooser::Decide(measures, chooser.options()).mode == ConsistencyMode::kAsync);
  // Trainer 1 then stops reporting for 4 s and comes back at the speed of trainer 0.
  Feed(chooser, 0, 5, 9, 1000, 32);
  Feed(chooser, 1, 9, 11, 1000, 32);
  measures = chooser.Measures();
  CATCH_CHECK(measures[1].longest_stall_seconds == Approx(4.0));
  // 4 s of 31.25 steps/s is 125 steps: more than the default cap of 32 covers.
  auto d = ModeChooser::Decide(measures, chooser.options());
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(
      d.reason.find("stalled for 4.0 s (the longest stall in the last 60 s), 125 of the fastest's steps") !=
      std::string::npos);
  // A speed that alternates between 1000 and 300 varies by about 50%.
  ModeChooser varying(ModeChooser::Options{}, 0.5);
  for (int i = 0; i < 10; ++i) {
    varying.Observe(0, i * 0.5, 500, 15, 0.5, 0.5);
    varying.Observe(1, i * 0.5, i % 2 == 0 ? 500 : 150, 5, 0.5, 0.5);
  }
  measures = varying.Measures();
  CATCH_CHECK(measures[1].variation > 0.5);
  CATCH_CHECK(ModeChooser::Decide(measures, varying.options()).mode == ConsistencyMode::kSsp);
  // A trainer forgotten leaves the measures.
  varying.Forget(1);
  CATCH_CHECK(varying.Measures().size() == 1);
}

CATCH_TEST_CASE("A stall counts for stall_memory_seconds after its reports left the window",
                "[scheduler][auto]") {
  // Two trainers of one speed; trainer 1 stops reporting for 4 s at 5 s, as a machine that stalls
  // every so often, then runs steadily. Between its stalls its reports alone look steady: without
  // the memory the rule would sync until the next stall, and two looks would never agree.
  ModeChooser chooser(ModeChooser::Options{}, 0.5);
  Feed(chooser, 0, 0, 40, 1000, 32);
  Feed(chooser, 1, 0, 5, 1000, 32);
  Feed(chooser, 1, 9, 40, 1000, 32);
  auto measures = chooser.Measures();
  CATCH_CHECK(measures[1].variation == Approx(0).margin(1e-9));  // the window holds no stall
  CATCH_CHECK(measures[1].longest_stall_seconds == Approx(4.0));
  auto d = ModeChooser::Decide(measures, chooser.options());
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(d.reason.find("stalled for 4.0 s (the longest stall in the last 60 s)") != std::string::npos);
  // 60 s after it ended (at 9 s) it is forgotten, and the steady trainers sync.
  Feed(chooser, 0, 40, 70, 1000, 32);
  Feed(chooser, 1, 40, 70, 1000, 32);
  measures = chooser.Measures();
  CATCH_CHECK(measures[1].longest_stall_seconds == 0);
  CATCH_CHECK(ModeChooser::Decide(measures, chooser.options()).mode == ConsistencyMode::kSync);
  // The memory is the option's; the longest stall in it counts.
  ModeChooser::Options short_memory;
  short_memory.stall_memory_seconds = 10;
  ModeChooser brief(short_memory, 0.5);
  Feed(brief, 1, 0, 5, 1000, 32);
  Feed(brief, 1, 8, 12, 1000, 32);   // a 3 s stall, over at 8 s
  Feed(brief, 1, 14, 16, 1000, 32);  // a 2 s stall, over at 14 s
  CATCH_CHECK(brief.Measures()[0].longest_stall_seconds == Approx(3.0));
  Feed(brief, 1, 16, 19, 1000, 32);
  CATCH_CHECK(brief.Measures()[0].longest_stall_seconds == Approx(2.0));
  Feed(brief, 1, 19, 25, 1000, 32);
  CATCH_CHECK(brief.Measures()[0].longest_stall_seconds == 0);
}

// An auto job's options with diloco on the table, as the scheduler sets them by default.
ModeChooser::Options WithDiloco() {
  ModeChooser::Options options;
  options.async_whole = true;
  options.global_batch = 64;
  options.diloco = true;
  return options;
}

CATCH_TEST_CASE(
    "With diloco on the table, trainers that would train 1.5x the samples/s in it switch, and say why",
    "[scheduler][auto][diloco]") {
  const ModeChooser::Options options = WithDiloco();
  // equal.yaml as measured: the trainer beside the server 6,627 samples/s paced, 56% of its step
  // outside compute (over loopback); the other 2,078, 84% (over gigabit). Each would compute at
  // about 15,000 and 13,000 alone: 0.95 x 28,049 = 26,646 samples/s against 8,705, 3.06x.
  ModeChooser equal(options, 0.5);
  Feed(equal, 0, 0, 5, 6627, 64, 0.44);
  Feed(equal, 1, 0, 5, 2078, 64, 0.16);
  auto measures = equal.Measures();
  CATCH_CHECK(measures[0].compute_samples_per_second == Approx(6627 / 0.44));
  CATCH_CHECK(measures[0].steady_samples_per_second == Approx(6627));
  auto d = ModeChooser::Decide(measures, options);
  CATCH_CHECK(d.mode == ConsistencyMode::kDiloco);
  CATCH_CHECK(d.reason.find("diloco would train 3.06x the samples/s of now") != std::string::npos);
  CATCH_CHECK(d.reason.find("trainer 0 15061 and 6627, trainer 1 ") != std::string::npos);
  CATCH_CHECK(d.reason.find("(1 - 0.05 for its rounds' synchronisation) x 28049 = 26646 against 8705 now") !=
              std::string::npos);
  CATCH_CHECK(d.reason.find("at least auto.diloco_min_speedup 1.50") != std::string::npos);
  CATCH_CHECK(d.reason.find("diloco once a round") != std::string::npos);
  CATCH_CHECK_FALSE(d.SameRule(ModeChooser::Decision{}));
  // home.yaml: 7,543 at 57% and 1,932 at 81%: 2.78x.
  ModeChooser home(options, 0.5);
  Feed(home, 0, 0, 5, 7543, 64, 0.43);
  Feed(home, 1, 0, 5, 1932, 64, 0.19);
  d = ModeChooser::Decide(home.Measures(), options);
  CATCH_CHECK(d.mode == ConsistencyMode::kDiloco);
  CATCH_CHECK(d.reason.find("diloco would train 2.78x") != std::string::npos);
  // Speeds far apart change nothing: the transfers are what every per-step mode pays.
  ModeChooser apart(options, 0.5);
  Feed(apart, 0, 0, 5, 1000, 64, 0.05);
  Feed(apart, 1, 0, 5, 200, 64, 0.05);
  CATCH_CHECK(ModeChooser::Decide(apart.Measures(), options).mode == ConsistencyMode::kDiloco);
  // The threshold is the option's; below it the per-step rule decides (far apart: async) and
  // says what diloco would have given.
  ModeChooser::Options strict = options;
  strict.diloco_min_speedup = 3.5;
  d = ModeChooser::Decide(measures, strict);
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(d.reason.find("far apart") == 0);
  CATCH_CHECK(d.reason.find("; diloco would train 3.06x") != std::string::npos);
  CATCH_CHECK(d.reason.find("below auto.diloco_min_speedup 3.50") != std::string::npos);
  // So is the synchronisation expected of a round (the job's diloco.sync_share): at 0.6, 1.29x.
  ModeChooser::Options costly = options;
  costly.diloco_sync_share = 0.6;
  d = ModeChooser::Decide(measures, costly);
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(d.reason.find("; diloco would train 1.29x") != std::string::npos);
  CATCH_CHECK(d.reason.find("(1 - 0.60 for its rounds' synchronisation) x 28049 = 11220") !=
              std::string::npos);
  // Without diloco on the table (the chooser's default), the same measures go async as before,
  // and the reason says nothing of diloco.
  ModeChooser::Options off = options;
  off.diloco = false;
  d = ModeChooser::Decide(measures, off);
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(d.reason.find("diloco") == std::string::npos);
}

CATCH_TEST_CASE("Compute-bound trainers keep the per-step modes with diloco on the table",
                "[scheduler][auto][diloco]") {
  const ModeChooser::Options options = WithDiloco();
  // 90% compute, equal speeds: diloco would train 0.95 / 0.9 = 1.06x; balanced sync.
  ModeChooser compute(options, 0.5);
  Feed(compute, 0, 0, 5, 1000, 64, 0.9);
  Feed(compute, 1, 0, 5, 950, 64, 0.9);
  auto d = ModeChooser::Decide(compute.Measures(), options);
  CATCH_CHECK(d.mode == ConsistencyMode::kSync);
  CATCH_CHECK(d.reason.find("; diloco would train 1.06x") != std::string::npos);
  CATCH_CHECK(d.reason.find("below auto.diloco_min_speedup 1.50") != std::string::npos);
  // 70% compute: 1.36x, still below.
  ModeChooser most(options, 0.5);
  Feed(most, 0, 0, 5, 1000, 64, 0.7);
  Feed(most, 1, 0, 5, 950, 64, 0.7);
  CATCH_CHECK(ModeChooser::Decide(most.Measures(), options).mode == ConsistencyMode::kSync);
  // Mostly compute, speeds far apart: async, as before.
  ModeChooser apart(options, 0.5);
  Feed(apart, 0, 0, 5, 1000, 64, 0.9);
  Feed(apart, 1, 0, 5, 250, 64, 0.9);
  d = ModeChooser::Decide(apart.Measures(), options);
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(d.reason.find("far apart") != std::string::npos);
  // Transfers not measured (no compute time reported): never diloco.
  CATCH_CHECK(ModeChooser::Decide({Measure(0, 1000, 30), Measure(1, 900, 28)}, options).mode ==
              ConsistencyMode::kSync);
  // One trainer: as before.
  CATCH_CHECK(ModeChooser::Decide({Measure(0, 1000, 30)}, options).mode == ConsistencyMode::kSync);
}

CATCH_TEST_CASE("A stalling trainer does not tip the rule to diloco", "[scheduler][auto][diloco]") {
  const ModeChooser::Options options = WithDiloco();
  // 75% compute: diloco would train 0.95 / 0.75 = 1.27x, below 1.5.
  ModeChooser steady(options, 0.5);
  Feed(steady, 0, 0, 8, 1000, 64, 0.75);
  Feed(steady, 1, 0, 8, 950, 64, 0.75);
  auto d = ModeChooser::Decide(steady.Measures(), options);
  CATCH_CHECK(d.mode == ConsistencyMode::kSync);
  CATCH_CHECK(d.reason.find("; diloco would train 1.27x") != std::string::npos);
  // Trainer 1 is frozen for 4 s while it waits for its weights: the report after the gap holds
  // the 4 s in its paced time and not in its compute time. Later a 0.6 s freeze too short to be
  // a stall lands in one report the same way. Counted, they would cut its paced speed by a third
  // and make diloco look 1.6x; the rule leaves them out.
  ModeChooser stalling(options, 0.5);
  Feed(stalling, 0, 0, 12, 1000, 64, 0.75);
  Feed(stalling, 1, 0, 4, 950, 64, 0.75);
  stalling.Observe(1, 8.0, 475, 475.0 / 64, 4.5, 0.375);
  Feed(stalling, 1, 8.5, 10, 950, 64, 0.75);
  stalling.Observe(1, 10.6, 475, 475.0 / 64, 1.1, 0.375);
  Feed(stalling, 1, 11.1, 12, 950, 64, 0.75);
  const auto measures = stalling.Measures();
  CATCH_CHECK(measures[1].longest_stall_seconds == Approx(4.0));
  CATCH_CHECK(measures[1].samples_per_second < 700);  // the pace, stalls included
  CATCH_CHECK(measures[1].steady_samples_per_second == Approx(950));
  CATCH_CHECK(measures[1].compute_samples_per_second == Approx(950 / 0.75));
  d = ModeChooser::Decide(measures, options);
  CATCH_CHECK(d.mode != ConsistencyMode::kDiloco);
  CATCH_CHECK(d.reason.find("stalled for 4.0 s") != std::string::npos);
  CATCH_CHECK(d.reason.find("; diloco would train 1.27x") != std::string::npos);
}

}  // namespace hetps
