#include "trainer/models/models.h"

#include <mutex>

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "trainer/models/gpt.h"

namespace hetps {
namespace {

torch::Tensor Standardise(const torch::Tensor& pixels) {
  return (pixels - kPixelMean) * (1.0 / kPixelStd);
}

class Mlp : public Model {
 public:
  Mlp()
      : fc1_(register_module("fc1", torch::nn::Linear(784, 512))),
        fc2_(register_module("fc2", torch::nn::Linear(512, 256))),
        fc3_(register_module("fc3", torch::nn::Linear(256, 10))) {}

  torch::Tensor forward(torch::Tensor input) override {
    torch::Tensor x = Standardise(input).flatten(1);
    x = torch::relu(fc1_->forward(x));
    x = torch::relu(fc2_->forward(x));
    return fc3_->forward(x);
  }

 private:
  torch::nn::Linear fc1_;
  torch::nn::Linear fc2_;
  torch::nn::Linear fc3_;
};

class FashionCnn : public Model {
 public:
  FashionCnn()
      : conv1_(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 5).padding(2)))),
        conv2_(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 5).padding(2)))),
        fc1_(register_module("fc1", torch::nn::Linear(64 * 7 * 7, 512))),
        fc2_(register_module("fc2", torch::nn::Linear(512, 10))) {}

  torch::Tensor forward(torch::Tensor input) override {
    torch::Tensor x = torch::max_pool2d(torch::relu(conv1_->forward(Standardise(input))), 2);
    x = torch::max_pool2d(torch::relu(conv2_->forward(x)), 2);
    x = torch::relu(fc1_->forward(x.flatten(1)));
    return fc2_->forward(x);
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::Conv2d conv2_;
  torch::nn::Linear fc1_;
  torch::nn::Linear fc2_;
};

// Seeding and drawing the initial weights must not interleave between two builds, or two trainers
// built side by side in one test process would get different weights for the same seed.
std::mutex& BuildMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

std::vector<std::string> BuiltinModelNames() {
  return {"mlp", "cnn", "gpt"};
}

Result<std::shared_ptr<Model>> BuildModel(const std::string& name, uint64_t seed, const ModelOptions& shape,
                                          uint32_t vocab) {
  std::lock_guard<std::mutex> lock(BuildMutex());
  if (name == "mlp") {
    torch::manual_seed(seed);
    return std::shared_ptr<Model>(std::make_shared<Mlp>());
  }
  if (name == "cnn") {
    torch::manual_seed(seed);
    return std::shared_ptr<Model>(std::make_shared<FashionCnn>());
  }
  if (name == "gpt") {
    torch::manual_seed(seed);
    return BuildGpt(shape, vocab);
  }
  std::string choices;
  for (const std::string& choice : BuiltinModelNames()) {
    choices += (choices.empty() ? "" : ", ") + choice;
  }
  return Status::InvalidArgument("unknown model '" + name + "' (built-in models: " + choices + ")");
}

}  // namespace hetps
