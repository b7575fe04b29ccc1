#include "scheduler/membership.h"

#include <algorithm>
#include <random>
#include <set>

namespace hetps {

std::string NewDataToken() {
  std::random_device device;
  static const char kHex[] = "0123456789abcdef";
  std::string token;
  for (int word = 0; word < 4; ++word) {
    uint32_t bits = device();
    for (int digit = 0; digit < 8; ++digit, bits >>= 4) token += kHex[bits & 15];
  }
  return token;
}

ServerCounters CountersFromWire(const wire::ServerStats& stats) {
  ServerCounters c;
  c.version = stats.version();
  c.pushes = stats.pushes();
  c.pulls = stats.pulls();
  c.bad_messages = stats.bad_messages();
  c.rounds = stats.rounds();
  if (stats.staleness_counts() != nullptr) {
    // Servers send a few dozen buckets; more would only cost the summary time.
    constexpr size_t kMaxBuckets = 1024;
    const auto* counts = stats.staleness_counts();
    c.staleness_counts.assign(counts->begin(),
                              counts->begin() + std::min<size_t>(counts->size(), kMaxBuckets));
  }
  c.refusals = RefusalTally::FromWire(stats.refusals());
  c.staleness_max = stats.staleness_max();
  c.staleness_sum = stats.staleness_sum();
  c.max_clock_gap = stats.max_clock_gap();
  c.round_seconds = SecondsHistogram::FromWire(stats.round_seconds());
  c.apply_seconds = SecondsHistogram::FromWire(stats.apply_seconds());
  if (const auto* left_out = stats.nonfinite()) {
    constexpr size_t kMaxEntries = 4096;  // trainers are at most 1024
    for (size_t i = 0; i < std::min<size_t>(left_out->size(), kMaxEntries); ++i) {
      const auto* entry = left_out->Get(i);
      c.left_out[entry->trainer()] = {entry->steps(), entry->in_a_row()};
    }
  }
  return c;
}

double PacedSeconds(const wire::Progress& progress) {
  return progress.paced_seconds() > 0 ? progress.paced_seconds() : progress.timed_seconds();
}

std::string Member::Describe() const {
  std::string text = role == wire::Role::Server ? "server " : "trainer ";
  text += std::to_string(rank) + " (";
  if (role == wire::Role::Trainer && !device.empty()) text += device + " on ";
  text += host + ", pid " + std::to_string(pid) + ")";
  return text;
}

Member* Membership::Find(const std::string& routing_id) {
  auto it = members_.find(routing_id);
  return it == members_.end() ? nullptr : &it->second;
}

Member* Membership::Admit(const std::string& routing_id, wire::Role role) {
  std::set<uint32_t> taken;
  for (const auto& [id, m] : members_) {
    if (m.role == role) taken.insert(m.rank);
  }
  uint32_t rank = 0;
  while (taken.count(rank) != 0) ++rank;
  if (role == wire::Role::Server && rank >= expected_servers_) return nullptr;
  if (role == wire::Role::Trainer && Count(wire::Role::Trainer) >= max_trainers_) return nullptr;
  Member& member = members_[routing_id];
  member.routing_id = routing_id;
  member.role = role;
  member.rank = rank;
  member.last_heard = Member::Clock::now();
  if (role == wire::Role::Trainer) member.data_token = NewDataToken();
  return &member;
}

void Membership::Remove(const std::string& routing_id) {
  members_.erase(routing_id);
}

void Membership::MarkDead(Member& member) {
  if (!member.alive) return;
  member.alive = false;
  if (member.role == wire::Role::Trainer && member.in_job) ++epoch_;
}

std::vector<Member*> Membership::Silent(Member::Clock::time_point now, std::chrono::milliseconds timeout) {
  std::vector<Member*> silent;
  for (auto& [id, m] : members_) {
    if (m.alive && now - m.last_heard > timeout) silent.push_back(&m);
  }
  return silent;
}

std::vector<Member*> Membership::Members(wire::Role role, bool live_only) {
  std::vector<Member*> found;
  for (auto& [id, m] : members_) {
    if (m.role == role && (m.alive || !live_only)) found.push_back(&m);
  }
  std::sort(found.begin(), found.end(), [](Member* a, Member* b) { return a->rank < b->rank; });
  return found;
}

std::vector<Member*> Membership::TrainersInJob() {
  std::vector<Member*> found = Members(wire::Role::Trainer);
  found.erase(std::remove_if(found.begin(), found.end(), [](Member* m) { return !m->in_job; }), found.end());
  return found;
}

std::vector<Member*> Membership::Training() {
  std::vector<Member*> found = Members(wire::Role::Trainer);
  found.erase(std::remove_if(found.begin(), found.end(), [](Member* m) { return !m->started; }), found.end());
  return found;
}

std::vector<uint32_t> Membership::LiveTrainerRanks() const {
  std::vector<uint32_t> ranks;
  for (const auto& [id, m] : members_) {
    if (m.role == wire::Role::Trainer && m.alive && m.in_job) ranks.push_back(m.rank);
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

size_t Membership::Count(wire::Role role, bool live_only) const {
  return static_cast<size_t>(std::count_if(members_.begin(), members_.end(), [&](const auto& entry) {
    return entry.second.role == role && (entry.second.alive || !live_only);
  }));
}

}  // namespace hetps
