#include "trainer/models/torchscript_model.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "trainer/device/model_buffers.h"
#include "trainer/models/loss.h"

// TorchScript files are written here by LibTorch itself (torch::jit::Module::save), modules built
// with register_parameter/register_buffer and TorchScript source for forward; the end-to-end tests
// load files scripted by Python.
namespace hetps {
namespace {

const torch::Tensor kImages = torch::rand({2, 1, 28, 28});

// A module as torch.jit.script makes them: with the `training` flag that train() and eval() set.
torch::jit::Module NewModule(const std::string& name) {
  torch::jit::Module module(name);
  module.register_attribute("training", c10::BoolType::get(), true);
  return module;
}

// A linear classifier over a flattened image, inside a submodule: parameters fc.weight, fc.bias
// and a buffer fc.calls.
torch::jit::Module Classifier(int64_t classes = 10) {
  torch::jit::Module fc = NewModule("Fc");
  // requires_grad as nn.Parameter sets it.
  fc.register_parameter("weight", (torch::randn({classes, 784}) * 0.01).requires_grad_(), false);
  fc.register_parameter("bias", torch::zeros({classes}).requires_grad_(), false);
  fc.register_buffer("calls", torch::zeros({}, torch::kInt64));
  fc.define(R"(
    def forward(self, x):
        if self.training:
            self.calls += 1
        return x.flatten(1).matmul(self.weight.t()) + self.bias
  )");
  torch::jit::Module root = NewModule("Net");
  root.register_module("fc", fc);
  root.define(R"(
    def forward(self, x):
        return self.fc.forward(x)
  )");
  return root;
}

std::string Save(const torch::jit::Module& module, const testing::TempDir& dir, const std::string& name) {
  std::string path = dir / name;
  module.save(path);
  return path;
}

std::shared_ptr<Model> Load(const std::string& path) {
  auto model = LoadTorchScriptModel(path, torch::kCPU);
  CATCH_INFO(model.status().ToString());
  CATCH_REQUIRE(model.ok());
  return *model;
}

Status LoadError(const std::string& path) {
  auto model = LoadTorchScriptModel(path, torch::kCPU);
  CATCH_REQUIRE_FALSE(model.ok());
  return model.status();
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

CATCH_TEST_CASE("A TorchScript model's parameters and buffers keep their state_dict names",
                "[trainer][torchscript]") {
  testing::TempDir dir("torchscript");
  std::shared_ptr<Model> model = Load(Save(Classifier(), dir, "net.pt"));
  std::vector<std::string> names;
  for (const auto& item : model->named_parameters()) names.push_back(item.key());
  CATCH_CHECK(names == std::vector<std::string>{"fc.weight", "fc.bias"});
  std::vector<std::string> buffers;
  for (const auto& item : model->named_buffers()) buffers.push_back(item.key());
  CATCH_CHECK(buffers == std::vector<std::string>{"fc.calls"});
  auto held = ModelBuffers::Create(*model, torch::kCPU);
  CATCH_REQUIRE(held.ok());
  CATCH_CHECK((*held)->signature().size() == 2);
  CATCH_CHECK((*held)->signature()[0].shape == std::vector<int64_t>{10, 784});
}

CATCH_TEST_CASE("Weights written into a TorchScript model's parameters change what it computes",
                "[trainer][torchscript]") {
  testing::TempDir dir("torchscript");
  std::shared_ptr<Model> model = Load(Save(Classifier(), dir, "net.pt"));
  auto held = ModelBuffers::Create(*model, torch::kCPU);
  CATCH_REQUIRE(held.ok());
  // What a pull does: write the servers' weights into the targets.
  float* bias = (*held)->weight_targets()[1];
  for (int i = 0; i < 10; ++i) bias[i] = static_cast<float>(i);
  torch::Tensor zeros = torch::zeros({3, 1, 28, 28});
  torch::Tensor out = model->forward(zeros);
  CATCH_CHECK(out[2][7].item<float>() == 7.0f);
  // Backward reaches the parameters the servers hold.
  BatchLoss(Loss::kCrossEntropy, model->forward(kImages), torch::tensor({1, 2})).backward();
  auto grads = (*held)->HostGradients();
  CATCH_REQUIRE(grads.ok());
  CATCH_CHECK(model->named_parameters()["fc.bias"].grad().abs().sum().item<float>() > 0);
}

CATCH_TEST_CASE("train() and eval() reach the TorchScript module", "[trainer][torchscript]") {
  testing::TempDir dir("torchscript");
  std::shared_ptr<Model> model = Load(Save(Classifier(), dir, "net.pt"));
  torch::NoGradGuard no_grad;
  model->forward(kImages);
  model->eval();
  model->forward(kImages);
  CATCH_CHECK(model->named_buffers()["fc.calls"].item<int64_t>() == 1);
  model->train();
  model->forward(kImages);
  CATCH_CHECK(model->named_buffers()["fc.calls"].item<int64_t>() == 2);
}

CATCH_TEST_CASE("A file that is not TorchScript is refused, naming the file", "[trainer][torchscript]") {
  testing::TempDir dir("torchscript");
  const std::string path = dir / "notes.pt";
  std::ofstream(path) << "not a model\n";
  Status status = LoadError(path);
  CATCH_CHECK(status.code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(Contains(status.message(), path));
  CATCH_CHECK(Contains(status.message(), "not a TorchScript file"));
  Status missing = LoadError(dir / "absent.pt");
  CATCH_CHECK(missing.code() == Status::Code::kNotFound);
  CATCH_CHECK(Contains(missing.message(), dir / "absent.pt"));
}

CATCH_TEST_CASE("A TorchScript model without parameters is refused", "[trainer][torchscript]") {
  testing::TempDir dir("torchscript");
  torch::jit::Module module = NewModule("Empty");
  module.register_buffer("scale", torch::ones({1}));
  module.define(R"(
    def forward(self, x):
        return x.flatten(1) * self.scale
  )");
  const std::string path = Save(module, dir, "empty.pt");
  Status status = LoadError(path);
  CATCH_CHECK(Contains(status.message(), path));
  CATCH_CHECK(Contains(status.message(), "has no parameters"));
}

CATCH_TEST_CASE("A TorchScript model with a float64 parameter is refused, naming it",
                "[trainer][torchscript]") {
  testing::TempDir dir("torchscript");
  torch::jit::Module module = NewModule("Double");
  module.register_parameter("w", torch::ones({784, 10}, torch::kFloat64), false);
  module.define(R"(
    def forward(self, x):
        return x.flatten(1).double().matmul(self.w)
  )");
  const std::string path = Save(module, dir, "double.pt");
  Status status = LoadError(path);
  CATCH_CHECK(Contains(status.message(), path));
  CATCH_CHECK(Contains(status.message(), "parameter w"));
  CATCH_CHECK(Contains(status.message(), "float32"));
}

CATCH_TEST_CASE("A forward that fails on the data's batch is an error naming the file and the input shape",
                "[trainer][torchscript]") {
  testing::TempDir dir("torchscript");
  torch::jit::Module module = NewModule("Wrong");
  module.register_parameter("w", torch::ones({100, 10}), false);
  module.define(R"(
    def forward(self, x):
        return x.flatten(1).matmul(self.w)
  )");
  const std::string path = Save(module, dir, "wrong.pt");
  std::shared_ptr<Model> model = Load(path);
  Status status = CheckModelOnBatch(*model, "model file " + path, kImages, Loss::kCrossEntropy, 10);
  CATCH_CHECK(status.code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(Contains(status.message(), path));
  CATCH_CHECK(Contains(status.message(), "[2, 1, 28, 28] float"));
  CATCH_CHECK(model->is_training());
}

CATCH_TEST_CASE("An output that does not suit the loss is an error naming the shape it needs",
                "[trainer][torchscript]") {
  testing::TempDir dir("torchscript");
  std::shared_ptr<Model> five = Load(Save(Classifier(5), dir, "five.pt"));
  Status few = CheckModelOnBatch(*five, "model file five.pt", kImages, Loss::kCrossEntropy, 10);
  CATCH_CHECK(Contains(few.message(), "returns [2, 5] float"));
  CATCH_CHECK(Contains(few.message(), "C >= 10"));
  Status mse = CheckModelOnBatch(*five, "model file five.pt", kImages, Loss::kMse, 10);
  CATCH_CHECK(Contains(mse.message(), "loss mse needs [2] or [2, 1]"));
  std::shared_ptr<Model> ten = Load(Save(Classifier(10), dir, "ten.pt"));
  CATCH_CHECK(CheckModelOnBatch(*ten, "ten.pt", kImages, Loss::kNll, 10).ok());
  std::shared_ptr<Model> one = Load(Save(Classifier(1), dir, "one.pt"));
  CATCH_CHECK(CheckModelOnBatch(*one, "one.pt", kImages, Loss::kMse, 10).ok());
}

CATCH_TEST_CASE("Test measures: accuracy for classification, R2 for mse", "[trainer][loss]") {
  TestMeasures classes(Loss::kCrossEntropy);
  classes.Add(torch::tensor({{2.0f, 1.0f}, {0.0f, 3.0f}, {5.0f, 0.0f}}), torch::tensor({0, 1, 1}));
  CATCH_CHECK(classes.accuracy() == Approx(2.0 / 3));
  CATCH_CHECK(classes.r_squared() == 0);
  TestMeasures regression(Loss::kMse);
  // Targets 1, 2, 3, 4 (mean 2.5, SST 5); predictions off by 0.5, 0, 0, -0.5 (SSE 0.5).
  regression.Add(torch::tensor({{1.5f}, {2.0f}}), torch::tensor({1, 2}));
  regression.Add(torch::tensor({{3.0f}, {3.5f}}), torch::tensor({3, 4}));
  CATCH_CHECK(regression.mean_loss() == Approx(0.125));
  CATCH_CHECK(regression.r_squared() == Approx(0.9));
  CATCH_CHECK(regression.accuracy() == 0);
}

}  // namespace
}  // namespace hetps
