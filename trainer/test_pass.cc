#include "trainer/test_pass.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include <torch/torch.h>

#include "trainer/device/device.h"
#include "trainer/models/loss.h"

namespace hetps {

Result<TestOutcome> RunTestPass(Model& model, const Dataset& test, torch::Device device,
                                const TestPassOptions& options, const std::function<Status()>& keep_going) {
  const auto start = std::chrono::steady_clock::now();
  TestMeasures measures(options.loss);
  const int64_t n = test.size();
  const int64_t step = std::max<int64_t>(1, options.batch_size);
  Status status = Status::Ok();
  try {
    torch::NoGradGuard no_grad;
    model.eval();
    for (int64_t begin = 0; begin < n && status.ok(); begin += step) {
      const std::vector<int64_t> indices = OrderedSampleIndices(test, begin, std::min(n, begin + step));
      Batch batch = MakeBatch(test, indices.data(), indices.size(), device);
      measures.Add(model.forward(batch.input), batch.target);
      status = keep_going();
    }
    model.train();
  } catch (const c10::Error& e) {
    model.train();
    return Status::Internal("LibTorch failed evaluating model " + options.model_name + " on " +
                            DeviceDescription(device) + ": " + e.what_without_backtrace());
  }
  HETPS_RETURN_IF_ERROR(status);
  TestOutcome outcome;
  outcome.mean_loss = measures.mean_loss();
  outcome.accuracy = measures.accuracy();
  outcome.r_squared = measures.r_squared();
  outcome.samples = static_cast<uint64_t>(measures.samples());
  outcome.positions = static_cast<uint64_t>(measures.positions());
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

std::string DescribeTestOutcome(const TestOutcome& outcome, uint64_t version, Loss loss) {
  const bool regression = loss == Loss::kMse;
  const bool sequences = outcome.positions > outcome.samples;
  std::ostringstream line;
  line << "evaluated weights version " << version << " on " << outcome.samples << " test samples";
  if (sequences) line << " (" << outcome.positions << " positions)";
  line << ": " << (regression ? "R2 " : "accuracy ") << (regression ? outcome.r_squared : outcome.accuracy)
       << ", loss " << outcome.mean_loss;
  if (sequences) line << ", perplexity " << std::exp(outcome.mean_loss);
  line << " (" << outcome.seconds << " s)";
  return line.str();
}

}  // namespace hetps
