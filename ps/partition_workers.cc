#include "ps/partition_workers.h"

#include <atomic>

#include "common/check.h"

namespace hetps {

struct PartitionWorkers::Join {
  std::atomic<size_t> remaining;
  Task done;
};

PartitionWorkers::PartitionWorkers(size_t threads) : threads_(threads) {
  HETPS_CHECK(threads_ >= 1) << "a server needs at least one thread";
  if (threads_ == 1) return;
  wake_ = std::make_unique<WakePipe>();
  for (size_t i = 0; i < threads_; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    Worker& worker = *workers_.back();
    worker.thread = std::thread([this, &worker] { Serve(worker); });
  }
}

PartitionWorkers::~PartitionWorkers() {
  Stop();
}

void PartitionWorkers::Serve(Worker& worker) {
  while (true) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(worker.mutex);
      worker.wake.wait(lock, [&worker] { return worker.stopping || !worker.queue.empty(); });
      if (worker.queue.empty()) return;  // stopping, and everything queued has run
      task = std::move(worker.queue.front());
      worker.queue.pop_front();
    }
    task();
  }
}

void PartitionWorkers::Post(size_t owner, Task task) {
  HETPS_CHECK(owner < threads_) << "worker " << owner << " of " << threads_;
  HETPS_CHECK(!stopped_) << "a task posted after Stop()";
  if (threads_ == 1) {
    task();
    return;
  }
  Worker& worker = *workers_[owner];
  {
    std::lock_guard<std::mutex> lock(worker.mutex);
    worker.queue.push_back(std::move(task));
  }
  worker.wake.notify_one();
}

void PartitionWorkers::Dispatch(std::vector<Part> parts, Task done) {
  if (threads_ == 1 || parts.empty()) {
    for (Part& part : parts) Post(part.owner, std::move(part.task));
    done();
    return;
  }
  auto join = std::make_shared<Join>();
  join->remaining.store(parts.size());
  join->done = std::move(done);
  for (Part& part : parts) {
    Post(part.owner, [this, join, task = std::move(part.task)] {
      task();
      // acq_rel: the last part to finish sees every other part's writes, and hands them on to
      // the I/O thread through finished_mutex_.
      if (join->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish(std::move(join->done));
    });
  }
}

void PartitionWorkers::Finish(Task done) {
  std::lock_guard<std::mutex> lock(finished_mutex_);
  finished_.push_back(std::move(done));
  // One byte per empty -> non-empty change; RunFinished drains the pipe before taking the queue,
  // so a wake-up is never lost and the pipe never fills.
  if (finished_.size() == 1) wake_->Notify();
}

void PartitionWorkers::RunFinished() {
  if (threads_ == 1) return;
  wake_->Drain();
  std::vector<Task> ready;
  {
    std::lock_guard<std::mutex> lock(finished_mutex_);
    ready.swap(finished_);
  }
  for (Task& done : ready) done();
}

void PartitionWorkers::Flush() {
  if (threads_ == 1) return;
  std::mutex mutex;
  std::condition_variable all_ran;
  size_t waiting = threads_;
  for (size_t owner = 0; owner < threads_; ++owner) {
    Post(owner, [&] {
      std::lock_guard<std::mutex> lock(mutex);
      if (--waiting == 0) all_ran.notify_one();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    all_ran.wait(lock, [&] { return waiting == 0; });
  }
  RunFinished();
}

void PartitionWorkers::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& worker : workers_) {
    {
      std::lock_guard<std::mutex> lock(worker->mutex);
      worker->stopping = true;
    }
    worker->wake.notify_one();
  }
  for (auto& worker : workers_) worker->thread.join();
  std::lock_guard<std::mutex> lock(finished_mutex_);
  finished_.clear();
}

}  // namespace hetps
