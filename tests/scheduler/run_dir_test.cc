#include "scheduler/run_dir.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "checkpoint/file_system.h"

namespace hetps {
namespace {

CATCH_TEST_CASE(
    "The run directory places what the job leaves unplaced, and a checkpoint's job keeps only the job's own",
    "[scheduler][run_dir]") {
  JobOptions job;
  job.mode = ConsistencyMode::kSync;
  job.model_out = "/data/mine.safetensors";  // the job's own: kept, and kept in its checkpoints
  const RunDirectory run = FillFromRunDir("runs/a", /*checkpoints=*/true, &job);
  CATCH_CHECK(job.summary == "runs/a/summary.json");
  CATCH_CHECK(job.model_out == "/data/mine.safetensors");
  CATCH_CHECK(job.checkpoint.dir == "runs/a/checkpoints");
  CATCH_CHECK(run.summary);
  CATCH_CHECK_FALSE(run.model);
  CATCH_CHECK(run.checkpoints);

  const JobOptions stored = WithoutRunPaths(job, run);
  CATCH_CHECK(stored.summary.empty());
  CATCH_CHECK(stored.checkpoint.dir.empty());
  CATCH_CHECK(stored.model_out == "/data/mine.safetensors");
  // A resumed run, from that job, places them in its own directory.
  JobOptions resumed = stored;
  FillFromRunDir("runs/b", true, &resumed);
  CATCH_CHECK(resumed.summary == "runs/b/summary.json");
  CATCH_CHECK(resumed.checkpoint.dir == "runs/b/checkpoints");
}

CATCH_TEST_CASE("The run directory takes no checkpoints when told not to, nor in mode auto",
                "[scheduler][run_dir]") {
  JobOptions job;
  job.mode = ConsistencyMode::kSync;
  CATCH_CHECK_FALSE(FillFromRunDir("r", /*checkpoints=*/false, &job).checkpoints);
  CATCH_CHECK(job.checkpoint.dir.empty());
  CATCH_CHECK(job.model_out == "r/model.safetensors");

  JobOptions automatic;
  automatic.mode = ConsistencyMode::kAuto;
  CATCH_CHECK_FALSE(FillFromRunDir("r", true, &automatic).checkpoints);
  CATCH_CHECK(automatic.checkpoint.dir.empty());
  // Named by the job, auto checkpoints all the same (and stays out of diloco: docs/modes.md).
  automatic.checkpoint.dir = "ck";
  CATCH_CHECK_FALSE(FillFromRunDir("r", true, &automatic).checkpoints);
  CATCH_CHECK(automatic.checkpoint.dir == "ck");
}

CATCH_TEST_CASE("A default run directory is new, and job.yaml in it names the resumed checkpoint",
                "[scheduler][run_dir]") {
  const std::filesystem::path parent =
      std::filesystem::temp_directory_path() / ("hetps-run-dir-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(parent);
  const std::string first = DefaultRunDir(parent.string());
  CATCH_CHECK(first.rfind((parent / "runs").string() + "/", 0) == 0);
  JobOptions job;
  RunDirectory run = FillFromRunDir(first, true, &job);
  CATCH_REQUIRE(CreateRunDir(run, job, "").ok());
  // Within the same second the next is another.
  const std::string second = DefaultRunDir(parent.string());
  CATCH_CHECK(second != first);
  run = FillFromRunDir(second, true, &job);
  CATCH_REQUIRE(CreateRunDir(run, job, first + "/checkpoints/checkpoint-000001").ok());
  auto text = PosixFileSystem().ReadFile(second + "/job.yaml");
  CATCH_REQUIRE(text.ok());
  CATCH_CHECK(text->find("# Resumed from the checkpoint " + first + "/checkpoints/checkpoint-000001") !=
              std::string::npos);
  CATCH_CHECK(text->find("\nmodel: " + job.model + "\n") != std::string::npos);
  // A path that cannot be a directory is refused, naming the flag.
  const Status refused = CreateRunDir(RunDirectory{second + "/job.yaml/x"}, job, "");
  CATCH_CHECK_FALSE(refused.ok());
  CATCH_CHECK(refused.message().find("--run-dir") != std::string::npos);
  std::filesystem::remove_all(parent);
}

}  // namespace
}  // namespace hetps
