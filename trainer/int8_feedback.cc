#include "trainer/int8_feedback.h"

#include <algorithm>

#include "common/check.h"
#include "common/int8.h"

namespace hetps {

Int8Feedback::Int8Feedback(const std::vector<uint64_t>& lengths) {
  residuals_.reserve(lengths.size());
  for (uint64_t n : lengths) residuals_.emplace_back(n, 0.0f);
}

float Int8Feedback::Encode(uint32_t id, const float* exact, int8_t* out) {
  HETPS_CHECK(id < residuals_.size());
  std::vector<float>& residual = residuals_[id];
  const size_t n = residual.size();
  // The residual becomes the corrected values first, then what the quantisation leaves of them.
  for (size_t i = 0; i < n; ++i) residual[i] += exact[i];
  const float scale = Int8Scale(residual.data(), n);
  QuantizeInt8(residual.data(), n, scale, out);
  for (size_t i = 0; i < n; ++i) residual[i] -= scale * static_cast<float>(out[i]);
  return scale;
}

void Int8Feedback::Reset() {
  for (std::vector<float>& residual : residuals_) std::fill(residual.begin(), residual.end(), 0.0f);
}

}  // namespace hetps
