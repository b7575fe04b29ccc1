// ModeChooser: mode: auto's decision rule. It keeps, per trainer, the speeds of its recent
// progress reports (samples per second by pace: compute and the trainer's own transfers, without
// the servers' hold for other trainers; Progress.paced_seconds) and the gaps between them,
// and decides which consistency mode suits the trainers as measured:
//   - when diloco is on the table (`diloco`), trainers that would train in diloco at least
//     `diloco_min_speedup` times the samples per second they train at now: diloco. Every
//     per-step mode moves the model to and from every trainer at every step; diloco moves it once
//     a round, overlapped with the next round's compute, so each trainer trains at about its
//     compute-only speed, less its rounds' synchronisation (`diloco_sync_share`). The prediction
//     is (1 - diloco_sync_share) x the sum of the trainers' compute-only speeds, against the sum
//     of their paced speeds; both from the reports between stalls (a stall lands in a report's
//     paced time, and not always in its compute time) and as medians over the window (a freeze
//     too short to leave a gap lands in one report). The switch is one-way (the scheduler makes
//     no decision after it);
//   - trainers further apart than `sync_min_speed_ratio`, or (with whole batches in async)
//     whose steps of the whole global batch are mostly their own transfers
//     (`async_min_transfer_share`): async, stalls or not. A round would wait for the slow
//     trainer's fixed costs for a small share of the batch, or pay every trainer's transfers of
//     the model for its share where async pays them once per batch; and an ssp bound would hold
//     the fast trainers for a slow one that is always behind, or do nothing async does not;
//   - otherwise, a trainer whose speed varies (relative spread of its report speeds above
//     `steady_variation`) or that stalled (a gap between reports of more than `stall_factor`
//     progress intervals, remembered for `stall_memory_seconds`, so that a machine stalling every
//     so often counts as stalling between its stalls too): ssp, with a bound of as many of the
//     fastest trainer's steps as the longest stall remembered lasted (at least 2, at most
//     `max_staleness`; async when the stall needs more), so that a transient straggler costs the
//     others nothing unless it stalls longer;
//   - and otherwise balanced sync (one averaged update per round, no staleness; the balancer
//     evens out the rest).
// Every decision carries its reason, with the figures it rests on (a per-step one with diloco on
// the table also says what diloco was predicted to give). Plain logic, owned by the
// scheduler's loop thread; time is passed in, so tests drive it with made-up reports.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "common/job_config.h"

namespace hetps {

class ModeChooser {
 public:
  struct Options {
    double measure_seconds = 1;          // decide first after this much training (and kMinReports)
    double decide_interval_seconds = 4;  // then look again this often
    double steady_variation = 0.3;       // relative spread of report speeds above which a trainer is variable
    double stall_factor = 3;             // a gap of this many progress intervals is a stall
    double sync_min_speed_ratio = 0.5;   // slowest / fastest speed from which steady trainers sync
    // Whether async and ssp phases give each trainer the whole global batch (async_batch: whole),
    // and that batch; with them, trainers whose step of the whole batch is at least
    // `async_min_transfer_share` their own transfers (and other time outside compute) go async.
    bool async_whole = false;
    uint32_t global_batch = 0;
    double async_min_transfer_share = 0.8;
    // Whether the rule may pick diloco (the scheduler: an auto job whose servers and trainers can
    // switch to its rounds); the predicted samples/s in diloco over those now from which it does;
    // and the share of a round its synchronisation is expected to take (the job's
    // diloco.sync_share, which the servers' round length is chosen for).
    bool diloco = false;
    double diloco_min_speedup = 1.5;
    double diloco_sync_share = 0.05;
    uint32_t max_staleness = 32;
    double stall_memory_seconds = 60;  // a stall counts this long after it ended
    size_t window_reports = 12;        // reports kept per trainer
  };

  struct Decision {
    ConsistencyMode mode = ConsistencyMode::kSsp;  // kSync, kAsync, kSsp or kDiloco
    uint32_t staleness = 0;                        // kSsp only
    std::string reason;
    // The same mode and, in ssp, bounds within kBoundTolerance of each other: a bound measured
    // from a stall moves with the trainers' speeds from look to look (241, 286, 293 steps), and
    // a few percent of it is not worth a switch, nor a reason to never see two looks agree.
    bool SameRule(const Decision& other) const {
      if (mode != other.mode) return false;
      if (mode != ConsistencyMode::kSsp) return true;
      const double low = std::min(staleness, other.staleness), high = std::max(staleness, other.staleness);
      return high <= kBoundTolerance * low;
    }
    static constexpr double kBoundTolerance = 1.5;
  };

  // What the rule looks at, per trainer.
  struct TrainerMeasure {
    uint32_t rank = 0;
    double samples_per_second = 0;  // pace over the window
    double steps_per_second = 0;    // at its current batch
    // Of its step at the whole global batch, the part outside compute (its transfers, batch
    // assembly): the time per step outside compute over that plus compute per sample times the
    // global batch. 0 when unknown.
    double transfer_share = 0;
    // For diloco's prediction, from the reports that did not end a stall, medians of the reports':
    // samples per second of compute alone, and paced (compute and its transfers). 0 when unknown.
    double compute_samples_per_second = 0;
    double steady_samples_per_second = 0;
    double variation = 0;              // relative standard deviation of its reports' speeds
    double longest_stall_seconds = 0;  // longest stall remembered (0: none)
    size_t reports = 0;
  };

  ModeChooser(Options options, double progress_interval_seconds);

  // Trainer `rank` reported at `now_seconds` (any fixed origin) `samples` trained in `steps`
  // steps taking `paced_seconds`, `compute_seconds` of them in compute. Reports without a paced
  // time only count as a sign of life.
  void Observe(uint32_t rank, double now_seconds, double samples, double steps, double paced_seconds,
               double compute_seconds);
  void Forget(uint32_t rank);
  std::vector<TrainerMeasure> Measures() const;

  // Reports a trainer needs before the rule counts it (two speeds give a spread).
  static constexpr size_t kMinReports = 2;

  // The rule itself, on measures (at least kMinReports reports each count).
  static Decision Decide(const std::vector<TrainerMeasure>& trainers, const Options& options);

  const Options& options() const { return options_; }

 private:
  struct Report {
    double at = 0, samples = 0, steps = 0, seconds = 0, compute = 0;
    bool after_stall = false;  // the first after a stall's gap: its steps hold the stall
  };
  struct Stall {
    double ended = 0, seconds = 0;
  };
  Options options_;
  double progress_interval_seconds_;
  std::map<uint32_t, std::deque<Report>> reports_;
  std::map<uint32_t, std::deque<Stall>> stalls_;  // per trainer, the last stall_memory_seconds'
};

}  // namespace hetps
