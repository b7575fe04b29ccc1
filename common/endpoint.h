// Endpoints as users type them: `host:port` without a scheme means tcp://host:port, and a
// malformed endpoint is refused where it enters (a flag, a job-file key) with a message naming
// its value and what is wrong with it, instead of ZeroMQ's "Invalid argument" at the first
// connect. Pure functions; any thread.
#pragma once

#include <string>

#include "common/status.h"

namespace hetps {

// The ZeroMQ endpoint `value` stands for, to connect to or bind:
//  - "host:port" and "[ipv6]:port" become "tcp://host:port" (port 0..65535, or * to bind any);
//  - "tcp://host:port" is checked the same way and kept;
//  - "ipc://path" and "inproc://name" are kept (a path or name must follow the scheme).
// InvalidArgument for anything else (empty, no host, no port, a port out of range or not a
// number, a scheme other than tcp, ipc and inproc), naming the value but not where it came from:
// "'127.0.0.1' has no port; give HOST:PORT or tcp://HOST:PORT". Callers add where
// (Status::WithContext("--scheduler")); common/cli.h's AddEndpointOption does for flags.
Result<std::string> NormalizeEndpoint(const std::string& value);

}  // namespace hetps
