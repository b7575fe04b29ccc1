// Membership: the servers and trainers of a job as the scheduler knows them — who they are, their
// ranks, when they were last heard from, and what they last reported.
//
// Members are keyed by the routing id of their control connection (stable across reconnects).
// Ranks are dense per role: a new member takes the lowest free rank; a trainer that died or left
// keeps its rank, so a trainer joining later takes a new one. Every change to the set of trainers
// in the job bumps the membership epoch. Owned by the scheduler's loop thread; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/refusals.h"
#include "common/seconds_histogram.h"
#include "common/shard_map.h"
#include "messages_generated.h"

namespace hetps {

struct TrainerProgress {
  uint32_t epoch = 0;
  uint64_t clock = 0;
  uint64_t samples = 0;
  double loss = 0;
  double samples_per_second = 0;
  uint64_t weight_version = 0;
  uint32_t batch_size = 0;
  // Summed over every report: the samples of steps with data and the seconds they computed
  // (forward, backward, --slowdown; no waits), hence the trainer's own speed.
  double timed_samples = 0;
  double timed_seconds = 0;
  // The same steps' paced seconds: compute and the trainer's own transfers, without the servers'
  // hold for other trainers (Progress.paced_seconds); hence its pace.
  double paced_seconds = 0;
  // Totals since the trainer started: seconds in steps, the part spent waiting for the servers,
  // and the bytes of gradients pushed and weights pulled.
  double step_seconds = 0;
  double wait_seconds = 0;
  uint64_t bytes_pushed = 0;
  uint64_t bytes_pulled = 0;
  // mode diloco: inner steps taken (clock counts rounds), and those of the last round pushed.
  uint64_t inner_steps = 0;
  uint32_t last_round_inner_steps = 0;
  // Steps per second between its last two reports, as the scheduler received them: its
  // samples per second over its batch would count steps at an old batch as at the new one.
  double steps_per_second = 0;
  std::chrono::steady_clock::time_point reported_at{};
  double ComputeSamplesPerSecond() const { return timed_seconds > 0 ? timed_samples / timed_seconds : 0; }
  double PaceSamplesPerSecond() const { return paced_seconds > 0 ? timed_samples / paced_seconds : 0; }
};

struct ServerCounters {
  uint64_t version = 0;
  uint64_t pushes = 0;
  uint64_t pulls = 0;
  uint64_t bad_messages = 0;
  uint64_t rounds = 0;
  std::vector<uint64_t> staleness_counts;  // as in wire::ServerStats
  uint64_t staleness_max = 0;
  uint64_t staleness_sum = 0;
  uint64_t max_clock_gap = 0;
  RefusalTally refusals;
  SecondsHistogram round_seconds;  // as in wire::ServerStats
  SecondsHistogram apply_seconds;
  // Per trainer: its steps this server left out for NaN or infinite gradients (ServerStats.nonfinite).
  struct LeftOut {
    uint64_t steps = 0;
    uint64_t in_a_row = 0;
  };
  std::map<uint32_t, LeftOut> left_out;
};

ServerCounters CountersFromWire(const wire::ServerStats& stats);

// The seconds a Progress report's timed steps took by pace: Progress.paced_seconds, or their
// compute seconds from a trainer that does not report a pace.
double PacedSeconds(const wire::Progress& progress);

// 128 random bits as 32 hex digits: a secret routing id for a data-plane connection. A trainer's
// data sockets take one, and the servers take data-plane messages as that trainer's only over a
// connection with it; the scheduler's links to the servers take another.
std::string NewDataToken();

struct Member {
  using Clock = std::chrono::steady_clock;

  std::string routing_id;
  wire::Role role = wire::Role::Unknown;
  uint32_t rank = 0;
  std::string host;
  uint32_t pid = 0;
  std::string endpoint;    // servers
  std::string device;      // trainers
  std::string data_token;  // trainers: the routing id of their data-plane sockets (secret)
  std::string key_name;    // CURVE: the name of the key the member joined with; empty without
  Clock::time_point last_heard;
  bool alive = true;
  bool registered = false;  // trainer: model signature accepted
  // Trainers: in the job (the servers count its pushes from start_clock on), and started (it
  // has the shard map and trains). A trainer joining a running job is in the job once the servers
  // are told, and started once every server has agreed.
  bool in_job = false;
  bool started = false;
  bool joined_late = false;   // trainer: joined after training had started
  bool left = false;          // trainer: left on its own (Goodbye), not declared dead
  uint64_t start_clock = 0;   // trainer: its first step (0: from the start of the job)
  uint32_t start_epoch = 0;   // trainer that joined late: the epoch it starts in
  uint64_t first_step = 0;    // trainer that joined late: the step it started at, for the summary
  uint64_t register_seq = 0;  // trainer: its RegisterModel, which the shard map (or an Error) answers
  bool ready = false;         // server: shard map installed
  bool done = false;          // trainer: all epochs trained
  bool said_goodbye = false;
  uint32_t batch_size = 0;  // trainer: the batch per step it was last given
  // Trainer, sync with balance: speed: told in the last epoch that no chunk is left, so that its
  // share of the global batch went to the trainers still training; the batch it had then.
  bool out_of_data = false;
  uint32_t balanced_batch = 0;
  // Trainer: the tokens of the served replies sent to it that no receipt has acknowledged yet,
  // oldest first (Scheduler::RefuseUnread).
  std::deque<uint64_t> unread_served;
  TrainerProgress progress;
  ServerCounters counters;

  // "trainer 1 (cpu on host-a, pid 4242)"
  std::string Describe() const;
};

class Membership {
 public:
  // `servers`: the ranks servers take; `max_trainers`: the most live trainers at once.
  Membership(uint32_t servers, uint32_t max_trainers)
      : expected_servers_(servers), max_trainers_(max_trainers) {}

  Member* Find(const std::string& routing_id);
  // Admits a new member of `role` at the lowest free rank, a trainer with a fresh data token;
  // nullptr when the role is full (every server rank taken, or max_trainers live trainers).
  Member* Admit(const std::string& routing_id, wire::Role role);
  // Forgets a member (e.g. refused model signature) so its rank can be taken again.
  void Remove(const std::string& routing_id);
  // Marks a member dead; bumps the epoch when it was a trainer in the job.
  void MarkDead(Member& member);
  // The trainers in the job changed otherwise (one joined): a new epoch.
  void BumpEpoch() { ++epoch_; }

  // Live members whose last message is older than `timeout`.
  std::vector<Member*> Silent(Member::Clock::time_point now, std::chrono::milliseconds timeout);

  std::vector<Member*> Members(wire::Role role, bool live_only = true);
  // Live trainers in the job (whose pushes the servers count), and those of them that train.
  std::vector<Member*> TrainersInJob();
  std::vector<Member*> Training();
  std::vector<uint32_t> LiveTrainerRanks() const;  // of the live trainers in the job
  size_t Count(wire::Role role, bool live_only = true) const;

  uint32_t expected_servers() const { return expected_servers_; }
  uint32_t epoch() const { return epoch_; }

 private:
  uint32_t expected_servers_;
  uint32_t max_trainers_;
  uint32_t epoch_ = 1;
  std::map<std::string, Member> members_;
};

}  // namespace hetps
