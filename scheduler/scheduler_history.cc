// The run's history: what goes into metrics.jsonl (scheduler/metrics_log.h), built from what the
// scheduler already holds when a report, an evaluation or a decision arrives, and the status page
// as the job ended (status.html). Part of the
// Scheduler class (scheduler/scheduler.h), on its loop thread like the rest.
#include <cmath>

#include "checkpoint/file_system.h"
#include "checkpoint/manifest.h"
#include "common/logging.h"
#include "http/status_page.h"
#include "scheduler/scheduler.h"

namespace hetps {
namespace {

using Json = nlohmann::ordered_json;

double Milliseconds(double seconds) {  // seconds to the millisecond: shorter lines, no false precision
  return std::round(seconds * 1000) / 1000;
}

Json Record(const char* kind, double time_s) {
  Json j;
  j["kind"] = kind;
  j["time_s"] = Milliseconds(time_s);
  return j;
}

}  // namespace

Status Scheduler::OpenHistory() {
  if (options_.run_dir.path.empty()) return Status::Ok();
  HETPS_RETURN_IF_ERROR(
      metrics_.Open(JoinPath(options_.run_dir.path, "metrics.jsonl")).WithContext("--run-dir"));
  Json j = Record("run", 0);
  j["utc"] = UtcNow();
  j["mode"] = ModeName(job_.mode);
  j["model"] = job_.model;
  j["servers"] = job_.servers;
  j["trainers"] = job_.trainers;
  j["epochs"] = job_.epochs;
  j["global_batch_size"] = job_.global_batch_size;
  j["resumed_from"] = options_.resume;
  j["samples_before"] = resume_ ? resume_->data.samples_trained : 0;
  metrics_.Write(j);
  return Status::Ok();
}

double Scheduler::TimeSinceTraining() const {
  return training_started_ != Clock::time_point{} ? SecondsSince(training_started_) : 0;
}

void Scheduler::LogProgress(const Member& trainer) {
  if (!metrics_.is_open()) return;
  const TrainerProgress& p = trainer.progress;
  Json j = Record("progress", TimeSinceTraining());
  j["trainer"] = trainer.rank;
  j["epoch"] = p.epoch;
  j["step"] = p.clock;
  j["samples"] = p.samples;
  j["loss"] = p.loss;
  j["samples_per_second"] = p.samples_per_second;
  j["batch_size"] = p.batch_size;
  j["weight_version"] = p.weight_version;
  j["wait_seconds"] = p.wait_seconds;
  if (CurrentMode() == ConsistencyMode::kDiloco) j["inner_steps"] = p.inner_steps;
  metrics_.Write(j);
}

void Scheduler::MaybeLogJob() {
  if (!metrics_.is_open()) return;
  metrics_.MaybeFlush();
  const auto now = Clock::now();
  if (phase_ != Phase::kTraining && phase_ != Phase::kFinishing) return;
  if (now - metrics_job_at_ < std::chrono::milliseconds(job_.progress_interval_ms)) return;
  metrics_job_at_ = now;
  double rate = 0;
  for (Member* t : members_.Training()) rate += t->progress.samples_per_second;
  Json j = Record("job", TimeSinceTraining());
  j["mode"] = ModeName(CurrentMode());
  j["samples"] = SamplesTrained();
  j["samples_per_epoch"] = chunks_.samples();
  j["samples_per_second"] = rate;
  j["trainers"] = members_.Training().size();
  uint64_t gap = 0;
  if (!HasRounds(job_.mode, job_.diloco) && CurrentMode() != ConsistencyMode::kDiloco) {
    const StalenessSummary staleness = Staleness(&gap);
    j["staleness_p50"] = staleness.p50;
    j["staleness_max"] = staleness.max;
  }
  metrics_.Write(j);
}

void Scheduler::LogEvaluation(const Evaluation& e) {
  if (!metrics_.is_open()) return;
  Json j = Record("evaluation", TimeSinceTraining());
  j["final"] = e.final;
  j["epoch"] = e.epoch;
  j["weights_taken_s"] = Milliseconds(e.wall_seconds);  // time_s: when it was reported
  j["samples"] = e.samples_trained;
  j["weight_version"] = e.weight_version;
  j["test_loss"] = e.test_loss;
  const std::string metric = MetricName();
  if (metric == "perplexity") {
    j["test_perplexity"] = Perplexity(e.test_loss);
    j["test_bits_per_token"] = BitsPerToken(e.test_loss);
  } else if (metric == "r2") {
    j["test_r2"] = e.test_r2;
  }
  if (metric != "r2") j["test_accuracy"] = e.test_accuracy;
  metrics_.Write(j);
}

void Scheduler::CloseHistory() {
  if (!metrics_.is_open()) return;
  MaybeLogJob();
  Json j = Record("end", TimeSinceTraining());
  j["status"] = summary_.ok ? "ok" : "failed";
  if (!summary_.ok) j["error"] = summary_.error;
  j["samples"] = SamplesTrained();
  j["samples_per_second"] = summary_.samples_per_second;
  metrics_.Write(j);
  metrics_.Close();
}

void Scheduler::SaveStatusPage() {
  if (options_.run_dir.path.empty() || !status_) return;
  const std::string path = JoinPath(options_.run_dir.path, "status.html");
  Status written = WriteFileAtomically(path, RenderStatusPage(*status_, /*live=*/false));
  if (!written.ok()) HETPS_LOG(WARNING) << "the status page was not saved: " << written.message();
}

void Scheduler::LogModeDecision(const ModeDecision& d) {
  if (!metrics_.is_open()) return;
  Json j = Record("mode", d.at_seconds);
  j["mode"] = d.mode;
  j["from_step"] = d.from_clock;
  if (d.mode == "ssp") j["staleness"] = d.staleness;
  j["reason"] = d.reason;
  metrics_.Write(j);
}

}  // namespace hetps
