// Sequence losses: cross_entropy and nll on [B, T, V] outputs with [B, T] targets equal PyTorch's
// on the flattened outputs, as Debian's /usr/bin/python3 with python3-torch computes them from the
// same numbers, to 1e-5; the test-set measures count every position. One label per sample still
// gives the losses it always gave.
#include "trainer/models/loss.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace hetps {
namespace {

// Runs `script` with /usr/bin/python3 and returns what it prints.
std::string RunPython(const testing::TempDir& dir, const std::string& script) {
  {
    std::ofstream out(dir / "reference.py");
    out << script;
  }
  const std::string command = "/usr/bin/python3 " + dir / "reference.py";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  CATCH_REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[256];
  while (std::fgets(buffer, sizeof(buffer), pipe.get()) != nullptr) output += buffer;
  return output;
}

void WriteValues(const std::string& path, const torch::Tensor& tensor) {
  std::ofstream out(path);
  out.precision(9);
  const torch::Tensor flat = tensor.to(torch::kDouble).flatten().contiguous();
  for (int64_t i = 0; i < flat.numel(); ++i) out << flat.data_ptr<double>()[i] << "\n";
}

}  // namespace

CATCH_TEST_CASE(
    "Sequence cross_entropy and nll equal PyTorch's on the flattened logits, position by position",
    "[trainer][models][loss]") {
  testing::TempDir dir("loss");
  constexpr int64_t kBatch = 3, kLength = 5, kVocab = 7;
  torch::manual_seed(4);
  const torch::Tensor logits = torch::randn({kBatch, kLength, kVocab}) * 3;
  const torch::Tensor targets = torch::randint(0, kVocab, {kBatch, kLength}, torch::kInt64);
  WriteValues(dir / "logits.txt", logits);
  WriteValues(dir / "targets.txt", targets);
  std::istringstream reference(RunPython(dir, R"(
import torch
import torch.nn.functional as F
logits = torch.tensor([float(v) for v in open(')" +
                                                  dir / "logits.txt" + R"(')]).view(-1, )" +
                                                  std::to_string(kVocab) + R"()
targets = torch.tensor([int(float(v)) for v in open(')" +
                                                  dir / "targets.txt" + R"(')])
print(F.cross_entropy(logits, targets).item())
print(F.nll_loss(F.log_softmax(logits, dim=1), targets).item())
print((logits.argmax(1) == targets).float().mean().item())
)"));
  double cross_entropy = 0, nll = 0, accuracy = 0;
  reference >> cross_entropy >> nll >> accuracy;
  CATCH_REQUIRE(reference);
  CATCH_CHECK(cross_entropy > 0.5);

  CATCH_CHECK(std::abs(BatchLoss(Loss::kCrossEntropy, logits, targets).item<double>() - cross_entropy) <
              1e-5);
  CATCH_CHECK(std::abs(BatchLoss(Loss::kNll, torch::log_softmax(logits, 2), targets).item<double>() - nll) <
              1e-5);

  // Evaluated in two batches, the mean is still over all 15 positions.
  TestMeasures measures(Loss::kCrossEntropy);
  measures.Add(logits.narrow(0, 0, 1), targets.narrow(0, 0, 1));
  measures.Add(logits.narrow(0, 1, 2), targets.narrow(0, 1, 2));
  CATCH_CHECK(measures.samples() == kBatch);
  CATCH_CHECK(measures.positions() == kBatch * kLength);
  CATCH_CHECK(std::abs(measures.mean_loss() - cross_entropy) < 1e-5);
  CATCH_CHECK(std::abs(measures.accuracy() - accuracy) < 1e-6);  // Python's mean is float32
}

CATCH_TEST_CASE("One label per sample gives the mean over samples, as before", "[trainer][models][loss]") {
  torch::manual_seed(2);
  const torch::Tensor logits = torch::randn({6, 4});
  const torch::Tensor labels = torch::tensor({0, 1, 2, 3, 0, 1}, torch::kInt64);
  const double want = torch::nn::functional::cross_entropy(logits, labels).item<double>();
  CATCH_CHECK(std::abs(BatchLoss(Loss::kCrossEntropy, logits, labels).item<double>() - want) < 1e-7);
  TestMeasures measures(Loss::kCrossEntropy);
  measures.Add(logits, labels);
  CATCH_CHECK(measures.positions() == 6);
  CATCH_CHECK(std::abs(measures.mean_loss() - want) < 1e-7);
}

}  // namespace hetps
