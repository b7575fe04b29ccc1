// SchedulerThread: a real scheduler on a thread of its own, for tests that speak to it as its
// members would (through ControlChannel, over 127.0.0.1); stopped and joined when it goes. Owned
// by one test thread.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <utility>

#include "common/control_channel.h"
#include "scheduler/scheduler.h"

namespace hetps::testing {

class SchedulerThread {
 public:
  explicit SchedulerThread(SchedulerOptions options) : scheduler_(context_, Prepare(std::move(options))) {}
  ~SchedulerThread() { Stop(); }
  SchedulerThread(const SchedulerThread&) = delete;
  SchedulerThread& operator=(const SchedulerThread&) = delete;

  Status Start() {
    HETPS_RETURN_IF_ERROR(scheduler_.Start());
    loop_ = std::thread([this] { (void)scheduler_.Run(); });
    return Status::Ok();
  }
  // Ends the scheduler's loop; the job's summary.
  const RunSummary& Stop() {
    stop_ = true;
    if (loop_.joinable()) loop_.join();
    return scheduler_.summary();
  }
  Scheduler& scheduler() { return scheduler_; }
  const std::string& endpoint() const { return scheduler_.endpoint(); }
  zmq::context_t& context() { return context_; }

 private:
  SchedulerOptions Prepare(SchedulerOptions options) {
    options.progress_out = nullptr;
    options.stop = &stop_;
    return options;
  }

  zmq::context_t context_{1};
  std::atomic<bool> stop_{false};
  Scheduler scheduler_;
  std::thread loop_;
};

// Joins the scheduler behind `control` as a member of `role` (a trainer on the cpu; a server
// with an endpoint nobody reaches).
inline Result<Message> JoinAs(ControlChannel& control, wire::Role role) {
  ControlChannel::JoinInfo info;
  info.role = role;
  info.device = "cpu";
  if (role == wire::Role::Server) info.endpoint = "tcp://127.0.0.1:9";
  return control.Join(info);
}

}  // namespace hetps::testing
