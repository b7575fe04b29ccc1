#include "trainer/grad_clip.h"

#include <cmath>
#include <vector>

#include <torch/torch.h>

namespace hetps {

double ClipGradNorm(const std::vector<torch::Tensor>& parameters, double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> norms;
  for (const torch::Tensor& p : parameters) {
    const torch::Tensor& grad = p.grad();
    if (grad.defined()) norms.push_back(grad.detach().norm(2));
  }
  if (norms.empty()) return 0;
  // Combined on the device and read once: one synchronisation per step. (float32: MPS has no
  // double.)
  const double norm = torch::stack(norms).norm(2).item<double>();
  if (!std::isfinite(norm) || norm <= max_norm) return norm;
  const double scale = max_norm / norm;
  for (const torch::Tensor& p : parameters) {
    if (p.grad().defined()) p.grad().mul_(scale);
  }
  return norm;
}

}  // namespace hetps
