// WakePipe: a file descriptor another thread can make readable, so that a loop polling sockets
// (zmq::poll takes plain descriptors too) wakes up when work was handed to it through a queue.
//
// A pipe rather than an eventfd, so that it works on macOS too; both ends are non-blocking, so
// Notify() never stalls the thread handing work over and Drain() never stalls the loop. Notify()
// may be called from any thread; Drain() and read_fd() belong to the loop that polls it. The
// pattern: notify once when a guarded queue goes from empty to non-empty, and drain before taking
// from the queue (or when finding it empty), so a wake-up is never lost, at worst one is spurious,
// and the pipe never fills.
#pragma once

namespace hetps {

class WakePipe {
 public:
  WakePipe();
  ~WakePipe();
  WakePipe(const WakePipe&) = delete;
  WakePipe& operator=(const WakePipe&) = delete;

  // Polls readable from the first Notify() until the next Drain().
  int read_fd() const { return read_fd_; }
  void Notify();
  void Drain();

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
};

}  // namespace hetps
