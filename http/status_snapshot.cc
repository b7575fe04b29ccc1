#include "http/status_snapshot.h"

namespace hetps {

void SnapshotBoard::Publish(std::shared_ptr<const StatusSnapshot> snapshot) {
  std::lock_guard<std::mutex> lock(mutex_);
  latest_ = std::move(snapshot);
}

std::shared_ptr<const StatusSnapshot> SnapshotBoard::Latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_;
}

}  // namespace hetps
