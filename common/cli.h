// Pieces shared by the three command-line programs: flag parsing conventions and the one-line
// fatal error. Called from main() only.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "common/status.h"

namespace hetps {

// Adds --log-level (debug|info|warning|error, default info) to `app`, applied by ApplyLogLevel.
void AddLogLevelFlag(CLI::App& app, std::string* level);
void ApplyLogLevel(const std::string& level);

// Parses argv with CLI11. Returns -1 to go on, otherwise the exit code main() should return:
// 0 after --help, 2 after an unknown or invalid flag (the message names the flag).
int ParseFlags(CLI::App& app, int argc, char** argv);

// Exit code of a member (server or trainer) whose job the scheduler ended as failed: the member
// itself is fine; the scheduler's exit status and log say what went wrong.
constexpr int kExitJobAborted = 3;

// Prints "<program>: error: <message>" to stderr and returns the exit code: kExitJobAborted for
// an Aborted status, 1 otherwise.
int FatalError(const std::string& program, const Status& status);

}  // namespace hetps
