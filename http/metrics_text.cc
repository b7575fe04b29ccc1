#include "http/metrics_text.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <iterator>
#include <sstream>

namespace hetps {
namespace {

std::string Number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

std::string Number(uint64_t value) {
  return std::to_string(value);
}

// {role="trainer",rank="0",host="a",device="cpu"} plus `extra` (already formatted, may be empty).
std::string MemberLabels(const MemberStatus& m, const std::string& extra = "") {
  std::string labels = "{role=\"" + EscapeLabelValue(m.role) + "\",rank=\"" + std::to_string(m.rank) +
                       "\",host=\"" + EscapeLabelValue(m.host) + "\",device=\"" + EscapeLabelValue(m.device) +
                       "\"";
  if (!extra.empty()) labels += "," + extra;
  return labels + "}";
}

class Writer {
 public:
  void Family(const char* name, const char* type, const char* help) {
    out_ << "# HELP " << name << ' ' << help << '\n' << "# TYPE " << name << ' ' << type << '\n';
  }
  void Sample(const std::string& name, const std::string& labels, const std::string& value) {
    out_ << name << labels << ' ' << value << '\n';
  }
  // A family with one sample per member of `role` (every member when empty).
  void PerMember(const StatusSnapshot& s, const std::string& role, const char* name, const char* type,
                 const char* help, const std::function<std::string(const MemberStatus&)>& value) {
    bool any = false;
    for (const MemberStatus& m : s.members) any = any || role.empty() || m.role == role;
    if (!any) return;
    Family(name, type, help);
    for (const MemberStatus& m : s.members) {
      if (role.empty() || m.role == role) Sample(name, MemberLabels(m), value(m));
    }
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

void StalenessHistogram(Writer& w, const StatusSnapshot& s) {
  w.Family("hetps_staleness", "histogram",
           "Staleness of the pushes a server applied: its weight version when applied minus the version "
           "the gradient was computed on");
  for (const MemberStatus& m : s.members) {
    if (m.role != "server") continue;
    uint64_t count = 0;
    for (uint64_t c : m.staleness_counts) count += c;
    for (uint64_t bound : kStalenessBucketBounds) {
      // Every bound lies below the servers' last count, the one of "that staleness or more"
      // (kStalenessBucketsAtLeast), so the finite buckets sum exact counts only.
      uint64_t at_most = 0;
      for (size_t k = 0; k < m.staleness_counts.size() && k <= bound; ++k) at_most += m.staleness_counts[k];
      w.Sample("hetps_staleness_bucket", MemberLabels(m, "le=\"" + std::to_string(bound) + "\""),
               Number(at_most));
    }
    w.Sample("hetps_staleness_bucket", MemberLabels(m, "le=\"+Inf\""), Number(count));
    w.Sample("hetps_staleness_sum", MemberLabels(m), Number(m.staleness_sum));
    w.Sample("hetps_staleness_count", MemberLabels(m), Number(count));
  }
}

// A histogram of seconds per server, in common/seconds_histogram.h's buckets.
void ServerSeconds(Writer& w, const StatusSnapshot& s, const std::string& name, const char* help,
                   SecondsHistogram MemberStatus::*field) {
  w.Family(name.c_str(), "histogram", help);
  for (const MemberStatus& m : s.members) {
    if (m.role != "server") continue;
    const SecondsHistogram& h = m.*field;
    uint64_t at_most = 0;
    for (size_t i = 0; i < std::size(kSecondsBucketBounds); ++i) {
      if (i < h.counts.size()) at_most += h.counts[i];
      char bound[32];
      std::snprintf(bound, sizeof(bound), "%g", kSecondsBucketBounds[i]);
      w.Sample(name + "_bucket", MemberLabels(m, "le=\"" + std::string(bound) + "\""), Number(at_most));
    }
    w.Sample(name + "_bucket", MemberLabels(m, "le=\"+Inf\""), Number(h.count()));
    w.Sample(name + "_sum", MemberLabels(m), Number(h.sum));
    w.Sample(name + "_count", MemberLabels(m), Number(h.count()));
  }
}

void Refusals(Writer& w, const StatusSnapshot& s) {
  w.Family("hetps_refusals_total", "counter",
           "Messages and connections refused, by the refusing process and reason");
  for (const auto& [reason, count] : s.scheduler_refusals) {
    w.Sample(
        "hetps_refusals_total",
        "{role=\"scheduler\",rank=\"0\",host=\"\",device=\"\",reason=\"" + EscapeLabelValue(reason) + "\"}",
        Number(count));
  }
  for (const MemberStatus& m : s.members) {
    for (const auto& [reason, count] : m.refusals) {
      w.Sample("hetps_refusals_total", MemberLabels(m, "reason=\"" + EscapeLabelValue(reason) + "\""),
               Number(count));
    }
  }
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderMetrics(const StatusSnapshot& s) {
  Writer w;
  w.Family("hetps_job_info", "gauge", "The job's options as labels; the value is always 1");
  w.Sample("hetps_job_info",
           "{mode=\"" + EscapeLabelValue(s.mode) + "\",model=\"" + EscapeLabelValue(s.model) +
               "\",optimizer=\"" + EscapeLabelValue(s.optimizer) + "\",balance=\"" +
               EscapeLabelValue(s.balance) + "\",wire_dtype=\"" + EscapeLabelValue(s.wire_dtype) + "\"}",
           "1");
  w.Family("hetps_job_progress_ratio", "gauge", "Samples trained over the samples of every epoch (0 to 1)");
  w.Sample("hetps_job_progress_ratio", "", Number(s.progress_ratio));
  w.Family("hetps_job_epoch", "gauge", "The newest epoch a trainer trains (0-based)");
  w.Sample("hetps_job_epoch", "", Number(uint64_t{s.epoch}));
  w.Family("hetps_job_epochs", "gauge", "Epochs the job trains");
  w.Sample("hetps_job_epochs", "", Number(uint64_t{s.epochs}));
  w.Family("hetps_job_elapsed_seconds", "gauge", "Seconds since training started");
  w.Sample("hetps_job_elapsed_seconds", "", Number(s.elapsed_seconds));
  w.Family("hetps_job_samples_per_second", "gauge", "Samples per second over all trainers");
  w.Sample("hetps_job_samples_per_second", "", Number(s.samples_per_second));
  w.Family("hetps_membership_epoch", "gauge",
           "Membership epoch: bumped whenever the trainers in the job change");
  w.Sample("hetps_membership_epoch", "", Number(uint64_t{s.membership_epoch}));
  w.Family("hetps_checkpoints_total", "counter", "Checkpoints committed in this run");
  w.Sample("hetps_checkpoints_total", "", Number(s.checkpoints));
  w.Family("hetps_checkpoint_failures_total", "counter", "Checkpoint cuts abandoned or writes that failed");
  w.Sample("hetps_checkpoint_failures_total", "", Number(s.checkpoints_failed));
  w.Family("hetps_checkpoint_write_seconds", "gauge", "Mean seconds from a cut's states to its commit");
  w.Sample("hetps_checkpoint_write_seconds", "", Number(s.checkpoint_write_seconds));
  if (!s.evaluations.empty()) {
    const EvaluationStatus& e = s.evaluations.back();
    w.Family("hetps_eval_test_accuracy_ratio", "gauge", "Test accuracy of the newest evaluation (0 to 1)");
    w.Sample("hetps_eval_test_accuracy_ratio", "", Number(e.test_accuracy));
    w.Family("hetps_eval_test_loss", "gauge", "Test loss of the newest evaluation");
    w.Sample("hetps_eval_test_loss", "", Number(e.test_loss));
    if (s.metric == "perplexity") {
      w.Family("hetps_eval_test_perplexity", "gauge",
               "Test perplexity of the newest evaluation (token data)");
      w.Sample("hetps_eval_test_perplexity", "", Number(e.test_perplexity));
    }
  }

  w.PerMember(s, "", "hetps_member_up", "gauge", "1 while the member is alive, 0 once dead or gone",
              [](const MemberStatus& m) { return m.alive ? "1" : "0"; });
  w.PerMember(s, "", "hetps_member_last_heard_seconds", "gauge",
              "Seconds since the member's last message to the scheduler",
              [](const MemberStatus& m) { return Number(m.last_heard_seconds); });

  w.PerMember(s, "trainer", "hetps_trainer_samples_total", "counter", "Samples a trainer trained",
              [](const MemberStatus& m) { return Number(m.samples); });
  w.PerMember(s, "trainer", "hetps_trainer_steps_total", "counter", "Steps (pushes) a trainer took",
              [](const MemberStatus& m) { return Number(m.steps); });
  w.PerMember(s, "trainer", "hetps_trainer_samples_per_second", "gauge",
              "A trainer's samples per second over its last report interval, waits included",
              [](const MemberStatus& m) { return Number(m.samples_per_second); });
  w.PerMember(s, "trainer", "hetps_trainer_compute_samples_per_second", "gauge",
              "A trainer's own speed: samples per second of compute (forward, backward), no waits",
              [](const MemberStatus& m) { return Number(m.compute_samples_per_second); });
  w.PerMember(s, "trainer", "hetps_trainer_pace_samples_per_second", "gauge",
              "A trainer's pace: samples per second of compute and its own transfers, without waits for "
              "other trainers (what balance: speed and mode: auto go by)",
              [](const MemberStatus& m) { return Number(m.pace_samples_per_second); });
  w.PerMember(s, "trainer", "hetps_trainer_loss", "gauge",
              "Mean training loss over a trainer's last report interval",
              [](const MemberStatus& m) { return Number(m.loss); });
  w.PerMember(s, "trainer", "hetps_trainer_epoch", "gauge", "The epoch a trainer trains (0-based)",
              [](const MemberStatus& m) { return Number(uint64_t{m.epoch}); });
  w.PerMember(s, "trainer", "hetps_trainer_batch_size", "gauge", "A trainer's samples per step",
              [](const MemberStatus& m) { return Number(uint64_t{m.batch_size}); });
  w.PerMember(s, "trainer", "hetps_trainer_batch_share_ratio", "gauge",
              "A trainer's share of the global batch",
              [](const MemberStatus& m) { return Number(m.batch_share); });
  w.PerMember(s, "trainer", "hetps_trainer_clock_gap", "gauge",
              "Steps a trainer is behind the fastest trainer",
              [](const MemberStatus& m) { return Number(m.clock_gap); });
  w.PerMember(s, "trainer", "hetps_trainer_step_seconds_total", "counter",
              "Seconds a trainer spent in steps (compute and waits)",
              [](const MemberStatus& m) { return Number(m.step_seconds); });
  w.PerMember(s, "trainer", "hetps_trainer_wait_seconds_total", "counter",
              "Seconds of a trainer's steps spent waiting for the servers' weights",
              [](const MemberStatus& m) { return Number(m.wait_seconds); });
  w.PerMember(s, "trainer", "hetps_trainer_pushed_bytes_total", "counter", "Gradient bytes a trainer pushed",
              [](const MemberStatus& m) { return Number(m.bytes_pushed); });
  w.PerMember(s, "trainer", "hetps_trainer_pulled_bytes_total", "counter", "Weight bytes a trainer pulled",
              [](const MemberStatus& m) { return Number(m.bytes_pulled); });
  w.PerMember(s, "trainer", "hetps_trainer_inner_steps_total", "counter",
              "diloco: inner steps a trainer took on its own weights",
              [](const MemberStatus& m) { return Number(m.inner_steps); });
  w.PerMember(s, "trainer", "hetps_trainer_round_inner_steps", "gauge",
              "diloco: inner steps of a trainer's last round pushed",
              [](const MemberStatus& m) { return Number(uint64_t{m.last_round_inner_steps}); });

  w.PerMember(s, "server", "hetps_server_pushes_total", "counter", "Push messages a server accepted",
              [](const MemberStatus& m) { return Number(m.pushes); });
  w.PerMember(s, "server", "hetps_server_pulls_total", "counter", "Pull replies a server sent",
              [](const MemberStatus& m) { return Number(m.pulls); });
  w.PerMember(s, "server", "hetps_server_rounds_total", "counter", "Rounds (sync, diloco) a server completed",
              [](const MemberStatus& m) { return Number(m.rounds); });
  w.PerMember(s, "server", "hetps_server_weight_version", "gauge", "Updates applied to a server's partitions",
              [](const MemberStatus& m) { return Number(m.weight_version); });
  w.PerMember(s, "server", "hetps_server_max_clock_gap", "gauge",
              "The largest clock gap between trainers a server admitted",
              [](const MemberStatus& m) { return Number(m.max_clock_gap); });
  bool servers = false;
  for (const MemberStatus& m : s.members) servers = servers || m.role == "server";
  if (servers) {
    StalenessHistogram(w, s);
    ServerSeconds(w, s, "hetps_server_round_seconds",
                  "Seconds of a server's sync rounds, each from its first push to the last reply it released",
                  &MemberStatus::round_seconds);
    ServerSeconds(w, s, "hetps_server_apply_seconds",
                  "Seconds of optimizer work a server spent on each push (async, ssp) or sync round",
                  &MemberStatus::apply_seconds);
  }
  Refusals(w, s);
  return w.str();
}

}  // namespace hetps
