#include "trainer/device/copy_stream.h"

#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/version.h>

#include <thread>

namespace hetps {
namespace {

class DeviceEvent final : public CopyStream::Event {
 public:
  explicit DeviceEvent(c10::DeviceType type) : event_(type) {}

  void Synchronize() override {
#if TORCH_VERSION_MAJOR >= 2
    event_.synchronize();
#else
    while (!event_.query()) std::this_thread::yield();
#endif
  }

  c10::Event& event() {
    return event_;
  }

 private:
  c10::Event event_;
};

class DeviceCopyStream final : public CopyStream {
 public:
  explicit DeviceCopyStream(torch::Device device)
      : device_(device), guard_(device.type()), stream_(SideStream(guard_, device)) {}

  std::shared_ptr<Event> Copy(const torch::Tensor& dst, const torch::Tensor& src) override {
    // Ordered after what the producing stream has enqueued so far (backward's kernels for a
    // gradient, nothing pending for host weights).
    c10::Event ready(device_.type());
    ready.record(guard_.getStream(device_));
    ready.block(stream_);
    auto done = std::make_shared<DeviceEvent>(device_.type());
    {
      c10::StreamGuard on_side_stream(stream_);
      dst.copy_(src, /*non_blocking=*/true);
      done->event().record(stream_);
    }
    return done;
  }

  void ComputeWaitsFor(Event& event) override {
    static_cast<DeviceEvent&>(event).event().block(guard_.getStream(device_));
  }

  bool pinned_host_memory() const override { return device_.is_cuda(); }

 private:
  // CUDA has a pool of streams besides the default one; MPS has one command queue, which is
  // then both compute and copy stream.
  static c10::Stream SideStream(const c10::impl::VirtualGuardImpl& guard, torch::Device device) {
    if (device.is_cuda()) return guard.getStreamFromGlobalPool(device);
    return guard.getStream(device);
  }

  torch::Device device_;
  c10::impl::VirtualGuardImpl guard_;
  c10::Stream stream_;
};

}  // namespace

std::unique_ptr<CopyStream> MakeCopyStream(torch::Device device) {
  if (device.is_cpu()) return nullptr;
  return std::make_unique<DeviceCopyStream>(device);
}

torch::Tensor HostBuffer(const CopyStream& stream, c10::IntArrayRef sizes, c10::ScalarType dtype) {
  return torch::empty(sizes, torch::TensorOptions().dtype(dtype).pinned_memory(stream.pinned_host_memory()));
}

}  // namespace hetps
