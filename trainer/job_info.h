// JobInfo: what the scheduler told a trainer about the job when admitting it (JoinAccepted's
// TrainerJob), as plain values. ReadJob checks it; a value type, used by the trainer's loop thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/job_config.h"
#include "common/message.h"
#include "common/status.h"

namespace hetps {

struct JobInfo {
  std::string model;               // built-in name, or "torchscript"
  std::string model_file;          // TorchScript: the file's path on the scheduler's machine
  std::string model_checksum;      // TorchScript: "crc32:..." of the file's bytes
  uint64_t model_file_bytes = 0;   // TorchScript: the file's size, for a trainer that fetches it
  uint64_t model_piece_bytes = 0;  // the most of it one ModelFilePiece carries
  Loss loss = Loss::kCrossEntropy;
  ModelOptions model_options;  // a built-in model's shape (model gpt)
  ConsistencyMode mode = ConsistencyMode::kSync;
  uint32_t epochs = 1;
  uint32_t batch_size = 1;  // this trainer's samples per step; balance: speed changes it
  uint64_t seed = 0;
  uint64_t train_samples = 0;
  uint32_t eval_batch_size = 1000;
  uint64_t eval_interval_samples = 0;  // > 0: snapshots may be asked for (trainer/snapshot_worker.h)
  std::chrono::milliseconds progress_interval{1000};
  std::chrono::milliseconds request_timeout{120000};
  std::string data_token;  // the routing id of its sockets to the servers (JoinAccepted)
  DataOptions data;        // the job's data files; format empty: the built-in data set
  // The servers' optimizer and the global batch its lr is per, for --local-steps; absent from a
  // scheduler that does not send them (has_optimizer false).
  bool has_optimizer = false;
  OptimizerOptions optimizer;  // in mode diloco the inner optimizer, which this trainer runs, with
                               // its lr schedule in this trainer's inner steps
  uint32_t global_batch_size = 0;
  DilocoOptions diloco;       // mode diloco: the rounds
  double clip_grad_norm = 0;  // the most global L2 norm of a step's gradient; 0: no clipping
};

// The job in a JoinAccepted message. Protocol error when it is missing or has no epochs, batch or
// samples.
Result<JobInfo> ReadJob(const Message& accepted);

}  // namespace hetps
