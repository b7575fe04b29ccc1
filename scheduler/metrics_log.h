// MetricsLog: a run's history as JSON lines (RUN_DIR/metrics.jsonl), appended as it happens:
// every trainer's progress report, the job's totals, every evaluation and every decision of mode
// auto, each with its time in seconds since training started (`time_s`). What a plot, a
// TensorBoard export or a comparison of two runs reads after the job, when the status page is
// gone. The record kinds and their fields are in docs/operations.md ("The run's history").
//
// Used on the scheduler's loop thread only. Lines are flushed at most a second apart and when it
// is closed, so a scheduler killed loses at most its last second of history.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace hetps {

class MetricsLog {
 public:
  MetricsLog() = default;
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  ~MetricsLog();

  // Appends to `path` (created if missing). IoError naming it when it cannot be opened.
  Status Open(const std::string& path);
  bool is_open() const { return file_ != nullptr; }
  // One line; nothing when not open. A write that fails is said once in the log, then the
  // history stops (the job goes on).
  void Write(const nlohmann::ordered_json& record);
  // Flushes when the last flush is a second old.
  void MaybeFlush();
  void Close();

 private:
  void Fail(const std::string& what);

  std::FILE* file_ = nullptr;
  std::string path_;
  std::chrono::steady_clock::time_point flushed_{};
};

}  // namespace hetps
