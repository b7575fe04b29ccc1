// CheckpointCut without sockets: which replies it still waits for, its deadline, the sync cut's
// round check, and the data position it makes of the chunks complete at the cut and the trainers' reports.
#include <catch2/catch.hpp>

#include <flatbuffers/flatbuffers.h>

#include "scheduler/checkpoint_cut.h"

namespace hetps {
namespace {

// A trainer's DataPosition report, as it arrives: a verified wire table in its own buffer.
class PositionReport {
 public:
  PositionReport(uint64_t clock, uint32_t epoch, uint64_t samples, const std::vector<uint32_t>& finished,
                 const std::vector<uint32_t>& held = {}, const std::vector<uint64_t>& held_next = {}) {
    auto body = wire::CreateDataPositionDirect(fbb_, /*checkpoint=*/1, clock, epoch, samples, &finished,
                                               &held, &held_next);
    fbb_.Finish(body);
  }
  const wire::DataPosition& get() const {
    return *flatbuffers::GetRoot<wire::DataPosition>(fbb_.GetBufferPointer());
  }

 private:
  flatbuffers::FlatBufferBuilder fbb_;
};

CheckpointCut::Options CutOptions(std::optional<uint64_t> round) {
  CheckpointCut::Options o;
  o.number = 1;
  o.round = round;
  o.servers = 2;
  o.trainers = {0, 3};
  o.chunks_per_epoch = 10;
  return o;
}

}  // namespace

CATCH_TEST_CASE("A cut names what it still waits for", "[checkpoint_cut]") {
  CheckpointCut cut(CutOptions(std::nullopt), {});
  CATCH_CHECK(cut.Missing() == "server 0, server 1, trainer 0, trainer 3");
  CATCH_REQUIRE(cut.AddPosition(3, PositionReport(7, 0, 448, {}).get()).ok());
  CATCH_CHECK(cut.Missing() == "server 0, server 1, trainer 0");
  CATCH_CHECK(cut.AwaitsPosition(0));
  CATCH_CHECK_FALSE(cut.AwaitsPosition(3));  // reported
  CATCH_CHECK_FALSE(cut.AwaitsPosition(1));  // not in the cut
  CATCH_CHECK_FALSE(cut.HasAllPositions());
  CATCH_REQUIRE(cut.AddPosition(0, PositionReport(9, 0, 576, {}).get()).ok());
  CATCH_CHECK(cut.HasAllPositions());
  CATCH_CHECK(cut.Missing() == "server 0, server 1");
  CATCH_CHECK_FALSE(cut.HasAllStates());
}

CATCH_TEST_CASE("A cut's deadline runs from its start, or from when a sync cut's round is due",
                "[checkpoint_cut]") {
  CheckpointCut::Options at_once = CutOptions(std::nullopt);
  at_once.timeout = std::chrono::seconds(5);
  CheckpointCut now(at_once, {});
  CATCH_CHECK(now.deadline() - now.started() == std::chrono::seconds(5));

  CheckpointCut::Options ahead = CutOptions(uint64_t{40});
  ahead.lead = std::chrono::milliseconds(3500);
  ahead.timeout = std::chrono::seconds(5);
  CheckpointCut sync(ahead, {});
  CATCH_CHECK(sync.deadline() - sync.started() == std::chrono::milliseconds(8500));

  // The default timeout is the documented 60 s.
  CheckpointCut plain(CutOptions(std::nullopt), {});
  CATCH_CHECK(plain.deadline() - plain.started() == std::chrono::seconds(60));
}

CATCH_TEST_CASE("A sync cut refuses a report from another step than its round", "[checkpoint_cut]") {
  CheckpointCut cut(CutOptions(uint64_t{12}), {});
  Status late = cut.AddPosition(0, PositionReport(13, 0, 832, {}).get());
  CATCH_CHECK(late.code() == Status::Code::kFailedPrecondition);
  CATCH_CHECK(late.message().find("trainer 0 reported its data at step 13, not at the cut's round 12") !=
              std::string::npos);
  CATCH_CHECK(cut.Missing() == "server 0, server 1, trainer 0, trainer 3");
  CATCH_CHECK(cut.AddPosition(0, PositionReport(12, 0, 768, {}).get()).ok());
}

CATCH_TEST_CASE("A cut's data position joins the chunks complete at the cut with the trainers' reports",
                "[checkpoint_cut]") {
  // Chunks 0 and 1 of epoch 0 were complete when the cut was asked for.
  CheckpointCut cut(CutOptions(std::nullopt), {{0, {0, 1}}});
  // Trainer 0 completes chunk 2 before its report; after its report, chunk 4 belongs to the next cut.
  cut.NoteCompleted(0, 2);
  // Trainer 3 reports chunk 13 (epoch 1, chunk 3) trained whole, and holds chunk 15 up to position 40.
  CATCH_REQUIRE(cut.AddPosition(3, PositionReport(5, 1, 300, {13}, {15}, {40}).get()).ok());
  // Trainer 0 holds chunk 3 of epoch 0 up to 20; a position for a chunk it also finished is dropped.
  CATCH_REQUIRE(cut.AddPosition(0, PositionReport(6, 0, 200, {}, {3, 2}, {20, 64}).get()).ok());
  cut.NoteCompleted(0, 4);

  DataPosition p = cut.Position(/*epochs=*/3);
  CATCH_REQUIRE(p.completed.size() == 2);
  CATCH_CHECK(p.completed[0].epoch == 0);
  CATCH_CHECK(p.completed[0].chunks == std::vector<uint32_t>{0, 1, 2});
  CATCH_CHECK(p.completed[1].epoch == 1);
  CATCH_CHECK(p.completed[1].chunks == std::vector<uint32_t>{3});
  CATCH_REQUIRE(p.partial.size() == 2);
  CATCH_CHECK((p.partial[0].epoch == 1 && p.partial[0].chunk == 5 && p.partial[0].next == 40));
  CATCH_CHECK((p.partial[1].epoch == 0 && p.partial[1].chunk == 3 && p.partial[1].next == 20));
  // The job resumes in the earliest epoch a trainer was in; the samples are everyone's.
  CATCH_CHECK(p.epoch == 0);
  CATCH_CHECK(p.samples_trained == 500);
}

CATCH_TEST_CASE("A report whose held chunks and positions differ in number is a protocol error",
                "[checkpoint_cut]") {
  CheckpointCut cut(CutOptions(std::nullopt), {});
  Status bad = cut.AddPosition(0, PositionReport(1, 0, 64, {}, {1, 2}, {10}).get());
  CATCH_CHECK(bad.code() == Status::Code::kProtocol);
  CATCH_CHECK(bad.message().find("trainer 0 reported 2 held chunks") != std::string::npos);
}

}  // namespace hetps
