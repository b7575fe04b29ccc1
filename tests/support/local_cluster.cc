#include "tests/support/local_cluster.h"

namespace hetps::testing {

JobOptions TestJob(const std::string& model, ConsistencyMode mode, uint32_t servers, uint32_t trainers) {
  JobOptions job;
  job.model = model;
  job.mode = mode;
  job.servers = servers;
  job.trainers = trainers;
  job.listen = "tcp://127.0.0.1:*";
  job.heartbeat_interval_ms = 200;
  job.heartbeat_timeout_ms = 5000;
  job.join_timeout_s = 120;
  job.request_timeout_ms = 60000;
  job.progress_interval_ms = 500;
  return job;
}

LocalCluster::LocalCluster(JobOptions job, ServerOptions server_options) : context_(1) {
  SchedulerOptions options;
  options.job = std::move(job);
  options.progress_out = nullptr;
  options.stop = &stop_;
  scheduler_ = std::make_unique<Scheduler>(context_, options);
  server_options.connect_timeout = std::chrono::seconds(30);
  for (uint32_t i = 0; i < options.job.servers; ++i) {
    servers_.push_back(std::make_unique<Server>(context_, server_options));
  }
}

LocalCluster::~LocalCluster() {
  if (scheduler_result_.valid()) {
    stop_.store(true);
    scheduler_result_.wait();
  }
  JoinServers();
}

Status LocalCluster::Start() {
  HETPS_RETURN_IF_ERROR(scheduler_->Start());
  for (auto& server : servers_) {
    HETPS_RETURN_IF_ERROR(server->Start());
  }
  Scheduler* scheduler = scheduler_.get();
  scheduler_result_ = std::async(std::launch::async, [scheduler] { return scheduler->Run(); });
  server_results_.assign(servers_.size(), Status::Ok());
  for (size_t i = 0; i < servers_.size(); ++i) {
    servers_[i]->set_scheduler(scheduler_->endpoint());
    server_threads_.emplace_back([this, i] { server_results_[i] = servers_[i]->Run(); });
  }
  return Status::Ok();
}

Status LocalCluster::WaitForJob(std::chrono::seconds timeout) {
  if (scheduler_result_.wait_for(timeout) != std::future_status::ready) {
    return Status::Timeout("the job did not end within " + std::to_string(timeout.count()) + " s");
  }
  Status status = scheduler_result_.get();
  JoinServers();
  return status;
}

Status LocalCluster::Stop() {
  stop_.store(true);
  return WaitForJob(std::chrono::seconds(60));
}

void LocalCluster::JoinServers() {
  for (std::thread& t : server_threads_) {
    if (t.joinable()) t.join();
  }
}

ScriptedTrainer::ScriptedTrainer(zmq::context_t& context, std::string scheduler_endpoint)
    : context_(context), scheduler_endpoint_(std::move(scheduler_endpoint)) {}

Status ScriptedTrainer::Setup(const std::vector<TensorInfo>& signature, PsClient::Options client_options) {
  ControlChannel::Options options;
  options.scheduler = scheduler_endpoint_;
  options.connect_timeout = std::chrono::seconds(30);
  control_ = std::make_unique<ControlChannel>(context_, options, &sender_);
  ControlChannel::JoinInfo info;
  info.role = wire::Role::Trainer;
  info.device = "cpu";
  auto accepted = control_->Join(info);
  if (!accepted.ok()) return accepted.status();
  if (const auto* token = accepted->body<wire::JoinAccepted>()->data_token()) data_token_ = token->str();
  flatbuffers::FlatBufferBuilder fbb(1024);
  auto body = wire::CreateRegisterModel(fbb, SignatureToWire(fbb, signature));
  auto reply = control_->Request(sender_.Seal(fbb, wire::Body::RegisterModel, body.Union()),
                                 wire::Body::ShardMap, std::chrono::seconds(60));
  if (!reply.ok()) return reply.status();
  const auto* wire_map = reply->body<wire::ShardMap>();
  auto map = ShardMap::FromWire(*wire_map);
  if (!map.ok()) return map.status();
  map_ = std::make_unique<ShardMap>(std::move(*map));
  start_clock_ = wire_map->resume_clock();
  std::vector<std::string> endpoints(map_->num_servers());
  for (const wire::ServerEndpoint* server : *wire_map->servers()) {
    endpoints[server->rank()] = server->endpoint()->str();
  }
  client_options.wire_dtype = wire_map->wire_dtype();  // as the job says, like a real trainer
  client_options.int8_pushes = FromWire(wire_map->mode()) == ConsistencyMode::kDiloco &&
                               DilocoFromWire(wire_map->diloco()).int8_pseudo_gradients;
  max_message_bytes_ = wire_map->max_message_bytes();
  if (wire_map->max_message_bytes() > 0) {
    client_options.max_message_bytes = static_cast<int64_t>(wire_map->max_message_bytes());
  }
  endpoints_ = endpoints;
  client_options.routing_id = data_token_;
  client_ = std::make_unique<PsClient>(context_, *map_, endpoints, &sender_, control_.get(), client_options);
  return client_->Connect();
}

void ScriptedTrainer::Vanish() {
  client_.reset();
  control_.reset();
}

TrainersRun RunCpuTrainers(LocalCluster& cluster, uint32_t trainers,
                           const std::function<void(uint32_t, TrainerOptions&)>& adjust,
                           std::chrono::seconds timeout) {
  std::vector<std::future<Status>> runs;
  for (uint32_t t = 0; t < trainers; ++t) {
    runs.push_back(std::async(std::launch::async, [&cluster, &adjust, t] {
      TrainerOptions options;
      options.scheduler = cluster.scheduler_endpoint();
      options.device = "cpu";
      if (adjust) adjust(t, options);
      return Trainer(cluster.context(), options).Run();
    }));
  }
  TrainersRun run;
  run.job = cluster.WaitForJob(timeout);
  run.summary = cluster.summary();
  for (auto& r : runs) run.trainers.push_back(r.get());
  return run;
}

Result<ScriptedModel> JoinScriptedModel(LocalCluster& cluster, const std::string& model_name) {
  ScriptedModel joined;
  HETPS_ASSIGN_OR_RETURN(joined.model, BuildModel(model_name, 1));
  HETPS_ASSIGN_OR_RETURN(joined.buffers, ModelBuffers::Create(*joined.model, torch::kCPU));
  joined.trainer = std::make_unique<ScriptedTrainer>(cluster.context(), cluster.scheduler_endpoint());
  HETPS_RETURN_IF_ERROR(joined.trainer->Setup(joined.buffers->signature()));
  HETPS_ASSIGN_OR_RETURN(HostTensors initial, joined.buffers->HostWeights());
  HETPS_RETURN_IF_ERROR(joined.trainer->client().InitWeights(initial.data, initial.owner));
  HETPS_RETURN_IF_ERROR(joined.trainer->client().Pull(0, false, joined.buffers->weight_targets()).status());
  HETPS_RETURN_IF_ERROR(joined.buffers->CommitWeights());
  return joined;
}

}  // namespace hetps::testing
