// StallWatch: a wait beyond the trainer's own pace times stall_pace_factor, and beyond
// stall_floor_s, leaves it out of the step the first time and drops it the second; a slow
// trainer's waits within its pace, a wait already judged, and a trainer busy for the scheduler
// are not stalls. TrainerPace: a trainer's pace as a server measures it.
#include <catch2/catch.hpp>

#include <optional>
#include <vector>

#include "ps/trainer_pace.h"
#include "scheduler/stall_watch.h"

namespace hetps {
namespace {

struct WaitFigures {
  uint32_t trainer;
  uint64_t step;
  uint64_t waited_ms;
  uint64_t pace_ms;
};

// A ServerStats holding only `waits` (each ending once its trainer counts from step + 1).
struct Report {
  flatbuffers::FlatBufferBuilder fbb;
  explicit Report(const std::vector<WaitFigures>& waits) {
    std::vector<flatbuffers::Offset<wire::TrainerWait>> entries;
    for (const WaitFigures& w : waits) {
      entries.push_back(wire::CreateTrainerWait(fbb, w.trainer, w.step, w.step + 1, w.waited_ms, w.pace_ms));
    }
    wire::ServerStatsBuilder stats(fbb);
    auto vector = fbb.CreateVector(entries);
    stats.add_waits(vector);
    fbb.Finish(stats.Finish());
  }
  const flatbuffers::Vector<flatbuffers::Offset<wire::TrainerWait>>& waits() const {
    return *flatbuffers::GetRoot<wire::ServerStats>(fbb.GetBufferPointer())->waits();
  }
};

}  // namespace

CATCH_TEST_CASE("A wait beyond the floor and the pace leaves the trainer out, the second drops it",
                "[scheduler][stall]") {
  StallWatch watch({std::chrono::seconds(2), 10});
  std::optional<uint64_t> first = 0;
  auto first_clock = [&](uint32_t) { return first; };
  // 1.9 s with no pace measured yet: within the floor.
  CATCH_CHECK(watch.Judge("server 0", Report({{1, 7, 1900, 0}}).waits(), first_clock).empty());
  auto verdicts = watch.Judge("server 0", Report({{1, 7, 2100, 0}}).waits(), first_clock);
  CATCH_REQUIRE(verdicts.size() == 1);
  CATCH_CHECK(verdicts[0].trainer == 1);
  CATCH_CHECK_FALSE(verdicts[0].drop);
  CATCH_CHECK(verdicts[0].step == 7);
  CATCH_CHECK(verdicts[0].until == 8);
  CATCH_CHECK(verdicts[0].limit_seconds == Approx(2.0));
  CATCH_CHECK(verdicts[0].reason.find("server 0 waited 2.1 s for its step 7") != std::string::npos);
  CATCH_CHECK(verdicts[0].reason.find("not yet measured") != std::string::npos);
  first = 8;  // the scheduler moved its first clock on
  // Another server's report of the same wait: judged already.
  CATCH_CHECK(watch.Judge("server 1", Report({{1, 7, 2500, 0}}).waits(), first_clock).empty());
  CATCH_CHECK(watch.StallsOf(1) == 1);
  // Its next step held as long: out of the job.
  verdicts = watch.Judge("server 0", Report({{1, 8, 2200, 0}}).waits(), first_clock);
  CATCH_REQUIRE(verdicts.size() == 1);
  CATCH_CHECK(verdicts[0].drop);
  watch.Forget(1);
  CATCH_CHECK(watch.StallsOf(1) == 0);
}

CATCH_TEST_CASE("A slow trainer is judged by its own pace", "[scheduler][stall]") {
  StallWatch watch({std::chrono::seconds(1), 10});
  auto first_clock = [](uint32_t) { return std::optional<uint64_t>(0); };
  // 1.5 s a step: a wait of 9 s is within ten of its steps, 16 s is not.
  CATCH_CHECK(watch.Judge("server 0", Report({{0, 3, 9000, 1500}}).waits(), first_clock).empty());
  auto verdicts =
      watch.Judge("server 0", Report({{0, 3, 16000, 1500}, {1, 3, 200, 10}}).waits(), first_clock);
  CATCH_REQUIRE(verdicts.size() == 1);
  CATCH_CHECK(verdicts[0].trainer == 0);
  CATCH_CHECK(verdicts[0].limit_seconds == Approx(15.0));
  // Figures no server could mean still make no overflow: a limit beyond any wait.
  CATCH_CHECK(
      watch.Judge("server 0", Report({{2, 0, ~uint64_t{0} / 2, ~uint64_t{0}}}).waits(), first_clock).empty());
}

CATCH_TEST_CASE("No stall for a trainer the scheduler does not judge, nor with floor 0",
                "[scheduler][stall]") {
  StallWatch watch({std::chrono::seconds(1), 10});
  auto exempt = [](uint32_t) { return std::optional<uint64_t>(); };
  CATCH_CHECK(watch.Judge("server 0", Report({{0, 3, 60000, 0}}).waits(), exempt).empty());
  StallWatch never({std::chrono::seconds(0), 10});
  auto first_clock = [](uint32_t) { return std::optional<uint64_t>(0); };
  CATCH_CHECK(never.Judge("server 0", Report({{0, 3, 3600000, 0}}).waits(), first_clock).empty());
}

CATCH_TEST_CASE("A trainer's pace is the median of its latest intervals per step", "[scheduler][stall]") {
  using std::chrono::milliseconds;
  TrainerPace pace;
  const auto t0 = TrainerPace::Clock::now();
  CATCH_CHECK(pace.Of(0) == milliseconds(0));
  pace.Pushed(0, 0, t0);
  CATCH_CHECK(pace.Of(0) == milliseconds(0));  // one step: no interval yet
  pace.Pushed(0, 1, t0 + milliseconds(100));
  pace.Pushed(0, 1, t0 + milliseconds(150));   // the step's other partitions: not a new step
  pace.Pushed(0, 3, t0 + milliseconds(300));   // two steps in 150 ms: 75 ms each
  pace.Pushed(0, 4, t0 + milliseconds(5300));  // one pause
  pace.Pushed(0, 5, t0 + milliseconds(5390));
  // Intervals 100, 75, 5000, 90: the median (the upper middle) is 100, not the pause.
  CATCH_CHECK(pace.Of(0) == milliseconds(100));
  pace.Pushed(1, 0, t0);
  pace.Pushed(1, 1, t0 + milliseconds(40));
  pace.Keep({1});
  CATCH_CHECK(pace.Of(0) == milliseconds(0));
  CATCH_CHECK(pace.Of(1) == milliseconds(40));
}

}  // namespace hetps
