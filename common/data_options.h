// DataOptions: the job file's `data` section, which names the training and test files and how to
// read them (docs/job_config.md, "Data"). A plain value type, filled by the job-file parser and
// sent to trainers inside their job (wire::DataSpec); the readers in trainer/data/ take it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "messages_generated.h"

namespace hetps {

// One split's files. `y` empty: `x` holds features and labels together (a CSV file, an .npz).
struct DataFiles {
  std::string x;  // IDX: the images (or features); NPY: x.npy or an .npz; CSV: the file
  std::string y;  // IDX: the labels; NPY: y.npy
};

struct DataOptions {
  std::string format;                 // empty: the built-in data set (`dataset`); otherwise idx | csv | npy |
                                      // tokens
  DataFiles train;                    // required with a format
  DataFiles test;                     // required with a format
  bool header = false;                // csv: the first line holds column names, not a sample
  int32_t label_column = 0;           // csv: the label's column; negative counts from the end (-1: last)
  bool float_targets = false;         // targets: float (regression, `loss: mse`) rather than class
  uint32_t classes = 0;               // class targets: labels lie in 0..classes-1; 0: the largest
                                      // training label + 1
  std::vector<int64_t> sample_shape;  // one sample's shape; empty: as the files give it (IDX
                                      // images HxW become [1, H, W])
  double divide_by = 0;               // feature scaling: input = (x / divide_by - mean) / std; 0: 255 for
                                      // byte features, 1 for any other type
  double mean = 0;
  double std = 1;      // > 0
  bool serve = false;  // trainers without the files receive them from the scheduler
  // format tokens (token files, memory-mapped; trainer/data/token_data.h):
  std::string token_dtype;  // the id type of raw token files: uint16 | uint32; empty: what the
                            // vocab.json beside them says (an .npy says its own)
  uint32_t context = 0;     // tokens per sample (window); required, 1..1048576
  uint32_t vocab = 0;       // ids run 0..vocab-1; 0: vocab.json's vocab_size, else the largest id + 1
};

// The format names allowed in `data.format`.
const std::vector<std::string>& DataFormats();

// Checks the relations between fields: the files a format needs, std > 0, a positive shape.
// Errors name the field ("data.train.y: ...").
Status ValidateDataOptions(const DataOptions& options);

// Between DataOptions and the wire (TrainerJob.data). FromWire checks what it reads.
flatbuffers::Offset<wire::DataSpec> DataOptionsToWire(flatbuffers::FlatBufferBuilder& fbb,
                                                      const DataOptions& options);
Result<DataOptions> DataOptionsFromWire(const wire::DataSpec& spec);

}  // namespace hetps
