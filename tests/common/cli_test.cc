// ParseFlags and FatalError: --version, "did you mean" for an unknown flag, endpoint options,
// and the exit codes (common/cli.h).
#include "common/cli.h"

#include <catch2/catch.hpp>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/version.h"

namespace hetps {
namespace {

using Catch::Matchers::Contains;

// ParseFlags over `args` (after the program's name), with what it wrote to stderr and stdout.
struct Parsed {
  int code = 0;
  std::string err, out;
};
Parsed Parse(CLI::App& app, std::vector<std::string> args) {
  args.insert(args.begin(), app.get_name());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  std::ostringstream err, out;
  std::streambuf* old_err = std::cerr.rdbuf(err.rdbuf());
  std::streambuf* old_out = std::cout.rdbuf(out.rdbuf());
  Parsed parsed;
  parsed.code = ParseFlags(app, static_cast<int>(argv.size()), argv.data());
  std::cerr.rdbuf(old_err);
  std::cout.rdbuf(old_out);
  parsed.err = err.str();
  parsed.out = out.str();
  return parsed;
}

struct Flags {
  std::string scheduler = "tcp://127.0.0.1:7400";
  int epochs = 1;
  bool verbose = false;
};
void AddFlags(CLI::App& app, Flags* flags) {
  AddEndpointOption(app, "--scheduler", &flags->scheduler, "Scheduler")->default_val(flags->scheduler);
  app.add_option("--epochs", flags->epochs, "Epochs");
  app.add_flag("-v,--verbose", flags->verbose, "Verbose");
}

CATCH_TEST_CASE("An unknown flag is named with the known flag nearest to it", "[common][cli]") {
  CLI::App app("test", "hetps-test");
  Flags flags;
  AddFlags(app, &flags);
  Parsed parsed = Parse(app, {"--epoch", "3", "--schedular=127.0.0.1:1"});
  CATCH_CHECK(parsed.code == kExitUsage);
  CATCH_CHECK_THAT(parsed.err, Contains("hetps-test: error: unknown flag --epoch; did you mean --epochs?"));
  CATCH_CHECK_THAT(parsed.err, Contains("unknown flag --schedular; did you mean --scheduler?"));
  CATCH_CHECK_THAT(parsed.err, Contains("Run 'hetps-test --help'"));

  CLI::App far("test", "hetps-test");
  AddFlags(far, &flags);
  parsed = Parse(far, {"--learning-rate", "3"});
  CATCH_CHECK(parsed.code == kExitUsage);
  CATCH_CHECK_THAT(parsed.err, Contains("unknown flag --learning-rate"));
  CATCH_CHECK_THAT(parsed.err, !Contains("did you mean"));
}

CATCH_TEST_CASE("An endpoint flag takes host:port as tcp:// and refuses a malformed one by name",
                "[common][cli]") {
  CLI::App app("test", "hetps-test");
  Flags flags;
  AddFlags(app, &flags);
  Parsed parsed = Parse(app, {"--scheduler", "127.0.0.1:7500"});
  CATCH_CHECK(parsed.code == -1);
  CATCH_CHECK(flags.scheduler == "tcp://127.0.0.1:7500");

  CLI::App bad("test", "hetps-test");
  AddFlags(bad, &flags);
  parsed = Parse(bad, {"--scheduler", "127.0.0.1"});
  CATCH_CHECK(parsed.code == kExitUsage);
  CATCH_CHECK_THAT(parsed.err, Contains("--scheduler: '127.0.0.1' has no port"));
}

CATCH_TEST_CASE("The version flag prints the version line and exits 0", "[common][cli]") {
  CLI::App app("test", "hetps-test");
  Flags flags;
  AddFlags(app, &flags);
  Parsed parsed = Parse(app, {"--version"});
  CATCH_CHECK(parsed.code == 0);
  CATCH_CHECK(parsed.out == VersionLine("hetps-test") + "\n");
  CATCH_CHECK_THAT(parsed.out, Contains(std::string("hetps-test ") + HetpsVersion()));
}

CATCH_TEST_CASE("A fatal error's exit code says whether running again can help", "[common][cli]") {
  std::ostringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  CATCH_CHECK(FatalError("hetps-test", Status::NotFound("missing data file x")) == kExitUsage);
  CATCH_CHECK(FatalError("hetps-test", Status::InvalidArgument("epochs: 0")) == kExitUsage);
  CATCH_CHECK(FatalError("hetps-test", Status::Aborted("the scheduler ended the job")) == kExitJobAborted);
  CATCH_CHECK(FatalError("hetps-test", Status::Unavailable("no answer")) == 1);
  CATCH_CHECK(FatalError("hetps-test", Status::Internal("out of memory")) == 1);
  std::cerr.rdbuf(old);
  CATCH_CHECK_THAT(err.str(), Contains("hetps-test: error: missing data file x\n"));
}

}  // namespace
}  // namespace hetps
