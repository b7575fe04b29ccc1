#include "ps/trainer_pace.h"

#include <algorithm>
#include <iterator>
#include <vector>

namespace hetps {

void TrainerPace::Pushed(uint32_t trainer, uint64_t step, Clock::time_point now) {
  auto [it, fresh] = trainers_.try_emplace(trainer);
  Record& record = it->second;
  if (!fresh && step <= record.step) return;
  if (!fresh) {
    const double seconds = std::chrono::duration<double>(now - record.at).count() / (step - record.step);
    record.seconds.push_back(std::max(0.0, seconds));
    if (record.seconds.size() > kIntervals) record.seconds.pop_front();
  }
  record.step = step;
  record.at = now;
}

std::chrono::milliseconds TrainerPace::Of(uint32_t trainer) const {
  auto it = trainers_.find(trainer);
  if (it == trainers_.end() || it->second.seconds.empty()) return std::chrono::milliseconds(0);
  std::vector<double> sorted(it->second.seconds.begin(), it->second.seconds.end());
  const size_t middle = sorted.size() / 2;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(middle), sorted.end());
  return std::chrono::milliseconds(static_cast<int64_t>(sorted[middle] * 1000.0));
}

void TrainerPace::Keep(const std::vector<uint32_t>& live) {
  for (auto it = trainers_.begin(); it != trainers_.end();) {
    it = std::binary_search(live.begin(), live.end(), it->first) ? std::next(it) : trainers_.erase(it);
  }
}

}  // namespace hetps
