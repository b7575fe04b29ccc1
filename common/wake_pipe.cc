#include "common/wake_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/check.h"

namespace hetps {

WakePipe::WakePipe() {
  int fds[2];
  HETPS_CHECK(::pipe(fds) == 0) << "pipe: " << std::strerror(errno);
  for (int fd : fds) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
}

WakePipe::~WakePipe() {
  ::close(read_fd_);
  ::close(write_fd_);
}

void WakePipe::Notify() {
  const char byte = 1;
  // A full pipe (it cannot be, with one byte per empty -> non-empty change) is still readable.
  [[maybe_unused]] ssize_t written = ::write(write_fd_, &byte, 1);
}

void WakePipe::Drain() {
  char drain[64];
  while (::read(read_fd_, drain, sizeof(drain)) > 0) {
  }
}

}  // namespace hetps
