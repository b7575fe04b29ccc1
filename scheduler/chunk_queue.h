// ChunkQueue: the data chunks of every epoch, handed to trainers on request, so a faster trainer
// simply takes more of each epoch.
//
// Chunk c of an epoch covers positions [c * chunk_samples, (c + 1) * chunk_samples) of that
// epoch's sample permutation (common/permutation.h), which each trainer computes itself. Chunks
// held by a trainer that dies go back to the front of the queue, and are handed out before any
// chunk of a later epoch, so every sample of every epoch is trained once. Owned by the
// scheduler's loop thread; not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "checkpoint/manifest.h"

namespace hetps {

class ChunkQueue {
 public:
  struct Grant {
    uint32_t epoch = 0;
    uint32_t chunk = 0;  // id unique across epochs: epoch * chunks_per_epoch() + index
    uint64_t begin = 0;  // positions in the epoch's permutation
    uint64_t end = 0;
  };

  ChunkQueue(uint64_t samples, uint32_t chunk_samples, uint32_t epochs);

  // The next chunk for `trainer`, which is working on `epoch`: first any returned chunk of an
  // epoch <= `epoch`, then the next chunk of `epoch`. std::nullopt when neither is left (the
  // trainer has run out of `epoch`), or when `epoch` is beyond the last epoch.
  std::optional<Grant> Next(uint32_t trainer, uint32_t epoch);

  // `trainer` has trained every sample of `chunk`. False (and nothing changes) when the chunk is
  // not held by that trainer.
  bool Complete(uint32_t trainer, uint32_t chunk);
  // Whether `trainer` holds `chunk` now (granted and not completed), and whether `chunk` is
  // completed: what a trainer's data position may name.
  bool Holds(uint32_t trainer, uint32_t chunk) const;
  bool IsComplete(uint32_t chunk) const;
  // The samples of the chunks `trainer` holds now, as granted (a partly trained chunk restored
  // from a checkpoint from its resume position).
  uint64_t HeldSamples(uint32_t trainer) const;

  // `trainer` is gone: the chunks it held go back to the front of their epochs' queues.
  // Returns how many.
  size_t Requeue(uint32_t trainer);

  // Every chunk of `epoch` has been completed.
  bool EpochComplete(uint32_t epoch) const;

  // The chunks completed so far, per epoch (a DataPosition's `completed`; epoch and the rest are
  // left for the caller).
  std::vector<DataPosition::EpochChunks> Completed() const;
  // Starts over from `position`: its completed chunks are done, its partial ones are handed out
  // first from their next position, and every other chunk is pending again; no chunk is held.
  void Restore(const DataPosition& position);

  uint32_t chunks_per_epoch() const { return chunks_per_epoch_; }
  uint32_t epochs() const { return epochs_; }
  uint64_t samples() const { return samples_; }
  // Samples in completed chunks, over all epochs.
  uint64_t completed_samples() const { return completed_samples_; }

 private:
  struct EpochState {
    std::deque<uint32_t> pending;       // chunk indices not yet handed out
    std::map<uint32_t, uint32_t> held;  // chunk index -> trainer
    std::set<uint32_t> completed;
    std::map<uint32_t, uint64_t> resume_at;  // chunk index -> first position not yet trained
  };

  EpochState& State(uint32_t epoch);
  // The whole chunk.
  Grant MakeGrant(uint32_t epoch, uint32_t index) const;
  // What is left of it to hand out (a partly trained chunk restored from a checkpoint starts at
  // its resume position).
  Grant GrantFrom(uint32_t epoch, const EpochState& state, uint32_t index) const;

  uint64_t samples_;
  uint32_t chunk_samples_;
  uint32_t epochs_;
  uint32_t chunks_per_epoch_;
  std::map<uint32_t, EpochState> epochs_state_;  // created when first asked for
  uint64_t completed_samples_ = 0;
};

}  // namespace hetps
