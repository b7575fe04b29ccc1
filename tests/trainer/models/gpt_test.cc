// The built-in GPT against examples/gpt/gpt.py's, scripted by Debian's /usr/bin/python3 with
// python3-torch: the same parameter names and shapes, and with the same weights the same logits
// to 1e-5; attention is causal; a bad shape is an error.
#include "trainer/models/gpt.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "tests/support/temp_dir.h"
#include "trainer/models/torchscript_model.h"

namespace hetps {
namespace {

ModelOptions Shape(uint32_t layers, uint32_t heads, uint32_t width, uint32_t context) {
  ModelOptions shape;
  shape.layers = layers;
  shape.heads = heads;
  shape.width = width;
  shape.context = context;
  return shape;
}

// gpt.py's GPT of `shape` over `vocab` ids, scripted into dir/gpt.pt.
std::string ScriptedGpt(const testing::TempDir& dir, const ModelOptions& shape, uint32_t vocab) {
  {
    std::ofstream out(dir / "vocab.json");
    out << "{\"kind\": \"chars\", \"vocab_size\": " << vocab << "}\n";
  }
  const std::string command = "/usr/bin/python3 " HETPS_SOURCE_DIR "/examples/gpt/gpt.py --vocab " +
                              dir / "vocab.json" + " --out " + dir / "gpt.pt" + " --layers " +
                              std::to_string(shape.layers) + " --heads " + std::to_string(shape.heads) +
                              " --width " + std::to_string(shape.width) + " --context " +
                              std::to_string(shape.context) + " --seed 5 > /dev/null";
  CATCH_REQUIRE(std::system(command.c_str()) == 0);
  return dir / "gpt.pt";
}

std::map<std::string, torch::Tensor> Parameters(Model& model) {
  std::map<std::string, torch::Tensor> named;
  for (const auto& item : model.named_parameters()) named[item.key()] = item.value();
  return named;
}

}  // namespace

CATCH_TEST_CASE("The built-in GPT has gpt.py's parameters and, with its weights, its logits to 1e-5",
                "[trainer][models][gpt]") {
  testing::TempDir dir("gpt");
  const ModelOptions shape = Shape(3, 4, 32, 24);
  constexpr uint32_t kVocab = 37;
  auto scripted = LoadTorchScriptModel(ScriptedGpt(dir, shape, kVocab), torch::kCPU);
  CATCH_REQUIRE(scripted.ok());
  auto built = BuildModel("gpt", 1, shape, kVocab);
  CATCH_REQUIRE(built.ok());

  std::map<std::string, torch::Tensor> from_python = Parameters(**scripted);
  std::map<std::string, torch::Tensor> builtin = Parameters(**built);
  CATCH_REQUIRE(builtin.size() == from_python.size());
  CATCH_REQUIRE(builtin.size() == 4 + 12 * 3 + 1);  // wte, wpe, 12 per block, ln_f's 2, head
  {
    torch::NoGradGuard no_grad;
    for (auto& [name, parameter] : builtin) {
      CATCH_INFO(name);
      const auto other = from_python.find(name);
      CATCH_REQUIRE(other != from_python.end());
      CATCH_REQUIRE(parameter.sizes() == other->second.sizes());
      parameter.copy_(other->second);
    }
  }
  (*scripted)->eval();
  (*built)->eval();
  torch::NoGradGuard no_grad;
  for (int64_t length : {24, 7, 1}) {
    CATCH_INFO("length " << length);
    const torch::Tensor ids = torch::randint(0, kVocab, {3, length}, torch::kInt64);
    const torch::Tensor want = (*scripted)->forward(ids);
    const torch::Tensor got = (*built)->forward(ids);
    CATCH_REQUIRE(got.sizes() == torch::IntArrayRef({3, length, kVocab}));
    CATCH_CHECK(want.abs().max().item<double>() > 0.01);  // not a model of zeros
    CATCH_CHECK((got - want).abs().max().item<double>() < 1e-5);
  }
}

CATCH_TEST_CASE("The built-in GPT attends only to earlier tokens", "[trainer][models][gpt]") {
  auto model = BuildModel("gpt", 3, Shape(2, 2, 16, 12), 11);
  CATCH_REQUIRE(model.ok());
  torch::NoGradGuard no_grad;
  torch::Tensor ids = torch::randint(0, 11, {2, 12}, torch::kInt64);
  const torch::Tensor before = (*model)->forward(ids);
  ids.index_put_({torch::indexing::Slice(), 8}, (ids.index({torch::indexing::Slice(), 8}) + 1) % 11);
  const torch::Tensor after = (*model)->forward(ids);
  const auto first = torch::indexing::Slice(0, 8);
  CATCH_CHECK(torch::equal(before.index({torch::indexing::Slice(), first}),
                           after.index({torch::indexing::Slice(), first})));
  CATCH_CHECK_FALSE(torch::allclose(before.index({torch::indexing::Slice(), 8}),
                                    after.index({torch::indexing::Slice(), 8})));
}

CATCH_TEST_CASE("Two GPTs built with one seed are equal, and bad shapes are errors",
                "[trainer][models][gpt]") {
  auto a = BuildModel("gpt", 9, Shape(1, 2, 16, 8), 5);
  auto b = BuildModel("gpt", 9, Shape(1, 2, 16, 8), 5);
  CATCH_REQUIRE(a.ok());
  CATCH_REQUIRE(b.ok());
  for (const auto& [name, parameter] : Parameters(**a))
    CATCH_CHECK(torch::equal(parameter, Parameters(**b).at(name)));
  // The initialisation: LayerNorm weights 1, biases 0, weights of standard deviation about 0.02.
  CATCH_CHECK(torch::equal(Parameters(**a).at("blocks.0.ln1.weight"), torch::ones({16})));
  CATCH_CHECK(torch::equal(Parameters(**a).at("blocks.0.attn.qkv.bias"), torch::zeros({48})));
  CATCH_CHECK(std::abs(Parameters(**a).at("blocks.0.mlp.fc.weight").std().item<double>() - 0.02) < 0.004);

  CATCH_CHECK_FALSE(BuildModel("gpt", 1, Shape(1, 3, 16, 8), 5).ok());
  CATCH_CHECK_FALSE(BuildModel("gpt", 1, Shape(1, 2, 16, 8), 0).ok());
  CATCH_CHECK_FALSE(BuildModel("gpt", 1, Shape(1, 2, 16, 0), 5).ok());
}

}  // namespace hetps
