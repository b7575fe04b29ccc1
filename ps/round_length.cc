#include "ps/round_length.h"

#include <algorithm>

namespace hetps {

RoundLength::RoundLength(const DilocoOptions& options)
    : options_(options),
      chosen_by_servers_(options.round_steps == 0 && options.round_seconds == 0),
      chosen_(options.min_round_seconds) {}

void RoundLength::Observe(uint64_t round, double sync_seconds) {
  if (!chosen_by_servers_ || !(sync_seconds > 0)) return;
  double& longest = longest_[round];
  longest = std::max(longest, sync_seconds);
}

double RoundLength::Wanted(double sync_seconds) const {
  const double wanted = options_.overlap ? sync_seconds * kOverlapMargin : sync_seconds / options_.sync_share;
  return std::clamp(wanted, options_.min_round_seconds, options_.max_round_seconds);
}

void RoundLength::ObserveAlone(double sync_seconds) {
  if (chosen_by_servers_ && sync_seconds > 0) chosen_ = Wanted(sync_seconds);
}

double RoundLength::For(uint64_t round) {
  if (!chosen_by_servers_) return 0;
  if (round > 0) {
    auto it = longest_.find(round - 1);
    if (it != longest_.end()) chosen_ = Wanted(it->second);
  }
  // Rounds before the one asked for are decided; a later round's pushes may already be here.
  longest_.erase(longest_.begin(), longest_.lower_bound(round > 0 ? round - 1 : 0));
  return chosen_;
}

}  // namespace hetps
