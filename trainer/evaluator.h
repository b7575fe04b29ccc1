// Evaluator: a trainer's evaluations on the test set, when the scheduler asks. An evaluation pulls
// the newest weights, runs the model over the whole test set and reports loss and accuracy (R²
// for loss mse); a final one also sends the model's buffers (docs/models.md, "Buffers"). A
// snapshot (eval_interval_samples) pulls the newest weights into a copy on the host, without
// touching the trained model, and hands it to the snapshot worker, which evaluates it beside
// training (trainer/snapshot_worker.h); its report goes out with the next SendFinished().
//
// Borrows the model, its buffers, the PS client, the control channel and the test data, which
// must outlive it. Used by the trainer's loop thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "common/control_channel.h"
#include "common/job_config.h"
#include "common/status.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/device/model_buffers.h"
#include "trainer/models/models.h"
#include "trainer/ps_client.h"
#include "trainer/snapshot_worker.h"
#include "trainer/test_pass.h"

namespace hetps {

class Evaluator {
 public:
  using Options = TestPassOptions;

  // `snapshot_model` (null when the job takes no snapshots): a second model like `model`, on
  // `snapshot_device`, for the snapshot worker.
  Evaluator(Model& model, ModelBuffers& buffers, PsClient& client, ControlChannel& control, Sender& sender,
            const Dataset& test, torch::Device device, Options options,
            std::shared_ptr<Model> snapshot_model = nullptr, torch::Device snapshot_device = torch::kCPU);

  // Answers an EvalRequest made at step `clock` that names no snapshot: evaluates the newest
  // weights (a final one first waits for the snapshots under way and reports them). The model
  // holds the newest weights afterwards; their version is returned. A LibTorch failure is an
  // Internal error naming the model and the device.
  Result<uint64_t> Evaluate(const wire::EvalRequest& request, uint64_t clock);
  // Answers an EvalRequest that names a snapshot: pulls the newest weights into a host copy and
  // hands it to the worker. The model and its weights stay as they are.
  Status TakeSnapshot(const wire::EvalRequest& request, uint64_t clock);
  // Hands `weights` (one host copy per tensor of the model, of version `version`) to the worker
  // as the snapshot an EvalRequest names, without pulling: the weights the servers hold as they
  // stand, which the caller has (mode diloco: a round's first weights, while the round runs).
  void KeepSnapshot(const wire::EvalRequest& request, uint64_t version,
                    std::vector<std::vector<float>> weights);
  // Reports the snapshots the worker has evaluated since the last call; its failure, or the
  // control channel's, is returned.
  Status SendFinished();

 private:
  // Pulls the newest weights into the model; their version.
  Result<uint64_t> PullLatest(uint64_t clock);
  // Reports the worker's snapshots evaluated so far; with `wait`, once all are.
  Status ReportSnapshots(bool wait);
  // Reports an outcome; a final report carries the model's buffers.
  Status Report(uint32_t epoch, bool final, uint32_t snapshot, uint64_t version, const TestOutcome& outcome);
  // The model's buffers (not parameters) as BufferValues, to go with a final report.
  Result<flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::BufferValue>>>> BuildBuffers(
      flatbuffers::FlatBufferBuilder& fbb);

  Model& model_;
  ModelBuffers& buffers_;
  PsClient& client_;
  ControlChannel& control_;
  Sender& sender_;
  const Dataset& test_;
  torch::Device device_;
  Options options_;
  std::unique_ptr<SnapshotWorker> worker_;  // with a snapshot model
};

}  // namespace hetps
