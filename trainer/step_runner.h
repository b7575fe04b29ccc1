// StepRunner: one training step of a trainer. A batch goes through forward and backward; every
// gradient is handed to the PS client, from an autograd hook as backward produces it when
// overlapping, or after backward otherwise; then the weights that follow the step are written
// back into the model. --slowdown's sleeps (Pacer) happen here too.
//
// Two paths. On the CPU the loop thread runs backward itself and the hook pushes the gradient
// tensor in place. With a GradientStaging (GPUs, or a test's fake copy stream on the CPU) forward
// and backward run on a ComputeThread; the hook stages each gradient (wire dtype conversion on the
// device, a non-blocking copy to a pinned host buffer, an event) and the loop thread pushes each
// one once its copy has finished, while backward goes on.
//
// Borrows the model, its buffers, the staging, the PS client and the training data, which must
// outlive it. Used by the trainer's loop thread only, which owns the client's sockets.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <torch/types.h>

#include "common/job_config.h"
#include "common/status.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/data/tensor_dataset.h"
#include "trainer/device/compute_thread.h"
#include "trainer/device/gradient_staging.h"
#include "trainer/device/model_buffers.h"
#include "trainer/diloco_round.h"
#include "trainer/local_sgd.h"
#include "trainer/models/models.h"
#include "trainer/pacer.h"
#include "trainer/ps_client.h"

namespace hetps {

class StepRunner {
 public:
  struct Options {
    bool overlap = true;     // push each gradient as backward produces it
    double slowdown = 1;     // >= 1: see Pacer
    std::string model_name;  // for error messages
    Loss loss = Loss::kCrossEntropy;
    // Where gradients leave the device (null on the CPU: pushed in place); must outlive the runner.
    GradientStaging* staging = nullptr;
    // async, ssp: a step does not wait for the weights that follow it; the next step's forward
    // runs on the weights at hand while they travel, and they are taken in after its backward.
    // Each gradient is then computed one step further behind (Push.ahead), which the servers
    // count as staleness. hetps-trainer --forward-during-pull.
    bool forward_during_pull = false;
    // async, ssp with SGD (hetps-trainer --local-steps): a step's samples are split into this
    // many micro-batches of equal size (the last smaller when they do not divide), each stepping
    // the model's own weights by lr_per_sample per sample (LocalSgd), and the step pushes their
    // mean gradient once. 1: one batch, one push.
    uint32_t local_steps = 1;
    double lr_per_sample = 0;  // the servers' SGD lr over the global batch
    // mode diloco: the round (inner optimizer, first weights) that InnerStep and FinishRound
    // work on; must outlive the runner. Null in the other modes.
    DilocoRound* round = nullptr;
    // > 0: every backward's gradient (a step's, a micro-batch's, an inner step's) is scaled to
    // this global L2 norm when it is larger (ClipGradNorm), before it is pushed or stepped on.
    // The whole gradient is needed first, so no gradient is then pushed during backward.
    double clip_grad_norm = 0;
  };

  // What a step did.
  struct Outcome {
    PsClient::PullResult pulled;  // the weights written back
    // False for a forward_during_pull step that wrote none back (the first: the model keeps the
    // weights it has).
    bool weights_written = true;
    double loss = 0;             // mean training loss of the batch (0 without data)
    double compute_seconds = 0;  // forward, backward and the slowdown sleeps
  };

  StepRunner(Model& model, ModelBuffers& buffers, PsClient& client, const Dataset& train,
             torch::Device device, Options options);
  ~StepRunner();

  // Where the steps' time went, summed over the steps with data (seconds).
  struct Timings {
    uint64_t steps = 0;
    double compute = 0;  // forward and backward, until the loss is on the host
    // The step's parts: the batch assembled on the device, forward with the loss, backward
    // until the loss is on the host, less what its hooks spent handing gradients over, and that
    // hand-off (pushes to the PS client, or staging calls with staging) together with the pushes
    // after backward. batch + forward + backward + the hooks' part of hand_off = compute.
    double batch = 0, forward = 0, backward = 0, hand_off = 0;
    double device_to_host = 0;  // waiting for gradient copies to finish (GPU)
    double wire = 0;            // from the last push to the last weights received
    double host_to_device = 0;  // enqueueing weight copies and waiting for the previous ones
    uint64_t prepared = 0;      // steps whose batch was assembled during the previous one's wait
    // "compute 41.2 ms, device-to-host 0.0 ms, wire 12.1 ms, host-to-device 0.0 ms per step
    // (batch 0.20 ms, forward 18.00 ms, backward 22.00 ms, hand-off 1.00 ms)"
    std::string ToString() const;
  };
  const Timings& timings() const { return timings_; }

  // Whether gradients are pushed during backward.
  bool overlapping() const { return overlapping_; }

  // Step `clock` on the samples `indices` (none: takes part in the sync round without data).
  // `next`, when not empty, are the samples of the step after this one as far as the caller
  // knows them: their batch is assembled after this step's last push, while the servers apply it,
  // and the next Run() on the same samples takes that batch instead of assembling its own.
  // A LibTorch failure is an Internal error naming the model's device (and the tensor, for a
  // copy); a failed push or pull is the PS client's error. Never throws c10::Error.
  // With forward_during_pull a step with data returns once its gradients are sent; the weights
  // written back (Outcome::pulled) are those that followed the step before it.
  Result<Outcome> Run(uint64_t clock, const std::vector<int64_t>& indices,
                      const std::vector<int64_t>& next = {});

  // forward_during_pull: waits for the weights of the step still travelling, if any, and writes
  // them into the model; returns what was pulled then (nothing when no step was travelling). To
  // be called before anything else uses the PS client or the model's weights (an evaluation, a
  // pull, an idle mark, the end of training).
  Result<std::optional<PsClient::PullResult>> Drain();
  // Forgets the step still travelling: a recovery cancelled it, and pulls the weights anew.
  void Abandon() { travelling_ = received_ = round_travelling_ = false; }

  // mode diloco (Options::round). One inner step on `indices`: forward, backward and the inner
  // optimizer's step on the model's own weights; nothing is pushed. Its mean loss and its
  // seconds (the slowdown's sleeps included) go to the out-parameters. Internal naming the
  // device on a LibTorch failure.
  Status InnerStep(const std::vector<int64_t>& indices, double* loss, double* seconds);
  // mode auto's switch to diloco: from now on InnerStep and FinishRound work on `round` (which
  // must outlive the runner), as if it had been Options::round from the start. No step may be
  // travelling (Drain first).
  void BeginRounds(DilocoRound* round);
  // Ends round `clock` (trainer/step_runner_rounds.cc): takes in the weights of the round pushed
  // before it if they are still travelling, pushes this round's pseudo-gradient (none when the
  // round took no samples, which takes part in it without data) and, unless `overlap` lets the
  // next round run while it travels, waits for the servers' weights after it and puts the model
  // on them (DilocoRound::Rebase). Outcome::weights_written says which; compute_seconds is 0:
  // the inner steps counted their own.
  Result<Outcome> FinishRound(uint64_t clock, bool overlap);
  // Between inner steps: takes in what has arrived of the travelling round's weights, and the
  // model moves onto them once they are all in. Nothing to do when none travels.
  Status PollRound();
  // Whether a round's weights are travelling; what the pull of the last one taken in brought.
  bool round_travelling() const { return round_travelling_; }
  const PsClient::PullResult& round_pulled() const { return round_pulled_; }

 private:
  // Forward and backward on `indices`, pushing every gradient of the step under way.
  Status Compute(const std::vector<int64_t>& indices, Outcome* outcome);
  // The same through the staging: backward on the compute thread, pushes from this one.
  Status ComputeStaged(const std::vector<int64_t>& indices, Outcome* outcome);
  // Local steps: forward, backward and a local SGD step per micro-batch, then one push of the
  // step's mean gradient (directly, or through the staging).
  Status ComputeLocal(const std::vector<int64_t>& indices, Outcome* outcome);
  // Stages every gradient after backward, in order, and pushes each once its copy is done;
  // `pushed` counts the pushes.
  Status StageAll(size_t* pushed);
  // Forward and backward; the loss into `loss`. Internal naming the device on a LibTorch failure.
  Status ForwardBackward(const std::vector<int64_t>& indices, double* loss);
  // Assembles the batch of `indices` for a later step (Run's `next`); on a failure, none.
  void Prepare(const std::vector<int64_t>& indices);
  // Sizes weights_ahead_ to the model, once.
  void AllocateWeightsAhead();
  // The batch of `indices`: the one prepared, if it was for these samples, or a new one.
  Batch TakeBatch(const std::vector<int64_t>& indices);
  // Pushes the gradients not pushed yet (all without overlap; parameters without one).
  Status PushRemaining();
  // Pushes the gradients the staging has ready, waiting up to `timeout` for the first.
  Status PushStaged(std::chrono::milliseconds timeout, size_t* pushed);
  // The autograd hook: pushes (CPU, on the loop thread) or stages tensor `tensor`'s gradient.
  void OnGradient(size_t tensor, const torch::Tensor& grad);
  // Before the step's first push: begins it on the PS client, after taking in (forward_during_pull)
  // the weights of the step still travelling into weights_ahead_.
  Status BeginPushes();
  // forward_during_pull, after backward: the weights taken in by BeginPushes into the model.
  Status CommitWeightsAhead();
  // After the last push of a step: waits for the weights that follow it and writes them into the
  // model, counting the time in timings_ when `timed`.
  Result<PsClient::PullResult> AwaitWeights(bool timed, double copy_wait_before);

  // The step under way, begun on the client by BeginPushes.
  uint64_t step_clock_ = 0;
  uint32_t step_batch_ = 0;
  // diloco: what the round's pushes say besides its samples; the last round's synchronisation
  // (less the servers' hold); a pushed round whose weights are travelling (into weights_ahead_),
  // since when, and what the pull brought.
  RoundPush step_round_;
  uint64_t last_sync_us_ = 0;
  bool round_travelling_ = false;
  std::chrono::steady_clock::time_point round_sent_{};
  PsClient::PullResult round_pulled_;
  // diloco: the travelling round's weights are all in: the model moves onto them.
  Status CommitRound(const PsClient::PullResult& pulled);
  // diloco: waits for the rest of the travelling round's weights (its wait counts as wire time).
  Status AwaitRound();
  bool begun_ = false;
  // forward_during_pull: a step's weights are travelling (sent, not awaited); weights received
  // but not yet in the model; their versions and the versions of the model's weights.
  bool travelling_ = false;
  bool received_ = false;
  std::vector<std::vector<float>> weights_ahead_;
  std::vector<float*> weights_ahead_targets_;
  std::vector<uint64_t> received_versions_;
  std::vector<uint64_t> model_versions_;
  PsClient::PullResult received_pulled_;
  PsClient::PullResult model_pulled_;

  Model& model_;
  ModelBuffers& buffers_;
  PsClient& client_;
  const Dataset& train_;
  torch::Device device_;
  Options options_;
  bool overlapping_;
  Pacer pacer_;
  size_t tensors_;
  std::thread::id loop_thread_;  // the thread that owns the client's sockets
  std::atomic<bool> in_backward_{false};
  std::atomic<bool> local_round_{false};    // the hooks leave a local step's gradients alone
  std::unique_ptr<LocalSgd> local_;         // with local_steps > 1
  Status push_status_;                      // the first failed push of the step under way
  std::unique_ptr<ComputeThread> compute_;  // with staging only
  std::optional<Batch> prepared_;           // assembled by Prepare() for prepared_indices_
  std::vector<int64_t> prepared_indices_;
  Timings timings_;
};

}  // namespace hetps
