// TorchScriptModel: a model from a TorchScript file (torch.jit.script(module).save(FILE) in
// Python) as a hetps Model. Its parameters and buffers are the loaded module's own tensors,
// registered under their dotted state_dict names (conv1.weight, bn.running_mean), so that
// named_parameters() and named_buffers() list them as PyTorch's state_dict does and the servers
// hold exactly the module's parameters.
//
// LoadTorchScriptModel and CheckModelOnBatch may be called from any thread; the model itself is
// used by one trainer thread at a time, like every Model.
#pragma once

#include <memory>
#include <string>

#include <torch/script.h>

#include "common/job_config.h"
#include "common/status.h"
#include "trainer/models/models.h"

namespace hetps {

class TorchScriptModel : public Model {
 public:
  // Takes the module's tensors as they are (a Module is a handle: the copy shares them);
  // `path` names it in errors.
  TorchScriptModel(const torch::jit::Module& module, std::string path);

  torch::Tensor forward(torch::Tensor input) override;
  // Switches the TorchScript module too (Dropout, BatchNorm).
  void train(bool on = true) override;

  const std::string& path() const { return path_; }

 private:
  torch::jit::Module module_;
  std::string path_;
};

// Loads `path` onto `device`. InvalidArgument naming the file when it is not a TorchScript file,
// has no parameters, or has a parameter that is not float32; NotFound when it does not exist.
Result<std::shared_ptr<Model>> LoadTorchScriptModel(const std::string& path, torch::Device device);

// Runs `model` (in eval mode, without gradients, on `input`'s device) on `input` and checks that
// the output suits `loss` with labels in [0, classes): [B, C >= classes] for cross_entropy and nll,
// [B] or [B, 1] for mse; with `positions` > 0 (sequence targets [B, positions], e.g. token data)
// [B, positions, C >= classes]. InvalidArgument naming `what` (the file), the input's shape and
// dtype, and what went wrong otherwise. The model is back in training mode afterwards.
Status CheckModelOnBatch(Model& model, const std::string& what, const torch::Tensor& input, Loss loss,
                         int64_t classes, int64_t positions = 0);

}  // namespace hetps
