// Trainer::Session: one run of a trainer, from joining the scheduler to the end of the job. Its
// members are defined in one file per concept:
//   trainer/trainer.cc           the run and its step loop: epochs, steps, messages from the scheduler
//   trainer/session_setup.cc     joining, the data, the model on its device, the servers
//   trainer/session_recovery.cc  the end of the job, and the pause and resume around a lost server
//   trainer/session_rounds.cc    mode diloco's loop: rounds of inner steps, each ending in a push
//                                (and mode auto's, from its switch to diloco on)
// The step itself, evaluations, progress and data-position reports are the parts it holds
// (StepRunner, Evaluator, ProgressReporter, DataPositionReporter). Private to the trainer's own
// sources; lives inside Trainer::Run().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "common/control_channel.h"
#include "common/message.h"
#include "common/shard_map.h"
#include "common/status.h"
#include "trainer/chunk_sampler.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/data_fetcher.h"
#include "trainer/data_position_reporter.h"
#include "trainer/device/copy_stream.h"
#include "trainer/device/gradient_staging.h"
#include "trainer/device/model_buffers.h"
#include "trainer/diloco_round.h"
#include "trainer/evaluator.h"
#include "trainer/job_info.h"
#include "trainer/models/models.h"
#include "trainer/progress_reporter.h"
#include "trainer/ps_client.h"
#include "trainer/step_runner.h"
#include "trainer/trainer.h"

namespace hetps {

class Trainer::Session {
 public:
  Session(Trainer& owner, zmq::context_t& context, const TrainerOptions& options)
      : owner_(owner), context_(context), options_(options) {}
  ~Session() { owner_.Attach(nullptr, nullptr); }

  Status Run();

 private:
  // Joins the scheduler, loads the data, builds the model, receives the shard map, connects to
  // the servers and pulls the initial weights.
  Status Setup();
  Status JoinScheduler();
  Status LoadData();
  // Whether this trainer takes its data from the scheduler: asked to, or the job serves it and
  // the training file is not here.
  bool UsesServedData() const;
  Status BuildModelOnDevice();
  // The job's model with its initial weights on `device`: a built-in one built with the job's
  // seed, or the TorchScript file (checked against the scheduler's checksum).
  Result<std::shared_ptr<Model>> LoadModel(torch::Device device);
  // A second model like model_, on `device`, for the snapshot worker (eval_interval_samples).
  Result<std::shared_ptr<Model>> BuildModelCopy(torch::Device device);
  // Where this machine's copy of the job's TorchScript file is: --model-file, else the path the
  // scheduler names, either checked against the scheduler's checksum; when neither was given nor
  // exists, the copy fetched from the scheduler (FetchModelFile).
  Result<std::string> FindModelFile();
  // The cached copy of the scheduler's file, or one fetched now (trainer/model_fetcher.h).
  Result<std::string> FetchModelFile();
  // "cnn", or "torchscript FILE" for logs and errors.
  std::string ModelName() const {
    return job_.model_file.empty() ? job_.model : "torchscript " + job_.model_file;
  }
  Status ConnectToServers();
  Status TrainEpochs();
  // Mode diloco's TrainEpochs: rounds instead of steps (trainer/session_rounds.cc).
  Status TrainRounds();
  // The loop of rounds itself, to the end of training, with the progress reporter in place.
  Status RunRounds();
  // mode auto, told of its switch to diloco before the step it names (rounds_from_): the clock
  // goes on to that step at once, the steps in between not taken.
  void JumpToRounds();
  // mode auto, at the step its switch to diloco names: the model holds the servers' weights of
  // its last step; they become the first round's, the inner optimizer starts from zero, and from
  // now on the job is diloco to this trainer. Then RunRounds.
  Status EnterRounds();
  // mode auto: a ModeSwitch to diloco from the scheduler.
  void NoteModeSwitch(const wire::ModeSwitch& change);
  // One round: inner steps on this trainer's data until the round is over, then its push.
  // `round_samples` as for Step(): the samples of the whole round, over every trainer.
  Status Round(uint64_t* round_samples);
  // What the scheduler sent while a round runs: as HandleControl, but an evaluation's snapshot is
  // the round's first weights, and an evaluation of the newest weights waits for the round's end
  // (deferred_), which would otherwise pull them into the model in the middle of the round.
  Status HandleControlInRound();
  // The version and the chosen length of the newest round's weights taken in.
  void NoteRoundWeights();
  // The end of training, every mode: the last report, Done, and the logs.
  Status FinishTraining();
  // Sync and diloco, after a round in which no trainer had data: the last epoch is over once the
  // scheduler says every chunk is trained (then epoch_ moves on), else waits a little.
  Status AfterEmptyRound();
  // One step on `indices` (none: take part in the sync round without data).
  Status Step(const std::vector<int64_t>& indices, uint64_t* round_samples);
  // --forward-during-pull: takes in the weights of a step still travelling (StepRunner::Drain).
  Status Drain();
  // Handles what the scheduler sent (evaluation requests, rebalances); Aborted once it said
  // Shutdown.
  Status HandleControl();
  // One message of the scheduler's, for HandleControl.
  Status HandleMessage(const Message& message);
  // balance: speed: takes a batch size from the scheduler at the step it names.
  void NoteRebalance(const wire::Rebalance& rebalance);
  // Adopts a batch size announced for the step about to run.
  void ApplyPendingBatch();
  TrainerPosition Position() const;
  // Waits for the end of the job; OK when a recovery sent training back (sync rollback).
  Status WaitForShutdown();
  // The scheduler paused the job (a server was lost): forgets the step under way, waits for
  // Resume, reconnects, offers the initial weights again when told, pulls, and goes on from the
  // step and epoch the scheduler names (sync) or where it was.
  Status Recover();
  Status ApplyResume(const wire::Resume& resume);
  // `status` of a step, request or evaluation: after a Pause, the outcome of Recover().
  Status RecoverIfPaused(Status status);
  // The status to return once the scheduler has said Shutdown.
  Status ShutdownStatus() const;

  Trainer& owner_;  // for Leave(), which reaches control_ from another thread
  zmq::context_t& context_;
  const TrainerOptions& options_;
  Sender sender_{wire::Role::Trainer};
  std::unique_ptr<ControlChannel> control_;
  torch::Device device_{torch::kCPU};
  std::unique_ptr<CopyStream> copy_stream_;   // null on the CPU
  std::unique_ptr<GradientStaging> staging_;  // with copy_stream_
  JobInfo job_;
  Dataset train_;
  Dataset test_;
  std::unique_ptr<DataFetcher> fetcher_;  // served data (data.serve); null with local files
  std::shared_ptr<Model> model_;
  std::string model_path_;  // the TorchScript file loaded: this machine's copy, or the fetched one
  std::unique_ptr<ModelBuffers> buffers_;
  std::unique_ptr<ShardMap> map_;
  std::unique_ptr<PsClient> client_;
  std::unique_ptr<ChunkSampler> sampler_;
  std::unique_ptr<StepRunner> step_;
  std::unique_ptr<Evaluator> evaluator_;
  std::unique_ptr<ProgressReporter> progress_;
  std::unique_ptr<DataPositionReporter> position_;
  std::unique_ptr<DilocoRound> round_;   // mode diloco (and auto once switched to it) only
  std::optional<uint64_t> rounds_from_;  // mode auto: the step its switch to diloco starts at
  std::vector<Message> deferred_;        // mode diloco: messages kept for the round's end
  double round_seconds_ = 0;             // mode diloco: the length the servers chose last
  uint64_t inner_steps_ = 0;             // mode diloco: inner steps taken
  uint32_t last_round_inner_steps_ = 0;

  uint32_t epoch_ = 0;
  uint64_t clock_ = 0;
  uint64_t samples_ = 0;
  uint64_t weight_version_ = 0;
  double step_seconds_ = 0;  // every step's wall time, and the part of it not computing
  double wait_seconds_ = 0;
  bool idle_ = false;         // ssp: the servers were told this trainer has no data
  bool out_of_data_ = false;  // said once that the last epoch has nothing left for it
  struct PendingBatch {
    uint64_t from_clock = 0;
    uint32_t batch_size = 0;
  };
  std::optional<PendingBatch> pending_batch_;
};

// The servers' endpoints and CURVE keys (empty without CURVE) by rank, from a shard map or a
// Resume; `count` servers.
Status ReadServers(const flatbuffers::Vector<flatbuffers::Offset<wire::ServerEndpoint>>* servers,
                   size_t count, std::vector<std::string>* endpoints, std::vector<std::string>* keys);

}  // namespace hetps
