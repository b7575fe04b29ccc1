// The run directory: where a job's outputs go unless the job names a place of its own. Every
// scheduler has one (--run-dir, default runs/<date-time> under its working directory), so that a
// job started by hand, by sbatch or by Kubernetes leaves its summary, its trained model and its
// checkpoints as one started by the launchers does.
//
// The paths it supplies belong to the run, not to the job: a checkpoint stores the job without
// them (WithoutRunPaths), so that a resumed run writes into a directory of its own and never over
// its parent's files. Paths the job gave itself are the job's and stay across a resume. Pure
// functions but CreateRunDir, which writes; called on the scheduler's main thread.
#pragma once

#include <string>

#include "common/job_config.h"
#include "common/status.h"

namespace hetps {

struct RunDirectory {
  std::string path;  // empty: the scheduler has none (a Scheduler in a test, say)
  // The job's fields this directory supplied, because the job left them empty.
  bool summary = false;      // summary: PATH/summary.json
  bool model = false;        // model_out: PATH/model.safetensors
  bool checkpoints = false;  // checkpoint.dir: PATH/checkpoints
};

// runs/<YYYYmmdd-HHMMSS> under `parent` (empty: the working directory), with -2, -3, ... added when
// a directory of that name exists already.
std::string DefaultRunDir(const std::string& parent = "");

// Fills the job's empty output paths with places in `dir`: the summary and the model always, the
// checkpoints when `checkpoints` is true and the job's mode is not auto (auto's diloco phase
// cannot be checkpointed, so checkpoints would keep it out of that phase: docs/modes.md).
RunDirectory FillFromRunDir(const std::string& dir, bool checkpoints, JobOptions* job);

// The job without the paths `run` supplied: what a checkpoint stores.
JobOptions WithoutRunPaths(const JobOptions& job, const RunDirectory& run);

// Creates the directory and writes job.yaml in it (the job as resolved, and, for a resumed run,
// the checkpoint it continues: its parent), so that what ran is on record from the start.
Status CreateRunDir(const RunDirectory& run, const JobOptions& job, const std::string& resumed_from);

}  // namespace hetps
