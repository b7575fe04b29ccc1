#include "common/cli.h"

#include <functional>
#include <iostream>
#include <vector>

#include "common/endpoint.h"
#include "common/logging.h"
#include "common/nearest_name.h"
#include "common/version.h"

namespace hetps {
namespace {

// Every flag name of `app` and of its subcommands, with their dashes ("--epochs", "-h").
std::vector<std::string> FlagNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  for (const CLI::App* sub : app.get_subcommands()) {
    for (const std::string& name : FlagNames(*sub)) names.push_back(name);
  }
  return names;
}

std::string WithoutDashes(const std::string& flag) {
  const size_t start = flag.find_first_not_of('-');
  return start == std::string::npos ? std::string() : flag.substr(start);
}

// The arguments CLI11 did not expect, each on a line of its own, with the nearest known flag.
void ReportExtras(const CLI::App& app, const CLI::ExtrasError& error) {
  const std::vector<std::string> extras = app.remaining(true);
  if (extras.empty()) {
    std::cerr << app.get_name() << ": error: " << error.what() << "\n";
    return;
  }
  const std::vector<std::string> known = FlagNames(app);
  for (const std::string& extra : extras) {
    if (extra.size() < 2 || extra[0] != '-') {
      std::cerr << app.get_name() << ": error: unexpected argument '" << extra << "'\n";
      continue;
    }
    const std::string flag = extra.substr(0, extra.find('='));
    std::cerr << app.get_name() << ": error: unknown flag " << flag;
    // Compared without their dashes, so that -x is not taken for a typo of -h.
    std::vector<std::string> bare;
    for (const std::string& name : known) bare.push_back(WithoutDashes(name));
    const std::string nearest = NearestName(WithoutDashes(flag), bare);
    for (size_t i = 0; i < bare.size() && !nearest.empty(); ++i) {
      if (bare[i] != nearest) continue;
      std::cerr << "; did you mean " << known[i] << "?";
      break;
    }
    std::cerr << "\n";
  }
}

}  // namespace

void AddLogLevelFlag(CLI::App& app, std::string* level) {
  app.add_option("--log-level", *level, "Log verbosity: debug, info, warning, error")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}))
      ->default_val("info");
}

void ApplyLogLevel(const std::string& level) {
  LogLevel parsed = LogLevel::kInfo;
  if (ParseLogLevel(level, &parsed)) SetLogLevel(parsed);
}

CLI::Option* AddEndpointOption(CLI::App& app, const std::string& flag, std::string* endpoint,
                               const std::string& help) {
  // CLI11 puts the flag's name before the message of a failed transform.
  CLI::Validator normalize(
      [](std::string& value) {
        auto normalized = NormalizeEndpoint(value);
        if (!normalized.ok()) return normalized.status().message();
        value = *normalized;
        return std::string();
      },
      "ENDPOINT");
  return app.add_option(flag, *endpoint, help)->transform(normalize)->type_name("ENDPOINT");
}

int ParseFlags(CLI::App& app, int argc, char** argv) {
  if (app.get_option_no_throw("--version") == nullptr) {
    const std::string program = app.get_name();
    app.set_version_flag("--version",
                         std::function<std::string()>([program] { return VersionLine(program); }),
                         "Print the version (and the LibTorch the program was built with) and exit");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    ReportExtras(app, e);
    std::cerr << "Run '" << app.get_name() << " --help' for the list of flags.\n";
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    std::cerr << app.get_name() << ": error: " << e.what() << "\n"
              << "Run '" << app.get_name() << " --help' for the list of flags.\n";
    return kExitUsage;
  }
  return -1;
}

int FatalError(const std::string& program, const Status& status) {
  std::cerr << program << ": error: " << status.message() << std::endl;
  switch (status.code()) {
    case Status::Code::kAborted:
      return kExitJobAborted;
    case Status::Code::kInvalidArgument:
    case Status::Code::kNotFound:
      return kExitUsage;
    default:
      return 1;
  }
}

}  // namespace hetps
