// PartitionWorkers: the threads that own a server's partitions and do their numeric work, and the
// queue that hands finished work back to the server's loop thread.
//
// Owned by a Shard. Every method but the destructor is called by the loop thread (the "I/O
// thread") only; tasks run on worker threads, or on the I/O thread itself with one thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/wake_pipe.h"

namespace hetps {

class PartitionWorkers {
 public:
  using Task = std::function<void()>;
  struct Part {
    size_t owner = 0;  // which worker runs the task, < threads()
    Task task;
  };

  // With `threads` 1 there is no worker thread: every task runs inline, on the I/O thread, at
  // the moment it is posted. With more, `threads` worker threads each run their own queue.
  explicit PartitionWorkers(size_t threads);
  // Stop().
  ~PartitionWorkers();
  PartitionWorkers(const PartitionWorkers&) = delete;
  PartitionWorkers& operator=(const PartitionWorkers&) = delete;

  size_t threads() const { return threads_; }
  // The owner of the item numbered `index` (e.g. a partition's slot): spreads items round robin.
  size_t OwnerOf(size_t index) const { return index % threads_; }

  // Queues `task` on worker `owner`. Each worker runs its tasks one at a time in the order they
  // were posted, so tasks on the state of one owner need no lock.
  void Post(size_t owner, Task task);

  // Posts every part to its owner; once all of them have run, `done` runs on the I/O thread: at
  // once when they all ran inline, otherwise from a later RunFinished(). `done` sees every write
  // the parts made.
  void Dispatch(std::vector<Part> parts, Task done);

  // A file descriptor that polls readable while finished work waits for RunFinished(); -1 with
  // one thread (nothing ever waits then).
  int wake_fd() const { return wake_ ? wake_->read_fd() : -1; }

  // Runs the `done` of every dispatch whose parts have all finished, in the order they finished.
  void RunFinished();

  // Blocks until every task posted so far has run, then RunFinished(). For tests and anything
  // that must read the partitions' state from the I/O thread.
  void Flush();

  // Runs every task already queued, joins the worker threads and drops the `done` of dispatches
  // still unfinished or waiting for RunFinished(). Idempotent; no task may be posted afterwards.
  void Stop();

 private:
  struct Worker {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<Task> queue;
    bool stopping = false;
    std::thread thread;
  };
  struct Join;

  void Serve(Worker& worker);
  // Called by the thread that ran the last part of a dispatch.
  void Finish(Task done);

  const size_t threads_;
  std::vector<std::unique_ptr<Worker>> workers_;
  bool stopped_ = false;
  std::mutex finished_mutex_;
  std::vector<Task> finished_;      // guarded by finished_mutex_
  std::unique_ptr<WakePipe> wake_;  // with more than one thread
};

}  // namespace hetps
