// RoundLength: how long the rounds of mode diloco last when the job leaves it to the servers
// (diloco: round_steps and round_seconds both 0). Every push carries how long its trainer's
// previous round took to synchronise (Push.sync_us: its pseudo-gradient out and the new weights
// in, less the time the servers held it for others). The round after round r lasts, within
// [min_round_seconds, max_round_seconds], the longest such time among r's pushes over sync_share
// (no trainer waits for its weights more than that share of a round) or, with overlap (the
// trainers compute while their rounds travel), kOverlapMargin times it (a round's weights arrive
// before the next round ends, so nobody waits, and rounds are as short as the links allow). Until
// a round brings a measurement, rounds keep the length chosen last (at first min_round_seconds).
//
// Async rounds (diloco: {async: true}) have no common round: each push's measurement alone
// chooses the length of the rounds after it (ObserveAlone), so a trainer's next round follows its
// own link. Every server sees every trainer's pushes of a round, so each chooses the same length. Plain
// data, owned by the Shard on the server's I/O thread.
#pragma once

#include <cstdint>
#include <map>

#include "common/job_config.h"

namespace hetps {

class RoundLength {
 public:
  // With overlap: a round's length over its longest synchronisation.
  static constexpr double kOverlapMargin = 1.25;

  explicit RoundLength(const DilocoOptions& options);

  // A push of round `round` whose trainer's previous round synchronised in `sync_seconds` (0: it
  // has not measured one).
  void Observe(uint64_t round, double sync_seconds);

  // Async rounds: a push whose trainer's previous round synchronised in `sync_seconds` (0: not
  // measured) chooses the length of the rounds from now on; Latest() gives it.
  void ObserveAlone(double sync_seconds);
  // The length chosen last; 0 when the job fixes the rounds.
  double Latest() const { return chosen_by_servers_ ? chosen_ : 0; }

  // The length in seconds of round `round`, chosen from the pushes of round - 1; 0 when the job
  // fixes the rounds (round_steps or round_seconds), which the trainers then follow themselves.
  double For(uint64_t round);

 private:
  // The length a round whose pushes synchronised in at most `sync_seconds` asks of the next.
  double Wanted(double sync_seconds) const;

  DilocoOptions options_;
  bool chosen_by_servers_;
  double chosen_;                       // the length chosen last
  std::map<uint64_t, double> longest_;  // per round: the longest synchronisation its pushes reported
};

}  // namespace hetps
