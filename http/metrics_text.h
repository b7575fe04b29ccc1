// The Prometheus text exposition (format 0.0.4) of a StatusSnapshot: what GET /metrics serves.
// Every family has # HELP and # TYPE; values are in base units (seconds, bytes, ratios);
// counters end in _total; per-member series carry the labels role, rank, host and device;
// histograms of seconds have the buckets of common/seconds_histogram.h.
// docs/operations.md lists every metric. Pure function; any thread.
#pragma once

#include <string>

#include "http/status_snapshot.h"

namespace hetps {

// Content-Type of the exposition.
inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string RenderMetrics(const StatusSnapshot& snapshot);

// `value` escaped for a label value: backslash, double quote and newline.
std::string EscapeLabelValue(const std::string& value);

// Upper bounds of the staleness histogram's buckets (+Inf follows); all below the servers' last
// count, which holds every staleness from its index up (ps/shard.h, kStalenessBuckets = 64).
inline constexpr uint64_t kStalenessBucketBounds[] = {0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48};

}  // namespace hetps
