// Refusals: why a process refused what a peer sent (wire::RefusalReason), counted per reason.
//
// A RefusalCounter is written by the thread that owns the socket the refusal came from and may be
// read from any thread (relaxed atomics); a RefusalTally is a plain copy of the counts, for
// heartbeats, the run summary and sums over processes.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include <flatbuffers/flatbuffers.h>

#include "messages_generated.h"

namespace hetps {

using Refusal = wire::RefusalReason;

constexpr size_t kRefusalReasons = static_cast<size_t>(wire::RefusalReason::MAX) + 1;

// The reason's name in logs and the run summary: "unverified", "oversized", "impostor",
// "unauthenticated", "over_limit", "unexpected", "invalid", "nonfinite", "late".
const char* RefusalName(Refusal reason);

struct RefusalTally {
  std::array<uint64_t, kRefusalReasons> counts{};

  uint64_t of(Refusal reason) const { return counts[static_cast<size_t>(reason)]; }
  uint64_t total() const;
  void Add(const RefusalTally& other);

  // Only the non-zero counts go on the wire.
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::RefusalCount>>> ToWire(
      flatbuffers::FlatBufferBuilder& fbb) const;
  // Counts of reasons this build does not know are ignored.
  static RefusalTally FromWire(const flatbuffers::Vector<flatbuffers::Offset<wire::RefusalCount>>* counts);
};

class RefusalCounter {
 public:
  // Counts one refusal; returns how many refusals (of any reason) there have been.
  uint64_t Add(Refusal reason);
  uint64_t total() const { return total_.load(std::memory_order_relaxed); }
  RefusalTally Snapshot() const;

 private:
  std::array<std::atomic<uint64_t>, kRefusalReasons> counts_{};
  std::atomic<uint64_t> total_{0};
};

// Whether the `count`-th refusal should be logged: the first ten, then at powers of two, so a
// flood cannot fill the disk.
bool ShouldLogRefusal(uint64_t count);

}  // namespace hetps
