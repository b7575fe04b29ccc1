#include "trainer/snapshot_worker.h"

#include <string>
#include <utility>

#include <torch/torch.h>

#include "trainer/device/device.h"

namespace hetps {

SnapshotWorker::SnapshotWorker(std::shared_ptr<Model> copy, const Dataset& test, torch::Device device,
                               TestPassOptions options)
    : copy_(std::move(copy)), test_(test), device_(device), options_(std::move(options)) {
  thread_ = std::thread([this] { Run(); });
}

SnapshotWorker::~SnapshotWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

size_t SnapshotWorker::Submit(Snapshot snapshot) {
  std::lock_guard<std::mutex> lock(mutex_);
  waiting_.push_back(std::move(snapshot));
  changed_.notify_all();
  return waiting_.size();
}

std::vector<SnapshotWorker::Finished> SnapshotWorker::Take(bool wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (wait) changed_.wait(lock, [this] { return waiting_.empty() && !busy_; });
  return std::exchange(finished_, {});
}

void SnapshotWorker::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return stop_ || !waiting_.empty(); });
    if (stop_) return;
    Snapshot snapshot = std::move(waiting_.front());
    waiting_.pop_front();
    busy_ = true;
    lock.unlock();
    Finished done{snapshot.id, snapshot.epoch, snapshot.version, Load(snapshot), {}};
    snapshot = {};  // the weights are in the copy now
    if (done.status.ok()) {
      auto outcome = RunTestPass(*copy_, test_, device_, options_, [this] {
        std::lock_guard<std::mutex> stopping(mutex_);
        return stop_ ? Status::Aborted("the trainer is stopping") : Status::Ok();
      });
      if (outcome.ok()) {
        done.outcome = *outcome;
      } else {
        done.status = outcome.status();
      }
    }
    lock.lock();
    busy_ = false;
    finished_.push_back(std::move(done));
    changed_.notify_all();
  }
}

Status SnapshotWorker::Load(const Snapshot& snapshot) {
  const std::vector<torch::Tensor> parameters = copy_->parameters();
  const std::vector<torch::Tensor> buffers = copy_->buffers();
  if (snapshot.weights.size() != parameters.size() || snapshot.buffers.size() != buffers.size()) {
    return Status::Internal("snapshot " + std::to_string(snapshot.id) + " holds " +
                            std::to_string(snapshot.weights.size()) + " tensors and " +
                            std::to_string(snapshot.buffers.size()) +
                            " buffers; the evaluation's copy of model " + options_.model_name + " has " +
                            std::to_string(parameters.size()) + " and " + std::to_string(buffers.size()));
  }
  try {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < parameters.size(); ++i) {
      const auto& host = snapshot.weights[i];
      if (static_cast<int64_t>(host.size()) != parameters[i].numel()) {
        return Status::Internal("snapshot " + std::to_string(snapshot.id) + ": parameter " +
                                std::to_string(i) + " holds " + std::to_string(host.size()) +
                                " values, not " + std::to_string(parameters[i].numel()));
      }
      auto view = torch::from_blob(const_cast<float*>(host.data()), parameters[i].sizes(), torch::kFloat32);
      parameters[i].copy_(view);
    }
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(snapshot.buffers[i]);
  } catch (const c10::Error& e) {
    return Status::Internal("LibTorch failed loading snapshot " + std::to_string(snapshot.id) +
                            " into model " + options_.model_name + " on " + DeviceDescription(device_) +
                            ": " + e.what_without_backtrace());
  }
  return Status::Ok();
}

}  // namespace hetps
