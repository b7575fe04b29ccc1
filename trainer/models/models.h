// The models a trainer can train: an abstract Model over torch::nn::Module, and the built-ins.
//
// BuildModel returns a model that the caller owns (through the shared_ptr torch::nn modules are
// designed around) and that lives on the CPU; move it with Module::to(). BuildModel may be called
// from any thread; a Model itself is used by one trainer thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "common/model_options.h"
#include "common/status.h"

namespace hetps {

class Model : public torch::nn::Module {
 public:
  // The model's output for a batch of the data's input on the model's device: for the built-ins,
  // logits [B, 10] for images [B, 1, 28, 28] with pixels in [0, 1]; for gpt, logits [B, T, V]
  // for token ids [B, T].
  virtual torch::Tensor forward(torch::Tensor input) = 0;
};

// The built-in models standardise their input as the first step of forward, with the mean and
// standard deviation of Fashion-MNIST's training pixels scaled to [0, 1]: the data hands every
// model pixels in [0, 1], and the built-ins learn as on standardised pixels.
inline constexpr double kPixelMean = 0.2860;
inline constexpr double kPixelStd = 0.3530;

// Builds built-in model `name` (one of BuiltinModelNames()) on the CPU with torch's default
// initialisation, drawn right after torch::manual_seed(seed), so that every trainer building it
// with the same seed gets identical weights. Parameters are registered in a fixed order, so
// named_parameters() lists them identically in every process (each model first standardises its
// input with kPixelMean and kPixelStd):
//   "mlp": fc1 (784->512), fc2 (512->256), fc3 (256->10), ReLU between them; 535,818 parameters.
//   "cnn": conv1 (1->32, 5x5, pad 2), conv2 (32->64, 5x5, pad 2), each followed by ReLU and 2x2
//          max pooling, then fc1 (3136->512), ReLU, fc2 (512->10); 1,663,370 parameters.
//   "gpt": a decoder-only transformer of `shape` over `vocab` token ids (trainer/models/gpt.h);
//          shape.context must be resolved (> 0).
// InvalidArgument naming the value and the choices for an unknown name.
// Reseeds torch's global CPU generator (and CUDA's, where there is one). Calls to BuildModel are
// serialised with each other, but another thread drawing random numbers from the global generator
// at the same time would change the weights.
Result<std::shared_ptr<Model>> BuildModel(const std::string& name, uint64_t seed,
                                          const ModelOptions& shape = {}, uint32_t vocab = 0);

// {"mlp", "cnn", "gpt"}.
std::vector<std::string> BuiltinModelNames();

}  // namespace hetps
