#include "trainer/models/models.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

namespace hetps {
namespace {

// The built-in models of images (gpt takes tokens: tests/trainer/models/gpt_test.cc).
const std::vector<std::string> kImageModels = {"mlp", "cnn"};

std::shared_ptr<Model> Build(const std::string& name, uint64_t seed) {
  Result<std::shared_ptr<Model>> model = BuildModel(name, seed);
  CATCH_INFO(model.status().ToString());
  CATCH_REQUIRE(model.ok());
  return std::move(model).value();
}

// (name, shape) of every parameter in named_parameters() order.
std::vector<std::pair<std::string, std::vector<int64_t>>> Layout(const Model& model) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> layout;
  for (const auto& item : model.named_parameters()) {
    layout.emplace_back(item.key(), item.value().sizes().vec());
  }
  return layout;
}

int64_t ParameterCount(const Model& model) {
  int64_t count = 0;
  for (const torch::Tensor& parameter : model.parameters()) count += parameter.numel();
  return count;
}

bool SameWeights(const Model& a, const Model& b) {
  const auto pa = a.parameters();
  const auto pb = b.parameters();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (!pa[i].equal(pb[i])) return false;
  }
  return true;
}

}  // namespace

CATCH_TEST_CASE("The mlp has fc1, fc2 and fc3 with 535,818 parameters", "[trainer][models]") {
  std::shared_ptr<Model> model = Build("mlp", 1);
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"fc1.weight", {512, 784}}, {"fc1.bias", {512}},       {"fc2.weight", {256, 512}},
      {"fc2.bias", {256}},        {"fc3.weight", {10, 256}}, {"fc3.bias", {10}},
  };
  CATCH_CHECK(Layout(*model) == expected);
  CATCH_CHECK(ParameterCount(*model) == 535818);
}

CATCH_TEST_CASE("The cnn has conv1, conv2, fc1 and fc2 with 1,663,370 parameters", "[trainer][models]") {
  std::shared_ptr<Model> model = Build("cnn", 1);
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"conv1.weight", {32, 1, 5, 5}},  {"conv1.bias", {32}},
      {"conv2.weight", {64, 32, 5, 5}}, {"conv2.bias", {64}},
      {"fc1.weight", {512, 3136}},      {"fc1.bias", {512}},
      {"fc2.weight", {10, 512}},        {"fc2.bias", {10}},
  };
  CATCH_CHECK(Layout(*model) == expected);
  // 32*25+32 + 64*32*25+64 + 3136*512+512 + 512*10+10
  CATCH_CHECK(ParameterCount(*model) == 1663370);
}

CATCH_TEST_CASE("Built-in models map a batch of images to ten logits each", "[trainer][models]") {
  for (const std::string& name : kImageModels) {
    CATCH_INFO("model " << name);
    std::shared_ptr<Model> model = Build(name, 3);
    torch::Tensor logits = model->forward(torch::randn({5, 1, 28, 28}));
    CATCH_CHECK(logits.sizes() == torch::IntArrayRef({5, 10}));
    CATCH_CHECK(logits.dtype() == torch::kFloat);
    CATCH_CHECK(torch::isfinite(logits).all().item<bool>());
  }
  CATCH_CHECK(BuiltinModelNames() == std::vector<std::string>{"mlp", "cnn", "gpt"});  // gpt: gpt_test.cc
}

CATCH_TEST_CASE("The same seed gives identical weights and another seed different ones",
                "[trainer][models]") {
  for (const std::string& name : kImageModels) {
    CATCH_INFO("model " << name);
    std::shared_ptr<Model> first = Build(name, 42);
    torch::rand({100});  // random draws in between must not matter
    std::shared_ptr<Model> again = Build(name, 42);
    std::shared_ptr<Model> other = Build(name, 43);
    CATCH_CHECK(SameWeights(*first, *again));
    CATCH_CHECK_FALSE(SameWeights(*first, *other));
  }
}

CATCH_TEST_CASE("An unknown model name is rejected with the list of built-in models", "[trainer][models]") {
  Result<std::shared_ptr<Model>> model = BuildModel("resnet", 1);
  CATCH_REQUIRE_FALSE(model.ok());
  CATCH_CHECK(model.status().code() == Status::Code::kInvalidArgument);
  const std::string& message = model.status().message();
  CATCH_INFO(message);
  CATCH_CHECK(message.find("'resnet'") != std::string::npos);
  CATCH_CHECK(message.find("mlp, cnn") != std::string::npos);
}

CATCH_TEST_CASE("A few SGD steps on one small batch reduce the loss of each built-in model",
                "[trainer][models]") {
  torch::manual_seed(7);
  const torch::Tensor input = torch::randn({16, 1, 28, 28});
  const torch::Tensor target = torch::randint(0, 10, {16}, torch::kInt64);
  for (const std::string& name : kImageModels) {
    CATCH_INFO("model " << name);
    std::shared_ptr<Model> model = Build(name, 5);
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05));
    const float initial_loss = torch::cross_entropy_loss(model->forward(input), target).item<float>();
    for (int step = 0; step < 5; ++step) {
      optimizer.zero_grad();
      torch::cross_entropy_loss(model->forward(input), target).backward();
      optimizer.step();
    }
    const float loss = torch::cross_entropy_loss(model->forward(input), target).item<float>();
    CATCH_INFO("loss " << initial_loss << " -> " << loss);
    CATCH_CHECK(loss < 0.9f * initial_loss);
  }
}

}  // namespace hetps
