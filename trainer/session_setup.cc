// Trainer::Session's setting up (trainer/session.h): joining the scheduler, loading the data,
// building the model on its device, connecting to the servers from the shard map, and the first
// pull of the weights.
#include <algorithm>
#include <filesystem>
#include <numeric>
#include <sstream>

#include <torch/torch.h>

#include "checkpoint/checksum.h"
#include "common/dtype.h"
#include "common/logging.h"
#include "common/transport.h"
#include "trainer/data/token_data.h"
#include "trainer/device/blas_check.h"
#include "trainer/device/device.h"
#include "trainer/device/torch_build.h"
#include "trainer/model_fetcher.h"
#include "trainer/models/torchscript_model.h"
#include "trainer/session.h"

namespace hetps {

// The servers' endpoints and CURVE keys (empty without CURVE) by rank, from a shard map or a
// Resume; `count` servers.
Status ReadServers(const flatbuffers::Vector<flatbuffers::Offset<wire::ServerEndpoint>>* servers,
                   size_t count, std::vector<std::string>* endpoints, std::vector<std::string>* keys) {
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

namespace {

// 1, 0.5, 1e-05: as a person writes it.
std::string ShortNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// --local-steps N (N > 1): local steps of plain SGD stand in for the servers' steps between pushes.
Status CheckLocalSteps(const TrainerOptions& options, const JobInfo& job) {
  const std::string flag = "--local-steps " + std::to_string(options.local_steps);
  if (job.mode != ConsistencyMode::kAsync && job.mode != ConsistencyMode::kSsp) {
    return Status::InvalidArgument(flag + " needs mode async or ssp; this job's is " + ModeName(job.mode) +
                                   " (a sync round, and auto's sync phases, take one batch's gradient from "
                                   "each trainer)");
  }
  if (options.forward_during_pull) {
    return Status::InvalidArgument(flag +
                                   " and --forward-during-pull do not go together: choose one way to "
                                   "keep computing while the weights travel");
  }
  if (!job.has_optimizer || job.global_batch_size == 0) {
    return Status::Protocol(flag +
                            ": the scheduler did not send the job's optimizer and global batch "
                            "(a hetps-scheduler older than this trainer?)");
  }
  if (job.optimizer.kind != OptimizerOptions::Kind::kSgd) {
    return Status::InvalidArgument(flag + " needs optimizer sgd (the local steps are SGD's); this job's is " +
                                   OptimizerKindName(job.optimizer.kind));
  }
  return Status::Ok();
}

}  // namespace

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
  step_options.model_name = ModelName();
  step_options.loss = job_.loss;
  if (options_.forward_during_pull && job_.mode != ConsistencyMode::kAsync &&
      job_.mode != ConsistencyMode::kSsp) {
    return Status::InvalidArgument(
        std::string("--forward-during-pull needs mode async or ssp; this job's is ") + ModeName(job_.mode) +
        " (a sync round, and auto's sync phases, need the weights that follow each step)");
  }
  step_options.forward_during_pull = options_.forward_during_pull;
  step_options.clip_grad_norm = job_.clip_grad_norm;
  if (job_.mode == ConsistencyMode::kDiloco) {
    if (!job_.has_optimizer) {
      return Status::Protocol("mode diloco: the scheduler did not send the job's inner optimizer");
    }
    auto round = DilocoRound::Create(buffers_->parameters(), job_.optimizer, job_.diloco);
    if (!round.ok()) return round.status().WithContext("mode diloco's inner optimizer");
    round_ = std::move(*round);
    step_options.round = round_.get();
  }
  if (options_.local_steps > 1) {
    HETPS_RETURN_IF_ERROR(CheckLocalSteps(options_, job_));
    step_options.local_steps = options_.local_steps;
    step_options.lr_per_sample = job_.optimizer.lr / job_.global_batch_size;
  }
  if (copy_stream_) {
    auto staging =
        GradientStaging::Create(buffers_->signature(), device_, client_->staging_dtype(), *copy_stream_);
    if (!staging.ok()) return staging.status();
    staging_ = std::move(*staging);
    step_options.staging = staging_.get();
  }
  step_ = std::make_unique<StepRunner>(*model_, *buffers_, *client_, train_, device_, step_options);
  Evaluator::Options eval_options;
  eval_options.batch_size = job_.eval_batch_size;
  eval_options.model_name = ModelName();
  eval_options.loss = job_.loss;
  std::shared_ptr<Model> snapshot_model;
  // MPS: the copy evaluates on the CPU, which training leaves nearly idle there.
  const torch::Device snapshot_device = device_.is_mps() ? torch::Device(torch::kCPU) : device_;
  if (job_.eval_interval_samples > 0) {
    HETPS_ASSIGN_OR_RETURN(snapshot_model, BuildModelCopy(snapshot_device));
  }
  evaluator_ = std::make_unique<Evaluator>(*model_, *buffers_, *client_, *control_, sender_, test_, device_,
                                           eval_options, std::move(snapshot_model), snapshot_device);
  sampler_ = std::make_unique<ChunkSampler>(control_.get(), &sender_, job_.train_samples, job_.seed,
                                            job_.request_timeout);
  if (train_.is_tokens()) {
    // Token windows start elsewhere every epoch (trainer/data/token_data.h).
    sampler_->set_sample_map([host = train_.host, seed = job_.seed](uint32_t epoch, int64_t window) {
      return TrainingWindowStart(*host, seed, epoch, window);
    });
  }
  if (fetcher_) {
    // A granted chunk's samples arrive at once, in a few large replies, not step by step.
    DataFetcher* fetcher = fetcher_.get();
    sampler_->set_on_grant([fetcher](uint32_t epoch, const int64_t* indices, size_t count) {
      return fetcher->EnsureChunk(epoch, indices, count);
    });
  }
  position_ =
      std::make_unique<DataPositionReporter>(control_.get(), &sender_, HasRounds(job_.mode, job_.diloco));

  // Every trainer offers its (identically seeded) weights; the servers keep the first offer.
  HETPS_ASSIGN_OR_RETURN(HostTensors initial, buffers_->HostWeights());
  HETPS_RETURN_IF_ERROR(client_->InitWeights(initial.data, initial.owner));
  auto pulled = client_->Pull(clock_, /*latest=*/false, buffers_->weight_targets());
  if (!pulled.ok()) return pulled.status();
  HETPS_RETURN_IF_ERROR(buffers_->CommitWeights());
  weight_version_ = pulled->weight_version;
  round_seconds_ = pulled->round_seconds;
  if (round_) {
    round_->Restart();
    const DilocoOptions& d = job_.diloco;
    std::ostringstream length;
    if (d.round_steps > 0) {
      length << d.round_steps << " inner steps";
    } else if (d.round_seconds > 0) {
      length << d.round_seconds << " s";
    } else {
      length << "a length the servers choose (the first " << round_seconds_ << " s)";
    }
    HETPS_LOG(INFO) << "mode diloco: rounds of " << length.str() << ", inner steps of " << job_.batch_size
                    << " samples, inner optimizer " << OptimizerKindName(job_.optimizer.kind) << " lr "
                    << job_.optimizer.lr
                    << (LrScheduleEnabled(job_.optimizer.schedule)
                            ? " (by this trainer's inner steps: " +
                                  DescribeLrSchedule(job_.optimizer.schedule) + ")"
                            : "")
                    << (d.overlap ? "; each round runs while the last one's weights travel" : "");
  }
  HETPS_LOG(INFO)
      << "connected to " << map_->num_servers() << " servers; training starts at step " << clock_
      << " with the servers' weights of version " << weight_version_ << ", pushing "
      << (options_.local_steps > 1 ? "the mean gradient of"
          : step_->overlapping()   ? "each gradient as backward produces it"
                                   : "the gradients after backward")
      << (options_.forward_during_pull ? ", the next forward running while the weights travel" : "")
      << (options_.local_steps > 1 ? " every " + std::to_string(options_.local_steps) + " local steps of " +
                                         std::to_string(job_.batch_size) + " samples"
                                   : "")
      << (staging_ ? ", staged through host buffers with asynchronous copies" : "")
      << (job_.clip_grad_norm > 0 ? ", clipped to global norm " + ShortNumber(job_.clip_grad_norm) : "");
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
  const wire::TrainerJob* wire_job = accepted->body<wire::JoinAccepted>()->job();
  if (wire_job->served() != nullptr && UsesServedData()) {
    DataFetcher::Options fetcher_options;
    fetcher_options.request_timeout = job_.request_timeout;
    fetcher_options.cache_root = options_.data_cache;
    fetcher_options.cache.limit_bytes = options_.data_cache_limit_bytes;
    HETPS_ASSIGN_OR_RETURN(
        fetcher_, DataFetcher::Create(*wire_job->served(), control_.get(), &sender_, fetcher_options));
  } else if (options_.data_from_scheduler) {
    return Status::FailedPrecondition(
        "--data-from-scheduler: the job does not serve its data (it needs serve: true in its data section)");
  }
  HETPS_LOG(INFO) << "joined the scheduler at " << options_.scheduler << " on " << info.device << "; model "
                  << ModelName() << ", " << ModeName(job_.mode) << ", batch " << job_.batch_size;
  return Status::Ok();
}

bool Trainer::Session::UsesServedData() const {
  if (options_.data_from_scheduler) return true;
  const DataOptions local = job_.data.format.empty() ? FashionMnistOptions(options_.data_dir) : job_.data;
  std::filesystem::path train(local.train.x);
  if (!train.is_absolute()) train = std::filesystem::path(options_.data_dir) / train;
  std::error_code ec;
  return !std::filesystem::exists(train, ec);
}

Status Trainer::Session::LoadData() {
  if (fetcher_) {
    // The test split now (evaluations need all of it); training samples as chunks are granted.
    const auto start = std::chrono::steady_clock::now();
    HETPS_RETURN_IF_ERROR(fetcher_->EnsureAll(DatasetSplit::kTest));
    train_ = ToTensors(fetcher_->train());
    test_ = ToTensors(fetcher_->test());
    HETPS_LOG(INFO) << "takes its data from the scheduler: " << train_.size()
                    << " training samples as chunks are "
                    << "granted; the " << test_.size() << " test samples arrived in "
                    << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                    << " s";
  } else if (job_.data.format.empty()) {
    HETPS_ASSIGN_OR_RETURN(train_, LoadFashionMnist(options_.data_dir, DatasetSplit::kTrain));
    HETPS_ASSIGN_OR_RETURN(test_, LoadFashionMnist(options_.data_dir, DatasetSplit::kTest));
  } else {
    // The test split's labels are checked against the training split's classes.
    HETPS_ASSIGN_OR_RETURN(train_, LoadTensorDataset(job_.data, DatasetSplit::kTrain, options_.data_dir));
    HETPS_ASSIGN_OR_RETURN(
        test_, LoadTensorDataset(job_.data, DatasetSplit::kTest, options_.data_dir, train_.classes));
    HETPS_LOG(INFO) << "read " << train_.size() << " training and " << test_.size() << " test samples from "
                    << train_.host->source << " and " << test_.host->source;
  }
  if (static_cast<uint64_t>(train_.size()) < job_.train_samples) {
    return Status::FailedPrecondition("the job trains on " + std::to_string(job_.train_samples) +
                                      " samples but " + options_.data_dir + " holds " +
                                      std::to_string(train_.size()));
  }
  return Status::Ok();
}

Result<std::string> Trainer::Session::FindModelFile() {
  std::error_code ec;
  if (options_.model_file.empty() && !std::filesystem::exists(job_.model_file, ec)) return FetchModelFile();
  const std::string path = options_.model_file.empty() ? job_.model_file : options_.model_file;
  auto checksum = FileChecksum(path);
  if (!checksum.ok()) {
    return Status::NotFound("the job's model file " + path + " cannot be read on this machine (" +
                            checksum.status().message() +
                            "); copy it there, or leave out --model-file and the trainer fetches it from the "
                            "scheduler");
  }
  if (*checksum != job_.model_checksum) {
    return Status::InvalidArgument("model file " + path + " differs from the scheduler's " + job_.model_file +
                                   " (" + *checksum + " here, " + job_.model_checksum + " there)");
  }
  return path;
}

Result<std::string> Trainer::Session::FetchModelFile() {
  ModelFetcher::Options fetch_options;
  fetch_options.cache_dir = options_.model_cache_dir;
  fetch_options.request_timeout = job_.request_timeout;
  ModelFetcher fetcher(control_.get(), &sender_, fetch_options);
  AnnouncedModelFile file;
  file.path = job_.model_file;
  file.checksum = job_.model_checksum;
  file.bytes = job_.model_file_bytes;
  file.piece_bytes = job_.model_piece_bytes;
  const auto start = std::chrono::steady_clock::now();
  HETPS_ASSIGN_OR_RETURN(std::string path, fetcher.Fetch(file));
  if (fetcher.used_cache()) {
    HETPS_LOG(INFO) << "the model file " << job_.model_file << " is not on this machine; using the copy "
                    << "fetched from the scheduler earlier, " << path << " (" << job_.model_checksum << ")";
  } else {
    HETPS_LOG(INFO) << "fetched the model file " << job_.model_file << " from the scheduler at "
                    << options_.scheduler << ": " << fetcher.bytes_received() << " bytes in "
                    << fetcher.requests() << " pieces (" << fetcher.checksum_failures()
                    << " failed their checksum and were asked for again) in "
                    << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                    << " s; kept as " << path;
  }
  return path;
}

Result<std::shared_ptr<Model>> Trainer::Session::LoadModel(torch::Device device) {
  if (job_.model_file.empty()) {
    // A model of sequences takes its vocabulary, and unless told its positions, from the data.
    ModelOptions shape = job_.model_options;
    if (shape.context == 0) shape.context = job_.data.context;
    return BuildModel(job_.model, job_.seed, shape, train_.classes);
  }
  HETPS_ASSIGN_OR_RETURN(model_path_, FindModelFile());
  return LoadTorchScriptModel(model_path_, device);
}

Result<std::shared_ptr<Model>> Trainer::Session::BuildModelCopy(torch::Device device) {
  // The file loaded already, not fetched again.
  auto copy = job_.model_file.empty() ? LoadModel(torch::kCPU) : LoadTorchScriptModel(model_path_, device);
  if (!copy.ok()) return copy.status().WithContext("the copy of the model that evaluates snapshots");
  try {
    (*copy)->to(device);
  } catch (const c10::Error& e) {
    return Status::Internal("moving the copy of model " + ModelName() + " that evaluates snapshots to " +
                            DeviceDescription(device) + ": " + e.what_without_backtrace());
  }
  return *copy;
}

Status Trainer::Session::BuildModelOnDevice() {
  // A TorchScript file is loaded straight onto the device; a built-in model is built on the CPU.
  auto model = LoadModel(job_.model_file.empty() ? torch::Device(torch::kCPU) : device_);
  if (!model.ok()) return model.status();
  model_ = *model;
  if (!job_.model_file.empty()) {
    const std::vector<int64_t> indices = OrderedSampleIndices(train_, 0, std::min<int64_t>(2, train_.size()));
    // Class targets: the data's class count (the built-in data's 10); regression: unused.
    const int64_t classes = train_.classes > 0 ? train_.classes : kFashionMnistClasses;
    try {
      Batch batch = MakeBatch(train_, indices.data(), indices.size(), device_);
      HETPS_RETURN_IF_ERROR(CheckModelOnBatch(*model_, "model file " + model_path_, batch.input, job_.loss,
                                              classes, train_.is_tokens() ? batch.target.size(1) : 0));
    } catch (const c10::Error& e) {
      return Status::Internal("preparing a batch on " + DeviceDescription(device_) + ": " +
                              e.what_without_backtrace());
    }
  }
  try {
    copy_stream_ = options_.copy_stream ? options_.copy_stream() : MakeCopyStream(device_);
    model_->to(device_);
  } catch (const c10::Error& e) {
    return Status::Internal("moving model " + ModelName() + " to " + DeviceDescription(device_) + ": " +
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
  HETPS_RETURN_IF_ERROR(
      ReadServers(wire_map->servers(), map_->num_servers(), &endpoints, &client_options.server_keys)
          .WithContext("shard map"));
  client_options.curve = options_.curve;
  client_options.request_timeout = job_.request_timeout;
  client_options.reply_spin = options_.reply_spin;
  client_options.routing_id = job_.data_token;
  client_options.wire_dtype = wire_map->wire_dtype();
  client_options.int8_pushes = job_.mode == ConsistencyMode::kDiloco && job_.diloco.int8_pseudo_gradients;
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

}  // namespace hetps
