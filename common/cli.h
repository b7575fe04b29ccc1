// Pieces shared by the command-line programs: flag parsing conventions (--version, "did you
// mean" for an unknown flag, endpoints), the exit codes and the one-line fatal error. Called
// from main() only.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "common/status.h"

namespace hetps {

// Adds --log-level (debug|info|warning|error, default info) to `app`, applied by ApplyLogLevel.
void AddLogLevelFlag(CLI::App& app, std::string* level);
void ApplyLogLevel(const std::string& level);

// Adds an option whose value is an endpoint to connect to or bind: after parsing, `*endpoint`
// holds it as common/endpoint.h's NormalizeEndpoint gives it (host:port becomes tcp://host:port);
// a malformed one fails ParseFlags, naming the flag, the value and what is wrong with it.
CLI::Option* AddEndpointOption(CLI::App& app, const std::string& flag, std::string* endpoint,
                               const std::string& help);

// Exit codes of every hetps program (docs/errors.md, "Exit codes"); 0 is success and 1 a fatal
// error that running the program again may not repeat (a peer gone, a timeout, a device error).
// A usage or configuration error: a bad flag, job file, data file, model file or key; running
// the same command again fails the same way, so launchers do not restart a member for it.
constexpr int kExitUsage = 2;
// A member (server or trainer) whose job the scheduler ended as failed: the member itself is
// fine; the scheduler's exit status and log say what went wrong.
constexpr int kExitJobAborted = 3;

// Parses argv with CLI11, adding --version (prints common/version.h's VersionLine for the app's
// name and exits 0) unless the app has one. Returns -1 to go on, otherwise the exit code main()
// should return: 0 after --help or --version, kExitUsage after an unknown or invalid flag (the
// message names the flag; for an unknown one, the known flag nearest to it if any is near).
int ParseFlags(CLI::App& app, int argc, char** argv);

// Prints "<program>: error: <message>" to stderr and returns the exit code: kExitJobAborted for
// an Aborted status, kExitUsage for InvalidArgument and NotFound (a bad value from the user or a
// file that is not there), 1 otherwise.
int FatalError(const std::string& program, const Status& status);

}  // namespace hetps
