// RunSummary: what a finished (or failed) job reports, written as JSON at the path the job names.
// A plain value filled by the scheduler's loop thread.
#pragma once

#include <cstdint>
#include <map>
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
  double test_accuracy = 0;  // classification only
  double test_r2 = 0;        // regression (loss mse) only: 1 - SSE / SST on the test set
  uint64_t test_samples = 0;
  uint64_t test_positions = 0;   // targets scored (token data: tokens); the loss is their mean
  double wall_seconds = 0;       // since training started, when the weights were taken
  double evaluated_seconds = 0;  // since training started, when the evaluation was reported
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
  double compute_samples_per_second = 0;  // its own speed: samples per second of step time, no waits
  double pace_samples_per_second = 0;     // by pace: compute and its own transfers (Progress.paced_seconds)
  bool joined_late = false;               // joined after training had started
  uint64_t first_step = 0;                // the step it started at (late joiners; 0 otherwise)
  bool left = false;                      // left on its own (Goodbye) before the end
  // mode diloco: inner steps in all and in its last round (`steps` counts its rounds), and the
  // tensor bytes it pushed and pulled.
  uint64_t inner_steps = 0;
  uint32_t last_round_inner_steps = 0;
  uint64_t bytes = 0;
  // Its seconds in steps (rounds), and the part of them it waited for the servers' weights.
  double step_seconds = 0;
  double wait_seconds = 0;
};

// A member lost during the job, and what it cost.
// A trainer the scheduler put out of the job for what it sent (nonfinite_limit steps in a row of
// NaN or infinite gradients), not for being lost.
struct Dropped {
  uint32_t trainer = 0;
  std::string reason;
};

// A trainer that a server's rule waited for too long (StallWatch): left out of `step`, or for
// the second time, dropped (then also in `dropped`).
struct Stall {
  uint32_t trainer = 0;
  std::string held = "step";  // what it held: "step" (a round or bound), or "evaluation"
  uint64_t step = 0;          // the step it did not push; for an evaluation, its clock
  double waited_seconds = 0;
  double limit_seconds = 0;
  bool dropped = false;
};

struct Failure {
  std::string role;  // "server" or "trainer"
  uint32_t rank = 0;
  std::string cause;               // e.g. "connection closed", "silent for more than 10000 ms"
  double at_seconds = 0;           // since training started, when it was noticed
  double detected_after_s = 0;     // from its last message to the scheduler noticing
  double recovery_seconds = 0;     // from noticing to training going on again (0: nothing stopped)
  uint64_t samples_retrained = 0;  // samples trained after the checkpoint restored, trained again
  uint64_t checkpoint = 0;         // the checkpoint restored; 0: none (initial weights, or none needed)
  bool recovered = false;          // training went on
};

// The job's checkpoints.
struct CheckpointSummary {
  std::string dir;                // empty: checkpoints were off
  uint64_t count = 0;             // committed in this run
  uint64_t last_id = 0;           // the newest committed
  double mean_write_seconds = 0;  // from handing the states to the writer to the commit
  uint64_t bytes = 0;             // of the newest, over its files
  uint64_t failed = 0;            // cuts abandoned or writes that failed
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

// mode: auto: a rule the scheduler chose, and why.
struct ModeDecision {
  double at_seconds = 0;    // since training started
  uint64_t from_clock = 0;  // the step it was asked from (servers may take it a step or two later)
  std::string mode;         // "sync", "async", "ssp"
  uint32_t staleness = 0;   // ssp: the bound
  std::string reason;
};

struct RunSummary {
  bool ok = false;
  std::string error;  // why the job failed
  std::string mode;
  std::string model;
  std::string torchscript;  // a TorchScript model's file; empty for a built-in model
  std::string loss = "cross_entropy";
  std::string metric = "accuracy";  // what evaluations measure: accuracy, r2 for loss mse, or
                                    // perplexity for token data (e^loss, and bits per token)
  std::string optimizer;
  std::string outer_optimizer;  // mode diloco: the servers' optimizer
  uint64_t rounds = 0;          // sync, diloco: rounds the servers completed (the most of any);
                                // diloco's async rounds: pushes the servers applied
  bool async_rounds = false;    // mode diloco (or auto's diloco phase) with diloco.async
  uint32_t epochs = 0;
  uint32_t global_batch_size = 0;
  uint32_t servers = 0;
  uint32_t trainers = 0;
  uint32_t max_trainers = 0;
  double wall_seconds = 0;         // training start to the final evaluation
  double train_seconds = 0;        // training start to the last trainer's Done
  double samples_per_second = 0;   // all trainers' samples / train_seconds
  uint64_t samples_completed = 0;  // samples of data chunks reported trained, over all epochs
                                   // (epochs x samples per epoch once the job is complete)
  double final_test_loss = 0;
  double final_test_accuracy = 0;        // metric accuracy
  double final_test_r2 = 0;              // metric r2
  double final_test_perplexity = 0;      // metric perplexity: e^final_test_loss
  double final_test_bits_per_token = 0;  // metric perplexity: final_test_loss / ln 2
  uint64_t weight_version = 0;
  StalenessSummary staleness;       // over every server's applied pushes
  uint64_t max_clock_gap = 0;       // largest clock gap between live trainers any server admitted
  std::vector<double> batch_share;  // per trainer: its fraction of the global batch at the end
  std::vector<Evaluation> evaluations;
  std::vector<ModeDecision> mode_decisions;  // mode: auto, in order (the first is the start's)
  RefusalTally refusals;            // refused messages and connections: the scheduler's and every server's
  RefusalTally scheduler_refusals;  // the scheduler's own
  std::vector<ServerSummary> server_details;
  std::vector<TrainerSummary> trainer_details;
  std::vector<Failure> failures;
  std::vector<Dropped> dropped;
  std::vector<Stall> stalls;
  // Per trainer with any: its steps whose gradients a server left out for NaN or infinite values
  // (the most any one server left out).
  std::map<uint32_t, uint64_t> nonfinite_pushes;
  CheckpointSummary checkpoints;
  std::string resumed_from;      // the checkpoint this job continued, if any
  std::string model_file;        // where the trained model was written, if it was
  uint64_t served_requests = 0;  // data.serve: DataRequests answered with samples
  uint64_t served_bytes = 0;     // the feature and target bytes in those answers

  std::string ToJson() const;
};

// A language model's measures from its mean loss in nats: e^loss, and loss / ln 2.
double Perplexity(double loss_nats);
double BitsPerToken(double loss_nats);

// Writes `json` to `path` atomically (temporary file, fsync, rename). IoError naming the path.
Status WriteFileAtomically(const std::string& path, const std::string& contents);

}  // namespace hetps
