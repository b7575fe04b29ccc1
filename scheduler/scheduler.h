// Scheduler: the control plane of one job. Admits servers and trainers, checks that every trainer
// has the same model, builds and publishes the shard map, hands out data chunks, watches
// heartbeats, asks for evaluations, shows progress, and at the end shuts every member down and
// writes the run summary.
//
// Run() is the loop; it owns the ROUTER socket and all state, so everything happens on the thread
// that calls it. endpoint() may be read after Start() from any thread. The class is defined in
// four files: scheduler.cc (membership, the job, data chunks, balancing, shutdown),
// scheduler_evaluations.cc, scheduler_report.cc (run summary, progress) and
// scheduler_identity.cc (CURVE, identities).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "common/job_config.h"
#include "common/message.h"
#include "common/refusals.h"
#include "common/shard_map.h"
#include "common/status.h"
#include "common/transport.h"
#include "scheduler/balancer.h"
#include "scheduler/chunk_queue.h"
#include "scheduler/membership.h"
#include "scheduler/progress_display.h"
#include "scheduler/report_checks.h"
#include "scheduler/run_summary.h"
#include "security/zap_handler.h"

namespace hetps {

struct SchedulerOptions {
  JobOptions job;
  std::FILE* progress_out = stdout;         // where the live progress goes; nullptr: none
  bool progress_in_place = false;           // redraw in place (set when progress_out is a terminal)
  std::string endpoint_file;                // write the bound endpoint here once listening (optional)
  const std::atomic<bool>* stop = nullptr;  // when it turns true, the job is ended as failed
};

class Scheduler {
 public:
  Scheduler(zmq::context_t& context, SchedulerOptions options);
  ~Scheduler();

  // Binds the control endpoint (job.listen; port * picks one). endpoint() is then the bound one.
  Status Start();
  const std::string& endpoint() const { return endpoint_; }

  // Runs the job to its end. OK when it trained every epoch and the final evaluation arrived;
  // otherwise the reason it failed. Either way every member is told to shut down, and the run
  // summary is written when the job names a path.
  Status Run();

  const RunSummary& summary() const { return summary_; }

  // Messages and connections the scheduler itself refused, by reason; readable from any thread.
  RefusalTally refusals() const { return refusals_.Snapshot(); }

 private:
  enum class Phase { kGathering, kStarting, kTraining, kFinishing, kShuttingDown };
  using Clock = std::chrono::steady_clock;

  void Handle(Message message);
  void HandleJoin(const Message& message);
  void HandleRegisterModel(Member& member, const Message& message);
  void HandleChunkRequest(Member& member, const Message& message);
  void HandleDone(Member& member, const Message& message);
  void HandleEvalReport(Member& member, const Message& message);
  void Tick();

  // Starts the job once every server has joined and every trainer has registered its model.
  void MaybeStartJob();
  // Members are all here: publish the shard map to servers.
  void StartJob();
  // Every server holds its shard: let the trainers start.
  void StartTraining();
  void DeclareDead(Member& member, const std::string& why);
  void BroadcastMembership();
  void MaybeRequestEvaluation();
  // eval_interval_samples: asks for a snapshot each time the samples trained pass a multiple.
  void MaybeRequestSnapshot();
  // balance: speed: sends a new split of the global batch when the speeds call for one.
  void MaybeRebalance();
  uint64_t SamplesTrained();
  void BeginShutdown(bool failed, const std::string& reason);
  void FillSummary();
  void ShowProgress(bool force);
  // Staleness over every server's applied pushes, and the largest clock gap any admitted.
  StalenessSummary Staleness(uint64_t* max_clock_gap);

  // Identities (scheduler_identity.cc). SetUpCurve: with job.security.curve, reads the keys,
  // starts the authentication handler and makes `socket` a CURVE server.
  Status SetUpCurve(SocketOptions* socket);
  // The public key (Z85) of the key named `name`; empty without CURVE.
  std::string PublicKeyOf(const std::string& name) const;
  // ImpostorReason: why `message` may not come from
  // `member` (a CURVE key other than the one it joined with), or "" when it may.
  std::string ImpostorReason(const Member& member, const Message& message) const;
  // The live trainers' identities, for servers (ShardMap and Membership).
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::TrainerIdentity>>> TrainerIdentities(
      flatbuffers::FlatBufferBuilder& fbb);

  void SendTo(const std::string& routing_id, zmq::message_t envelope);
  // Counts a refusal, logs it (sparsely under a flood) and answers the sender with an Error.
  void Refuse(const Message& message, wire::ErrorCode code, Refusal why, const std::string& reason);
  // Refuses `message` when the report it carries is implausible (report_checks.h).
  bool RefuseImplausible(const Message& message, const Status& check);
  // The shard map; for servers with the trainers' identities, which trainers never see.
  zmq::message_t BuildShardMap(bool for_servers);
  double SecondsSince(Clock::time_point start) const;

  zmq::context_t& context_;
  SchedulerOptions options_;
  JobOptions& job_;
  Sender sender_{wire::Role::Scheduler};
  zmq::socket_t socket_;
  std::string endpoint_;
  Phase phase_ = Phase::kGathering;
  Membership members_;
  ChunkQueue chunks_;
  std::optional<std::vector<TensorInfo>> signature_;  // the first registered trainer's model
  std::string signature_owner_;
  std::unique_ptr<ShardMap> shard_map_;
  ProgressDisplay display_;

  struct EvalTask {
    uint32_t epoch = 0;
    bool final = false;
  };
  std::deque<EvalTask> evals_;  // front is the one asked for, when eval_asked_
  std::string eval_member_;     // routing id of the trainer evaluating evals_.front()
  uint32_t next_epoch_to_evaluate_ = 0;
  bool final_eval_queued_ = false;
  // Periodic evaluations: the ones asked for, by snapshot number, awaiting their reports.
  std::map<uint32_t, Evaluation> snapshots_;
  uint32_t next_snapshot_ = 1;

  std::optional<Balancer> balancer_;  // sync with balance: speed
  Clock::time_point last_rebalance_{};

  Clock::time_point created_ = Clock::now();
  Clock::time_point training_started_{};
  Clock::time_point all_done_{};
  Clock::time_point shutdown_deadline_{};
  bool failed_ = false;
  std::string failure_;
  RefusalCounter refusals_;
  std::map<std::string, std::string> member_keys_;  // CURVE: admitted public keys by name
  std::unique_ptr<ZapHandler> zap_;                 // CURVE: admits member_keys_ (counts in refusals_)
  ReportBounds bounds_;
  RunSummary summary_;
};

}  // namespace hetps
