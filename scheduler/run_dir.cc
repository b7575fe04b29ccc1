#include "scheduler/run_dir.h"

#include <ctime>

#include "checkpoint/file_system.h"

namespace hetps {

std::string DefaultRunDir(const std::string& parent) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char name[32];
  std::strftime(name, sizeof(name), "%Y%m%d-%H%M%S", &local);
  const std::string base = JoinPath(JoinPath(parent, "runs"), name);
  std::string path = base;
  for (int n = 2; PosixFileSystem().Exists(path); ++n) path = base + "-" + std::to_string(n);
  return path;
}

RunDirectory FillFromRunDir(const std::string& dir, bool checkpoints, JobOptions* job) {
  RunDirectory run;
  run.path = dir;
  if (job->summary.empty()) {
    job->summary = JoinPath(dir, "summary.json");
    run.summary = true;
  }
  if (job->model_out.empty()) {
    job->model_out = JoinPath(dir, "model.safetensors");
    run.model = true;
  }
  if (checkpoints && job->checkpoint.dir.empty() && job->mode != ConsistencyMode::kAuto) {
    job->checkpoint.dir = JoinPath(dir, "checkpoints");
    run.checkpoints = true;
  }
  return run;
}

JobOptions WithoutRunPaths(const JobOptions& job, const RunDirectory& run) {
  JobOptions stored = job;
  if (run.summary) stored.summary.clear();
  if (run.model) stored.model_out.clear();
  if (run.checkpoints) stored.checkpoint.dir.clear();
  return stored;
}

Status CreateRunDir(const RunDirectory& run, const JobOptions& job, const std::string& resumed_from) {
  FileSystem& fs = PosixFileSystem();
  Status made = fs.MakeDirs(run.path);
  if (!made.ok()) return made.WithContext("--run-dir");
  std::string text = "# The job of this run, as the scheduler resolved it.\n";
  if (!resumed_from.empty()) text += "# Resumed from the checkpoint " + resumed_from + "\n";
  text += JobOptionsToYaml(job);
  return WriteFileAtomically(fs, JoinPath(run.path, "job.yaml"), text).WithContext("--run-dir");
}

}  // namespace hetps
