// Exposure: whether a bound endpoint can be reached from other machines, and the warning a
// process prints when it listens there without CURVE (anyone who reaches the port can then read
// every gradient and speak the protocol). Pure functions apart from the log line; callable from
// any thread.
#pragma once

#include <string>

namespace hetps {

// True for endpoints only this machine can reach: tcp on 127.0.0.0/8 or [::1] (or "localhost"),
// ipc:// and inproc://. `endpoint` is best the one ZeroMQ reports after binding.
bool IsLoopbackOnly(const std::string& endpoint);

// Logs one loud warning naming `what` ("the scheduler", "server 1"), the endpoint and the risk
// when `bound` is reachable from other machines and `curve` is off; nothing otherwise. Returns
// whether it warned.
bool WarnIfExposed(const std::string& what, const std::string& bound, bool curve);

}  // namespace hetps
