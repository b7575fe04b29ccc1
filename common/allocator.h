// The C library's allocator, set up once at the start of every hetps program so that a step's
// large buffers (activations, gradients, weight copies, message bodies) stay mapped from one step
// to the next.
//
// glibc serves a request above its mmap threshold (128 KiB at first, adapting up to 32 MiB) with
// a fresh mmap and returns it with munmap on free, and it gives the top of the heap back to the
// kernel once more than the trim threshold (128 KiB) is free. A training step allocates and frees
// the same few megabytes every time, so by default each step maps them, page-faults every page in
// again and unmaps them: about 30% of a small CNN's step on this project's machines
// (docs/decisions.md, "The allocator"). Raising both thresholds keeps those pages in the heap,
// where the next step reuses them. The cost is memory that is not given back to the kernel while
// the process runs, bounded by its peak use.
//
// Elsewhere (macOS's allocator keeps large regions cached by itself) it does nothing.
#pragma once

#include <cstddef>

namespace hetps {

// Requests below this size come from the heap, not from their own mmap.
constexpr size_t kAllocatorMmapThreshold = size_t{256} << 20;
// Free memory at the top of the heap is given back only beyond this much.
constexpr size_t kAllocatorTrimThreshold = size_t{512} << 20;

// Sets the thresholds above. Call it first thing in main, before any thread starts. Returns false
// when the C library refused them (the process then runs, slower, with its defaults).
bool KeepLargeBuffersMapped();

// Whether KeepLargeBuffersMapped() has taken effect in this process.
bool LargeBuffersKeptMapped();

}  // namespace hetps
