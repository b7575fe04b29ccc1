#include "scheduler/metrics_log.h"

#include <cerrno>
#include <cstring>

#include "common/logging.h"

namespace hetps {

MetricsLog::~MetricsLog() {
  Close();
}

Status MetricsLog::Open(const std::string& path) {
  Close();
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr) return Status::IoError("cannot open " + path + ": " + std::strerror(errno));
  path_ = path;
  flushed_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

void MetricsLog::Write(const nlohmann::ordered_json& record) {
  if (file_ == nullptr) return;
  // Not a number (a loss before any step, say) is written as null, which JSON can hold.
  const std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size()) Fail("write to");
}

void MetricsLog::MaybeFlush() {
  if (file_ == nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - flushed_ < std::chrono::seconds(1)) return;
  flushed_ = now;
  if (std::fflush(file_) != 0) Fail("flush");
}

void MetricsLog::Close() {
  if (file_ == nullptr) return;
  if (std::fclose(file_) != 0)
    HETPS_LOG(WARNING) << "the run's history " << path_
                       << " was not closed cleanly: " << std::strerror(errno);
  file_ = nullptr;
}

void MetricsLog::Fail(const std::string& what) {
  HETPS_LOG(WARNING) << "cannot " << what << " the run's history " << path_ << ": " << std::strerror(errno)
                     << "; it stops here (the job goes on)";
  std::fclose(file_);
  file_ = nullptr;
}

}  // namespace hetps
