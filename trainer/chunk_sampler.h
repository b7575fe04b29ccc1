// ChunkSampler: the trainer's side of data chunks on demand. Asks the scheduler for the next chunk
// of the epoch when it runs short, turns chunks into sample indices through the epoch's
// permutation, and reports finished chunks so the scheduler can tell when an epoch is complete
// (and give a dead trainer's unfinished chunks to others).
//
// Torch-free; owned by the trainer's loop thread together with the ControlChannel it uses.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "common/control_channel.h"
#include "common/status.h"

namespace hetps {

class ChunkSampler {
 public:
  // `train_samples`: the epoch's size; `seed`: the job's seed (fixes every epoch's order).
  ChunkSampler(ControlChannel* control, Sender* sender, uint64_t train_samples, uint64_t seed,
               std::chrono::milliseconds request_timeout);

  // Up to `count` sample indices to train next while working on `epoch`, before step `clock`.
  // Fewer (possibly none) only when the scheduler has no chunk of `epoch` left for this trainer.
  // A chunk counts as finished at the call after the one that handed out its last sample, i.e.
  // once the batch holding it has been trained.
  Result<std::vector<int64_t>> Next(uint32_t epoch, size_t count, uint64_t clock);

  // The `count` sample indices the next call of Next() will hand out, when the chunks held
  // cover them; none otherwise (Next() will ask the scheduler for more). Changes nothing.
  std::vector<int64_t> Peek(size_t count);

  // Reports the chunks finished so far and tells whether every chunk of `epoch` has been trained
  // (by any trainer). A trainer that has run out of its last epoch asks until it is. A chunk
  // granted meanwhile (one a trainer that died or left gave back) is held: false, and Next()
  // hands it out.
  Result<bool> FlushAndCheckComplete(uint32_t epoch, uint64_t clock);

  // Where this trainer's data stands between two calls of Next(): the chunks whose every sample
  // has been handed out (so trained, once the step that took them is done) but not yet reported
  // to the scheduler, and for each chunk still held the first position not handed out.
  struct Position {
    std::vector<uint32_t> finished;  // chunk ids, as in ChunkGrant
    std::vector<uint32_t> held;
    std::vector<uint64_t> held_next;
  };
  Position CurrentPosition() const;
  // Forgets every chunk held or not yet reported: the scheduler went back to a checkpoint's data
  // position, which it hands out again.
  void Reset();

  // Called with the sample indices of each chunk as it is granted (served data fetches them
  // then); its error is Next()'s.
  void set_on_grant(std::function<Status(uint32_t epoch, const int64_t* indices, size_t count)> on_grant) {
    on_grant_ = std::move(on_grant);
  }

  // Maps each sample of `epoch`'s order to the index handed out (Next, Peek, on_grant): token data
  // hands out each window's first token position, which moves with the epoch (token_data.h).
  // Unset: the samples themselves. Set it before the first call of Next().
  void set_sample_map(std::function<int64_t(uint32_t epoch, int64_t sample)> sample_map) {
    sample_map_ = std::move(sample_map);
  }

  uint64_t samples_handed_out() const { return handed_out_; }
  // Whether chunks with untrained samples are held.
  bool holds_chunks() const { return !held_.empty(); }

 private:
  struct Held {
    uint32_t epoch = 0;
    uint32_t chunk = 0;
    uint64_t next = 0;  // position in the epoch's permutation
    uint64_t end = 0;
  };

  // Asks for another chunk of `epoch` (at step `clock`); false when the scheduler has none.
  Result<bool> Request(uint32_t epoch, uint64_t clock);
  bool last_epoch_complete_ = false;  // from the last "exhausted" answer
  const std::vector<int64_t>& Permutation(uint32_t epoch);

  ControlChannel* control_;
  Sender* sender_;
  uint64_t train_samples_;
  uint64_t seed_;
  std::chrono::milliseconds request_timeout_;
  std::deque<Held> held_;
  std::vector<uint32_t> finished_;  // reported at the next request
  std::vector<uint32_t> drained_;   // handed out entirely by the previous call
  std::map<uint32_t, std::vector<int64_t>> permutations_;
  uint64_t handed_out_ = 0;
  std::function<Status(uint32_t, const int64_t*, size_t)> on_grant_;
  std::function<int64_t(uint32_t, int64_t)> sample_map_;
};

}  // namespace hetps
