#include "trainer/trainer.h"

#include <optional>

#include <torch/torch.h>

#include "common/dtype.h"
#include "common/logging.h"
#include "common/shard_map.h"
#include "common/transport.h"
#include "trainer/chunk_sampler.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/data_position_reporter.h"
#include "trainer/device/blas_check.h"
#include "trainer/device/copy_stream.h"
#include "trainer/device/device.h"
#include "trainer/device/gradient_staging.h"
#include "trainer/device/model_buffers.h"
#include "trainer/device/torch_build.h"
#include "trainer/evaluator.h"
#include "trainer/job_info.h"
#include "trainer/models/models.h"
#include "trainer/progress_reporter.h"
#include "trainer/ps_client.h"
#include "trainer/step_runner.h"

namespace hetps {
namespace {

// The servers' endpoints and CURVE keys (empty without CURVE) by rank, from a shard map or a
// Resume; `count` servers.
Status ReadServers(const flatbuffers::Vector<flatbuffers::Offset<wire::ServerEndpoint>>* servers, size_t count,
                   std::vector<std::string>* endpoints, std::vector<std::string>* keys) {
  endpoints->assign(count, std::string());
  keys->assign(count, std::string());
  if (servers == nullptr) return Status::Protocol("the scheduler named no servers");
  for (const wire::ServerEndpoint* server : *servers) {
    if (server->rank() >= count || server->endpoint() == nullptr) {
      return Status::Protocol("the scheduler named server " + std::to_string(server->rank()) + " of " +
                              std::to_string(count) + " without an endpoint or beyond the count");
    }
    (*endpoints)[server->rank()] = server->endpoint()->str();
    if (server->curve_key()) (*keys)[server->rank()] = server->curve_key()->str();
  }
  return Status::Ok();
}

zmq::message_t Goodbye(Sender& sender) {
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateGoodbye(fbb);
  return sender.Seal(fbb, wire::Body::Goodbye, body.Union());
}

constexpr const char* kLeftReason = "this trainer left the job";

}  // namespace

// One run of a trainer: joining, setting up, the epochs and the end of the job. The step itself,
// evaluations and progress reports are the parts it holds (StepRunner, Evaluator,
// ProgressReporter); lives inside Run().
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
  Status BuildModelOnDevice();
  Status ConnectToServers();
  Status TrainEpochs();
  // One step on `indices` (none: take part in the sync round without data).
  Status Step(const std::vector<int64_t>& indices, uint64_t* round_samples);
  // Handles what the scheduler sent (evaluation requests, rebalances); Aborted once it said
  // Shutdown.
  Status HandleControl();
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

  Trainer& owner_;
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
  std::shared_ptr<Model> model_;
  std::unique_ptr<ModelBuffers> buffers_;
  std::unique_ptr<ShardMap> map_;
  std::unique_ptr<PsClient> client_;
  std::unique_ptr<ChunkSampler> sampler_;
  std::unique_ptr<StepRunner> step_;
  std::unique_ptr<Evaluator> evaluator_;
  std::unique_ptr<ProgressReporter> progress_;
  std::unique_ptr<DataPositionReporter> position_;

  uint32_t epoch_ = 0;
  uint64_t clock_ = 0;
  uint64_t samples_ = 0;
  uint64_t weight_version_ = 0;
  bool idle_ = false;  // ssp: the servers were told this trainer has no data
  bool out_of_data_ = false;  // said once that the last epoch has nothing left for it
  struct PendingBatch {
    uint64_t from_clock = 0;
    uint32_t batch_size = 0;
  };
  std::optional<PendingBatch> pending_batch_;
};

Trainer::Trainer(zmq::context_t& context, TrainerOptions options)
    : context_(context), options_(std::move(options)) {}

Trainer::~Trainer() = default;

Status Trainer::Run() {
  Session session(*this, context_, options_);
  return session.Run();
}

void Trainer::Leave() {
  std::lock_guard<std::mutex> lock(leave_mutex_);
  if (leaving_) return;
  leaving_ = true;
  HETPS_LOG(INFO) << "leaving the job";
  if (control_ != nullptr) control_->Leave(Goodbye(*sender_), kLeftReason);
}

void Trainer::Attach(ControlChannel* control, Sender* sender) {
  std::lock_guard<std::mutex> lock(leave_mutex_);
  control_ = control;
  sender_ = sender;
  if (leaving_ && control_ != nullptr) control_->Leave(Goodbye(*sender_), kLeftReason);
}

Status Trainer::Session::Run() {
  SetThreadLogTag("trainer");
  Status status = Setup();
  // WaitForShutdown returns OK only when a recovery sent training back.
  while (status.ok()) {
    status = TrainEpochs();
    if (status.ok()) status = WaitForShutdown();
  }
  // Whatever was under way, a Shutdown from the scheduler decides how this trainer ends.
  if (control_ && control_->shutdown()) return ShutdownStatus();
  return status;
}

Status Trainer::Session::ShutdownStatus() const {
  const ShutdownNotice notice = *control_->shutdown();
  if (!notice.failed) return Status::Ok();
  return Status::Aborted("the scheduler ended the job: " + notice.reason);
}

Status Trainer::Session::Setup() {
  std::string why;
  auto device = SelectDevice(options_.device, &why);
  if (!device.ok()) return device.status();
  device_ = *device;
  HETPS_LOG(INFO) << "computing on " << DeviceDescription(device_) << " (" << why << "); "
                  << TorchBuildDescription();
  if (auto warning = ReferenceBlasWarning()) HETPS_LOG(WARNING) << *warning;
  HETPS_RETURN_IF_ERROR(JoinScheduler());
  HETPS_RETURN_IF_ERROR(LoadData());
  HETPS_RETURN_IF_ERROR(BuildModelOnDevice());
  HETPS_RETURN_IF_ERROR(ConnectToServers());

  StepRunner::Options step_options;
  step_options.overlap = options_.overlap;
  step_options.slowdown = options_.slowdown;
  step_options.model_name = job_.model;
  if (copy_stream_) {
    auto staging =
        GradientStaging::Create(buffers_->signature(), device_, client_->wire_dtype(), *copy_stream_);
    if (!staging.ok()) return staging.status();
    staging_ = std::move(*staging);
    step_options.staging = staging_.get();
  }
  step_ = std::make_unique<StepRunner>(*model_, *buffers_, *client_, train_, device_, step_options);
  Evaluator::Options eval_options;
  eval_options.batch_size = job_.eval_batch_size;
  eval_options.model_name = job_.model;
  evaluator_ = std::make_unique<Evaluator>(*model_, *buffers_, *client_, *control_, sender_, test_, device_,
                                           eval_options);
  sampler_ = std::make_unique<ChunkSampler>(control_.get(), &sender_, job_.train_samples, job_.seed,
                                            job_.request_timeout);
  position_ =
      std::make_unique<DataPositionReporter>(control_.get(), &sender_, job_.mode == ConsistencyMode::kSync);

  // Every trainer offers its (identically seeded) weights; the servers keep the first offer.
  HETPS_ASSIGN_OR_RETURN(HostTensors initial, buffers_->HostWeights());
  HETPS_RETURN_IF_ERROR(client_->InitWeights(initial.data, initial.owner));
  auto pulled = client_->Pull(clock_, /*latest=*/false, buffers_->weight_targets());
  if (!pulled.ok()) return pulled.status();
  HETPS_RETURN_IF_ERROR(buffers_->CommitWeights());
  weight_version_ = pulled->weight_version;
  HETPS_LOG(INFO) << "connected to " << map_->num_servers() << " servers; training starts at step " << clock_
                  << " with the servers' weights of version " << weight_version_ << ", pushing "
                  << (step_->overlapping() ? "each gradient as backward produces it"
                                           : "the gradients after backward")
                  << (staging_ ? ", staged through host buffers with asynchronous copies" : "");
  return Status::Ok();
}

Status Trainer::Session::JoinScheduler() {
  ControlChannel::Options control_options;
  control_options.scheduler = options_.scheduler;
  control_options.connect_timeout = options_.connect_timeout;
  control_options.curve = options_.curve;
  control_ = std::make_unique<ControlChannel>(context_, control_options, &sender_);
  owner_.Attach(control_.get(), &sender_);
  ControlChannel::JoinInfo info;
  info.role = wire::Role::Trainer;
  info.device = DeviceDescription(device_);
  auto accepted = control_->Join(info);
  if (!accepted.ok()) return accepted.status();
  SetThreadLogTag("trainer " + std::to_string(sender_.rank()));
  auto job = ReadJob(*accepted);
  if (!job.ok()) return job.status();
  job_ = *job;
  HETPS_LOG(INFO) << "joined the scheduler at " << options_.scheduler << " on " << info.device << "; model "
                  << job_.model << ", " << ModeName(job_.mode) << ", batch " << job_.batch_size;
  return Status::Ok();
}

Status Trainer::Session::LoadData() {
  auto train = LoadFashionMnist(options_.data_dir, DatasetSplit::kTrain);
  if (!train.ok()) return train.status();
  train_ = std::move(*train);
  auto test = LoadFashionMnist(options_.data_dir, DatasetSplit::kTest);
  if (!test.ok()) return test.status();
  test_ = std::move(*test);
  if (static_cast<uint64_t>(train_.size()) < job_.train_samples) {
    return Status::FailedPrecondition("the job trains on " + std::to_string(job_.train_samples) +
                                      " samples but " + options_.data_dir + " holds " +
                                      std::to_string(train_.size()));
  }
  return Status::Ok();
}

Status Trainer::Session::BuildModelOnDevice() {
  auto model = BuildModel(job_.model, job_.seed);
  if (!model.ok()) return model.status();
  model_ = *model;
  try {
    copy_stream_ = options_.copy_stream ? options_.copy_stream() : MakeCopyStream(device_);
    model_->to(device_);
  } catch (const c10::Error& e) {
    return Status::Internal("moving model " + job_.model + " to " + DeviceDescription(device_) + ": " +
                            e.what_without_backtrace());
  }
  auto buffers = ModelBuffers::Create(*model_, device_, copy_stream_.get());
  if (!buffers.ok()) return buffers.status();
  buffers_ = std::move(*buffers);
  return Status::Ok();
}

Status Trainer::Session::ConnectToServers() {
  // The shard map arrives once every member has joined, however long that takes.
  flatbuffers::FlatBufferBuilder fbb(4096);
  auto body = wire::CreateRegisterModel(fbb, SignatureToWire(fbb, buffers_->signature()));
  auto map_message = control_->Request(sender_.Seal(fbb, wire::Body::RegisterModel, body.Union()),
                                       wire::Body::ShardMap, std::chrono::hours(24 * 365));
  if (!map_message.ok()) return map_message.status();
  const auto* wire_map = map_message->body<wire::ShardMap>();
  auto map = ShardMap::FromWire(*wire_map);
  if (!map.ok()) return map.status().WithContext("shard map from the scheduler");
  map_ = std::make_unique<ShardMap>(std::move(*map));
  // A job resumed from a checkpoint starts where it was cut.
  clock_ = wire_map->resume_clock();
  epoch_ = wire_map->resume_epoch();
  HETPS_RETURN_IF_ERROR(CompareSignatures(buffers_->signature(), map_->tensors())
                            .WithContext("the shard map does not describe this trainer's model"));
  std::vector<std::string> endpoints;
  PsClient::Options client_options;
  HETPS_RETURN_IF_ERROR(ReadServers(wire_map->servers(), map_->num_servers(), &endpoints,
                                    &client_options.server_keys)
                            .WithContext("shard map"));
  client_options.curve = options_.curve;
  client_options.request_timeout = job_.request_timeout;
  client_options.routing_id = job_.data_token;
  client_options.wire_dtype = wire_map->wire_dtype();
  if (wire_map->max_message_bytes() > 0) {
    client_options.max_message_bytes = static_cast<int64_t>(wire_map->max_message_bytes());
  }
  if (!IsWireFloat(client_options.wire_dtype)) {
    return Status::Protocol(std::string("the shard map asks for weights as ") +
                            DTypeName(client_options.wire_dtype) + ", which cannot travel");
  }
  client_ = std::make_unique<PsClient>(context_, *map_, endpoints, &sender_, control_.get(), client_options);
  return client_->Connect();
}

Status Trainer::Session::TrainEpochs() {
  const bool sync = job_.mode == ConsistencyMode::kSync;
  model_->train();
  progress_ = std::make_unique<ProgressReporter>(control_.get(), &sender_, job_.progress_interval);
  while (epoch_ < job_.epochs) {
    Status handled = HandleControl();
    if (!handled.ok()) {
      HETPS_RETURN_IF_ERROR(RecoverIfPaused(handled));
      continue;
    }
    ApplyPendingBatch();
    HETPS_RETURN_IF_ERROR(position_->MaybeReport(clock_, epoch_, samples_, *sampler_));
    auto indices = sampler_->Next(epoch_, job_.batch_size, clock_);
    if (!indices.ok()) {
      HETPS_RETURN_IF_ERROR(RecoverIfPaused(indices.status()));
      continue;
    }
    if (indices->empty() && epoch_ + 1 < job_.epochs) {
      // Out of this epoch's data: on to the next at once, in every mode. Chunks that others still
      // hold, or give back when they die or leave, go to whoever asks next, whatever its epoch.
      ++epoch_;
      continue;
    }
    if (indices->empty() && !out_of_data_) {
      HETPS_LOG(INFO) << "no data left to take in the last epoch; waiting for the others to finish theirs";
      out_of_data_ = true;
    }
    if (indices->empty() && !sync) {
      if (job_.mode == ConsistencyMode::kSsp && !idle_) {
        // Out of data: the others must not wait for this trainer's clock.
        Status marked = client_->MarkIdle(clock_);
        if (!marked.ok()) {
          HETPS_RETURN_IF_ERROR(RecoverIfPaused(marked));
          continue;
        }
        idle_ = true;
      }
      // Out of data in the last epoch: wait until every chunk is trained (a trainer that dies
      // returns its chunks, which this trainer then takes).
      auto complete = sampler_->FlushAndCheckComplete(epoch_, clock_);
      if (!complete.ok()) {
        HETPS_RETURN_IF_ERROR(RecoverIfPaused(complete.status()));
        continue;
      }
      if (*complete) break;
      if (!sampler_->holds_chunks()) {
        control_->WaitForInbox(std::chrono::milliseconds(200));
        HETPS_RETURN_IF_ERROR(control_->Check());
      }
      continue;
    }
    uint64_t round_samples = 0;
    Status stepped = Step(*indices, &round_samples);
    if (!stepped.ok()) {
      HETPS_RETURN_IF_ERROR(RecoverIfPaused(stepped));
      continue;
    }
    if (sync && round_samples == 0) {
      // The last epoch ends for everyone at a round in which nobody had data, once the scheduler
      // says every chunk is trained: a chunk given back by a trainer that died or left is trained
      // first, and a trainer that joins at a later step is waited for.
      auto complete = sampler_->FlushAndCheckComplete(epoch_, clock_);
      if (!complete.ok()) {
        HETPS_RETURN_IF_ERROR(RecoverIfPaused(complete.status()));
        continue;
      }
      if (*complete) {
        ++epoch_;
      } else if (!sampler_->holds_chunks()) {
        control_->WaitForInbox(std::chrono::milliseconds(20));  // empty rounds until it is decided
      }
    }
    progress_->Report(Position(), /*force=*/false);
  }
  progress_->Report(Position(), /*force=*/true);
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateDone(fbb, clock_, samples_);
  HETPS_RETURN_IF_ERROR(control_->Send(sender_.Seal(fbb, wire::Body::Done, body.Union())));
  HETPS_LOG(INFO) << "trained " << job_.epochs << " epochs: " << clock_ << " steps, " << samples_
                  << " samples; step time: " << step_->timings().ToString();
  return Status::Ok();
}

Status Trainer::Session::Step(const std::vector<int64_t>& indices, uint64_t* round_samples) {
  auto outcome = step_->Run(clock_, indices);
  if (!outcome.ok()) return outcome.status();
  if (!indices.empty()) idle_ = false;
  ++clock_;
  samples_ += indices.size();
  weight_version_ = outcome->pulled.weight_version;
  *round_samples = outcome->pulled.round_samples;
  progress_->AddStep(indices.size(), outcome->loss, outcome->compute_seconds);
  return Status::Ok();
}

void Trainer::Session::ApplyPendingBatch() {
  if (!pending_batch_ || clock_ < pending_batch_->from_clock) return;
  if (clock_ > pending_batch_->from_clock) {
    HETPS_LOG(WARNING) << "batch " << pending_batch_->batch_size << " was due at step "
                       << pending_batch_->from_clock << " but arrived at step " << clock_;
  }
  job_.batch_size = pending_batch_->batch_size;
  pending_batch_.reset();
  HETPS_LOG(INFO) << "batch per step is now " << job_.batch_size << " from step " << clock_;
}

TrainerPosition Trainer::Session::Position() const {
  return TrainerPosition{epoch_, clock_, samples_, weight_version_, job_.batch_size};
}

Status Trainer::Session::HandleControl() {
  HETPS_RETURN_IF_ERROR(control_->Check());
  // After a Pause the inbox is left to Recover(), which looks for the Resume in it.
  while (control_->paused() == 0) {
    auto message = control_->TakeInbox();
    if (!message) break;
    switch (message->kind()) {
      case wire::Body::EvalRequest: {
        auto version = evaluator_->Handle(*message->body<wire::EvalRequest>(), clock_);
        if (!version.ok()) return version.status();
        weight_version_ = *version;
        break;
      }
      case wire::Body::Rebalance:
        NoteRebalance(*message->body<wire::Rebalance>());
        break;
      case wire::Body::CheckpointRequest:
        if (position_) position_->Note(*message->body<wire::CheckpointRequest>());
        break;
      case wire::Body::Membership:
        HETPS_LOG(INFO) << "membership epoch " << message->body<wire::Membership>()->membership_epoch()
                        << ": " << message->body<wire::Membership>()->trainers()->size() << " live trainers";
        break;
      case wire::Body::Error:
        HETPS_LOG(WARNING) << "the scheduler reported: " << message->body<wire::Error>()->reason()->str();
        break;
      default:
        break;  // e.g. the answer to a chunk request that a pause interrupted: the chunk was not given
    }
  }
  if (control_->paused() != 0 && !control_->shutdown()) return Status::Unavailable("paused by the scheduler");
  // Run() turns this into the right final status, OK for a job that finished.
  if (control_->shutdown()) return Status::Aborted("the scheduler shut the job down");
  return Status::Ok();
}

void Trainer::Session::NoteRebalance(const wire::Rebalance& rebalance) {
  const uint32_t rank = sender_.rank();
  const auto* sizes = rebalance.batch_sizes();
  if (rank >= sizes->size() || sizes->Get(rank) == 0) {
    HETPS_LOG(WARNING) << "ignored a rebalance that gives this trainer (rank " << rank << ") no batch";
    return;
  }
  pending_batch_ = PendingBatch{rebalance.from_clock(), sizes->Get(rank)};
}

Status Trainer::Session::WaitForShutdown() {
  while (true) {
    Status handled = HandleControl();  // Aborted (mapped by Run) once the job ends
    if (!handled.ok()) {
      HETPS_RETURN_IF_ERROR(RecoverIfPaused(handled));
      if (epoch_ < job_.epochs) return Status::Ok();  // a rollback: train again
      continue;
    }
    HETPS_RETURN_IF_ERROR(position_->MaybeReport(clock_, epoch_, samples_, *sampler_, /*idle=*/true));
    control_->WaitForInbox(std::chrono::milliseconds(200));
  }
}

Status Trainer::Session::RecoverIfPaused(Status status) {
  if (control_->paused() == 0 || control_->shutdown()) return status;
  return Recover();
}

Status Trainer::Session::Recover() {
  HETPS_LOG(WARNING) << "paused by the scheduler: a server was lost; waiting for it to be replaced";
  if (progress_) progress_->Report(Position(), /*force=*/true);  // the samples trained so far
  while (true) {
    HETPS_RETURN_IF_ERROR(control_->Check());
    if (control_->shutdown()) return Status::Aborted("the scheduler shut the job down");
    while (auto message = control_->TakeInbox()) {
      if (message->kind() != wire::Body::Resume) continue;  // anything else predates the pause
      const auto* resume = message->body<wire::Resume>();
      if (resume->generation() < control_->paused()) continue;  // another server was lost since
      return ApplyResume(*resume);
    }
    control_->WaitForInbox(std::chrono::milliseconds(200));
  }
}

Status Trainer::Session::ApplyResume(const wire::Resume& resume) {
  sender_.set_generation(resume.generation());
  control_->ClearPause();
  std::vector<std::string> endpoints, keys;
  HETPS_RETURN_IF_ERROR(
      ReadServers(resume.servers(), map_->num_servers(), &endpoints, &keys).WithContext("Resume"));
  HETPS_RETURN_IF_ERROR(client_->Reconnect(endpoints, keys));
  if (resume.reinitialize()) {
    // Nothing to restore from: the restored servers take the initial weights, offered again.
    auto initial = BuildModel(job_.model, job_.seed);
    if (!initial.ok()) return initial.status();
    auto buffers = ModelBuffers::Create(**initial, torch::kCPU);
    if (!buffers.ok()) return buffers.status();
    HETPS_ASSIGN_OR_RETURN(HostTensors weights, (*buffers)->HostWeights());
    HETPS_RETURN_IF_ERROR(client_->InitWeights(weights.data, weights.owner));
  }
  if (resume.rollback()) {
    clock_ = resume.clock();
    epoch_ = resume.epoch();
    sampler_->Reset();
    position_->Forget();
    idle_ = false;
  } else if (idle_) {
    HETPS_RETURN_IF_ERROR(client_->MarkIdle(clock_));  // a replacement does not know it
  }
  const bool sync = job_.mode == ConsistencyMode::kSync;
  HETPS_RETURN_IF_ERROR(buffers_->FinishWeightCopies());
  auto pulled = client_->Pull(sync ? clock_ : 0, /*latest=*/!sync, buffers_->weight_targets());
  if (!pulled.ok()) return RecoverIfPaused(pulled.status());
  HETPS_RETURN_IF_ERROR(buffers_->CommitWeights());
  weight_version_ = pulled->weight_version;
  HETPS_LOG(INFO) << "resumed" << (resume.rollback() ? " at step " + std::to_string(clock_) : std::string())
                  << " with the servers' weights of version " << weight_version_;
  return Status::Ok();
}

}  // namespace hetps
