// RunSummary: what a finished (or failed) job reports, written as JSON at the path the job names.
// A plain value filled by the scheduler's loop thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/refusals.h"
#include "common/status.h"

namespace hetps {

struct Evaluation {
  uint32_t epoch = 0;
  bool final = false;
  uint64_t weight_version = 0;
  double test_loss = 0;
  double test_accuracy = 0;
  uint64_t test_samples = 0;
  double wall_seconds = 0;       // since training started, when the weights were taken
  uint64_t samples_trained = 0;  // by then, over all trainers
  uint32_t snapshot = 0;         // > 0: a periodic evaluation (eval_interval_samples)
};

struct ServerSummary {
  uint32_t rank = 0;
  std::string endpoint;
  uint64_t version = 0;
  uint64_t pushes = 0;
  uint64_t pulls = 0;
  uint64_t bad_messages = 0;
  uint64_t rounds = 0;
  RefusalTally refusals;
};

struct TrainerSummary {
  uint32_t rank = 0;
  std::string host;
  std::string device;
  uint32_t batch_size = 0;
  uint64_t steps = 0;
  uint64_t samples = 0;
  bool alive = true;
};

// The staleness of applied pushes, from per-value counts.
struct StalenessSummary {
  uint64_t pushes = 0;
  double mean = 0;
  uint64_t p50 = 0;
  uint64_t p99 = 0;
  uint64_t max = 0;
};

// Summarises `counts` (counts[k] pushes had staleness k; the last entry also counts every larger
// staleness, which the mean and percentiles then take as that entry's value) and the true `max`.
StalenessSummary SummarizeStaleness(const std::vector<uint64_t>& counts, uint64_t max);

struct RunSummary {
  bool ok = false;
  std::string error;  // why the job failed
  std::string mode;
  std::string model;
  std::string optimizer;
  uint32_t epochs = 0;
  uint32_t global_batch_size = 0;
  uint32_t servers = 0;
  uint32_t trainers = 0;
  double wall_seconds = 0;         // training start to the final evaluation
  double train_seconds = 0;        // training start to the last trainer's Done
  double samples_per_second = 0;   // all trainers' samples / train_seconds
  uint64_t samples_completed = 0;  // samples of data chunks reported trained, over all epochs
                                   // (epochs x samples per epoch once the job is complete)
  double final_test_loss = 0;
  double final_test_accuracy = 0;
  uint64_t weight_version = 0;
  StalenessSummary staleness;       // over every server's applied pushes
  uint64_t max_clock_gap = 0;       // largest clock gap between live trainers any server admitted
  std::vector<double> batch_share;  // per trainer: its fraction of the global batch at the end
  std::vector<Evaluation> evaluations;
  RefusalTally refusals;            // refused messages and connections: the scheduler's and every server's
  RefusalTally scheduler_refusals;  // the scheduler's own
  std::vector<ServerSummary> server_details;
  std::vector<TrainerSummary> trainer_details;

  std::string ToJson() const;
};

// Writes `json` to `path` atomically (temporary file, fsync, rename). IoError naming the path.
Status WriteFileAtomically(const std::string& path, const std::string& contents);

}  // namespace hetps
