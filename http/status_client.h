// Fetching a running job's status document: from the scheduler's control endpoint (a
// StatusRequest over ZeroMQ, no joining) or from its HTTP endpoint (GET /status). Used by
// hetps-status; any thread, each call with its own sockets.
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"

namespace hetps {

// The JSON of `endpoint` (tcp://host:port). Unavailable naming the endpoint when no answer comes
// within `timeout` (no scheduler there, or one that requires CURVE).
Result<std::string> FetchStatusOverZmq(const std::string& endpoint, std::chrono::milliseconds timeout);

// The body of GET /status at `url` (http://host:port[/...]). Unavailable naming the URL when it
// cannot be reached or answers other than 200.
Result<std::string> FetchStatusOverHttp(const std::string& url, std::chrono::milliseconds timeout);

}  // namespace hetps
