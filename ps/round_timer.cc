#include "ps/round_timer.h"

namespace hetps {
namespace {

// Rounds that every partition completes end within a step; far more open ones can only be
// rounds some partition never completes (a trainer that pushed part of a step, then was taken
// out of a job of mode auto that left sync): the oldest are given up rather than kept forever.
constexpr size_t kMaxOpenRounds = 64;

}  // namespace

void RoundTimer::Pushed(uint64_t round, Clock::time_point now) {
  if (open_.count(round) != 0) return;
  open_[round].first_push = now;
  if (open_.size() > kMaxOpenRounds) open_.erase(open_.begin());
}

void RoundTimer::ReplyStarted(uint64_t clock) {
  if (clock == 0) return;
  if (auto round = open_.find(clock - 1); round != open_.end()) ++round->second.replies_in_flight;
}

void RoundTimer::ReplyDone(uint64_t clock) {
  if (clock == 0) return;
  auto round = open_.find(clock - 1);
  if (round != open_.end() && round->second.replies_in_flight > 0) --round->second.replies_in_flight;
}

void RoundTimer::Settle(uint64_t completed, const std::function<bool(uint64_t)>& waiting,
                        Clock::time_point now) {
  for (auto round = open_.begin(); round != open_.end() && round->first < completed;) {
    if (round->second.replies_in_flight > 0 || waiting(round->first + 1)) {
      ++round;
      continue;
    }
    seconds_.Observe(std::chrono::duration<double>(now - round->second.first_push).count());
    round = open_.erase(round);
  }
}

}  // namespace hetps
