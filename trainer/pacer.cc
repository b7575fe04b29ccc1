#include "trainer/pacer.h"

#include <thread>

namespace hetps {

void Pacer::Start() {
  start_ = Clock::now();
  slept_ = Clock::duration::zero();
}

void Pacer::Wait() {
  if (factor_ <= 1) return;
  const auto elapsed = Clock::now() - start_;
  const auto behind = std::chrono::duration_cast<Clock::duration>((elapsed - slept_) * factor_) - elapsed;
  if (behind <= Clock::duration::zero()) return;
  const auto before = Clock::now();
  std::this_thread::sleep_for(behind);
  slept_ += Clock::now() - before;
}

double Pacer::Seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

}  // namespace hetps
