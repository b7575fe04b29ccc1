#include "scheduler/balancer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hetps {
namespace {

constexpr double kSmoothing = 0.5;  // weight of the newest report in the moving average

}  // namespace

Balancer::Balancer(uint32_t global_batch, uint32_t min_change)
    : global_batch_(global_batch), min_change_(std::max<uint32_t>(min_change, 1)) {}

void Balancer::Observe(uint32_t rank, double samples_per_second) {
  if (!(samples_per_second > 0) || !std::isfinite(samples_per_second)) return;
  Speed& speed = speeds_[rank];
  ++speed.reports;
  if (speed.reports == 1) return;  // warm-up: start-up costs are in the first report
  speed.average = speed.reports == 2
                      ? samples_per_second
                      : kSmoothing * samples_per_second + (1 - kSmoothing) * speed.average;
}

void Balancer::Forget(uint32_t rank) { speeds_.erase(rank); }

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
    auto it = speeds_.find(rank);
    if (it == speeds_.end() || it->second.reports < 2) return std::nullopt;
    weights.push_back(it->second.average);
  }
  const std::vector<uint32_t> split = Split(global_batch_, weights);
  std::map<uint32_t, uint32_t> proposal;
  uint32_t moved = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    proposal[ranks[i]] = split[i];
    auto it = current.find(ranks[i]);
    const uint32_t before = it == current.end() ? 0 : it->second;
    if (split[i] > before) moved += split[i] - before;  // samples that change trainer
  }
  if (moved < min_change_) return std::nullopt;
  return proposal;
}

}  // namespace hetps
