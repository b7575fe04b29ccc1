#include "ps/optimizer.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

// The loops below are the bulk of a server update and are memory-bound, so each is one
// fused pass that g++ -O3 vectorises:
// - Every pointer is __restrict: without it the compiler must assume that writing weights[i] may
//   change grad[i + 1] and either gives up or adds a runtime overlap check per call.
// - Options and per-step scalars are decided before the loop (template parameters or hoisted
//   float coefficients), so the body is branch-free; a data-dependent `if` would block
//   if-conversion.
// - Choices that only change a coefficient use the coefficient instead of a branch: multiplying by
//   1.0f or adding 0.0f * w is exact for finite values, so e.g. Adam and AdamW share one loop.
// - std::sqrt needs -fno-math-errno (set for this file in ps/CMakeLists.txt); with errno semantics
//   g++ keeps a per-element call path for negative inputs and the loop stays scalar.
// - std::max(a, b) is `a < b ? b : a`, which maps onto maxps; std::fmax does not vectorise.
//
// To match torch::optim, per-step scalars are computed in double (as LibTorch does on the host)
// and rounded to float once; per-element math is float, in the order LibTorch's kernels use
// (e.g. addcdiv is `p + (value * t1) / t2`, not `p + value * (t1 / t2)`).

namespace hetps {
namespace {

// ---------------------------------------------------------------------------------------------
// SGD (torch::optim::SGD): d = g + wd * w; with momentum, buf = d on the first step and
// buf = momentum * buf + (1 - dampening) * d afterwards; d = d + momentum * buf (nesterov) or buf;
// w -= lr * d. A step's lr_scale k (its share of the global batch) makes the rate lr * k without
// momentum. With momentum d is scaled by k before it enters the buffer, and the step is
// Share::kSamples's lr (buf = momentum * buf + k * d) or Share::kRound's lr * k with the momentum
// momentum^k (buf = momentum^k * buf + k * d: k of a step).

void SgdLoop(float* __restrict weights, const float* __restrict grad, float grad_scale, size_t n,
             float weight_decay, float neg_lr) {
  for (size_t i = 0; i < n; ++i) {
    const float w = weights[i];
    const float d = grad_scale * grad[i] + weight_decay * w;
    weights[i] = w + neg_lr * d;
  }
}

// `buf_keep` and `d_weight` are (0, 1) on the first step, which makes buf a copy of d (as
// LibTorch's clone) for any finite initial buffer, and (momentum, 1 - dampening) afterwards.
template <bool kNesterov>
void SgdMomentumLoop(float* __restrict weights, const float* __restrict grad, float grad_scale,
                     float* __restrict buf, size_t n, float weight_decay, float share, float neg_lr,
                     float buf_keep, float d_weight, float momentum) {
  for (size_t i = 0; i < n; ++i) {
    const float w = weights[i];
    float d = share * (grad_scale * grad[i] + weight_decay * w);
    const float b = buf_keep * buf[i] + d_weight * d;
    buf[i] = b;
    d = kNesterov ? d + momentum * b : b;
    weights[i] = w + neg_lr * d;
  }
}

class Sgd final : public Optimizer {
 public:
  explicit Sgd(const OptimizerOptions& options) : Optimizer(options) {}

  int state_slots() const override { return options().momentum > 0 ? 1 : 0; }

  void Step(float* weights, const float* grad, float grad_scale, float* state, size_t n, int64_t step,
            float lr_scale, Share share, double lr) const override {
    HETPS_CHECK(step >= 1) << "step is 1-based, got " << step;
    const OptimizerOptions& o = options();
    const float weight_decay = static_cast<float>(o.weight_decay);
    if (o.momentum == 0) {
      SgdLoop(weights, grad, grad_scale, n, weight_decay, static_cast<float>(-(lr * lr_scale)));
      return;
    }
    const bool round = share == Share::kRound;
    const float neg_lr = static_cast<float>(-(lr * (round ? lr_scale : 1.0)));
    const auto momentum =
        static_cast<float>(round && lr_scale != 1.0f ? std::pow(o.momentum, lr_scale) : o.momentum);
    const bool first = step == 1;
    const float buf_keep = first ? 0.0f : momentum;
    const float d_weight = first ? 1.0f : static_cast<float>(1 - o.dampening);
    if (o.nesterov) {
      SgdMomentumLoop<true>(weights, grad, grad_scale, state, n, weight_decay, lr_scale, neg_lr, buf_keep,
                            d_weight, momentum);
    } else {
      SgdMomentumLoop<false>(weights, grad, grad_scale, state, n, weight_decay, lr_scale, neg_lr, buf_keep,
                             d_weight, momentum);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Adam and AdamW (torch::optim::Adam, AdamW). Adam: g += wd * w. AdamW: w *= 1 - lr * wd first.
// Then m = b1 * m + (1 - b1) * g; v = b2 * v + (1 - b2) * g * g; amsgrad: vmax = max(vmax, v);
// denom = sqrt(v or vmax) / sqrt(1 - b2^t) + eps; w -= lr / (1 - b1^t) * m / denom.

struct AdamCoefficients {
  float grad_decay;   // Adam's weight_decay; 0 for AdamW
  float weight_keep;  // AdamW's 1 - lr * weight_decay; 1 for Adam
  float beta1;
  float one_minus_beta1;
  float beta2;
  float one_minus_beta2;
  float sqrt_bias_correction2;
  float eps;
  float neg_step_size;  // -lr / (1 - beta1^t)
};

template <bool kAmsgrad>
void AdamLoop(float* __restrict weights, const float* __restrict grad, float grad_scale,
              float* __restrict exp_avg, float* __restrict exp_avg_sq, float* __restrict max_exp_avg_sq,
              size_t n, const AdamCoefficients c) {
  for (size_t i = 0; i < n; ++i) {
    const float w = weights[i];
    const float g = grad_scale * grad[i] + c.grad_decay * w;
    const float m = c.beta1 * exp_avg[i] + c.one_minus_beta1 * g;
    const float v = c.beta2 * exp_avg_sq[i] + c.one_minus_beta2 * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    float v_used = v;
    if (kAmsgrad) {
      v_used = std::max(max_exp_avg_sq[i], v);
      max_exp_avg_sq[i] = v_used;
    }
    // A division rather than a multiplication by a hoisted reciprocal, as LibTorch does: the loop
    // is bound by memory traffic, not by the divider, and this keeps the rounding identical.
    const float denom = std::sqrt(v_used) / c.sqrt_bias_correction2 + c.eps;
    weights[i] = c.weight_keep * w + (c.neg_step_size * m) / denom;
  }
}

class Adam final : public Optimizer {
 public:
  explicit Adam(const OptimizerOptions& options) : Optimizer(options) {}

  int state_slots() const override { return options().amsgrad ? 3 : 2; }

  void Step(float* weights, const float* grad, float grad_scale, float* state, size_t n, int64_t step,
            float lr_scale, Share /*share*/, double lr) const override {
    HETPS_CHECK(step >= 1) << "step is 1-based, got " << step;
    const OptimizerOptions& o = options();
    const bool decoupled = o.kind == OptimizerOptions::Kind::kAdamW;
    const double step_lr = lr * lr_scale;
    const double bias_correction1 = 1 - std::pow(o.beta1, static_cast<double>(step));
    const double bias_correction2 = 1 - std::pow(o.beta2, static_cast<double>(step));

    AdamCoefficients c;
    c.grad_decay = decoupled ? 0.0f : static_cast<float>(o.weight_decay);
    c.weight_keep = decoupled ? static_cast<float>(1 - step_lr * o.weight_decay) : 1.0f;
    c.beta1 = static_cast<float>(o.beta1);
    c.one_minus_beta1 = static_cast<float>(1 - o.beta1);
    c.beta2 = static_cast<float>(o.beta2);
    c.one_minus_beta2 = static_cast<float>(1 - o.beta2);
    c.sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2));
    c.eps = static_cast<float>(o.eps);
    c.neg_step_size = static_cast<float>(-(step_lr / bias_correction1));

    float* exp_avg = state;
    float* exp_avg_sq = state + n;
    if (o.amsgrad) {
      AdamLoop<true>(weights, grad, grad_scale, exp_avg, exp_avg_sq, state + 2 * n, n, c);
    } else {
      AdamLoop<false>(weights, grad, grad_scale, exp_avg, exp_avg_sq, nullptr, n, c);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Adagrad (torch::optim::Adagrad): clr = lr / (1 + (t - 1) * lr_decay); g += wd * w;
// sum += g * g; w -= clr * g / (sqrt(sum) + eps).

void AdagradLoop(float* __restrict weights, const float* __restrict grad, float grad_scale,
                 float* __restrict sum, size_t n, float weight_decay, float eps, float neg_clr) {
  for (size_t i = 0; i < n; ++i) {
    const float w = weights[i];
    const float g = grad_scale * grad[i] + weight_decay * w;
    const float s = sum[i] + g * g;
    sum[i] = s;
    weights[i] = w + (neg_clr * g) / (std::sqrt(s) + eps);
  }
}

class Adagrad final : public Optimizer {
 public:
  explicit Adagrad(const OptimizerOptions& options) : Optimizer(options) {}

  int state_slots() const override { return 1; }

  void InitState(float* state, size_t n) const override {
    std::fill(state, state + n, static_cast<float>(options().initial_accumulator_value));
  }

  void Step(float* weights, const float* grad, float grad_scale, float* state, size_t n, int64_t step,
            float lr_scale, Share /*share*/, double lr) const override {
    HETPS_CHECK(step >= 1) << "step is 1-based, got " << step;
    const OptimizerOptions& o = options();
    const double clr = lr * lr_scale / (1 + static_cast<double>(step - 1) * o.lr_decay);
    AdagradLoop(weights, grad, grad_scale, state, n, static_cast<float>(o.weight_decay),
                static_cast<float>(o.eps), static_cast<float>(-clr));
  }
};

}  // namespace

Result<std::unique_ptr<Optimizer>> Optimizer::Create(const OptimizerOptions& options) {
  HETPS_RETURN_IF_ERROR(ValidateOptimizerOptions(options));
  std::unique_ptr<Optimizer> optimizer;
  switch (options.kind) {
    case OptimizerOptions::Kind::kSgd:
      optimizer = std::make_unique<Sgd>(options);
      break;
    case OptimizerOptions::Kind::kAdam:
    case OptimizerOptions::Kind::kAdamW:
      optimizer = std::make_unique<Adam>(options);
      break;
    case OptimizerOptions::Kind::kAdagrad:
      optimizer = std::make_unique<Adagrad>(options);
      break;
  }
  if (optimizer == nullptr) return Status::InvalidArgument("optimizer.kind: unknown value");
  return Result<std::unique_ptr<Optimizer>>(std::move(optimizer));
}

std::vector<std::string> Optimizer::state_names() const {
  std::vector<std::string> names;
  switch (options_.kind) {
    case OptimizerOptions::Kind::kSgd:
      names = {"momentum_buffer"};
      break;
    case OptimizerOptions::Kind::kAdam:
    case OptimizerOptions::Kind::kAdamW:
      names = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
      break;
    case OptimizerOptions::Kind::kAdagrad:
      names = {"sum"};
      break;
  }
  names.resize(static_cast<size_t>(state_slots()));
  return names;
}

void Optimizer::InitState(float* state, size_t n) const {
  std::fill(state, state + static_cast<size_t>(state_slots()) * n, 0.0f);
}

}  // namespace hetps
