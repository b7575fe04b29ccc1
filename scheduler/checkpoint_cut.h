// CheckpointCut: one checkpoint being taken. It knows where the cut lies (sync: the round every
// server cuts at), collects the servers' states and the trainers' data positions as they come
// back, and turns them into the checkpoint's data position and the server states to write.
//
// The data position at the cut is: the chunks complete when the cut was asked for, plus those
// each trainer completed before it reported its position, plus what its report says (chunks
// trained whole but not yet reported, and how far it got into the ones it holds).
//
// A cut has a deadline: `timeout` after it started, or, for a sync cut at a round ahead, after
// the time the trainers are expected to reach that round. The scheduler abandons a cut past it.
//
// Owned by the scheduler's loop thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/manifest.h"
#include "common/message.h"
#include "common/status.h"

namespace hetps {

class CheckpointCut {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    uint32_t number = 0;             // the request's number, echoed in the replies
    std::optional<uint64_t> round;   // sync: the round every server cuts at; none: at once
    bool final = false;              // the end of the job: every chunk is trained
    uint32_t servers = 0;            // states expected, from ranks 0..servers-1
    std::vector<uint32_t> trainers;  // ranks whose positions are expected
    uint32_t chunks_per_epoch = 1;
    // How far ahead, in time, the round lies (the estimate that placed it); zero for a cut at once.
    Clock::duration lead{};
    // How long the replies may take from then (job file: checkpoint.cut_timeout_s).
    Clock::duration timeout = std::chrono::seconds(60);
  };

  // `completed`: the chunks complete when the cut is asked for.
  CheckpointCut(Options options, const std::vector<DataPosition::EpochChunks>& completed);

  const Options& options() const { return options_; }
  Clock::time_point started() const { return started_; }
  // started() + lead + timeout: past it, the cut is given up.
  Clock::time_point deadline() const { return started_ + options_.lead + options_.timeout; }

  // Trainer `trainer` reported chunk `chunk` (a ChunkGrant id) complete.
  void NoteCompleted(uint32_t trainer, uint32_t chunk);
  // A trainer's DataPosition. FailedPrecondition when it missed the cut (a sync report from
  // another step than the round) or names chunks that do not exist.
  Status AddPosition(uint32_t trainer, const wire::DataPosition& position);
  // A server's CheckpointState message (kept whole: the states borrow its frames). Protocol
  // error naming the server and the tensor when a frame does not match its description.
  Status AddState(uint32_t server, Message message);

  bool HasAllPositions() const { return positions_.size() == options_.trainers.size(); }
  // Whether the cut still waits for trainer `trainer`'s position (it cannot complete without it).
  bool AwaitsPosition(uint32_t trainer) const;
  bool HasAllStates() const { return states_.size() == options_.servers; }
  // What has not come back yet, for a log line: "server 1, trainer 2", or "" when nothing.
  std::string Missing() const;

  // Once everything is in: the data position at the cut (`epochs` is the job's, for a final cut),
  // and the servers' states, borrowing the messages' frames.
  DataPosition Position(uint32_t epochs) const;
  std::vector<ServerState> States() const;
  uint64_t Version() const;  // the largest of the servers' versions

 private:
  struct Report {
    uint64_t clock = 0;
    uint32_t epoch = 0;
    uint64_t samples = 0;
  };

  Options options_;
  Clock::time_point started_ = Clock::now();
  std::map<uint32_t, std::set<uint32_t>> completed_;  // epoch -> chunk indices
  std::vector<DataPosition::Partial> partial_;
  std::map<uint32_t, Report> positions_;                 // by trainer
  std::map<uint32_t, std::shared_ptr<Message>> states_;  // by server
};

}  // namespace hetps
