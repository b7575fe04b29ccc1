#include "ps/delayed_nesterov.h"

#include "common/job_config.h"

namespace hetps {

Result<DelayedNesterov> DelayedNesterov::Create(const OptimizerOptions& outer) {
  HETPS_RETURN_IF_ERROR(ValidateAsyncOuterOptimizer(outer));
  return DelayedNesterov(outer.lr, outer.momentum, outer.nesterov);
}

void DelayedNesterov::Apply(float* __restrict weights, const float* __restrict grad, float share,
                            float* __restrict state, size_t n, bool refresh) const {
  const float neg_lr = static_cast<float>(-lr_);
  if (momentum_ == 0) {
    for (size_t i = 0; i < n; ++i) weights[i] += neg_lr * (share * grad[i]);
    return;
  }
  float* __restrict buf = state;
  float* __restrict sum = state + n;
  for (size_t i = 0; i < n; ++i) {
    const float d = share * grad[i];
    weights[i] += neg_lr * d;
    sum[i] += d;
  }
  if (!refresh) return;
  const auto momentum = static_cast<float>(momentum_);
  const float neg_lr_momentum = neg_lr * momentum;
  for (size_t i = 0; i < n; ++i) {
    const float before = buf[i];
    const float after = momentum * before + sum[i];
    buf[i] = after;
    sum[i] = 0;
    weights[i] += neg_lr_momentum * (nesterov_ ? after : before);
  }
}

}  // namespace hetps
