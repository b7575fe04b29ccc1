#include "trainer/trainer.h"

#include <numeric>
#include <optional>
#include <thread>

#include <torch/torch.h>

#include "common/dtype.h"
#include "common/job_config.h"
#include "common/logging.h"
#include "common/shard_map.h"
#include "common/transport.h"
#include "trainer/blas_check.h"
#include "trainer/chunk_sampler.h"
#include "trainer/device.h"
#include "trainer/fashion_mnist.h"
#include "trainer/model_buffers.h"
#include "trainer/models.h"
#include "trainer/ps_client.h"

namespace hetps {
namespace {

using Clock = std::chrono::steady_clock;

// What the scheduler told this trainer about the job.
struct JobInfo {
  std::string model;
  ConsistencyMode mode = ConsistencyMode::kSync;
  uint32_t epochs = 1;
  uint32_t batch_size = 1;
  uint64_t seed = 0;
  uint64_t train_samples = 0;
  uint32_t eval_batch_size = 1000;
  std::chrono::milliseconds progress_interval{1000};
  std::chrono::milliseconds request_timeout{120000};
};

Result<JobInfo> ReadJob(const Message& accepted) {
  const wire::TrainerJob* job = accepted.body<wire::JoinAccepted>()->job();
  if (job == nullptr) return Status::Protocol("the scheduler admitted this trainer without a job");
  JobInfo info;
  info.model = job->model()->str();
  info.mode = FromWire(job->mode());
  info.epochs = job->epochs();
  info.batch_size = job->batch_size();
  info.seed = job->seed();
  info.train_samples = job->train_samples();
  info.eval_batch_size = std::max<uint32_t>(job->eval_batch_size(), 1);
  info.progress_interval = std::chrono::milliseconds(job->progress_interval_ms());
  info.request_timeout = std::chrono::milliseconds(job->request_timeout_ms());
  if (info.epochs == 0 || info.batch_size == 0 || info.train_samples == 0) {
    return Status::Protocol("the scheduler sent a job with no epochs, batch or samples");
  }
  return info;
}

// --slowdown K: keeps the time since a step began at K times the compute time it holds, by
// sleeping for the difference whenever the step is about to hand something on (a push, the
// end of the step), so a gradient leaves when a K times slower device would have produced it.
class Pacer {
 public:
  explicit Pacer(double factor) : factor_(factor) {}

  void Start() {
    start_ = Clock::now();
    slept_ = Clock::duration::zero();
  }
  void Wait() {
    if (factor_ <= 1) return;
    const auto elapsed = Clock::now() - start_;
    const auto behind = std::chrono::duration_cast<Clock::duration>((elapsed - slept_) * factor_) - elapsed;
    if (behind <= Clock::duration::zero()) return;
    const auto before = Clock::now();
    std::this_thread::sleep_for(behind);
    slept_ += Clock::now() - before;
  }
  double Seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  double factor_;
  Clock::time_point start_;
  Clock::duration slept_{};
};

}  // namespace

// Everything one run of a trainer holds; lives inside Run().
class Trainer::Session {
 public:
  Session(zmq::context_t& context, const TrainerOptions& options) : context_(context), options_(options) {}

  Status Run();

 private:
  Status Setup();
  Status TrainEpochs();
  // One step on `indices` (none: take part in the sync round without data).
  Status Step(const std::vector<int64_t>& indices, uint64_t* round_samples);
  // Forward and backward on `indices`, pushing every gradient of the step under way (as backward
  // produces them when overlapping), with the --slowdown sleeps.
  Status Compute(const std::vector<int64_t>& indices);
  // The autograd hook: pushes tensor `tensor`'s gradient now, when overlapping on this thread.
  void OnGradient(size_t tensor, const torch::Tensor& grad);
  // Handles what the scheduler sent (evaluation requests); Aborted once it said Shutdown.
  Status HandleControl();
  // Evaluates the newest weights and reports; a final evaluation first evaluates the snapshots.
  Status Evaluate(const wire::EvalRequest& request);
  // Pulls the newest weights and keeps a copy to evaluate later (eval_interval_samples).
  Status TakeSnapshot(const wire::EvalRequest& request);
  // Runs the model as it is on the whole test set and reports the result.
  Status EvaluateAndReport(uint32_t epoch, bool final, uint32_t snapshot, uint64_t version);
  // balance: speed: takes a batch size from the scheduler at the step it names.
  void NoteRebalance(const wire::Rebalance& rebalance);
  void ReportProgress(bool force);
  Status WaitForShutdown();
  // The status to return once the scheduler has said Shutdown.
  Status ShutdownStatus() const;

  zmq::context_t& context_;
  const TrainerOptions& options_;
  Sender sender_{wire::Role::Trainer};
  std::unique_ptr<ControlChannel> control_;
  torch::Device device_{torch::kCPU};
  JobInfo job_;
  Dataset train_;
  Dataset test_;
  std::shared_ptr<Model> model_;
  std::unique_ptr<ModelBuffers> buffers_;
  std::unique_ptr<ShardMap> map_;
  std::unique_ptr<PsClient> client_;
  std::unique_ptr<ChunkSampler> sampler_;
  Pacer pacer_{options_.slowdown};
  std::thread::id loop_thread_;  // the thread that owns the sockets
  bool in_backward_ = false;
  Status push_status_;  // the first failed push of the step under way

  uint32_t epoch_ = 0;
  uint64_t clock_ = 0;
  uint64_t samples_ = 0;
  uint64_t weight_version_ = 0;
  bool idle_ = false;  // ssp: the servers were told this trainer has no data
  struct PendingBatch {
    uint64_t from_clock = 0;
    uint32_t batch_size = 0;
  };
  std::optional<PendingBatch> pending_batch_;
  struct Snapshot {
    uint32_t id = 0;
    uint32_t epoch = 0;
    uint64_t version = 0;
    std::vector<std::vector<float>> weights;  // one per tensor of the shard map
  };
  std::vector<Snapshot> snapshots_;
  // Since the last progress report:
  Clock::time_point last_report_ = Clock::now();
  uint64_t report_samples_ = 0;
  double report_compute_seconds_ = 0;  // in Compute, slowdown included
  double report_loss_sum_ = 0;
  uint64_t report_steps_ = 0;
  double last_loss_ = 0;
};

Trainer::Trainer(zmq::context_t& context, TrainerOptions options)
    : context_(context), options_(std::move(options)) {}

Trainer::~Trainer() = default;

Status Trainer::Run() {
  Session session(context_, options_);
  return session.Run();
}

Status Trainer::Session::Run() {
  SetThreadLogTag("trainer");
  Status status = Setup();
  if (status.ok()) status = TrainEpochs();
  if (status.ok()) status = WaitForShutdown();
  // Whatever was under way, a Shutdown from the scheduler decides how this trainer ends.
  if (control_ && control_->shutdown()) return ShutdownStatus();
  return status;
}

Status Trainer::Session::ShutdownStatus() const {
  const ShutdownNotice& notice = *control_->shutdown();
  if (!notice.failed) return Status::Ok();
  return Status::Aborted("the scheduler ended the job: " + notice.reason);
}

Status Trainer::Session::Setup() {
  auto device = SelectDevice(options_.device);
  if (!device.ok()) return device.status();
  device_ = *device;
  if (auto warning = ReferenceBlasWarning()) HETPS_LOG(WARNING) << *warning;

  ControlChannel::Options control_options;
  control_options.scheduler = options_.scheduler;
  control_options.connect_timeout = options_.connect_timeout;
  control_ = std::make_unique<ControlChannel>(context_, control_options, &sender_);
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

  auto model = BuildModel(job_.model, job_.seed);
  if (!model.ok()) return model.status();
  model_ = *model;
  model_->to(device_);
  auto buffers = ModelBuffers::Create(*model_, device_);
  if (!buffers.ok()) return buffers.status();
  buffers_ = std::move(*buffers);

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
  HETPS_RETURN_IF_ERROR(CompareSignatures(buffers_->signature(), map_->tensors())
                            .WithContext("the shard map does not describe this trainer's model"));
  std::vector<std::string> endpoints(map_->num_servers());
  for (const wire::ServerEndpoint* server : *wire_map->servers()) {
    if (server->rank() >= endpoints.size())
      return Status::Protocol("shard map names a server beyond its count");
    endpoints[server->rank()] = server->endpoint()->str();
  }
  PsClient::Options client_options;
  client_options.request_timeout = job_.request_timeout;
  client_options.wire_dtype = wire_map->wire_dtype();
  if (!IsWireFloat(client_options.wire_dtype)) {
    return Status::Protocol(std::string("the shard map asks for weights as ") +
                            DTypeName(client_options.wire_dtype) + ", which cannot travel");
  }
  client_ = std::make_unique<PsClient>(context_, *map_, endpoints, &sender_, control_.get(), client_options);
  HETPS_RETURN_IF_ERROR(client_->Connect());
  sampler_ = std::make_unique<ChunkSampler>(control_.get(), &sender_, job_.train_samples, job_.seed,
                                            job_.request_timeout);
  // Hooks run on the thread that calls backward only on the CPU; elsewhere they would run on a
  // device thread that may not touch this trainer's sockets.
  const bool overlap = options_.overlap && device_.is_cpu();
  loop_thread_ = std::this_thread::get_id();
  if (overlap) {
    buffers_->SetGradientHook([this](size_t tensor, const torch::Tensor& grad) { OnGradient(tensor, grad); });
  }

  // Every trainer offers its (identically seeded) weights; the servers keep the first offer.
  HostTensors initial = buffers_->HostWeights();
  HETPS_RETURN_IF_ERROR(client_->InitWeights(initial.data, initial.owner));
  auto pulled = client_->Pull(/*clock=*/0, /*latest=*/false, buffers_->weight_targets());
  if (!pulled.ok()) return pulled.status();
  buffers_->CommitWeights();
  weight_version_ = pulled->weight_version;
  HETPS_LOG(INFO) << "connected to " << map_->num_servers() << " servers; training starts, pushing "
                  << (overlap ? "each gradient as backward produces it" : "the gradients after backward");
  return Status::Ok();
}

Status Trainer::Session::TrainEpochs() {
  const bool sync = job_.mode == ConsistencyMode::kSync;
  model_->train();
  last_report_ = Clock::now();
  while (epoch_ < job_.epochs) {
    HETPS_RETURN_IF_ERROR(HandleControl());
    if (pending_batch_ && clock_ >= pending_batch_->from_clock) {
      if (clock_ > pending_batch_->from_clock) {
        HETPS_LOG(WARNING) << "batch " << pending_batch_->batch_size << " was due at step "
                           << pending_batch_->from_clock << " but arrived at step " << clock_;
      }
      job_.batch_size = pending_batch_->batch_size;
      pending_batch_.reset();
      HETPS_LOG(INFO) << "batch per step is now " << job_.batch_size << " from step " << clock_;
    }
    auto indices = sampler_->Next(epoch_, job_.batch_size);
    if (!indices.ok()) return indices.status();
    if (indices->empty() && !sync) {
      if (epoch_ + 1 < job_.epochs) {
        ++epoch_;
        continue;
      }
      if (job_.mode == ConsistencyMode::kSsp && !idle_) {
        // Out of data: the others must not wait for this trainer's clock.
        HETPS_RETURN_IF_ERROR(client_->MarkIdle(clock_));
        idle_ = true;
      }
      // Out of data in the last epoch: wait until every chunk is trained (a trainer that dies
      // returns its chunks, which this trainer then takes).
      auto complete = sampler_->FlushAndCheckComplete(epoch_);
      if (!complete.ok()) return complete.status();
      if (*complete) break;
      if (!sampler_->holds_chunks()) {
        PollReadable({&control_->socket()}, std::chrono::milliseconds(200));
        HETPS_RETURN_IF_ERROR(control_->Service());
      }
      continue;
    }
    uint64_t round_samples = 0;
    HETPS_RETURN_IF_ERROR(Step(*indices, &round_samples));
    // In sync mode the epoch ends for everyone at the first round in which nobody had data.
    if (sync && round_samples == 0) ++epoch_;
    ReportProgress(false);
  }
  ReportProgress(true);
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateDone(fbb, clock_, samples_);
  HETPS_RETURN_IF_ERROR(control_->Send(sender_.Seal(fbb, wire::Body::Done, body.Union())));
  HETPS_LOG(INFO) << "trained " << job_.epochs << " epochs: " << clock_ << " steps, " << samples_
                  << " samples";
  return Status::Ok();
}

Status Trainer::Session::Compute(const std::vector<int64_t>& indices) {
  pacer_.Start();
  push_status_ = Status::Ok();
  try {
    Batch batch = MakeBatch(train_, indices.data(), indices.size(), device_);
    buffers_->ClearGradients();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model_->forward(batch.input), batch.target);
    in_backward_ = true;
    loss.backward();
    in_backward_ = false;
    report_loss_sum_ += loss.item<double>();  // waits for the device to finish
    ++report_steps_;
  } catch (const c10::Error& e) {
    in_backward_ = false;
    return Status::Internal("LibTorch failed in a training step of model " + job_.model + " on " +
                            DeviceDescription(device_) + ": " + e.what_without_backtrace());
  }
  HETPS_RETURN_IF_ERROR(push_status_);
  pacer_.Wait();
  // Whatever the hooks did not push: everything without overlap, a parameter without gradient.
  for (size_t t = 0; t < map_->tensors().size(); ++t) {
    if (client_->Pushed(t)) continue;
    auto [data, owner] = buffers_->HostGradient(t);
    HETPS_RETURN_IF_ERROR(client_->PushTensor(t, data, std::move(owner)));
  }
  report_compute_seconds_ += pacer_.Seconds();
  return Status::Ok();
}

void Trainer::Session::OnGradient(size_t tensor, const torch::Tensor& grad) {
  if (!in_backward_ || !push_status_.ok() || std::this_thread::get_id() != loop_thread_) return;
  pacer_.Wait();
  auto held = std::make_shared<torch::Tensor>(grad.detach().contiguous());
  push_status_ = client_->PushTensor(tensor, held->data_ptr<float>(), held);
}

Status Trainer::Session::Step(const std::vector<int64_t>& indices, uint64_t* round_samples) {
  client_->BeginStep(clock_, static_cast<uint32_t>(indices.size()));
  if (!indices.empty()) {
    HETPS_RETURN_IF_ERROR(Compute(indices));
    idle_ = false;
  }
  auto pulled = client_->FinishStep(buffers_->weight_targets());
  if (!pulled.ok()) return pulled.status();
  buffers_->CommitWeights();
  ++clock_;
  samples_ += indices.size();
  report_samples_ += indices.size();
  weight_version_ = pulled->weight_version;
  *round_samples = pulled->round_samples;
  return Status::Ok();
}

Status Trainer::Session::HandleControl() {
  HETPS_RETURN_IF_ERROR(control_->Service());
  while (auto message = control_->TakeInbox()) {
    switch (message->kind()) {
      case wire::Body::EvalRequest: {
        const auto* request = message->body<wire::EvalRequest>();
        HETPS_RETURN_IF_ERROR(request->snapshot() > 0 ? TakeSnapshot(*request) : Evaluate(*request));
        break;
      }
      case wire::Body::Rebalance:
        NoteRebalance(*message->body<wire::Rebalance>());
        break;
      case wire::Body::Membership:
        HETPS_LOG(INFO) << "membership epoch " << message->body<wire::Membership>()->membership_epoch()
                        << ": " << message->body<wire::Membership>()->trainers()->size() << " live trainers";
        break;
      case wire::Body::Error:
        HETPS_LOG(WARNING) << "the scheduler reported: " << message->body<wire::Error>()->reason()->str();
        break;
      default:
        break;
    }
  }
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

Status Trainer::Session::TakeSnapshot(const wire::EvalRequest& request) {
  auto pulled = client_->Pull(clock_, /*latest=*/true, buffers_->weight_targets());
  if (!pulled.ok()) return pulled.status();
  buffers_->CommitWeights();
  weight_version_ = pulled->weight_version;
  Snapshot snapshot{request.snapshot(), request.epoch(), pulled->weight_version, {}};
  for (size_t t = 0; t < map_->tensors().size(); ++t) {
    const float* data = buffers_->weight_targets()[t];
    snapshot.weights.emplace_back(data, data + map_->tensors()[t].numel());
  }
  snapshots_.push_back(std::move(snapshot));
  return Status::Ok();
}

Status Trainer::Session::Evaluate(const wire::EvalRequest& request) {
  if (request.final()) {
    // The snapshots first, each loaded into the model in turn; the pull below restores the newest.
    for (const Snapshot& snapshot : snapshots_) {
      for (size_t t = 0; t < snapshot.weights.size(); ++t) {
        std::copy(snapshot.weights[t].begin(), snapshot.weights[t].end(), buffers_->weight_targets()[t]);
      }
      buffers_->CommitWeights();
      HETPS_RETURN_IF_ERROR(EvaluateAndReport(snapshot.epoch, false, snapshot.id, snapshot.version));
    }
    snapshots_.clear();
  }
  auto pulled = client_->Pull(clock_, /*latest=*/true, buffers_->weight_targets());
  if (!pulled.ok()) return pulled.status();
  buffers_->CommitWeights();
  weight_version_ = pulled->weight_version;
  return EvaluateAndReport(request.epoch(), request.final(), 0, weight_version_);
}

Status Trainer::Session::EvaluateAndReport(uint32_t epoch, bool final, uint32_t snapshot, uint64_t version) {
  const auto start = Clock::now();
  double loss_sum = 0;
  int64_t correct = 0;
  const int64_t n = test_.size();
  std::vector<int64_t> indices;
  try {
    torch::NoGradGuard no_grad;
    model_->eval();
    for (int64_t begin = 0; begin < n; begin += job_.eval_batch_size) {
      const int64_t end = std::min<int64_t>(n, begin + job_.eval_batch_size);
      indices.resize(static_cast<size_t>(end - begin));
      std::iota(indices.begin(), indices.end(), begin);
      Batch batch = MakeBatch(test_, indices.data(), indices.size(), device_);
      torch::Tensor logits = model_->forward(batch.input);
      loss_sum +=
          torch::nn::functional::cross_entropy(
              logits, batch.target, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
              .item<double>();
      correct += logits.argmax(1).eq(batch.target).sum().item<int64_t>();
      HETPS_RETURN_IF_ERROR(control_->Service());  // keep the heartbeats going
    }
    model_->train();
  } catch (const c10::Error& e) {
    return Status::Internal("LibTorch failed evaluating model " + job_.model + ": " +
                            e.what_without_backtrace());
  }
  const double accuracy = n > 0 ? static_cast<double>(correct) / n : 0;
  const double loss = n > 0 ? loss_sum / n : 0;
  HETPS_LOG(INFO) << "evaluated weights version " << version << " on " << n << " test images: accuracy "
                  << accuracy << ", loss " << loss << " ("
                  << std::chrono::duration<double>(Clock::now() - start).count() << " s)";
  flatbuffers::FlatBufferBuilder fbb(128);
  auto body =
      wire::CreateEvalReport(fbb, epoch, final, version, loss, accuracy, static_cast<uint64_t>(n), snapshot);
  return control_->Send(sender_.Seal(fbb, wire::Body::EvalReport, body.Union()));
}

void Trainer::Session::ReportProgress(bool force) {
  const auto now = Clock::now();
  const double seconds = std::chrono::duration<double>(now - last_report_).count();
  if (!force && now - last_report_ < job_.progress_interval) return;
  flatbuffers::FlatBufferBuilder fbb(128);
  if (report_steps_ > 0) last_loss_ = report_loss_sum_ / report_steps_;
  const double loss = last_loss_;
  const double rate = seconds > 0 ? report_samples_ / seconds : 0;
  const double compute_rate = report_compute_seconds_ > 0 ? report_samples_ / report_compute_seconds_ : 0;
  auto body = wire::CreateProgress(fbb, epoch_, clock_, samples_, loss, rate, weight_version_, compute_rate,
                                   job_.batch_size);
  Status status = control_->Send(sender_.Seal(fbb, wire::Body::Progress, body.Union()));
  if (!status.ok()) HETPS_LOG(WARNING) << "progress not reported: " << status.message();
  last_report_ = now;
  report_samples_ = 0;
  report_compute_seconds_ = 0;
  report_loss_sum_ = 0;
  report_steps_ = 0;
}

Status Trainer::Session::WaitForShutdown() {
  while (true) {
    HETPS_RETURN_IF_ERROR(HandleControl());  // Aborted (mapped by Run) once the job ends
    PollReadable({&control_->socket()}, std::chrono::milliseconds(200));
  }
}

}  // namespace hetps
