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

// Prints "<program>: error: <message>" to stderr and returns the exit code 1.
int FatalError(const std::string& program, const Status& status);

}  // namespace hetps
