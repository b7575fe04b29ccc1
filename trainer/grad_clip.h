// ClipGradNorm: the job's clip_grad_norm on a trainer. A step's gradient is scaled, over all the
// model's parameters together, so that its global L2 norm is at most max_norm, as
// torch.nn.utils.clip_grad_norm_ does (without its 1e-6 in the divisor: a clipped gradient's
// norm is max_norm up to rounding).
//
// Stateless; called on the thread that ran backward. LibTorch failures throw c10::Error.
#pragma once

#include <vector>

#include <torch/types.h>

namespace hetps {

// Scales every defined .grad of `parameters` by max_norm / norm when their global L2 norm is
// larger than max_norm (> 0), and leaves them alone otherwise; returns the norm before scaling.
// A non-finite norm is left to the servers' checks of what is pushed.
double ClipGradNorm(const std::vector<torch::Tensor>& parameters, double max_norm);

}  // namespace hetps
