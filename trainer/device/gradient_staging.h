// GradientStaging: the way gradients leave a GPU. As backward produces each gradient, Stage()
// (called from the autograd hook, on a device thread of LibTorch's) converts it to the wire dtype
// on the device, so a 16-bit wire halves the bytes over PCIe, and enqueues a non-blocking copy
// into that tensor's host buffer on the copy stream; the loop thread takes the gradients in the
// order they were staged (Next), each once its copy has finished, and sends them from the host
// buffers. Host buffers are allocated once per tensor (pinned memory on CUDA) and reused every
// step; a buffer ZeroMQ still holds when the next step needs it is replaced, never overwritten.
//
// Stage() may run on any one thread at a time; everything else is for the loop thread. The
// CopyStream must outlive the staging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "common/shard_map.h"
#include "common/status.h"
#include "trainer/device/copy_stream.h"

namespace hetps {

class GradientStaging {
 public:
  // One host buffer per tensor of `signature` (the model's parameters, float32), holding
  // `wire_dtype` (F32, BF16 or F16) elements. Internal naming the tensor and device when a
  // buffer cannot be allocated.
  static Result<std::unique_ptr<GradientStaging>> Create(const std::vector<TensorInfo>& signature,
                                                         torch::Device device, wire::DType wire_dtype,
                                                         CopyStream& stream);

  wire::DType wire_dtype() const { return wire_dtype_; }

  // Loop thread, before backward: a new step, nothing staged yet.
  void BeginStep();

  // Any thread: tensor `tensor`'s gradient is ready on the device. Never throws: a LibTorch
  // failure is kept (the first one) and returned by Next.
  void Stage(size_t tensor, const torch::Tensor& grad);

  // Loop thread: the next staged tensor whose copy has finished, waiting up to `timeout` for one
  // to be staged (nullopt when none was); Internal naming the tensor and the device when staging
  // or copying it failed.
  Result<std::optional<size_t>> Next(std::chrono::milliseconds timeout);

  // Tensor `tensor`'s host buffer (its elements as wire_dtype()) after Next returned it, and the
  // owner that keeps the buffer alive while ZeroMQ sends from it.
  const void* data(size_t tensor) const { return slots_[tensor]->host.data_ptr(); }
  std::shared_ptr<const void> owner(size_t tensor) const { return slots_[tensor]; }

  // Seconds Next spent waiting for copies to finish, in all.
  double copy_wait_seconds() const { return copy_wait_seconds_; }
  // Host buffers replaced because ZeroMQ still held them when a step needed them.
  uint64_t replaced_buffers() const { return replaced_buffers_; }

 private:
  struct Slot {
    torch::Tensor host;
  };
  struct Staged {
    size_t tensor = 0;
    torch::Tensor source;  // kept alive until the copy has finished
    std::shared_ptr<CopyStream::Event> copied;
  };

  GradientStaging(const std::vector<TensorInfo>& signature, torch::Device device, wire::DType wire_dtype,
                  CopyStream& stream);
  std::string Describe(size_t tensor) const;

  std::vector<TensorInfo> signature_;
  torch::Device device_;
  wire::DType wire_dtype_;
  c10::ScalarType host_dtype_;
  CopyStream& stream_;
  std::vector<std::shared_ptr<Slot>> slots_;
  uint64_t replaced_buffers_ = 0;
  double copy_wait_seconds_ = 0;

  std::mutex mutex_;
  std::condition_variable staged_cv_;
  std::deque<Staged> staged_;  // guarded by mutex_
  Status error_;               // guarded by mutex_; the first failure of the step
};

}  // namespace hetps
