#include "scheduler/balancer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hetps {
namespace {

// Whole shares of `total` from real ones `exact` (each >= 1, summing to total): floors, then the
// largest remainders.
std::vector<uint32_t> Round(uint32_t total, const std::vector<double>& exact) {
  const size_t n = exact.size();
  std::vector<uint32_t> shares(n);
  std::vector<double> remainders(n);
  uint32_t given = 0;
  for (size_t i = 0; i < n; ++i) {
    const double clamped = std::max(1.0, exact[i]);
    shares[i] = static_cast<uint32_t>(std::floor(clamped));
    remainders[i] = clamped - shares[i];
    given += shares[i];
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainders[a] > remainders[b]; });
  for (size_t k = 0; given < total; ++k, ++given) ++shares[order[k % n]];
  // Rounding up clamped shares can overshoot: take back from the largest.
  while (given > total) {
    const size_t largest = std::max_element(shares.begin(), shares.end()) - shares.begin();
    if (shares[largest] <= 1) break;
    --shares[largest];
    --given;
  }
  return shares;
}

}  // namespace

Balancer::Balancer(uint32_t global_batch, double min_relative_change)
    : global_batch_(global_batch), min_relative_change_(min_relative_change) {}

void Balancer::Observe(uint32_t rank, double samples, double compute_seconds, double steps) {
  if (!(samples > 0) || !(compute_seconds > 0) || !(steps > 0) || !std::isfinite(samples / compute_seconds) ||
      !std::isfinite(steps)) {
    return;
  }
  Sums& s = sums_[rank];
  ++s.reports;
  if (s.reports == 1) return;  // warm-up: start-up costs are in the first report
  // Weighting by time rather than by report: a report of many steps counts for more than one of
  // a single step, and reporting more often does not shorten the memory.
  const double keep = std::exp2(-compute_seconds / kHalfLifeSeconds);
  const double x = samples / steps;
  const double y = compute_seconds / steps;
  s.samples = keep * s.samples + samples;
  s.seconds = keep * s.seconds + compute_seconds;
  s.w = keep * s.w + steps;
  s.x = keep * s.x + steps * x;
  s.y = keep * s.y + steps * y;
  s.xx = keep * s.xx + steps * x * x;
  s.xy = keep * s.xy + steps * x * y;
  const double mean_x = s.x / s.w;
  const double variance_x = std::max(0.0, s.xx / s.w - mean_x * mean_x);
  if (std::sqrt(variance_x) >= kMinBatchSpread * mean_x) {
    const double slope = (s.xy / s.w - mean_x * (s.y / s.w)) / variance_x;
    if (slope > 0 && std::isfinite(slope)) s.fixed_seconds = s.y / s.w - slope * mean_x;
  }
}

std::optional<Balancer::StepCost> Balancer::Cost(uint32_t rank) const {
  auto it = sums_.find(rank);
  if (it == sums_.end() || it->second.reports < 2) return std::nullopt;
  const Sums& s = it->second;
  const double mean_x = s.x / s.w;
  const double mean_y = s.y / s.w;
  // The model goes through the recent mean step; a fixed cost above most of it is noise.
  StepCost cost;
  cost.fixed_seconds = std::clamp(s.fixed_seconds.value_or(0.0), 0.0, 0.9 * mean_y);
  cost.seconds_per_sample = (mean_y - cost.fixed_seconds) / mean_x;
  return cost;
}

double Balancer::Speed(uint32_t rank) const {
  auto it = sums_.find(rank);
  if (it == sums_.end() || it->second.reports < 2) return 0;
  return it->second.samples / it->second.seconds;
}

void Balancer::Forget(uint32_t rank) {
  sums_.erase(rank);
}

std::vector<uint32_t> Balancer::Split(uint32_t total, const std::vector<double>& weights) {
  const size_t n = weights.size();
  if (n == 0 || total <= n) return std::vector<uint32_t>(n, 1);
  // Everyone has 1; the rest goes in proportion.
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<double> exact(n);
  for (size_t i = 0; i < n; ++i) exact[i] = 1 + (total - static_cast<double>(n)) * weights[i] / sum;
  return Round(total, exact);
}

std::vector<uint32_t> Balancer::EqualTimeSplit(uint32_t total, const std::vector<StepCost>& costs) {
  const size_t n = costs.size();
  if (n == 0 || total <= n) return std::vector<uint32_t>(n, 1);
  // Common time T with sum over i of (T - fixed_i) / per_sample_i = total; a trainer whose share
  // would fall below one sample gets one and leaves the sum.
  std::vector<bool> pinned(n, false);
  std::vector<double> exact(n, 1);
  while (true) {
    double samples = total, inverse = 0, offset = 0;
    for (size_t i = 0; i < n; ++i) {
      if (pinned[i]) {
        samples -= 1;
        continue;
      }
      inverse += 1 / costs[i].seconds_per_sample;
      offset += costs[i].fixed_seconds / costs[i].seconds_per_sample;
    }
    const double time = (samples + offset) / inverse;
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (pinned[i]) continue;
      exact[i] = (time - costs[i].fixed_seconds) / costs[i].seconds_per_sample;
      if (exact[i] < 1) {
        pinned[i] = true;
        exact[i] = 1;
        changed = true;
      }
    }
    if (!changed) break;
  }
  return Round(total, exact);
}

bool Balancer::MostlyFixedCost(const StepCost& cost, uint32_t batch, uint32_t global_batch) {
  return uint64_t{batch} * 10 <= global_batch && cost.fixed_seconds >= 0.5 * cost.Seconds(batch);
}

std::optional<std::map<uint32_t, uint32_t>> Balancer::Propose(
    const std::vector<uint32_t>& ranks, const std::map<uint32_t, uint32_t>& current) const {
  if (ranks.empty() || global_batch_ < ranks.size()) return std::nullopt;
  std::vector<StepCost> costs;
  for (uint32_t rank : ranks) {
    const std::optional<StepCost> cost = Cost(rank);
    if (!cost || !(cost->seconds_per_sample > 0)) return std::nullopt;
    costs.push_back(*cost);
  }
  const std::vector<uint32_t> split = EqualTimeSplit(global_batch_, costs);
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
