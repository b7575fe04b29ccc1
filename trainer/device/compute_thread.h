// ComputeThread: a thread of its own for a step's forward and backward when gradients are staged
// through a CopyStream (GPUs). On a GPU, backward() blocks its caller while LibTorch's device
// threads run the graph and the gradient hooks, so the loop thread, which owns the sockets, hands
// the work to this thread and sends each gradient as it arrives instead of waiting.
//
// One task at a time. Start, Done and Wait are for the one thread that owns the object; the task
// runs on the compute thread, which lives as long as the object.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "common/status.h"

namespace hetps {

class ComputeThread {
 public:
  ComputeThread();
  ~ComputeThread();
  ComputeThread(const ComputeThread&) = delete;
  ComputeThread& operator=(const ComputeThread&) = delete;

  // Runs `task` on the compute thread. The previous task must have been waited for.
  void Start(std::function<Status()> task);
  // Whether the task has finished.
  bool Done();
  // Waits for the task to finish and returns its status.
  Status Wait();

 private:
  void Loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<Status()> task_;  // guarded by mutex_; set while one is pending
  bool running_ = false;          // guarded by mutex_: a task was started and has not finished
  bool stop_ = false;             // guarded by mutex_
  Status result_;                 // guarded by mutex_
  std::thread thread_;            // last: starts once the rest is initialised
};

}  // namespace hetps
