// Test support: a CopyStream for the CPU that behaves like a GPU's side stream where it matters
// to the host code: a copy does not happen when it is enqueued but later, in order, at the latest
// when its event is waited for or when the compute stream is made to wait for it. Host code that
// reads a buffer before waiting for its copy, or runs forward before the weights' copies, sees
// stale data. It logs what happened, in order, and can fail the n-th copy with a c10::Error as a
// failing GPU would (CUDA out of memory).
//
// Used from the threads a trainer uses (the compute thread's hooks and the loop thread); guarded
// by a mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "trainer/device/copy_stream.h"

namespace hetps::testing {

class FakeCopyStream final : public CopyStream {
 public:
  struct Shared {
    std::mutex mutex;
    std::deque<std::pair<uint64_t, std::function<void()>>> pending;  // (copy number, the copy)
    uint64_t enqueued = 0;
    uint64_t done = 0;   // copies run so far, in order
    uint64_t bytes = 0;  // bytes copied
    std::vector<std::string> log;
    int64_t fail_copy = -1;

    // Runs the pending copies up to and including copy `number`.
    void RunUpTo(uint64_t number) {
      while (!pending.empty() && pending.front().first <= number) {
        pending.front().second();
        pending.pop_front();
        ++done;
      }
    }
  };

  // `fail_copy`: the copy (counted from 0) that throws c10::Error, and every one after; -1: none.
  explicit FakeCopyStream(int64_t fail_copy = -1) : shared_(std::make_shared<Shared>()) {
    shared_->fail_copy = fail_copy;
  }

  // Outlives the stream, for a test to look at after the trainer is gone.
  std::shared_ptr<Shared> shared() const { return shared_; }

  std::shared_ptr<Event> Copy(const torch::Tensor& dst, const torch::Tensor& src) override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    const uint64_t number = shared_->enqueued;
    if (shared_->fail_copy >= 0 && static_cast<int64_t>(number) >= shared_->fail_copy) {
      TORCH_CHECK(false, "CUDA out of memory (injected by FakeCopyStream at copy ", number, ")");
    }
    ++shared_->enqueued;
    shared_->bytes += src.nbytes();
    shared_->log.push_back("copy " + std::to_string(number));
    shared_->pending.emplace_back(number, [d = dst, s = src]() mutable {
      torch::NoGradGuard no_grad;
      d.copy_(s);
    });
    return std::make_shared<FakeEvent>(shared_, number);
  }

  void ComputeWaitsFor(Event& event) override {
    auto& fake = static_cast<FakeEvent&>(event);
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->log.push_back("compute waits for " + std::to_string(fake.number));
    shared_->RunUpTo(fake.number);
  }

  bool pinned_host_memory() const override { return false; }

 private:
  struct FakeEvent final : Event {
    FakeEvent(std::shared_ptr<Shared> s, uint64_t n) : shared(std::move(s)), number(n) {}
    void Synchronize() override {
      std::lock_guard<std::mutex> lock(shared->mutex);
      shared->log.push_back("synchronize " + std::to_string(number));
      shared->RunUpTo(number);
    }
    std::shared_ptr<Shared> shared;
    uint64_t number;
  };

  std::shared_ptr<Shared> shared_;
};

}  // namespace hetps::testing
