#include "common/refusals.h"

namespace hetps {

const char* RefusalName(Refusal reason) {
  switch (reason) {
    case Refusal::Unverified:
      return "unverified";
    case Refusal::Oversized:
      return "oversized";
    case Refusal::Impostor:
      return "impostor";
    case Refusal::Unauthenticated:
      return "unauthenticated";
    case Refusal::OverLimit:
      return "over_limit";
    case Refusal::Unexpected:
      return "unexpected";
    case Refusal::Invalid:
      return "invalid";
    case Refusal::NonFinite:
      return "nonfinite";
    case Refusal::Late:
      return "late";
  }
  return "unknown";
}

uint64_t RefusalTally::total() const {
  uint64_t sum = 0;
  for (uint64_t c : counts) sum += c;
  return sum;
}

void RefusalTally::Add(const RefusalTally& other) {
  for (size_t i = 0; i < counts.size(); ++i) counts[i] += other.counts[i];
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::RefusalCount>>> RefusalTally::ToWire(
    flatbuffers::FlatBufferBuilder& fbb) const {
  std::vector<flatbuffers::Offset<wire::RefusalCount>> entries;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) entries.push_back(wire::CreateRefusalCount(fbb, static_cast<Refusal>(i), counts[i]));
  }
  return fbb.CreateVector(entries);
}

RefusalTally RefusalTally::FromWire(
    const flatbuffers::Vector<flatbuffers::Offset<wire::RefusalCount>>* counts) {
  RefusalTally tally;
  if (counts == nullptr) return tally;
  for (const wire::RefusalCount* entry : *counts) {
    const auto index = static_cast<size_t>(entry->reason());
    if (index < tally.counts.size()) tally.counts[index] += entry->count();
  }
  return tally;
}

uint64_t RefusalCounter::Add(Refusal reason) {
  counts_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  return total_.fetch_add(1, std::memory_order_relaxed) + 1;
}

RefusalTally RefusalCounter::Snapshot() const {
  RefusalTally tally;
  for (size_t i = 0; i < counts_.size(); ++i) tally.counts[i] = counts_[i].load(std::memory_order_relaxed);
  return tally;
}

bool ShouldLogRefusal(uint64_t count) {
  return count <= 10 || (count & (count - 1)) == 0;
}

}  // namespace hetps
