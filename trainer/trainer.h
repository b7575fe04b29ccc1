// Trainer: one training process (or thread). Joins the scheduler, builds the job's model on its
// device, registers the model, then trains: takes data chunks on demand, computes gradients,
// pushes them to the servers and pulls fresh weights each step, reports progress, evaluates on
// the test set when the scheduler asks, and leaves when the scheduler shuts the job down.
//
// Run() does everything on the calling thread, which owns the data-plane sockets and the model;
// the control channel to the scheduler heartbeats from a thread of its own, so a step longer
// than the heartbeat timeout never makes the trainer look dead. Leave() may be called from any
// thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <zmq.hpp>

#include "common/control_channel.h"
#include "common/message.h"
#include "common/status.h"
#include "common/transport.h"

namespace hetps {

class CopyStream;

struct TrainerOptions {
  std::string scheduler = "tcp://127.0.0.1:7400";              // the scheduler's control endpoint
  std::string device = "auto";                                 // auto | cpu | cuda[:N] | mps
  std::string data_dir = "/usr/share/datasets/fashion-mnist";  // where the data set's files are
  bool data_from_scheduler = false;  // take the data from the scheduler (the job must serve it),
                                     // even when the files are here; without it, served data is
                                     // used only when the training file is missing
  std::string data_cache;            // the root of the on-disk cache of served data (DataCache; main()
                                     // defaults it to ~/.cache/hetps/data); empty: no cache
  uint64_t data_cache_limit_bytes = uint64_t{20} << 30;  // the most its data sets may hold together,
                                                         // the least recently used evicted; 0: no limit
  std::string model_file;            // this machine's copy of the job's TorchScript file; empty: the path
                                     // the scheduler names (its checksum must match either way)
  // Where a TorchScript file that is not on this machine is kept once fetched from the scheduler
  // (as CRC.pt); hetps-trainer's default is DefaultModelCacheDir (trainer/model_fetcher.h).
  std::string model_cache_dir = "hetps-cache/models";
  std::chrono::milliseconds connect_timeout{60000};  // give up joining after this
  double slowdown = 1;  // >= 1: each step takes this many times its compute time (the trainer
                        // sleeps for the rest), to reproduce a slower machine
  bool overlap = true;  // push each tensor's gradient as soon as backward has produced it
  // async, ssp: the next step's forward runs on the weights at hand while the last step's weights
  // travel (StepRunner::Options::forward_during_pull); other modes refuse it.
  bool forward_during_pull = false;
  // async, ssp, SGD: each push follows this many steps of plain SGD on the trainer's own copy of
  // the weights (each on a batch of the trainer's size), and carries their samples' mean
  // gradient; for a machine whose transfers outlast its step (StepRunner::Options::local_steps).
  uint32_t local_steps = 1;
  // How long to look for a server's reply before sleeping until it comes (PsClient::Options).
  std::chrono::microseconds reply_spin{100};
  // Where copies between the device and the host run. Empty (the default): the device's own copy
  // stream, none on the CPU. Tests give a fake to run the GPU data path on the CPU or to make a
  // copy fail as a failing GPU would.
  std::function<std::unique_ptr<CopyStream>()> copy_stream;
  CurveKeys curve{};  // CURVE: this trainer's key pair and the scheduler's public key; empty: none
};

class Trainer {
 public:
  Trainer(zmq::context_t& context, TrainerOptions options);
  ~Trainer();

  // Trains until the scheduler shuts the job down: OK when the job finished, otherwise the
  // reason this trainer (or the job) failed.
  Status Run();

  // Leaves the job at once, from any thread (e.g. one that watches for SIGTERM): the trainer says
  // Goodbye to the scheduler, which takes it out of the job without waiting for the heartbeat
  // timeout and gives its unfinished data chunks to the others; Run() returns OK as soon as the
  // computation under way (at most one step) has ended.
  void Leave();

 private:
  class Session;
  // The running session's channel to the scheduler, for Leave(); nullptr when none.
  void Attach(ControlChannel* control, Sender* sender);

  zmq::context_t& context_;
  TrainerOptions options_;
  std::mutex leave_mutex_;  // guards the three below
  bool leaving_ = false;
  ControlChannel* control_ = nullptr;
  Sender* sender_ = nullptr;
};

}  // namespace hetps
