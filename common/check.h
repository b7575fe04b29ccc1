// HETPS_CHECK: aborts with file:line and a message when an invariant of this process is broken.
//
// Only for bugs in hetps itself. Never for anything a peer, a file or a user can cause: those are
// Status values (common/status.h). Named HETPS_ so it cannot collide with glog's CHECK, which
// LibTorch's headers bring in.
#pragma once

#include <sstream>

namespace hetps::internal {

// Collects the streamed message and aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Turns the stream expression into void so that it fits the ternary in HETPS_CHECK.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace hetps::internal

#define HETPS_CHECK(condition)                 \
  (condition) ? (void)0                        \
              : ::hetps::internal::Voidify() & \
                    ::hetps::internal::CheckFailure(__FILE__, __LINE__, #condition).stream()
