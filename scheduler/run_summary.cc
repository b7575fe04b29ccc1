#include "scheduler/run_summary.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

namespace hetps {
namespace {

// Every reason, zeros included, in the order of wire::RefusalReason.
nlohmann::ordered_json RefusalsJson(const RefusalTally& tally) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (size_t i = 0; i < tally.counts.size(); ++i) j[RefusalName(static_cast<Refusal>(i))] = tally.counts[i];
  return j;
}

}  // namespace

StalenessSummary SummarizeStaleness(const std::vector<uint64_t>& counts, uint64_t max) {
  StalenessSummary s;
  s.max = max;
  double sum = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    s.pushes += counts[k];
    sum += static_cast<double>(k) * static_cast<double>(counts[k]);
  }
  if (s.pushes == 0) return s;
  s.mean = sum / static_cast<double>(s.pushes);
  // The smallest value with at least a fraction q of the pushes at or below it.
  auto percentile = [&](double q) {
    const double target = q * static_cast<double>(s.pushes);
    uint64_t below = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
      below += counts[k];
      if (static_cast<double>(below) >= target) return static_cast<uint64_t>(k);
    }
    return static_cast<uint64_t>(counts.size() - 1);
  };
  s.p50 = percentile(0.5);
  s.p99 = percentile(0.99);
  return s;
}

std::string RunSummary::ToJson() const {
  nlohmann::ordered_json j;
  j["status"] = ok ? "ok" : "failed";
  if (!ok) j["error"] = error;
  j["mode"] = mode;
  j["model"] = model;
  j["torchscript"] = torchscript;
  j["loss"] = loss;
  j["metric"] = metric;
  j["optimizer"] = optimizer;
  if (mode == "diloco") j["outer_optimizer"] = outer_optimizer;
  j["epochs"] = epochs;
  j["global_batch_size"] = global_batch_size;
  j["servers"] = servers;
  j["trainers"] = trainers;
  j["max_trainers"] = max_trainers;
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  nlohmann::ordered_json samples = nlohmann::ordered_json::array();
  uint32_t joined_late = 0, left = 0;
  for (const TrainerSummary& t : trainer_details) {
    steps.push_back(t.steps);
    samples.push_back(t.samples);
    joined_late += t.joined_late ? 1 : 0;
    left += t.left ? 1 : 0;
  }
  j["trainers_joined_late"] = joined_late;
  j["trainers_left"] = left;
  j["steps"] = steps;
  j["samples"] = samples;
  j["rounds"] = rounds;
  // Auto's diloco phase says which rounds it ran; its steps before them are no rounds.
  if (mode == "auto" && !mode_decisions.empty() && mode_decisions.back().mode == "diloco") {
    j["async_rounds"] = async_rounds;
  }
  if (mode == "diloco") {
    j["async_rounds"] = async_rounds;
    // Per trainer its inner steps per round; and the tensor bytes a round moved, over every trainer.
    nlohmann::ordered_json per_round = nlohmann::ordered_json::array();
    uint64_t bytes = 0;
    for (const TrainerSummary& t : trainer_details) {
      per_round.push_back(t.steps > 0 ? static_cast<double>(t.inner_steps) / static_cast<double>(t.steps)
                                      : 0.0);
      bytes += t.bytes;
    }
    j["inner_steps_per_round"] = per_round;
    j["bytes_per_round"] = rounds > 0 ? static_cast<double>(bytes) / static_cast<double>(rounds) : 0.0;
  }
  j["samples_per_second"] = samples_per_second;
  j["samples_completed"] = samples_completed;
  j["wall_seconds"] = wall_seconds;
  j["train_seconds"] = train_seconds;
  j["final_test_loss"] = final_test_loss;
  // The metric the job does not measure is null rather than a misleading 0.
  const bool r2 = metric == "r2";
  j["final_test_accuracy"] = r2 ? nlohmann::ordered_json() : nlohmann::ordered_json(final_test_accuracy);
  j["final_test_r2"] = r2 ? nlohmann::ordered_json(final_test_r2) : nlohmann::ordered_json();
  const bool perplexity = metric == "perplexity";
  auto when_perplexity = [perplexity](double value) {
    return perplexity ? nlohmann::ordered_json(value) : nlohmann::ordered_json();
  };
  j["final_test_perplexity"] = when_perplexity(final_test_perplexity);
  j["final_test_bits_per_token"] = when_perplexity(final_test_bits_per_token);
  j["weight_version"] = weight_version;
  j["staleness_mean"] = staleness.mean;
  j["staleness_p50"] = staleness.p50;
  j["staleness_p99"] = staleness.p99;
  j["staleness_max"] = staleness.max;
  j["max_clock_gap"] = max_clock_gap;
  j["batch_share"] = batch_share;
  nlohmann::ordered_json evals = nlohmann::ordered_json::array();
  for (const Evaluation& e : evaluations) {
    evals.push_back(
        {{"epoch", e.epoch},
         {"final", e.final},
         {"weight_version", e.weight_version},
         {"test_loss", e.test_loss},
         {"test_accuracy", r2 ? nlohmann::ordered_json() : nlohmann::ordered_json(e.test_accuracy)},
         {"test_r2", r2 ? nlohmann::ordered_json(e.test_r2) : nlohmann::ordered_json()},
         {"test_samples", e.test_samples},
         {"test_positions", e.test_positions},
         {"test_perplexity", when_perplexity(Perplexity(e.test_loss))},
         {"test_bits_per_token", when_perplexity(BitsPerToken(e.test_loss))},
         {"wall_seconds", e.wall_seconds},
         {"evaluated_seconds", e.evaluated_seconds},
         {"samples_trained", e.samples_trained},
         {"snapshot", e.snapshot}});
  }
  j["evaluations"] = evals;
  nlohmann::ordered_json decisions = nlohmann::ordered_json::array();
  for (const ModeDecision& d : mode_decisions) {
    decisions.push_back({{"at_seconds", d.at_seconds},
                         {"from_clock", d.from_clock},
                         {"mode", d.mode},
                         {"staleness", d.staleness},
                         {"reason", d.reason}});
  }
  j["mode_decisions"] = decisions;
  j["refusals"] = RefusalsJson(refusals);
  j["scheduler_refusals"] = RefusalsJson(scheduler_refusals);
  nlohmann::ordered_json servers_json = nlohmann::ordered_json::array();
  for (const ServerSummary& s : server_details) {
    servers_json.push_back({{"rank", s.rank},
                            {"endpoint", s.endpoint},
                            {"weight_version", s.version},
                            {"pushes", s.pushes},
                            {"pulls", s.pulls},
                            {"bad_messages", s.bad_messages},
                            {"rounds", s.rounds},
                            {"refusals", RefusalsJson(s.refusals)}});
  }
  j["server_details"] = servers_json;
  nlohmann::ordered_json trainers_json = nlohmann::ordered_json::array();
  for (const TrainerSummary& t : trainer_details) {
    trainers_json.push_back({{"rank", t.rank},
                             {"host", t.host},
                             {"device", t.device},
                             {"batch_size", t.batch_size},
                             {"steps", t.steps},
                             {"samples", t.samples},
                             {"alive", t.alive},
                             {"joined_late", t.joined_late},
                             {"first_step", t.first_step},
                             {"left", t.left},
                             {"compute_samples_per_second", t.compute_samples_per_second},
                             {"pace_samples_per_second", t.pace_samples_per_second},
                             {"inner_steps", t.inner_steps},
                             {"last_round_inner_steps", t.last_round_inner_steps},
                             {"bytes", t.bytes},
                             {"step_seconds", t.step_seconds},
                             {"wait_seconds", t.wait_seconds}});
  }
  j["trainer_details"] = trainers_json;
  nlohmann::ordered_json failures_json = nlohmann::ordered_json::array();
  for (const Failure& f : failures) {
    failures_json.push_back({{"role", f.role},
                             {"rank", f.rank},
                             {"cause", f.cause},
                             {"at_seconds", f.at_seconds},
                             {"detected_after_s", f.detected_after_s},
                             {"recovery_seconds", f.recovery_seconds},
                             {"samples_retrained", f.samples_retrained},
                             {"checkpoint", f.checkpoint},
                             {"recovered", f.recovered}});
  }
  j["failures"] = failures_json;
  nlohmann::ordered_json dropped_json = nlohmann::ordered_json::array();
  for (const Dropped& d : dropped) dropped_json.push_back({{"trainer", d.trainer}, {"reason", d.reason}});
  j["dropped"] = dropped_json;
  nlohmann::ordered_json stalls_json = nlohmann::ordered_json::array();
  for (const Stall& st : stalls) {
    stalls_json.push_back({{"trainer", st.trainer},
                           {"held", st.held},
                           {"step", st.step},
                           {"waited_s", st.waited_seconds},
                           {"limit_s", st.limit_seconds},
                           {"dropped", st.dropped}});
  }
  j["stalls"] = stalls_json;
  nlohmann::ordered_json nonfinite_json = nlohmann::ordered_json::object();
  for (const auto& [trainer, steps] : nonfinite_pushes) nonfinite_json[std::to_string(trainer)] = steps;
  j["nonfinite_pushes"] = nonfinite_json;
  j["checkpoints"] = {
      {"dir", checkpoints.dir},         {"count", checkpoints.count},
      {"last_id", checkpoints.last_id}, {"mean_write_seconds", checkpoints.mean_write_seconds},
      {"bytes", checkpoints.bytes},     {"failed", checkpoints.failed}};
  j["resumed_from"] = resumed_from;
  j["model_file"] = model_file;
  j["served_data"] = {{"requests", served_requests}, {"bytes", served_bytes}};
  return j.dump(2) + "\n";
}

double Perplexity(double loss_nats) {
  return std::exp(loss_nats);
}

double BitsPerToken(double loss_nats) {
  return loss_nats / std::log(2.0);
}

Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  const std::string temporary = path + ".tmp";
  auto fail = [&](const std::string& what) {
    return Status::IoError(what + " " + temporary + ": " + std::strerror(errno));
  };
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("cannot create");
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return fail("cannot write");
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    return fail("cannot fsync");
  }
  if (::close(fd) != 0) return fail("cannot close");
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return Status::IoError("cannot rename " + temporary + " to " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace hetps
