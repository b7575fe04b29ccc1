#include "common/cli.h"

#include <iostream>

#include "common/logging.h"

namespace hetps {

void AddLogLevelFlag(CLI::App& app, std::string* level) {
  app.add_option("--log-level", *level, "Log verbosity: debug, info, warning, error")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}))
      ->default_val("info");
}

void ApplyLogLevel(const std::string& level) {
  LogLevel parsed = LogLevel::kInfo;
  if (ParseLogLevel(level, &parsed)) SetLogLevel(parsed);
}

int ParseFlags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << app.get_name() << ": error: " << e.what() << "\n"
              << "Run '" << app.get_name() << " --help' for the list of flags.\n";
    return 2;
  }
  return -1;
}

int FatalError(const std::string& program, const Status& status) {
  std::cerr << program << ": error: " << status.message() << std::endl;
  return status.code() == Status::Code::kAborted ? kExitJobAborted : 1;
}

}  // namespace hetps
