// SnapshotWorker: evaluates the periodic snapshots (eval_interval_samples) beside training, on a
// thread of its own and a copy of the model, so that their accuracy is known while the job runs
// and costs the training loop only the copy of the weights. The loop thread hands it snapshots
// (the weights on the host, the model's buffers as they were) and takes the outcomes, in order.
//
// Submit and Take are called by the trainer's loop thread; the copy of the model is used by the
// worker's thread alone. The destructor ends the pass under way at its next batch and joins.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <torch/types.h>

#include "common/status.h"
#include "trainer/data/tensor_dataset.h"
#include "trainer/models/models.h"
#include "trainer/test_pass.h"

namespace hetps {

class SnapshotWorker {
 public:
  struct Snapshot {
    uint32_t id = 0;
    uint32_t epoch = 0;
    uint64_t version = 0;
    std::vector<std::vector<float>> weights;  // one per parameter, in named_parameters() order
    std::vector<torch::Tensor> buffers;       // copies of named_buffers(), in order
  };
  struct Finished {
    uint32_t id = 0;
    uint32_t epoch = 0;
    uint64_t version = 0;
    Status status;  // a LibTorch failure, or the snapshot's shape not the copy's
    TestOutcome outcome;
  };

  // `copy`: a model with the parameters and buffers of the trained one, moved to `device`.
  SnapshotWorker(std::shared_ptr<Model> copy, const Dataset& test, torch::Device device,
                 TestPassOptions options);
  ~SnapshotWorker();
  SnapshotWorker(const SnapshotWorker&) = delete;
  SnapshotWorker& operator=(const SnapshotWorker&) = delete;

  // Queues `snapshot` behind those still waiting; how many wait, this one included.
  size_t Submit(Snapshot snapshot);
  // The snapshots evaluated since the last call, in the order submitted; with `wait`, after every
  // snapshot submitted so far is evaluated.
  std::vector<Finished> Take(bool wait);

 private:
  void Run();
  // Loads the snapshot's weights and buffers into the copy.
  Status Load(const Snapshot& snapshot);

  std::shared_ptr<Model> copy_;
  const Dataset& test_;
  torch::Device device_;
  TestPassOptions options_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Snapshot> waiting_;    // guarded by mutex_
  std::vector<Finished> finished_;  // guarded by mutex_
  bool busy_ = false;               // guarded by mutex_: a snapshot is being evaluated
  bool stop_ = false;               // guarded by mutex_
  std::thread thread_;              // last: starts once the rest is made
};

}  // namespace hetps
