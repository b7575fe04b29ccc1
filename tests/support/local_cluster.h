// Test support: a scheduler and servers running as threads of the test process on 127.0.0.1 with
// real sockets (LocalCluster), and a trainer driven by the test step by step (ScriptedTrainer),
// for tests that need fixed batches or fixed gradients. Real Trainer objects can join too.
//
// A LocalCluster is created, started and destroyed by one test thread; its components run on
// threads of their own.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "common/control_channel.h"
#include "common/job_config.h"
#include "common/shard_map.h"
#include "ps/server.h"
#include "scheduler/scheduler.h"
#include "trainer/device/model_buffers.h"
#include "trainer/models/models.h"
#include "trainer/ps_client.h"
#include "trainer/trainer.h"

namespace hetps::testing {

// A job for tests: listens on a free port, no progress display, short timeouts.
JobOptions TestJob(const std::string& model, ConsistencyMode mode, uint32_t servers, uint32_t trainers);

class LocalCluster {
 public:
  // Every server binds where `server_options.bind` says (by default a free port on 127.0.0.1;
  // an inproc:// endpoint for one server in the cluster's context).
  explicit LocalCluster(JobOptions job, ServerOptions server_options = {});
  ~LocalCluster();

  // Binds the scheduler and every server, then runs each on a thread.
  Status Start();

  const std::string& scheduler_endpoint() const { return scheduler_->endpoint(); }
  Server& server(size_t i) { return *servers_[i]; }
  zmq::context_t& context() { return context_; }

  // Waits for the scheduler to end the job; its status, or Timeout.
  Status WaitForJob(std::chrono::seconds timeout);
  // Asks the scheduler to end the job now (as failed) and waits for it.
  Status Stop();
  // The run summary, once WaitForJob or Stop has returned.
  const RunSummary& summary() const { return scheduler_->summary(); }
  // Statuses the servers' Run() returned; valid after the destructor would have joined them,
  // i.e. call after WaitForJob/Stop, which waits for the servers too.
  const std::vector<Status>& server_results() const { return server_results_; }

 private:
  void JoinServers();

  zmq::context_t context_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::unique_ptr<Server>> servers_;
  std::future<Status> scheduler_result_;
  std::vector<std::thread> server_threads_;
  std::vector<Status> server_results_;
};

// Real trainers on the CPU, each on a thread of its own, joined to `cluster`'s job (started);
// trainer t's options go through `adjust(t, options)` first. Waits up to `timeout` for the job.
struct TrainersRun {
  Status job;                    // WaitForJob's
  RunSummary summary;            // the job's, once it ended
  std::vector<Status> trainers;  // each trainer's Run()
};
TrainersRun RunCpuTrainers(LocalCluster& cluster, uint32_t trainers,
                           const std::function<void(uint32_t, TrainerOptions&)>& adjust,
                           std::chrono::seconds timeout = std::chrono::seconds(300));

// A trainer whose every step the test decides: joins, registers a model signature, receives the
// shard map and connects to the servers; then the test calls the PsClient directly.
class ScriptedTrainer {
 public:
  ScriptedTrainer(zmq::context_t& context, std::string scheduler_endpoint);

  // `client_options` but for the wire dtype, which the job decides.
  Status Setup(const std::vector<TensorInfo>& signature, PsClient::Options client_options = {});
  PsClient& client() { return *client_; }
  const ShardMap& map() const { return *map_; }
  uint32_t rank() const { return sender_.rank(); }
  ControlChannel& control() { return *control_; }
  Sender& sender() { return sender_; }
  // The shard map's max_message_bytes as received, and server `s`'s data endpoint.
  uint64_t max_message_bytes() const { return max_message_bytes_; }
  const std::string& client_endpoint(uint32_t s) const { return endpoints_[s]; }
  // The data token the scheduler gave this trainer (its data sockets' routing id).
  const std::string& data_token() const { return data_token_; }
  // The step the shard map says this trainer starts at (a late joiner's, or a resumed job's).
  uint64_t start_clock() const { return start_clock_; }
  // Closes the data-plane connections (client() is gone), so that a test may speak for this
  // trainer over connections of its own: a server admits one connection per token at a time.
  void CloseClient() { client_.reset(); }
  // Closes every connection as a crashed process would: no heartbeat, no goodbye. Nothing else
  // may be called afterwards.
  void Vanish();

 private:
  zmq::context_t& context_;
  std::string scheduler_endpoint_;
  Sender sender_{wire::Role::Trainer};
  std::unique_ptr<ControlChannel> control_;
  std::unique_ptr<ShardMap> map_;
  std::unique_ptr<PsClient> client_;
  uint64_t max_message_bytes_ = 0;
  std::vector<std::string> endpoints_;
  std::string data_token_;
  uint64_t start_clock_ = 0;
};

// A model built on the CPU (seed 1) and a ScriptedTrainer for it, joined to a started cluster:
// the servers hold the model's initial weights and the model the weights they answered, ready
// for a StepRunner driven by the test.
struct ScriptedModel {
  std::shared_ptr<Model> model;
  std::unique_ptr<ModelBuffers> buffers;
  std::unique_ptr<ScriptedTrainer> trainer;
};
Result<ScriptedModel> JoinScriptedModel(LocalCluster& cluster, const std::string& model_name);

}  // namespace hetps::testing
