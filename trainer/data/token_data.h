// Token data (data.format tokens): a token file (token_file.h) as the samples of a split. A sample
// is a window of `context` tokens, and its target the same window shifted by one token, so each
// of the window's positions is trained to predict the token after it.
//
//   training split: ceil(L / context) windows per epoch, L the file's token count. Window w of
//     epoch e starts at (offset_e + w * context) mod L, where offset_e in [0, L) is drawn from the
//     job's seed and e, and the file is read circularly (its first token follows its last). Each
//     epoch's windows therefore cover every token of the file, end to end, with at most one
//     window overlapping another, and their boundaries move from epoch to epoch.
//   test split: floor((L - 1) / context) windows, window w at w * context; none wraps, so every
//     (token, next token) pair is scored at most once, the same way in every evaluation.
//
// Batches name a window by its first token's position (MakeBatch, trainer/data/tensor_dataset.h);
// the trainer maps an epoch's samples to those positions with TrainingWindowStart. Pure
// functions, safe from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "common/data_options.h"
#include "common/status.h"
#include "trainer/data/dataset.h"

namespace hetps {

uint64_t TrainingWindows(uint64_t tokens, uint32_t context);
uint64_t EvaluationWindows(uint64_t tokens, uint32_t context);
// offset_e above, for a file of `tokens` ids.
uint64_t EpochTokenOffset(uint64_t tokens, uint64_t seed, uint32_t epoch);

// The first token of training window `window` of `epoch` in `data` (a training split read by
// LoadTokens).
int64_t TrainingWindowStart(const HostDataset& data, uint64_t seed, uint32_t epoch, int64_t window);
// The first token of window `window` counted from the file's start: the test split's windows, and
// the training split's at offset 0.
int64_t OrderedWindowStart(const HostDataset& data, int64_t window);

// Maps `path` as `split`'s tokens. The id type is data.dtype, else the vocab.json beside the file
// says it (an .npy says its own). The vocabulary is `vocab` when not 0 (the test split takes the
// training split's), else data.vocab, else the vocab.json's vocab_size, else the largest id + 1;
// it becomes the dataset's `classes`. Every id is checked against it (one pass over the file).
// InvalidArgument naming the file for what TokenFile::Open refuses, an id at or past the
// vocabulary (with its position), and a file too short for one window of data.context tokens and
// the token after it; NotFound for a missing file.
Result<HostDataset> LoadTokens(const DataOptions& options, const std::string& path, DatasetSplit split,
                               uint32_t vocab);

}  // namespace hetps
