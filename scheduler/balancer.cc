#include "scheduler/balancer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hetps {

Balancer::Balancer(uint32_t global_batch, double min_relative_change)
    : global_batch_(global_batch), min_relative_change_(min_relative_change) {}

void Balancer::Observe(uint32_t rank, double samples, double compute_seconds) {
  if (!(samples > 0) || !(compute_seconds > 0) || !std::isfinite(samples / compute_seconds)) return;
  Sums& sums = speeds_[rank];
  ++sums.reports;
  if (sums.reports == 1) return;  // warm-up: start-up costs are in the first report
  // Weighting by time rather than by report: a report of many steps counts for more than one of
  // a single step, and reporting more often does not shorten the memory.
  const double keep = std::exp2(-compute_seconds / kHalfLifeSeconds);
  sums.samples = keep * sums.samples + samples;
  sums.seconds = keep * sums.seconds + compute_seconds;
}

double Balancer::Speed(uint32_t rank) const {
  auto it = speeds_.find(rank);
  if (it == speeds_.end() || it->second.reports < 2) return 0;
  return it->second.samples / it->second.seconds;
}

void Balancer::Forget(uint32_t rank) {
  speeds_.erase(rank);
}

std::vector<uint32_t> Balancer::Split(uint32_t total, const std::vector<double>& weights) {
  const size_t n = weights.size();
  std::vector<uint32_t> shares(n, 1);
  if (n == 0 || total <= n) return shares;
  // Everyone has 1; the rest goes in proportion, whole parts first, then largest remainders.
  const uint32_t rest = total - static_cast<uint32_t>(n);
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<double> remainders(n);
  uint32_t given = 0;
  for (size_t i = 0; i < n; ++i) {
    const double exact = rest * weights[i] / sum;
    const auto whole = static_cast<uint32_t>(std::floor(exact));
    shares[i] += whole;
    given += whole;
    remainders[i] = exact - whole;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainders[a] > remainders[b]; });
  for (size_t k = 0; given < rest; ++k, ++given) ++shares[order[k % n]];
  return shares;
}

std::optional<std::map<uint32_t, uint32_t>> Balancer::Propose(
    const std::vector<uint32_t>& ranks, const std::map<uint32_t, uint32_t>& current) const {
  if (ranks.empty() || global_batch_ < ranks.size()) return std::nullopt;
  std::vector<double> weights;
  for (uint32_t rank : ranks) {
    const double speed = Speed(rank);
    if (speed <= 0) return std::nullopt;
    weights.push_back(speed);
  }
  const std::vector<uint32_t> split = Split(global_batch_, weights);
  std::map<uint32_t, uint32_t> proposal;
  bool enough = false;
  for (size_t i = 0; i < ranks.size(); ++i) {
    proposal[ranks[i]] = split[i];
    auto it = current.find(ranks[i]);
    const double before = it == current.end() ? 0 : it->second;
    const double change = std::abs(split[i] - before);
    enough = enough || (change >= 1 && change >= min_relative_change_ * before);
  }
  if (!enough) return std::nullopt;
  return proposal;
}

}  // namespace hetps
