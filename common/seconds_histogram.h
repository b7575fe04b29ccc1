// SecondsHistogram: durations counted in fixed buckets, with their exact sum — a server's round
// and apply seconds as it measures them (ps/), as its heartbeats carry them (wire::ServerStats)
// and as /metrics exports them (a Prometheus histogram). A plain value; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "messages_generated.h"

namespace hetps {

// Upper bounds of the buckets, in seconds; one more bucket holds every longer duration. From an
// optimizer step on a small partition (microseconds) to a sync round that waits for a slow
// trainer (seconds).
inline constexpr double kSecondsBucketBounds[] = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                                  0.0025,  0.005,    0.01,    0.025,  0.05,    0.1,    0.25,
                                                  0.5,     1,        2.5,     5,      10,      30,     60};
inline constexpr size_t kSecondsBuckets = std::size(kSecondsBucketBounds) + 1;

struct SecondsHistogram {
  // counts[i]: durations in (bound[i-1], bound[i]]; the last entry: those above the last bound.
  std::vector<uint64_t> counts = std::vector<uint64_t>(kSecondsBuckets, 0);
  double sum = 0;  // seconds, over every duration counted

  // Counts one duration; a negative or NaN one counts as 0.
  void Observe(double seconds);
  uint64_t count() const;

  // The counts up to the last non-zero one, and the sum.
  flatbuffers::Offset<wire::SecondsHistogram> ToWire(flatbuffers::FlatBufferBuilder& fbb) const;
  // Counts beyond kSecondsBuckets are dropped (report_checks.h refuses them first); absent: empty.
  static SecondsHistogram FromWire(const wire::SecondsHistogram* histogram);
};

}  // namespace hetps
