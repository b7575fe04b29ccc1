#include "scheduler/chunk_queue.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <vector>

namespace hetps {
namespace {

using Grant = ChunkQueue::Grant;

Grant NextOrFail(ChunkQueue& queue, uint32_t trainer, uint32_t epoch) {
  std::optional<Grant> grant = queue.Next(trainer, epoch);
  CATCH_INFO("trainer " << trainer << " asks for epoch " << epoch);
  CATCH_REQUIRE(grant.has_value());
  return *grant;
}

CATCH_TEST_CASE("A chunk is held by the trainer it was granted to until completed, and never by another",
                "[scheduler][chunk_queue]") {
  ChunkQueue queue(1000, 128, 2);
  const Grant a = NextOrFail(queue, 0, 0);
  const Grant b = NextOrFail(queue, 1, 0);
  CATCH_CHECK(queue.Holds(0, a.chunk));
  CATCH_CHECK_FALSE(queue.Holds(1, a.chunk));
  CATCH_CHECK(queue.Holds(1, b.chunk));
  CATCH_CHECK_FALSE(queue.Holds(0, 5));  // never granted
  CATCH_CHECK_FALSE(queue.IsComplete(a.chunk));
  CATCH_CHECK_FALSE(queue.Complete(1, a.chunk));  // not trainer 1's to complete
  CATCH_REQUIRE(queue.Complete(0, a.chunk));
  CATCH_CHECK_FALSE(queue.Holds(0, a.chunk));
  CATCH_CHECK(queue.IsComplete(a.chunk));
  CATCH_CHECK_FALSE(queue.IsComplete(8 + a.chunk));  // the same index of the next epoch
  CATCH_CHECK_FALSE(queue.Holds(0, 1u << 30));       // beyond every epoch
  CATCH_CHECK_FALSE(queue.IsComplete(1u << 30));
  CATCH_CHECK(queue.Requeue(1) == 1);
  CATCH_CHECK_FALSE(queue.Holds(1, b.chunk));
}

CATCH_TEST_CASE("A trainer's held samples are those of its chunks as granted, until completed or requeued",
                "[scheduler][chunk_queue]") {
  ChunkQueue queue(1000, 128, 1);
  CATCH_CHECK(queue.HeldSamples(0) == 0);
  const Grant a = NextOrFail(queue, 0, 0);
  const Grant b = NextOrFail(queue, 0, 0);
  NextOrFail(queue, 1, 0);
  CATCH_CHECK(queue.HeldSamples(0) == 256);
  CATCH_CHECK(queue.HeldSamples(1) == 128);
  CATCH_REQUIRE(queue.Complete(0, a.chunk));
  CATCH_CHECK(queue.HeldSamples(0) == 128);
  CATCH_CHECK(queue.Requeue(0) == 1);
  CATCH_CHECK(queue.HeldSamples(0) == 0);
  // A partly trained chunk from a checkpoint counts from where it resumes.
  DataPosition position;
  position.partial.push_back({0, b.chunk, b.begin + 100});
  queue.Restore(position);
  const Grant partial = NextOrFail(queue, 2, 0);
  CATCH_CHECK(partial.chunk == b.chunk);
  CATCH_CHECK(queue.HeldSamples(2) == 28);
}

CATCH_TEST_CASE("The chunks of an epoch cover every sample once, the last one short",
                "[scheduler][chunk_queue]") {
  ChunkQueue queue(1000, 128, 2);
  CATCH_REQUIRE(queue.chunks_per_epoch() == 8);
  CATCH_CHECK(queue.epochs() == 2);
  CATCH_CHECK(queue.samples() == 1000);
  for (uint32_t epoch = 0; epoch < 2; ++epoch) {
    uint64_t next_begin = 0;
    for (uint32_t index = 0; index < 8; ++index) {
      const Grant grant = NextOrFail(queue, 0, epoch);
      CATCH_CHECK(grant.epoch == epoch);
      CATCH_CHECK(grant.chunk == epoch * 8 + index);
      CATCH_CHECK(grant.begin == next_begin);
      CATCH_CHECK(grant.end - grant.begin == (index < 7 ? 128u : 1000u - 7 * 128));
      next_begin = grant.end;
    }
    CATCH_CHECK(next_begin == 1000);
    CATCH_CHECK_FALSE(queue.Next(0, epoch).has_value());
  }

  ChunkQueue exact(1024, 128, 1);
  CATCH_CHECK(exact.chunks_per_epoch() == 8);
  for (int i = 0; i < 8; ++i) {
    const Grant grant = NextOrFail(exact, i % 2, 0);
    CATCH_CHECK(grant.end - grant.begin == 128);
  }
  CATCH_CHECK_FALSE(exact.Next(0, 0).has_value());
}

CATCH_TEST_CASE("A zero chunk size is treated as one sample", "[scheduler][chunk_queue]") {
  ChunkQueue queue(5, 0, 1);
  CATCH_CHECK(queue.chunks_per_epoch() == 5);
  const Grant grant = NextOrFail(queue, 0, 0);
  CATCH_CHECK(grant.end - grant.begin == 1);
}

CATCH_TEST_CASE("Trainers of different speeds share every chunk exactly once", "[scheduler][chunk_queue]") {
  const uint64_t samples = 10000;
  const uint32_t epochs = 3;
  ChunkQueue queue(samples, 96, epochs);
  // coverage[epoch][sample]: how often the sample was trained.
  std::vector<std::vector<int>> coverage(epochs, std::vector<int>(samples, 0));
  struct Trainer {
    uint32_t rank;
    int chunks_per_round;  // A trains three chunks while B trains one
    uint32_t epoch = 0;
    int trained = 0;
    std::vector<Grant> held;
  };
  std::vector<Trainer> trainers = {{0, 3, 0, 0, {}}, {1, 1, 0, 0, {}}};
  // Takes the trainer's next chunk; false once it has run out of every epoch.
  auto take = [&](Trainer& t) {
    while (t.epoch < epochs) {
      std::optional<Grant> grant = queue.Next(t.rank, t.epoch);
      if (grant) {
        CATCH_REQUIRE(grant->epoch <= t.epoch);
        t.held.push_back(*grant);
        return true;
      }
      ++t.epoch;  // out of this epoch: move on
    }
    return false;
  };
  bool busy = true;
  while (busy) {
    busy = false;
    // Both hold their chunks at the same time, then train them.
    for (Trainer& t : trainers) {
      for (int i = 0; i < t.chunks_per_round; ++i) busy = take(t) || busy;
    }
    for (Trainer& t : trainers) {
      for (const Grant& grant : t.held) {
        for (uint64_t s = grant.begin; s < grant.end; ++s) ++coverage[grant.epoch][s];
        CATCH_REQUIRE(queue.Complete(t.rank, grant.chunk));
        ++t.trained;
      }
      t.held.clear();
    }
  }
  for (uint32_t epoch = 0; epoch < epochs; ++epoch) {
    CATCH_INFO("epoch " << epoch);
    CATCH_CHECK(queue.EpochComplete(epoch));
    for (uint64_t s = 0; s < samples; ++s) CATCH_REQUIRE(coverage[epoch][s] == 1);
  }
  CATCH_CHECK(trainers[0].trained + trainers[1].trained ==
              static_cast<int>(epochs * queue.chunks_per_epoch()));
  CATCH_CHECK(trainers[0].trained > 2 * trainers[1].trained);
  CATCH_CHECK(queue.completed_samples() == samples * epochs);
}

CATCH_TEST_CASE("Complete refuses chunks the trainer does not hold", "[scheduler][chunk_queue]") {
  ChunkQueue queue(1000, 100, 2);
  const Grant mine = NextOrFail(queue, 0, 0);
  const Grant other = NextOrFail(queue, 1, 0);
  CATCH_CHECK_FALSE(queue.Complete(1, mine.chunk));                // someone else's
  CATCH_CHECK_FALSE(queue.Complete(0, other.chunk + 1));           // never handed out
  CATCH_CHECK_FALSE(queue.Complete(0, queue.chunks_per_epoch()));  // an epoch not started
  CATCH_CHECK_FALSE(queue.Complete(0, 1000000));                   // beyond every epoch
  CATCH_CHECK(queue.completed_samples() == 0);
  CATCH_CHECK(queue.Complete(0, mine.chunk));
  CATCH_CHECK_FALSE(queue.Complete(0, mine.chunk));  // twice
  CATCH_CHECK(queue.completed_samples() == 100);
  CATCH_CHECK(queue.Complete(1, other.chunk));
  CATCH_CHECK(queue.completed_samples() == 200);
}

CATCH_TEST_CASE("A dead trainer's chunks go back to the front, before any later epoch",
                "[scheduler][chunk_queue]") {
  ChunkQueue queue(1000, 100, 3);  // 10 chunks per epoch
  CATCH_SECTION("within an epoch, in their original order") {
    const Grant a0 = NextOrFail(queue, 0, 0);
    const Grant a1 = NextOrFail(queue, 0, 0);
    const Grant b = NextOrFail(queue, 1, 0);
    CATCH_CHECK(queue.Requeue(0) == 2);
    CATCH_CHECK(queue.Requeue(0) == 0);
    CATCH_CHECK_FALSE(queue.Complete(0, a0.chunk));  // no longer held by the dead trainer
    CATCH_CHECK(NextOrFail(queue, 1, 0).chunk == a0.chunk);
    CATCH_CHECK(NextOrFail(queue, 1, 0).chunk == a1.chunk);
    CATCH_CHECK(NextOrFail(queue, 1, 0).chunk == b.chunk + 1);
  }
  CATCH_SECTION("a chunk of an earlier epoch comes before the current one") {
    // Trainer 0 takes the last chunk of epoch 0; trainer 1 finishes the rest and moves on.
    for (int i = 0; i < 9; ++i) {
      const Grant g = NextOrFail(queue, 1, 0);
      CATCH_REQUIRE(queue.Complete(1, g.chunk));
    }
    const Grant held = NextOrFail(queue, 0, 0);
    CATCH_CHECK(held.chunk == 9);
    CATCH_CHECK_FALSE(queue.Next(1, 0).has_value());
    const Grant later = NextOrFail(queue, 1, 1);
    CATCH_CHECK(later.epoch == 1);
    CATCH_CHECK_FALSE(queue.EpochComplete(0));

    CATCH_CHECK(queue.Requeue(0) == 1);
    const Grant returned = NextOrFail(queue, 1, 1);
    CATCH_CHECK(returned.epoch == 0);
    CATCH_CHECK(returned.chunk == held.chunk);
    CATCH_CHECK(returned.begin == held.begin);
    CATCH_CHECK(returned.end == held.end);
    CATCH_CHECK_FALSE(queue.EpochComplete(0));
    CATCH_CHECK(queue.Complete(1, returned.chunk));
    CATCH_CHECK(queue.EpochComplete(0));
    // Then epoch 1 continues where it was.
    const Grant next = NextOrFail(queue, 1, 1);
    CATCH_CHECK(next.epoch == 1);
    CATCH_CHECK(next.chunk == later.chunk + 1);
  }
  CATCH_SECTION("chunks held in several epochs all come back") {
    const Grant first = NextOrFail(queue, 0, 0);
    for (int i = 0; i < 9; ++i) CATCH_REQUIRE(queue.Complete(1, NextOrFail(queue, 1, 0).chunk));
    const Grant second = NextOrFail(queue, 0, 1);
    CATCH_REQUIRE(second.epoch == 1);
    CATCH_CHECK(queue.Requeue(0) == 2);
    CATCH_CHECK(NextOrFail(queue, 2, 1).chunk == first.chunk);
    CATCH_CHECK(NextOrFail(queue, 2, 1).chunk == second.chunk);
  }
}

CATCH_TEST_CASE("An epoch is complete only when every chunk of it is", "[scheduler][chunk_queue]") {
  ChunkQueue queue(450, 100, 2);              // 5 chunks per epoch
  CATCH_CHECK_FALSE(queue.EpochComplete(0));  // not even started
  std::vector<Grant> grants;
  for (int i = 0; i < 5; ++i) grants.push_back(NextOrFail(queue, 0, 0));
  CATCH_CHECK_FALSE(queue.Next(0, 0).has_value());  // all handed out...
  CATCH_CHECK_FALSE(queue.EpochComplete(0));        // ...but none trained
  for (int i = 0; i < 4; ++i) CATCH_REQUIRE(queue.Complete(0, grants[i].chunk));
  CATCH_CHECK_FALSE(queue.EpochComplete(0));
  CATCH_CHECK(queue.completed_samples() == 400);
  CATCH_REQUIRE(queue.Complete(0, grants[4].chunk));
  CATCH_CHECK(queue.EpochComplete(0));
  CATCH_CHECK(queue.completed_samples() == 450);
  CATCH_CHECK_FALSE(queue.EpochComplete(1));
}

CATCH_TEST_CASE("Next beyond the last epoch returns nothing", "[scheduler][chunk_queue]") {
  ChunkQueue queue(300, 100, 2);
  CATCH_CHECK_FALSE(queue.Next(0, 2).has_value());
  CATCH_CHECK_FALSE(queue.Next(0, 100).has_value());
  CATCH_CHECK(queue.Next(0, 1).has_value());
}

CATCH_TEST_CASE("A restored data position hands out partly trained chunks first, from where they stopped",
                "[scheduler][chunk_queue][checkpoint]") {
  ChunkQueue queue(1000, 100, 2);
  for (uint32_t i = 0; i < 4; ++i) CATCH_REQUIRE(queue.Complete(0, NextOrFail(queue, 0, 0).chunk));
  const Grant held = NextOrFail(queue, 1, 0);  // chunk 4, held when the job goes back
  CATCH_CHECK(queue.Completed().size() == 1);
  CATCH_CHECK(queue.Completed()[0].chunks == std::vector<uint32_t>{0, 1, 2, 3});

  DataPosition position;
  position.completed = {{0, {0, 1, 3}}};
  position.partial = {{0, 2, 250}};  // chunk 2: positions 200..249 trained
  queue.Restore(position);
  CATCH_CHECK(queue.completed_samples() == 300);
  CATCH_CHECK_FALSE(queue.Complete(1, held.chunk));  // nobody holds anything after a restore
  const Grant first = NextOrFail(queue, 0, 0);
  CATCH_CHECK(first.chunk == 2);
  CATCH_CHECK(first.begin == 250);
  CATCH_CHECK(first.end == 300);
  std::vector<uint32_t> rest;
  while (auto grant = queue.Next(1, 0)) {
    rest.push_back(grant->chunk);
    CATCH_CHECK(grant->begin == grant->chunk * 100u);
    CATCH_REQUIRE(queue.Complete(1, grant->chunk));
  }
  CATCH_CHECK(rest == std::vector<uint32_t>{4, 5, 6, 7, 8, 9});
  CATCH_REQUIRE(queue.Complete(0, first.chunk));
  CATCH_CHECK(queue.EpochComplete(0));
  CATCH_CHECK(queue.completed_samples() == 1000);  // a partial chunk counts whole once done
}

}  // namespace
}  // namespace hetps
