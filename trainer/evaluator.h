// Evaluator: a trainer's evaluations on the test set, when the scheduler asks. An evaluation pulls
// the newest weights, runs the model over the whole test set and reports loss and accuracy (R²
// for loss mse); a final one also sends the model's buffers (docs/models.md, "Buffers"). A
// snapshot (eval_interval_samples) pulls the newest weights and keeps a copy, evaluated only
// before the final evaluation, so that periodic evaluations cost no training time.
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

namespace hetps {

class Evaluator {
 public:
  struct Options {
    uint32_t batch_size = 250;        // test samples per forward pass
    std::string model_name;           // for logs and error messages
    Loss loss = Loss::kCrossEntropy;  // mse: report R² instead of accuracy
  };

  Evaluator(Model& model, ModelBuffers& buffers, PsClient& client, ControlChannel& control, Sender& sender,
            const Dataset& test, torch::Device device, Options options);

  // Answers an EvalRequest made at step `clock`: a snapshot when it names one, else an evaluation
  // of the newest weights (a final one evaluates and reports every snapshot first). The model
  // holds the newest weights afterwards; their version is returned. A LibTorch failure is an
  // Internal error naming the model and the device.
  Result<uint64_t> Handle(const wire::EvalRequest& request, uint64_t clock);
  // Keeps `weights` (one host copy per tensor of the model, of version `version`) as the snapshot
  // an EvalRequest names, without pulling: the weights the servers hold as they stand, which the
  // caller has (mode diloco: a round's first weights, while the round runs).
  void KeepSnapshot(const wire::EvalRequest& request, uint64_t version,
                    std::vector<std::vector<float>> weights);

 private:
  struct Snapshot {
    uint32_t id = 0;
    uint32_t epoch = 0;
    uint64_t version = 0;
    std::vector<std::vector<float>> weights;  // one per tensor of the model
  };

  // Pulls the newest weights into the model; their version.
  Result<uint64_t> PullLatest(uint64_t clock);
  // Runs the model as it is on the whole test set and reports the result.
  Status EvaluateAndReport(uint32_t epoch, bool final, uint32_t snapshot, uint64_t version);
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
  std::vector<Snapshot> snapshots_;
};

}  // namespace hetps
