// GradientStaging and ModelBuffers' weight copies, the host side of the GPU data path, on the
// CPU with a fake copy stream that defers each copy as a GPU's side stream would: the order of
// copies, waits and sends, the dtype conversion before the copy, buffers allocated once, and a
// failing copy turned into a Status naming the tensor and the device.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <thread>
#include <vector>

#include "common/dtype.h"
#include "tests/support/fake_copy_stream.h"
#include "trainer/device/gradient_staging.h"
#include "trainer/device/model_buffers.h"
#include "trainer/models/models.h"

namespace hetps {
namespace {

using std::chrono::milliseconds;
using testing::FakeCopyStream;

std::vector<TensorInfo> Signature() {
  return {{"a.weight", {3, 4}, wire::DType::F32},
          {"a.bias", {3}, wire::DType::F32},
          {"b.weight", {5}, wire::DType::F32}};
}

// Values that are not exact in 16 bits, with ties and extremes.
torch::Tensor Gradient(const TensorInfo& info, float scale) {
  return torch::linspace(-70000 * scale, 70000 * scale, info.numel()).reshape(info.shape) + 1.0f / 3;
}

std::vector<uint8_t> Bytes(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  return std::vector<uint8_t>(p, p + n);
}

}  // namespace

CATCH_TEST_CASE("A staged gradient is handed out only once its copy has finished, in the order staged",
                "[trainer][device][staging]") {
  FakeCopyStream stream;
  const auto signature = Signature();
  auto staging = GradientStaging::Create(signature, torch::kCPU, wire::DType::F32, stream);
  CATCH_REQUIRE(staging.ok());
  GradientStaging& s = **staging;
  s.BeginStep();
  // Nothing staged: Next times out empty-handed.
  auto none = s.Next(milliseconds(1));
  CATCH_REQUIRE(none.ok());
  CATCH_CHECK_FALSE(none->has_value());

  // Staged from another thread, as autograd's device threads do, in backward's order (last first).
  std::thread backward([&] {
    for (size_t t : {2u, 0u, 1u}) s.Stage(t, Gradient(signature[t], 1));
  });
  backward.join();
  CATCH_CHECK(stream.shared()->done == 0);  // enqueued, not run: the side stream is "busy"
  for (size_t expected : {2u, 0u, 1u}) {
    auto next = s.Next(milliseconds(100));
    CATCH_REQUIRE(next.ok());
    CATCH_REQUIRE(next->has_value());
    CATCH_CHECK(**next == expected);
    // The copy has run by the time the tensor is handed out, and the buffer holds the gradient.
    const torch::Tensor grad = Gradient(signature[expected], 1);
    CATCH_CHECK(std::memcmp(s.data(expected), grad.data_ptr<float>(), grad.nbytes()) == 0);
  }
  CATCH_CHECK(stream.shared()->log == std::vector<std::string>{"copy 0", "copy 1", "copy 2", "synchronize 0",
                                                               "synchronize 1", "synchronize 2"});
}

CATCH_TEST_CASE("Gradients are narrowed to the wire dtype before the copy, bitwise as the wire would",
                "[trainer][device][staging]") {
  const auto signature = Signature();
  for (wire::DType dtype : {wire::DType::BF16, wire::DType::F16}) {
    CATCH_INFO(DTypeName(dtype));
    FakeCopyStream stream;
    auto staging = GradientStaging::Create(signature, torch::kCPU, dtype, stream);
    CATCH_REQUIRE(staging.ok());
    (*staging)->BeginStep();
    size_t elements = 0;
    for (size_t t = 0; t < signature.size(); ++t) {
      (*staging)->Stage(t, Gradient(signature[t], 0.5f));
      elements += signature[t].numel();
    }
    CATCH_CHECK(stream.shared()->bytes == elements * 2);  // half of float32 crossed the "bus"
    for (size_t t = 0; t < signature.size(); ++t) {
      auto next = (*staging)->Next(milliseconds(100));
      CATCH_REQUIRE((next.ok() && next->has_value()));
      const torch::Tensor grad = Gradient(signature[**next], 0.5f);
      std::vector<uint8_t> packed(grad.numel() * 2);
      PackFloats(grad.data_ptr<float>(), grad.numel(), dtype, packed.data());
      CATCH_CHECK(Bytes((*staging)->data(**next), packed.size()) == packed);
    }
  }
}

CATCH_TEST_CASE("Host buffers are allocated once and reused; one still being sent is replaced",
                "[trainer][device][staging]") {
  FakeCopyStream stream;
  const auto signature = Signature();
  auto staging = GradientStaging::Create(signature, torch::kCPU, wire::DType::F32, stream);
  CATCH_REQUIRE(staging.ok());
  GradientStaging& s = **staging;
  std::vector<const void*> first;
  for (size_t t = 0; t < signature.size(); ++t) first.push_back(s.data(t));
  s.BeginStep();
  for (size_t t = 0; t < signature.size(); ++t) CATCH_CHECK(s.data(t) == first[t]);
  // ZeroMQ still holds tensor 1's buffer (its owner) when the next step begins.
  std::shared_ptr<const void> in_flight = s.owner(1);
  s.BeginStep();
  CATCH_CHECK(s.data(0) == first[0]);
  CATCH_CHECK(s.data(1) != first[1]);
  CATCH_CHECK(s.replaced_buffers() == 1);
  in_flight.reset();
  s.BeginStep();
  CATCH_CHECK(s.replaced_buffers() == 1);
}

CATCH_TEST_CASE("A failing device copy is a Status naming the tensor and the device",
                "[trainer][device][staging]") {
  FakeCopyStream stream(/*fail_copy=*/1);
  const auto signature = Signature();
  auto staging = GradientStaging::Create(signature, torch::kCPU, wire::DType::F32, stream);
  CATCH_REQUIRE(staging.ok());
  (*staging)->BeginStep();
  (*staging)->Stage(2, Gradient(signature[2], 1));
  (*staging)->Stage(0, Gradient(signature[0], 1));  // the second copy: fails
  auto first = (*staging)->Next(milliseconds(100));
  CATCH_REQUIRE_FALSE(first.ok());
  const std::string& message = first.status().message();
  CATCH_INFO(message);
  CATCH_CHECK(first.status().code() == Status::Code::kInternal);
  CATCH_CHECK(message.find("a.weight on cpu") != std::string::npos);
  CATCH_CHECK(message.find("CUDA out of memory") != std::string::npos);
  // The next step starts clean.
  (*staging)->BeginStep();
  auto none = (*staging)->Next(milliseconds(1));
  CATCH_REQUIRE(none.ok());
}

CATCH_TEST_CASE("Weights reach the model through the copy stream before the model computes with them",
                "[trainer][device][staging]") {
  auto model = BuildModel("mlp", 1);
  CATCH_REQUIRE(model.ok());
  FakeCopyStream stream;
  auto buffers = ModelBuffers::Create(**model, torch::kCPU, &stream);
  CATCH_REQUIRE(buffers.ok());
  const auto params = (*model)->parameters();
  // The host buffers are not the parameters: writing them changes nothing yet.
  const float before = params[0].data_ptr<float>()[0];
  (*buffers)->weight_targets()[0][0] = before + 1;
  CATCH_CHECK(params[0].data_ptr<float>()[0] == before);
  CATCH_REQUIRE((*buffers)->CommitWeights().ok());
  // The compute stream was made to wait for the last copy, which (in order) ran them all.
  CATCH_CHECK(params[0].data_ptr<float>()[0] == before + 1);
  CATCH_CHECK(stream.shared()->log.back() == "compute waits for " + std::to_string(params.size() - 1));
  CATCH_REQUIRE((*buffers)->FinishWeightCopies().ok());

  FakeCopyStream broken(/*fail_copy=*/2);
  auto broken_buffers = ModelBuffers::Create(**model, torch::kCPU, &broken);
  CATCH_REQUIRE(broken_buffers.ok());
  Status status = (*broken_buffers)->CommitWeights();
  CATCH_INFO(status.ToString());
  CATCH_CHECK(status.code() == Status::Code::kInternal);
  CATCH_CHECK(status.message().find("fc2.weight on cpu") != std::string::npos);
}

}  // namespace hetps
