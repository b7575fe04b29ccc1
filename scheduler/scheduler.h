// Scheduler: the control plane of one job. Admits servers and trainers, checks that every trainer
// has the same model, builds and publishes the shard map, hands out data chunks, watches
// heartbeats, asks for evaluations, shows progress, and at the end shuts every member down and
// writes the run summary.
//
// Run() is the loop; it owns the ROUTER socket and all state, so everything happens on the thread
// that calls it. endpoint() may be read after Start() from any thread. The class is defined in
// several files: scheduler.cc (the loop, messages, data chunks, liveness, shutdown),
// scheduler_join.cc (members joining, the shard map, the start), scheduler_trainers.cc (trainers
// joining and leaving a running job, balancing), scheduler_evaluations.cc, scheduler_report.cc
// (progress reports, run summary, display), scheduler_status.cc (status snapshots for HTTP and
// hetps-status), scheduler_checkpoints.cc (checkpoints, the final model, resuming a job),
// scheduler_recovery.cc (replacing a lost server), scheduler_identity.cc (CURVE, identities) and
// scheduler_history.cc (the run's history, metrics.jsonl).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>

#include <zmq.hpp>

#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/file_system.h"
#include "checkpoint/manifest.h"
#include "common/job_config.h"
#include "common/message.h"
#include "common/refusals.h"
#include "common/shard_map.h"
#include "common/status.h"
#include "common/transport.h"
#include "http/status_snapshot.h"
#include "scheduler/balancer.h"
#include "scheduler/checkpoint_cut.h"
#include "scheduler/chunk_queue.h"
#include "scheduler/connection_monitor.h"
#include "scheduler/membership.h"
#include "scheduler/metrics_log.h"
#include "scheduler/mode_chooser.h"
#include "scheduler/progress_display.h"
#include "scheduler/report_checks.h"
#include "scheduler/run_dir.h"
#include "scheduler/run_summary.h"
#include "scheduler/server_links.h"
#include "scheduler/stall_watch.h"
#include "security/zap_handler.h"
#include "trainer/data/dataset.h"

namespace hetps {

struct SchedulerOptions {
  JobOptions job;
  std::FILE* progress_out = stdout;         // where the live progress goes; nullptr: none
  bool progress_in_place = false;           // redraw in place (set when progress_out is a terminal)
  std::string endpoint_file;                // write the bound endpoint here once listening (optional)
  const std::atomic<bool>* stop = nullptr;  // when it turns true, the job is ended as failed
  // When it turns true, the job takes a checkpoint and then ends as stopped (StopAfterCheckpoint);
  // `stop` still ends it at once. nullptr: never.
  const std::atomic<bool>* stop_after_checkpoint = nullptr;
  // Where the job's outputs go that the job leaves unnamed; a checkpoint stores the job without
  // the paths it supplied (scheduler/run_dir.h).
  RunDirectory run_dir;
  // Continue the job of this checkpoint: a checkpoint's directory, or a directory of checkpoints
  // (its newest committed one). `job` must be the checkpoint's job (its model and shard map).
  std::string resume;
  FileSystem* fs = nullptr;  // checkpoints and the model are written through it; nullptr: the real one
  // The training split of the job's data section, read by the scheduler: its size sets the
  // samples per epoch. Required when job.data.format is set; null for the built-in data set.
  std::shared_ptr<const HostDataset> train_data;
  // The test split, read when the data is served (data.serve), which needs both.
  std::shared_ptr<const HostDataset> test_data;
  // Fault injection for tests: the first N served replies (samples, or pieces of the model file)
  // have a byte changed after their checksum was computed, as a bad link would change it.
  int corrupt_served_replies = 0;
  // The job's status is published here twice a second (for the HTTP server); nullptr: nowhere.
  // It must outlive Run().
  SnapshotBoard* status_board = nullptr;
};

// The most bytes of the job's model file one ModelFilePiece carries: kMaxServedReplyBytes, less
// when the job's max_message_bytes is smaller, so that a piece in its envelope stays within it.
uint64_t ModelPieceBytes(uint64_t max_message_bytes);

// The most served replies a trainer may leave unacknowledged (Scheduler::RefuseUnread): with
// kMaxServedReplyBytes each, 16 MiB of the scheduler's memory per trainer at most. A trainer that
// reads asks again only after the answer, so it has at most one outstanding, or a few after
// requests that timed out.
inline constexpr size_t kMaxUnreadServedReplies = 4;

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
  // Handle, with the last guard: an exception a handler throws (memory a message made it ask
  // for, a fault) drops that message, counted as `unexpected`, and the scheduler goes on.
  void HandleGuarded(Message message);
  void HandleJoin(const Message& message);
  void HandleRegisterModel(Member& member, const Message& message);
  void HandleChunkRequest(Member& member, const Message& message);
  // Served data (scheduler_data.cc): the samples' bytes for a trainer without the files.
  void HandleDataRequest(Member& member, const Message& message);
  // The served data's layout, for TrainerJob; needs train_data and test_data.
  flatbuffers::Offset<wire::DataLayout> ServedLayout(flatbuffers::FlatBufferBuilder& fbb) const;
  // A piece of the job's TorchScript file, for a trainer without a copy (scheduler_data.cc).
  void HandleModelFileRequest(Member& member, const Message& message);
  // The served data's identity (DataLayout.checksum), computed once at Start().
  void ComputeServedChecksum();
  // Served replies are up to 4 MiB for a request of a few bytes, so a trainer that asks and never
  // reads could fill the scheduler's memory: `receipt` (a request's) acknowledges the served reply
  // it names and every one sent before it; while kMaxUnreadServedReplies others are outstanding,
  // `message` is refused (and counted) and true returned.
  bool RefuseUnread(Member& member, uint64_t receipt, const Message& message);
  // The token of a reply about to be served to `member`, outstanding from now on: random, never 0.
  uint64_t NewServedToken(Member& member);
  void HandleProgress(Member& member, const Message& message);  // scheduler_report.cc
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
  void MaybeRequestEvaluation();
  // eval_interval_samples: asks for a snapshot each time the samples trained pass a multiple.
  void MaybeRequestSnapshot();
  // The trainer that evaluates the snapshots: the one chosen before while it trains, else the
  // live trainer with the smallest share of the samples (lowest rank among equals).
  Member* SnapshotEvaluator();
  uint64_t SamplesTrained();
  // "test accuracy 0.8812", "test R2 0.9123" for loss mse, or "test perplexity 4.512 (2.174
  // bits/token)" for token data.
  std::string MetricText(const Evaluation& e) const;
  // The run summary's metric: "accuracy", "r2" or "perplexity".
  const char* MetricName() const;
  // Keeps the buffers of a final evaluation for the exported model, after checking each one's
  // bytes against its shape and dtype; InvalidArgument naming the buffer otherwise (none kept).
  Status KeepModelBuffers(const wire::EvalReport& report);
  // Tells every member to shut down: the job completed, failed for `reason`, or was stopped on
  // request (a signal: `failed` too, since it did not complete, but logged as a warning).
  void BeginShutdown(bool failed, const std::string& reason, bool requested = false);
  void FillSummary();
  void ShowProgress(bool force);
  // ---- status snapshots (scheduler_status.cc) ----
  const char* PhaseName() const;
  // Builds the status snapshot (at most every 500 ms unless `force`) and publishes it.
  void MaybePublishStatus(bool force);
  // hetps-status asks without joining: answered with the newest snapshot as JSON.
  void HandleStatusRequest(const Message& message);
  // Staleness over every server's applied pushes, and the largest clock gap any admitted.
  StalenessSummary Staleness(uint64_t* max_clock_gap);
  // The run's history (metrics.jsonl in the run directory; scheduler_history.cc): a trainer's
  // report, the job's totals (every progress interval), an evaluation, a mode decision.
  Status OpenHistory();   // at Start, with a "run" record
  void CloseHistory();    // at the end, with an "end" record
  void SaveStatusPage();  // at the end: the status page as the job ended, status.html
  void LogProgress(const Member& trainer);
  void MaybeLogJob();
  void LogEvaluation(const Evaluation& e);
  void LogModeDecision(const ModeDecision& d);
  double TimeSinceTraining() const;  // 0 before training starts

  // ---- checkpoints, the final model and resuming (scheduler_checkpoints.cc) ----
  void MaybeCheckpoint();
  // Asks for a checkpoint: at a round a little ahead (sync) or now, or the final one.
  void BeginCheckpoint(bool final);
  zmq::message_t CheckpointRequest();  // for the cut under way
  void AskServersForState();
  void HandleDataPosition(Member& member, const Message& message);
  // What is wrong with the chunks trainer `trainer`'s data position names ("names chunk 7 ..."):
  // one finished that it neither holds nor is complete, or one in progress it does not hold;
  // empty when nothing is.
  std::string ForeignChunk(uint32_t trainer, const wire::DataPosition& position) const;
  // A reply on a server's data socket: CheckpointState, Ack (to Restore) or Error.
  void HandleServerReply(uint32_t rank, Message message);
  void MaybeFinishCut();
  void AbandonCut(const std::string& why);
  // Takes the writer's finished work: commits, the model, failures.
  void PollWriter();
  // The final evaluation is in: ends the job once the final checkpoint and the model are written.
  void FinishJob();
  // --resume: checks the checkpoint against this job's shard map (at StartJob) and restores the
  // servers before training starts; false when the job cannot resume.
  bool CheckResume();
  void RestoreForResume();
  // A signal asked for a stop: takes a checkpoint (once no other cut, admission or recovery is
  // under way), then shuts the job down as stopped, naming the checkpoint that resumes it. Without
  // checkpoints, or before training, it stops at once; a job already finishing finishes.
  void StopAfterCheckpoint();
  // "; resume with: hetps-scheduler --resume DIR" for the newest committed checkpoint.
  std::string ResumeHint() const;

  // ---- a lost server (scheduler_recovery.cc) ----
  // A server died or hung: with checkpoints, pause the trainers and wait for a replacement;
  // without, end the job.
  void ServerLost(Member& member, const std::string& why);
  // A new server may join to take a lost server's rank.
  bool AwaitingReplacement() const;
  // Once every lost rank has a ready replacement: restore the servers from the newest checkpoint.
  void MaybeRestoreServers();
  Status SendRestores(uint64_t* samples_at_checkpoint);
  // Restore message to server `rank`: `file`'s tensors, or with none a reset (`reset`) or only
  // the new generation. Its Ack is then awaited.
  Status SendRestore(uint32_t rank, const std::shared_ptr<SafetensorsFile>& file, uint64_t checkpoint,
                     uint64_t round, bool reset);
  // Every server has restored: the trainers go on.
  void FinishRecovery();
  void CheckRecoveryTimeout();
  // A sync rollback undoes the end of the job: trainers train again.
  void ReopenTraining();
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::ServerEndpoint>>> ServerEndpointsToWire(
      flatbuffers::FlatBufferBuilder& fbb);

  // ---- trainers joining and leaving a running job, balancing (scheduler_trainers.cc) ----
  // A registered trainer not yet in the job is admitted once nothing else is under way (a
  // checkpoint, a recovery, another admission): its first step is announced to every server
  // (Membership over their data socket), and once all have agreed it gets the shard map.
  void MaybeAdmitTrainer();
  void ProposeAdmission(Member& trainer);
  // Whether `reply` (from server `server`'s data socket) answers the admission under way.
  bool HandleAdmissionReply(uint32_t server, const Message& reply);
  void FinishAdmission();
  // The admission under way stops (a server was lost); the trainer waits for another.
  void AbandonAdmission(const std::string& why);
  // Why no trainer may join now (the job is ending), or "".
  std::string NoRoomForTrainers() const;
  // A trainer died (`left`: said Goodbye): out of the job at once, its chunks back to the queue.
  void TrainerGone(Member& member, const std::string& why, bool left);
  // Drops from the job every trainer whose latest nonfinite_limit steps a server left out for
  // NaN or infinite gradients (a server's stats say so), telling it why.
  // Trainers dropped for what they did (scheduler_drops.cc): told why with a Shutdown, recorded
  // in the summary's `dropped`, then gone as a dead one is.
  void DropTrainer(Member& trainer, const std::string& reason);
  // Drops the trainers whose last nonfinite_limit steps `server` left out.
  void DropTrainersLeftOut(const Member& server);
  // Judges the trainers `server`'s rules wait for (StallWatch): leaves one that stalled out of
  // the step it holds (its first clock moves past it, told to every server), or drops it.
  void JudgeStalls(const Member& server, const wire::ServerStats& stats);
  // An evaluation asked for and unanswered beyond its limit (StallWatch::EvaluationLimitSeconds):
  // the first time it goes to another trainer, the second the trainer is dropped.
  void JudgeEvaluation();
  // Sends the trainers in the job, to servers over their data socket (where a newcomer's first
  // round is checked; the admission under way awaits the answers) and to the training trainers.
  void BroadcastMembership();
  // Sync: whether a trainer in the job has yet to take step `clock` or an earlier one, its first;
  // until it has, the last epoch is not over for the others.
  bool TrainerStartsAtOrAfter(uint64_t clock);
  // A step about `lead_seconds` ahead of the fastest trainer (by the trainers' reports and the
  // servers' round counts), for what every member must hear of before reaching it: a sync
  // checkpoint's cut, a joiner's first step, a new split of the global batch.
  uint64_t StepAhead(double lead_seconds);
  // Sync: splits the global batch again from step `from_clock` over `trainers` (by default the
  // trainers with data; one joined or left, or ran out in the last epoch): equal shares, or with
  // balance: speed by speed (a newcomer at the mean).
  void Resplit(uint64_t from_clock);
  void Resplit(uint64_t from_clock, const std::vector<Member*>& trainers);
  // balance: speed: sends a new split of the global batch when the speeds call for one.
  void MaybeRebalance();
  // Sync with balance: speed: `trainer`, at step `clock`, has no data left in the last epoch;
  // its share of the global batch goes to the trainers that still hold some, so that a slow
  // one with a small share does not train its last chunk a few samples a round while the others
  // push empty rounds.
  void LeaveShareToTrainersWithData(Member& trainer, uint64_t clock);
  // The trainers in the rounds that still have data to train (all of them before the tail of
  // the last epoch).
  std::vector<Member*> TrainersWithData();
  // Warns, once per trainer, of one whose share of `split` is mostly fixed cost
  // (Balancer::MostlyFixedCost).
  void WarnOfFixedCosts(const std::map<uint32_t, uint32_t>& split);
  // Sends every training trainer Rebalance{from_clock, sizes}, sizes by rank.
  void SendBatchSizes(uint64_t from_clock, const std::map<uint32_t, uint32_t>& sizes);

  // Identities (scheduler_identity.cc). SetUpCurve: with job.security.curve, reads the keys,
  // starts the authentication handler and makes `socket` a CURVE server.
  Status SetUpCurve(SocketOptions* socket);
  // Connects the scheduler's link to `server`'s data socket unless connected, with CURVE
  // checking the public key the server joined with.
  Status LinkServer(const Member& server);
  // The public key (Z85) of the key named `name`; empty without CURVE.
  std::string PublicKeyOf(const std::string& name) const;
  // ImpostorReason: why `message` may not come from
  // `member` (a CURVE key other than the one it joined with), or "" when it may.
  std::string ImpostorReason(const Member& member, const Message& message) const;
  // Why `message`, a Join as `role` (server or trainer), may not join so: with CURVE, its key's
  // role is not `role`; "" when it may.
  std::string WrongRoleReason(const Message& message, wire::Role role) const;
  // The live trainers' identities, for servers (ShardMap and Membership).
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::TrainerIdentity>>> TrainerIdentities(
      flatbuffers::FlatBufferBuilder& fbb);

  void SendTo(const std::string& routing_id, zmq::message_t envelope);
  // Counts a refusal, logs it (sparsely under a flood) and answers the sender with an Error.
  void Refuse(const Message& message, wire::ErrorCode code, Refusal why, const std::string& reason);
  // Refuses `message` when the report it carries is implausible (report_checks.h).
  bool RefuseImplausible(const Message& message, const Status& check);
  // The shard map; for servers with the trainers' identities, which trainers never see. For a
  // trainer that joined late (`joiner`), with its first step and epoch.
  zmq::message_t BuildShardMap(bool for_servers, const Member* joiner = nullptr);
  double SecondsSince(Clock::time_point start) const;

  zmq::context_t& context_;
  SchedulerOptions options_;
  JobOptions& job_;
  // The optimizers the shard map and TrainerJob carry, the lr_schedule resolved (Start()).
  OptimizerOptions server_optimizer_, trainer_optimizer_;
  std::string model_checksum_;      // of job_.model_file, when the model is a TorchScript file
  std::string model_bytes_;         // that file as read at Start(): what trainers without a copy receive
  uint64_t model_piece_bytes_ = 0;  // the most of it one ModelFilePiece carries
  std::string served_checksum_;     // of train_data and test_data, when the data is served
  Sender sender_{wire::Role::Scheduler};
  zmq::socket_t socket_;
  std::string endpoint_;
  Phase phase_ = Phase::kGathering;
  Membership members_;
  ChunkQueue chunks_;
  // The first registered trainer's model; forgotten while gathering when no trainer that
  // registered is left.
  std::optional<std::vector<TensorInfo>> signature_;
  std::string signature_owner_;
  std::unique_ptr<ShardMap> shard_map_;
  std::vector<ModelBuffer> model_buffers_;  // the final evaluation's, for the exported model
  // The final cut's model, written with model_buffers_ once the final evaluation is in.
  struct PendingModel {
    std::vector<TensorInfo> tensors;
    std::vector<PartitionInfo> partitions;
    std::vector<ServerState> states;
    std::map<std::string, std::string> metadata;
  };
  std::optional<PendingModel> pending_model_;
  ProgressDisplay display_;

  struct EvalTask {
    uint32_t epoch = 0;
    bool final = false;
  };
  std::deque<EvalTask> evals_;      // front is the one asked for, when eval_asked_
  std::string eval_member_;         // routing id of the trainer evaluating evals_.front()
  Clock::time_point eval_asked_{};  // when eval_member_ was asked
  std::string eval_passed_over_;    // a trainer that did not answer evals_.front() in time
  uint32_t next_epoch_to_evaluate_ = 0;
  bool final_eval_queued_ = false;
  // Periodic evaluations: the ones asked for, by snapshot number, awaiting their reports.
  std::map<uint32_t, Evaluation> snapshots_;
  uint32_t next_snapshot_ = 1;
  std::string snapshot_member_;  // routing id of the trainer that evaluates them

  std::optional<Balancer> balancer_;  // sync with balance: speed, and auto
  Clock::time_point last_rebalance_{};
  std::set<uint32_t> fixed_cost_warned_;  // trainers named by WarnOfFixedCosts()

  // ---- mode: auto (scheduler_auto.cc) ----
  // Feeds a trainer's report to the chooser; switches the mode when the rule says so.
  void ObserveForAuto(const Member& trainer, const wire::Progress& progress);
  void MaybeSwitchMode();
  // Every training trainer has reported often enough for the rule to measure it.
  bool EveryTrainerMeasured();
  // Why switching to `decision` would hold trainers too long while one far behind catches up
  // to its bound (async lets clocks drift apart), or "" when it would not.
  std::string TooFarBehindFor(const ModeChooser::Decision& decision);
  // Tells every server to follow `decision` from a step a little ahead (about a second into or
  // out of sync, and into diloco), and every trainer its batch for it (sync: split by speed;
  // diloco: the whole global batch; otherwise the even shares); into diloco, the trainers too.
  void SwitchMode(const ModeChooser::Decision& decision);
  // Sends `member` (a server, or in diloco a trainer) the rule in force, from step `from_clock` on.
  void SendMode(const Member& member, uint64_t from_clock);
  // Why an auto job may not switch to diloco ("" when it may): its checkpoints and recovery cut
  // and roll back by version as in async, and a trainer joining late would not hear of the rounds.
  static std::string AutoDilocoRefusal(const JobOptions& job);
  // The rule in force: the job's mode, or in auto the last switch's.
  ConsistencyMode CurrentMode() const;
  std::optional<ModeChooser> chooser_;                   // mode: auto
  ModeChooser::Decision auto_rule_;                      // the rule in force
  std::optional<ModeChooser::Decision> auto_candidate_;  // a new rule seen once: switched to when seen again
  Clock::time_point auto_last_look_{};
  std::string auto_diloco_refusal_;  // why this auto job never switches to diloco ("": it may)

  Clock::time_point created_ = Clock::now();
  Clock::time_point training_started_{};
  Clock::time_point all_done_{};
  Clock::time_point shutdown_deadline_{};
  bool failed_ = false;
  std::string failure_;
  RefusalCounter refusals_;
  uint64_t served_requests_ = 0;      // data requests answered (data.serve)
  uint64_t served_bytes_ = 0;         // feature and target bytes sent in them
  uint64_t model_files_sent_ = 0;     // last pieces of the model file sent (ModelFileRequest)
  std::random_device served_random_;  // served replies' tokens
  uint64_t undelivered_ = 0;          // messages to members dropped: queue full, or gone
  AllowedKeys member_keys_;           // CURVE: admitted public keys by name
  std::unique_ptr<ZapHandler> zap_;   // CURVE: admits member_keys_ (counts in refusals_)
  ReportBounds bounds_;
  RunSummary summary_;

  // Status snapshots (scheduler_status.cc).
  std::shared_ptr<const StatusSnapshot> status_;  // the newest
  uint64_t status_number_ = 0;                    // snapshots built so far
  std::string status_json_;                       // snapshot number status_json_of_ as JSON
  uint64_t status_json_of_ = 0;
  Clock::time_point last_status_{};
  std::vector<HistoryPoint> history_;  // the plots' points, oldest first
  Clock::time_point last_history_{};
  std::chrono::milliseconds history_interval_{2000};

  // Checkpoints (scheduler_checkpoints.cc).
  FileSystem& fs_;
  ServerLinks links_;
  StallWatch stalls_;  // trainers that hold the job (JudgeStalls)
  std::unique_ptr<ConnectionMonitor> monitor_;
  MetricsLog metrics_;  // open when the scheduler has a run directory
  Clock::time_point metrics_job_at_{};
  std::unique_ptr<CheckpointWriter> writer_;  // with checkpoint.dir or model_out
  std::optional<CheckpointCut> cut_;
  uint32_t cut_number_ = 0;
  uint32_t cut_misses_ = 0;     // sync cuts missed in a row: the lead grows
  bool servers_asked_ = false;  // for the cut under way
  Clock::time_point last_cut_{};
  uint64_t last_cut_clock_ = 0;
  uint64_t samples_at_checkpoint_ = 0;   // trained when the newest checkpoint was cut
  std::deque<uint64_t> samples_of_cut_;  // per checkpoint handed to the writer, in order
  bool final_cut_asked_ = false;
  uint32_t final_cut_failures_ = 0;  // final checkpoints abandoned
  bool final_evaluated_ = false;
  std::string output_error_;           // the model could not be written
  std::optional<Manifest> resume_;     // --resume: the checkpoint continued from
  std::string restorable_checkpoint_;  // directory of this job's newest checkpoint (empty: none yet)
  std::map<uint32_t, uint64_t> awaiting_restore_;  // servers whose Ack to a Restore is due: its seq
  // StopAfterCheckpoint: when it was asked, the newest checkpoint then, and the cut taken for it
  // (0: not begun yet).
  std::optional<Clock::time_point> stop_asked_;
  std::string checkpoint_before_stop_;
  uint32_t stop_cut_ = 0;

  // Recovery from a lost server (scheduler_recovery.cc).
  struct Recovery {
    Clock::time_point started;
    std::set<uint32_t> lost;       // ranks waiting for a replacement
    std::vector<size_t> failures;  // indices into summary_.failures being recovered
    bool restoring = false;
    uint64_t checkpoint = 0;  // restored; 0: the initial weights
    uint64_t resume_clock = 0;
    uint32_t resume_epoch = 0;
    bool rollback = false;
    bool reinitialize = false;
    uint64_t samples_at_checkpoint = 0;
  };
  std::optional<Recovery> recovery_;

  // A trainer joining the running job (scheduler_trainers.cc).
  struct Admission {
    std::string routing_id;                 // the trainer
    std::map<uint32_t, uint64_t> awaiting;  // server rank -> seq of the Membership it is to answer
    uint32_t misses = 0;                    // servers already past the proposed step: lead doubles
    Clock::time_point proposed;
  };
  std::optional<Admission> admission_;
  // Sync: a trainer was told the last epoch is complete, so the others stop pushing: no trainer
  // may join any more.
  bool final_epoch_over_ = false;
  uint32_t generation_ = 0;
  std::set<std::string> replaced_;  // routing ids of servers declared dead
  uint64_t resume_clock_ = 0;       // sent with the shard map: where trainers start
  uint32_t resume_epoch_ = 0;
};

}  // namespace hetps
