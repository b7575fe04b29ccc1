// ModeChooser: mode: auto's rule on measured trainers (sync for steady, similar speeds; async for
// steady speeds far apart; ssp with a bound from the longest stall for variable or stalling
// trainers, async for a stall no bound may cover; diloco, when on the table, for steps mostly
// transfers) and the measures it takes from progress reports.
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

CATCH_TEST_CASE(
    "With diloco on the table, trainers whose steps are mostly transfers switch to diloco, and say why",
    "[scheduler][auto][diloco]") {
  ModeChooser::Options options;
  options.async_whole = true;
  options.global_batch = 64;
  options.diloco = true;
  // Two trainers of one speed, 5% of each step in compute: 95% of a step of the whole batch is
  // transfers, at least diloco_min_transfer_share (0.65).
  ModeChooser transfers(options, 0.5);
  Feed(transfers, 0, 0, 5, 1000, 64, 0.05);
  Feed(transfers, 1, 0, 5, 950, 64, 0.05);
  auto d = ModeChooser::Decide(transfers.Measures(), options);
  CATCH_CHECK(d.mode == ConsistencyMode::kDiloco);
  CATCH_CHECK(d.reason.find("steps mostly transfers") != std::string::npos);
  CATCH_CHECK(d.reason.find("at least 95% is outside compute") != std::string::npos);
  CATCH_CHECK(d.reason.find("diloco_min_transfer_share 0.65") != std::string::npos);
  CATCH_CHECK(d.reason.find("diloco once a round") != std::string::npos);
  CATCH_CHECK_FALSE(d.SameRule(ModeChooser::Decision{}));
  // Speeds far apart change nothing: the transfers are what every per-step mode pays.
  ModeChooser apart(options, 0.5);
  Feed(apart, 0, 0, 5, 1000, 64, 0.05);
  Feed(apart, 1, 0, 5, 200, 64, 0.05);
  CATCH_CHECK(ModeChooser::Decide(apart.Measures(), options).mode == ConsistencyMode::kDiloco);
  // One trainer below the share keeps the per-step rule: with 95% and 60% transfers, balanced
  // sync, as before.
  ModeChooser one_below(options, 0.5);
  Feed(one_below, 0, 0, 5, 1000, 64, 0.05);
  Feed(one_below, 1, 0, 5, 950, 64, 0.4);
  CATCH_CHECK(ModeChooser::Decide(one_below.Measures(), options).mode == ConsistencyMode::kSync);
  // With the threshold raised to 0.9, 95% and 85% transfers go async as before (both at least
  // async_min_transfer_share, 0.8).
  ModeChooser::Options high = options;
  high.diloco_min_transfer_share = 0.9;
  ModeChooser between(high, 0.5);
  Feed(between, 0, 0, 5, 1000, 64, 0.05);
  Feed(between, 1, 0, 5, 950, 64, 0.15);
  d = ModeChooser::Decide(between.Measures(), high);
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(d.reason.find("steps mostly transfers") != std::string::npos);
  // Without diloco on the table (the chooser's default), the same measures go async as before.
  ModeChooser::Options off = options;
  off.diloco = false;
  CATCH_CHECK(ModeChooser::Decide(transfers.Measures(), off).mode == ConsistencyMode::kAsync);
  // The threshold is the option's.
  ModeChooser::Options strict = options;
  strict.diloco_min_transfer_share = 0.97;
  CATCH_CHECK(ModeChooser::Decide(transfers.Measures(), strict).mode == ConsistencyMode::kAsync);
}

CATCH_TEST_CASE("Compute-bound trainers keep the per-step modes with diloco on the table",
                "[scheduler][auto][diloco]") {
  ModeChooser::Options options;
  options.async_whole = true;
  options.global_batch = 64;
  options.diloco = true;
  // Half compute, equal speeds: balanced sync.
  ModeChooser compute(options, 0.5);
  Feed(compute, 0, 0, 5, 1000, 64, 0.5);
  Feed(compute, 1, 0, 5, 950, 64, 0.5);
  CATCH_CHECK(ModeChooser::Decide(compute.Measures(), options).mode == ConsistencyMode::kSync);
  // Mostly compute, speeds far apart: async, as before.
  ModeChooser apart(options, 0.5);
  Feed(apart, 0, 0, 5, 1000, 64, 0.9);
  Feed(apart, 1, 0, 5, 250, 64, 0.9);
  const auto d = ModeChooser::Decide(apart.Measures(), options);
  CATCH_CHECK(d.mode == ConsistencyMode::kAsync);
  CATCH_CHECK(d.reason.find("far apart") != std::string::npos);
  // Transfers not measured (no compute time reported): never diloco.
  CATCH_CHECK(ModeChooser::Decide({Measure(0, 1000, 30), Measure(1, 900, 28)}, options).mode ==
              ConsistencyMode::kSync);
  // One trainer: as before.
  CATCH_CHECK(ModeChooser::Decide({Measure(0, 1000, 30)}, options).mode == ConsistencyMode::kSync);
}

}  // namespace hetps
