// StatusSnapshot: what the scheduler knows about a running job at one moment, as plain values, for
// the status page, /status JSON, /metrics and hetps-status. SnapshotBoard hands the newest one
// from the scheduler's loop thread (Publish) to any other thread (Latest).
//
// A snapshot is immutable once published: readers share it through shared_ptr<const>, so the
// HTTP thread never touches the loop's state and the loop never waits for a reader.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/seconds_histogram.h"

namespace hetps {

// One server or trainer.
struct MemberStatus {
  std::string role;  // "server" | "trainer"
  uint32_t rank = 0;
  std::string host;
  std::string device;  // trainers: the torch device; servers: "cpu"
  std::string state;   // "joining", "training", "done", "left", "dead", "ready", ...
  bool alive = true;
  double last_heard_seconds = 0;  // since its last message
  // Trainers.
  uint32_t epoch = 0;
  uint64_t steps = 0;
  uint64_t samples = 0;
  double loss = 0;
  double samples_per_second = 0;          // over its last report interval, waits included
  double compute_samples_per_second = 0;  // its own speed: samples per second of compute
  double pace_samples_per_second = 0;     // compute and its own transfers, not waits for others
  uint32_t batch_size = 0;
  double batch_share = 0;   // of the global batch
  uint64_t clock_gap = 0;   // steps behind the fastest trainer in the job
  double step_seconds = 0;  // totals: every step, and the part of it spent waiting on servers
  double wait_seconds = 0;
  uint64_t bytes_pushed = 0;
  uint64_t bytes_pulled = 0;
  uint64_t inner_steps = 0;             // diloco: inner steps so far (`steps` counts rounds)
  uint32_t last_round_inner_steps = 0;  // diloco: those of its last round pushed
  // Servers.
  uint64_t weight_version = 0;
  uint64_t pushes = 0;
  uint64_t pulls = 0;
  uint64_t rounds = 0;
  uint64_t max_clock_gap = 0;
  std::vector<uint64_t> staleness_counts;  // [k]: pushes of staleness k; the last: k and more
  uint64_t staleness_sum = 0;
  uint64_t staleness_max = 0;
  SecondsHistogram round_seconds;  // sync rounds: from the first push to the last reply
  SecondsHistogram apply_seconds;  // the optimizer's work per push (async, ssp) or round (sync)
  // Refused messages and connections, by reason name ("unverified", ...); non-zero ones only.
  std::map<std::string, uint64_t> refusals;
};

struct EvaluationStatus {
  uint32_t epoch = 0;
  bool final = false;
  double wall_seconds = 0;  // since training started
  uint64_t samples_trained = 0;
  double test_loss = 0;
  double test_accuracy = 0;
  double test_perplexity = 0;  // metric perplexity (token data); 0 otherwise
};

// One point of the page's plots, taken every few seconds.
struct HistoryPoint {
  double wall_seconds = 0;                   // since training started
  double samples_per_second = 0;             // all trainers
  double loss = 0;                           // mean over trainers reporting one
  std::map<uint32_t, double> trainer_speed;  // samples/s by trainer rank
};

struct StatusSnapshot {
  // The job's options.
  std::string mode, model, optimizer, balance, async_batch, wire_dtype, listen;
  std::string metric = "accuracy";  // what evaluations measure (RunSummary::metric)
  uint32_t epochs = 0;
  uint32_t global_batch_size = 0;
  uint32_t servers = 0;
  uint32_t trainers = 0;
  uint32_t staleness_bound = 0;  // ssp
  double lr = 0;
  // Where it is.
  std::string phase;  // "waiting for members", "training", "final evaluation", "shutting down", ...
  bool failed = false;
  std::string failure;
  uint32_t membership_epoch = 0;
  uint32_t epoch = 0;             // the newest epoch a trainer trains
  double progress_ratio = 0;      // samples trained / samples of every epoch, 0..1
  uint64_t samples_trained = 0;   // over all trainers
  uint64_t samples_total = 0;     // epochs x samples per epoch
  double elapsed_seconds = 0;     // since training started
  double samples_per_second = 0;  // all trainers, now
  uint64_t checkpoints = 0;       // committed in this run
  uint64_t checkpoints_failed = 0;
  uint64_t last_checkpoint = 0;
  double checkpoint_write_seconds = 0;  // mean
  std::map<std::string, uint64_t> scheduler_refusals;
  std::vector<MemberStatus> members;  // servers by rank, then trainers by rank
  std::vector<EvaluationStatus> evaluations;
  std::vector<HistoryPoint> history;  // oldest first
  double published_unix_seconds = 0;
};

class SnapshotBoard {
 public:
  // Replaces the newest snapshot. Any thread; cheap (a pointer swap under a mutex).
  void Publish(std::shared_ptr<const StatusSnapshot> snapshot);
  // The newest snapshot; an empty one before the first Publish. Any thread.
  std::shared_ptr<const StatusSnapshot> Latest() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const StatusSnapshot> latest_ = std::make_shared<const StatusSnapshot>();
};

}  // namespace hetps
