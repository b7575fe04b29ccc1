// CopyStream: where a trainer's copies between a GPU and the host run, off the compute stream, and
// the events that tell the host or the compute stream when a copy has finished.
//
// The GPU implementation (MakeCopyStream) is device-generic LibTorch (c10::Stream, c10::Event):
// on CUDA a side stream from LibTorch's pool, on MPS the device's one command queue (MPS has no
// second stream, so its copies queue behind compute). There is none for the CPU, whose tensors
// are host memory already; tests inject their own (a fake that defers each copy until its event
// is waited for, or that throws c10::Error as a failing device would).
//
// Thread-safety: Copy may be called from any thread (autograd's device threads call it from
// gradient hooks) but not concurrently with itself; an Event is waited for by one thread.
#pragma once

#include <memory>

#include <torch/types.h>

namespace hetps {

class CopyStream {
 public:
  // Marks the end of a copy.
  class Event {
   public:
    virtual ~Event() = default;
    // Blocks the calling host thread until the copy has finished. c10::Error when the device
    // failed (an asynchronous CUDA error surfaces here).
    virtual void Synchronize() = 0;
  };

  virtual ~CopyStream() = default;

  // Enqueues dst.copy_(src, non_blocking) on the copy stream, to start once the work enqueued on
  // the calling thread's current stream of src's device so far is done (src is ready). src and
  // dst have the same shape and dtype; one of them is on the host (pinned memory on CUDA). The
  // caller keeps both alive until the returned event has been waited for. c10::Error when the
  // device refuses the work.
  virtual std::shared_ptr<Event> Copy(const torch::Tensor& dst, const torch::Tensor& src) = 0;

  // Makes the device's current stream (where the next forward runs) wait for `event` without
  // blocking the host: the weights copied to the device are in place before they are read.
  virtual void ComputeWaitsFor(Event& event) = 0;

  // Whether host buffers for this stream should be pinned (page-locked) memory, which
  // non-blocking copies need on CUDA to be asynchronous at all.
  virtual bool pinned_host_memory() const = 0;
};

// The copy stream of GPU `device` (CUDA or MPS); nullptr for the CPU. c10::Error when the device
// cannot give one.
std::unique_ptr<CopyStream> MakeCopyStream(torch::Device device);

// A host tensor of `sizes` and `dtype` for copies through `stream`: pinned when the stream wants
// it. c10::Error when pinned memory cannot be had.
torch::Tensor HostBuffer(const CopyStream& stream, c10::IntArrayRef sizes, c10::ScalarType dtype);

}  // namespace hetps
