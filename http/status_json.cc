#include "http/status_json.h"

#include <cstdio>
#include <iterator>

#include <nlohmann/json.hpp>

namespace hetps {
namespace {

using Json = nlohmann::ordered_json;

// counts[i]: durations up to bucket_bounds[i] (and above the bound before); the last, longer ones.
Json SecondsJson(const SecondsHistogram& h) {
  return {{"count", h.count()},
          {"sum", h.sum},
          {"bucket_bounds",
           std::vector<double>(std::begin(kSecondsBucketBounds), std::end(kSecondsBucketBounds))},
          {"counts", h.counts}};
}

void TakeSeconds(const Json& j, const char* key, SecondsHistogram* out) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_object()) return;
  std::vector<uint64_t> counts;
  if (auto c = it->find("counts"); c != it->end() && !c->is_null()) counts = c->get<std::vector<uint64_t>>();
  counts.resize(kSecondsBuckets);
  out->counts = std::move(counts);
  if (auto sum = it->find("sum"); sum != it->end() && !sum->is_null()) out->sum = sum->get<double>();
}

Json MemberJson(const MemberStatus& m) {
  Json j = {{"role", m.role},
            {"rank", m.rank},
            {"host", m.host},
            {"device", m.device},
            {"state", m.state},
            {"alive", m.alive},
            {"last_heard_seconds", m.last_heard_seconds},
            {"refusals", m.refusals}};
  if (m.role == "trainer") {
    j.update({{"epoch", m.epoch},
              {"steps", m.steps},
              {"samples", m.samples},
              {"loss", m.loss},
              {"samples_per_second", m.samples_per_second},
              {"compute_samples_per_second", m.compute_samples_per_second},
              {"pace_samples_per_second", m.pace_samples_per_second},
              {"batch_size", m.batch_size},
              {"batch_share", m.batch_share},
              {"clock_gap", m.clock_gap},
              {"step_seconds", m.step_seconds},
              {"wait_seconds", m.wait_seconds},
              {"bytes_pushed", m.bytes_pushed},
              {"bytes_pulled", m.bytes_pulled},
              {"inner_steps", m.inner_steps},
              {"last_round_inner_steps", m.last_round_inner_steps}});
  } else {
    j.update({{"weight_version", m.weight_version},
              {"pushes", m.pushes},
              {"pulls", m.pulls},
              {"rounds", m.rounds},
              {"max_clock_gap", m.max_clock_gap},
              {"staleness_counts", m.staleness_counts},
              {"staleness_sum", m.staleness_sum},
              {"staleness_max", m.staleness_max},
              {"round_seconds", SecondsJson(m.round_seconds)},
              {"apply_seconds", SecondsJson(m.apply_seconds)}});
  }
  return j;
}

template <typename T>
void Take(const Json& j, const char* key, T* out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) *out = it->get<T>();
}

MemberStatus MemberFromJson(const Json& j) {
  MemberStatus m;
  Take(j, "role", &m.role);
  Take(j, "rank", &m.rank);
  Take(j, "host", &m.host);
  Take(j, "device", &m.device);
  Take(j, "state", &m.state);
  Take(j, "alive", &m.alive);
  Take(j, "last_heard_seconds", &m.last_heard_seconds);
  Take(j, "refusals", &m.refusals);
  Take(j, "epoch", &m.epoch);
  Take(j, "steps", &m.steps);
  Take(j, "samples", &m.samples);
  Take(j, "loss", &m.loss);
  Take(j, "samples_per_second", &m.samples_per_second);
  Take(j, "compute_samples_per_second", &m.compute_samples_per_second);
  Take(j, "pace_samples_per_second", &m.pace_samples_per_second);
  Take(j, "batch_size", &m.batch_size);
  Take(j, "batch_share", &m.batch_share);
  Take(j, "clock_gap", &m.clock_gap);
  Take(j, "step_seconds", &m.step_seconds);
  Take(j, "wait_seconds", &m.wait_seconds);
  Take(j, "bytes_pushed", &m.bytes_pushed);
  Take(j, "bytes_pulled", &m.bytes_pulled);
  Take(j, "inner_steps", &m.inner_steps);
  Take(j, "last_round_inner_steps", &m.last_round_inner_steps);
  Take(j, "weight_version", &m.weight_version);
  Take(j, "pushes", &m.pushes);
  Take(j, "pulls", &m.pulls);
  Take(j, "rounds", &m.rounds);
  Take(j, "max_clock_gap", &m.max_clock_gap);
  Take(j, "staleness_counts", &m.staleness_counts);
  Take(j, "staleness_sum", &m.staleness_sum);
  Take(j, "staleness_max", &m.staleness_max);
  TakeSeconds(j, "round_seconds", &m.round_seconds);
  TakeSeconds(j, "apply_seconds", &m.apply_seconds);
  return m;
}

}  // namespace

std::string RenderStatusJson(const StatusSnapshot& s) {
  Json j;
  j["job"] = {{"mode", s.mode},
              {"model", s.model},
              {"metric", s.metric},
              {"optimizer", s.optimizer},
              {"lr", s.lr},
              {"balance", s.balance},
              {"async_batch", s.async_batch},
              {"wire_dtype", s.wire_dtype},
              {"epochs", s.epochs},
              {"global_batch_size", s.global_batch_size},
              {"servers", s.servers},
              {"trainers", s.trainers},
              {"staleness", s.staleness_bound},
              {"listen", s.listen}};
  j["phase"] = s.phase;
  j["failed"] = s.failed;
  j["failure"] = s.failure;
  j["membership_epoch"] = s.membership_epoch;
  j["epoch"] = s.epoch;
  j["progress"] = {{"ratio", s.progress_ratio},
                   {"samples_trained", s.samples_trained},
                   {"samples_total", s.samples_total},
                   {"elapsed_seconds", s.elapsed_seconds},
                   {"samples_per_second", s.samples_per_second}};
  j["checkpoints"] = {{"committed", s.checkpoints},
                      {"failed", s.checkpoints_failed},
                      {"last", s.last_checkpoint},
                      {"mean_write_seconds", s.checkpoint_write_seconds}};
  j["scheduler_refusals"] = s.scheduler_refusals;
  Json members = Json::array();
  for (const MemberStatus& m : s.members) members.push_back(MemberJson(m));
  j["members"] = std::move(members);
  Json evaluations = Json::array();
  for (const EvaluationStatus& e : s.evaluations) {
    evaluations.push_back({{"epoch", e.epoch},
                           {"final", e.final},
                           {"wall_seconds", e.wall_seconds},
                           {"samples_trained", e.samples_trained},
                           {"test_loss", e.test_loss},
                           {"test_accuracy", e.test_accuracy},
                           {"test_perplexity", e.test_perplexity}});
  }
  j["evaluations"] = std::move(evaluations);
  Json history = Json::array();
  for (const HistoryPoint& h : s.history) {
    Json speeds = Json::object();
    for (const auto& [rank, speed] : h.trainer_speed) speeds[std::to_string(rank)] = speed;
    history.push_back({{"wall_seconds", h.wall_seconds},
                       {"samples_per_second", h.samples_per_second},
                       {"loss", h.loss},
                       {"trainer_samples_per_second", std::move(speeds)}});
  }
  j["history"] = std::move(history);
  j["published_unix_seconds"] = s.published_unix_seconds;
  return j.dump(1) + "\n";
}

Result<StatusSnapshot> ParseStatusJson(const std::string& text, const std::string& source) {
  StatusSnapshot s;
  try {
    const Json j = Json::parse(text);
    if (!j.is_object() || !j.contains("members") || !j["members"].is_array()) {
      return Status::InvalidArgument(source + ": not a hetps status document (no \"members\" array)");
    }
    if (const auto job = j.find("job"); job != j.end()) {
      Take(*job, "mode", &s.mode);
      Take(*job, "model", &s.model);
      Take(*job, "metric", &s.metric);
      Take(*job, "optimizer", &s.optimizer);
      Take(*job, "lr", &s.lr);
      Take(*job, "balance", &s.balance);
      Take(*job, "async_batch", &s.async_batch);
      Take(*job, "wire_dtype", &s.wire_dtype);
      Take(*job, "epochs", &s.epochs);
      Take(*job, "global_batch_size", &s.global_batch_size);
      Take(*job, "servers", &s.servers);
      Take(*job, "trainers", &s.trainers);
      Take(*job, "staleness", &s.staleness_bound);
      Take(*job, "listen", &s.listen);
    }
    Take(j, "phase", &s.phase);
    Take(j, "failed", &s.failed);
    Take(j, "failure", &s.failure);
    Take(j, "membership_epoch", &s.membership_epoch);
    Take(j, "epoch", &s.epoch);
    if (const auto p = j.find("progress"); p != j.end()) {
      Take(*p, "ratio", &s.progress_ratio);
      Take(*p, "samples_trained", &s.samples_trained);
      Take(*p, "samples_total", &s.samples_total);
      Take(*p, "elapsed_seconds", &s.elapsed_seconds);
      Take(*p, "samples_per_second", &s.samples_per_second);
    }
    if (const auto c = j.find("checkpoints"); c != j.end()) {
      Take(*c, "committed", &s.checkpoints);
      Take(*c, "failed", &s.checkpoints_failed);
      Take(*c, "last", &s.last_checkpoint);
      Take(*c, "mean_write_seconds", &s.checkpoint_write_seconds);
    }
    Take(j, "scheduler_refusals", &s.scheduler_refusals);
    for (const Json& m : j["members"]) s.members.push_back(MemberFromJson(m));
    if (const auto evals = j.find("evaluations"); evals != j.end()) {
      for (const Json& e : *evals) {
        EvaluationStatus eval;
        Take(e, "epoch", &eval.epoch);
        Take(e, "final", &eval.final);
        Take(e, "wall_seconds", &eval.wall_seconds);
        Take(e, "samples_trained", &eval.samples_trained);
        Take(e, "test_loss", &eval.test_loss);
        Take(e, "test_accuracy", &eval.test_accuracy);
        Take(e, "test_perplexity", &eval.test_perplexity);
        s.evaluations.push_back(eval);
      }
    }
    if (const auto history = j.find("history"); history != j.end()) {
      for (const Json& h : *history) {
        HistoryPoint point;
        Take(h, "wall_seconds", &point.wall_seconds);
        Take(h, "samples_per_second", &point.samples_per_second);
        Take(h, "loss", &point.loss);
        if (const auto speeds = h.find("trainer_samples_per_second"); speeds != h.end()) {
          for (const auto& [rank, speed] : speeds->items()) {
            point.trainer_speed[static_cast<uint32_t>(std::stoul(rank))] = speed.get<double>();
          }
        }
        s.history.push_back(std::move(point));
      }
    }
    Take(j, "published_unix_seconds", &s.published_unix_seconds);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(source + ": not a hetps status document: " + e.what());
  }
  return s;
}

std::vector<std::string> MemberTableLines(const StatusSnapshot& s) {
  std::vector<std::string> lines;
  char line[256];
  std::snprintf(line, sizeof(line), "%s %s, %s: %.1f%% of %u epoch%s, %.0f samples/s, %.0f s", s.mode.c_str(),
                s.model.c_str(), s.phase.c_str(), 100 * s.progress_ratio, s.epochs, s.epochs == 1 ? "" : "s",
                s.samples_per_second, s.elapsed_seconds);
  lines.push_back(line);
  std::snprintf(line, sizeof(line), "%-8s %4s %-16s %-6s %-9s %10s %8s %6s %9s %7s %6s", "role", "rank",
                "host", "device", "state", "samples/s", "loss", "share", "staleness", "gap", "heard");
  lines.push_back(line);
  for (const MemberStatus& m : s.members) {
    const bool trainer = m.role == "trainer";
    char speed[32] = "-", loss[32] = "-", share[32] = "-", staleness[32] = "-", gap[32] = "-";
    if (trainer) {
      std::snprintf(speed, sizeof(speed), "%.0f", m.samples_per_second);
      std::snprintf(loss, sizeof(loss), "%.4f", m.loss);
      std::snprintf(share, sizeof(share), "%.0f%%", 100 * m.batch_share);
      std::snprintf(gap, sizeof(gap), "%llu", static_cast<unsigned long long>(m.clock_gap));
    } else {
      uint64_t count = 0;
      for (uint64_t c : m.staleness_counts) count += c;
      if (count > 0) {
        std::snprintf(staleness, sizeof(staleness), "%.2f", static_cast<double>(m.staleness_sum) / count);
      }
      std::snprintf(gap, sizeof(gap), "%llu", static_cast<unsigned long long>(m.max_clock_gap));
    }
    std::snprintf(line, sizeof(line), "%-8s %4u %-16.16s %-6.6s %-9.9s %10s %8s %6s %9s %7s %5.1fs",
                  m.role.c_str(), m.rank, m.host.c_str(), m.device.c_str(), m.state.c_str(), speed, loss,
                  share, staleness, gap, m.last_heard_seconds);
    lines.push_back(line);
  }
  return lines;
}

}  // namespace hetps
