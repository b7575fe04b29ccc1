#include "common/allocator.h"

#include <atomic>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace hetps {
namespace {

std::atomic<bool> g_kept_mapped{false};

}  // namespace

bool KeepLargeBuffersMapped() {
#if defined(__GLIBC__)
  // mallopt returns 1 on success. Setting either threshold also turns off glibc's adaptation of
  // the mmap threshold, which would otherwise move it back down.
  const bool ok = mallopt(M_MMAP_THRESHOLD, static_cast<int>(kAllocatorMmapThreshold)) == 1 &&
                  mallopt(M_TRIM_THRESHOLD, static_cast<int>(kAllocatorTrimThreshold)) == 1;
#else
  const bool ok = true;
#endif
  g_kept_mapped.store(ok);
  return ok;
}

bool LargeBuffersKeptMapped() {
  return g_kept_mapped.load();
}

}  // namespace hetps
