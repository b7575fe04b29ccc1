// The built-in `model: gpt`: a small decoder-only transformer over token ids, for machines
// without Python. It is examples/gpt/gpt.py's GPT built in LibTorch: the same layers in the same
// order under the same parameter names (wte.weight, wpe.weight, blocks.N.ln1.weight,
// blocks.N.attn.qkv.weight, ..., ln_f.weight, head.weight), so an export of either loads into
// the other strictly, and the same weights give the same logits. No buffers, no dropout.
//
// Built by BuildModel (models.h) on the CPU; used by one trainer thread at a time, like every
// Model.
#pragma once

#include <cstdint>
#include <memory>

#include "common/model_options.h"
#include "common/status.h"
#include "trainer/models/models.h"

namespace hetps {

// A GPT of `options` (its context resolved: > 0) over `vocab` ids, with GPT-2's initialisation
// (N(0, 0.02) weights, zero biases, residual projections scaled by 1 / sqrt(2 * layers)) drawn
// from torch's global generator as it stands. forward: int64 ids [B, T <= context] -> logits
// [B, T, vocab]. InvalidArgument for a vocabulary or context of 0, or heads that do not divide
// the width.
Result<std::shared_ptr<Model>> BuildGpt(const ModelOptions& options, uint32_t vocab);

}  // namespace hetps
