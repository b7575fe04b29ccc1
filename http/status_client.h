// Fetching a running job's status document: from the scheduler's control endpoint (a
// StatusRequest over ZeroMQ, no joining) or from its HTTP endpoint (GET /status). Used by
// hetps-status; any thread, each call with its own sockets.
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"
#include "common/transport.h"

namespace hetps {

// The JSON of `endpoint` (tcp://host:port), asked over CURVE when `curve` is on (its key pair,
// and server_key the scheduler's public key). FailedPrecondition naming the endpoint and why
// when the scheduler refuses the connection's handshake (it requires CURVE and `curve` is off,
// or the other way round; it does not admit the key; server_key is not its key); Unavailable
// naming the endpoint when no answer comes within `timeout` (no scheduler there).
Result<std::string> FetchStatusOverZmq(const std::string& endpoint, std::chrono::milliseconds timeout,
                                       const CurveKeys& curve = {});

// The body of GET /status at `url` (http://host:port[/...]). Unavailable naming the URL when it
// cannot be reached or answers other than 200.
Result<std::string> FetchStatusOverHttp(const std::string& url, std::chrono::milliseconds timeout);

}  // namespace hetps
