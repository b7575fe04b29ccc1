#include "common/seconds_histogram.h"

#include <algorithm>

namespace hetps {

void SecondsHistogram::Observe(double seconds) {
  if (!(seconds > 0)) seconds = 0;
  const auto bucket = static_cast<size_t>(
      std::lower_bound(std::begin(kSecondsBucketBounds), std::end(kSecondsBucketBounds), seconds) -
      std::begin(kSecondsBucketBounds));
  ++counts[bucket];
  sum += seconds;
}

uint64_t SecondsHistogram::count() const {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  return total;
}

flatbuffers::Offset<wire::SecondsHistogram> SecondsHistogram::ToWire(
    flatbuffers::FlatBufferBuilder& fbb) const {
  size_t used = counts.size();
  while (used > 0 && counts[used - 1] == 0) --used;
  return wire::CreateSecondsHistogram(fbb, fbb.CreateVector(counts.data(), used), sum);
}

SecondsHistogram SecondsHistogram::FromWire(const wire::SecondsHistogram* histogram) {
  SecondsHistogram out;
  if (histogram == nullptr) return out;
  if (const auto* counts = histogram->counts()) {
    const size_t used = std::min<size_t>(counts->size(), kSecondsBuckets);
    std::copy(counts->begin(), counts->begin() + used, out.counts.begin());
  }
  out.sum = histogram->sum();
  return out;
}

}  // namespace hetps
