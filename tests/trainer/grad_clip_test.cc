// clip_grad_norm on a trainer (trainer/grad_clip.cc): a gradient whose global norm over every
// parameter is larger than the bound is scaled to it exactly, direction kept; a smaller one, and
// parameters without a gradient, are left alone.

// LibTorch before Catch2: LibTorch brings in glog, whose CHECK must not replace Catch2's.
// clang-format off
#include <torch/torch.h>
#include <catch2/catch.hpp>
// clang-format on

#include "trainer/grad_clip.h"

#include <cmath>
#include <vector>

namespace hetps {
namespace {

// Two parameters whose gradients are [3, 0] and [[0, 4], [0, 0]]: global norm 5.
std::vector<torch::Tensor> Parameters(double scale) {
  torch::Tensor a = torch::zeros({2}, torch::requires_grad());
  torch::Tensor b = torch::zeros({2, 2}, torch::requires_grad());
  a.mutable_grad() = torch::tensor({3.0f, 0.0f}) * scale;
  b.mutable_grad() = torch::tensor({0.0f, 4.0f, 0.0f, 0.0f}).view({2, 2}) * scale;
  return {a, b};
}

double GlobalNorm(const std::vector<torch::Tensor>& parameters) {
  double sum = 0;
  for (const torch::Tensor& p : parameters) {
    if (p.grad().defined()) sum += p.grad().pow(2).sum().item<double>();
  }
  return std::sqrt(sum);
}

CATCH_TEST_CASE("A gradient whose global norm is above the bound is scaled to it", "[trainer][clip]") {
  std::vector<torch::Tensor> parameters = Parameters(1.0);
  CATCH_CHECK(ClipGradNorm(parameters, 1.0) == Approx(5.0));
  CATCH_CHECK(GlobalNorm(parameters) == Approx(1.0).epsilon(1e-6));
  // Every element by the same factor 1 / 5.
  CATCH_CHECK(parameters[0].grad()[0].item<float>() == Approx(0.6f));
  CATCH_CHECK(parameters[1].grad()[0][1].item<float>() == Approx(0.8f));
  CATCH_CHECK(parameters[1].grad()[1][1].item<float>() == 0.0f);
}

CATCH_TEST_CASE("A gradient within the bound is left as it is", "[trainer][clip]") {
  std::vector<torch::Tensor> parameters = Parameters(0.1);  // norm 0.5
  const torch::Tensor a = parameters[0].grad().clone();
  const torch::Tensor b = parameters[1].grad().clone();
  CATCH_CHECK(ClipGradNorm(parameters, 1.0) == Approx(0.5));
  CATCH_CHECK(torch::equal(parameters[0].grad(), a));
  CATCH_CHECK(torch::equal(parameters[1].grad(), b));
  // At the bound exactly: untouched too.
  std::vector<torch::Tensor> at_bound = Parameters(1.0);
  const torch::Tensor before = at_bound[0].grad().clone();
  ClipGradNorm(at_bound, 5.0);
  CATCH_CHECK(torch::equal(at_bound[0].grad(), before));
}

CATCH_TEST_CASE("Parameters without a gradient take no part in the norm", "[trainer][clip]") {
  std::vector<torch::Tensor> parameters = Parameters(1.0);
  parameters.push_back(torch::zeros({3}, torch::requires_grad()));  // no .grad
  CATCH_CHECK(ClipGradNorm(parameters, 2.5) == Approx(5.0));
  CATCH_CHECK(GlobalNorm(parameters) == Approx(2.5).epsilon(1e-6));
  CATCH_CHECK_FALSE(parameters[2].grad().defined());
  std::vector<torch::Tensor> none = {torch::zeros({2}, torch::requires_grad())};
  CATCH_CHECK(ClipGradNorm(none, 1.0) == 0.0);
}

CATCH_TEST_CASE("Clipping matches torch::nn::utils::clip_grad_norm_ on a random gradient",
                "[trainer][clip]") {
  torch::manual_seed(3);
  std::vector<torch::Tensor> ours, theirs;
  for (int64_t size : {7, 130, 1}) {
    const torch::Tensor grad = torch::randn({size}) * 10;
    ours.push_back(torch::zeros({size}, torch::requires_grad()));
    ours.back().mutable_grad() = grad.clone();
    theirs.push_back(torch::zeros({size}, torch::requires_grad()));
    theirs.back().mutable_grad() = grad.clone();
  }
  const double norm = ClipGradNorm(ours, 0.75);
  const double torch_norm = torch::nn::utils::clip_grad_norm_(theirs, 0.75);
  CATCH_CHECK(norm == Approx(torch_norm).epsilon(1e-6));
  for (size_t i = 0; i < ours.size(); ++i) {
    // torch divides by norm + 1e-6: the same up to that.
    CATCH_CHECK(torch::allclose(ours[i].grad(), theirs[i].grad(), 1e-5, 1e-7));
  }
}

}  // namespace
}  // namespace hetps
