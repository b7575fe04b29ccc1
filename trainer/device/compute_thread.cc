#include "trainer/device/compute_thread.h"

#include <utility>

namespace hetps {

ComputeThread::ComputeThread() : thread_([this] { Loop(); }) {}

ComputeThread::~ComputeThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ComputeThread::Start(std::function<Status()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    HETPS_CHECK(!running_) << "a compute task is still running";
    task_ = std::move(task);
    running_ = true;
  }
  cv_.notify_all();
}

bool ComputeThread::Done() {
  std::lock_guard<std::mutex> lock(mutex_);
  return !running_;
}

Status ComputeThread::Wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return !running_; });
  return result_;
}

void ComputeThread::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || task_; });
    if (!task_) return;  // stopping with nothing pending
    std::function<Status()> task = std::move(task_);
    task_ = nullptr;
    lock.unlock();
    Status result = task();
    lock.lock();
    result_ = std::move(result);
    running_ = false;
    cv_.notify_all();
  }
}

}  // namespace hetps
