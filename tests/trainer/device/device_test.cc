#include "trainer/device/device.h"
#include "trainer/device/blas_check.h"
#include "trainer/device/torch_build.h"

#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace hetps {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The shared libraries of a process like the trainer, minus its BLAS.
std::vector<std::string> CommonLibraries() {
  return {
      "/usr/bin/hetps_trainer",
      "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0",
      "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13",
      "/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0",
      "/usr/lib/x86_64-linux-gnu/libc.so.6",
  };
}

std::vector<std::string> With(std::vector<std::string> paths, const std::vector<std::string>& more) {
  paths.insert(paths.end(), more.begin(), more.end());
  return paths;
}

}  // namespace

CATCH_TEST_CASE("The device spec cpu selects the CPU", "[trainer][device]") {
  Result<torch::Device> device = SelectDevice("cpu");
  CATCH_REQUIRE(device.ok());
  CATCH_CHECK(device->type() == torch::kCPU);
  CATCH_CHECK(DeviceDescription(*device) == "cpu");
}

CATCH_TEST_CASE("The build's description names its version and backends, as the build provides them",
                "[trainer][device]") {
  const std::string description = TorchBuildDescription();
  CATCH_INFO(description << ", built with --torch " << HETPS_TEST_TORCH);
  CATCH_CHECK(Contains(description, std::string("LibTorch ") + TORCH_VERSION + " (CUDA "));
  CATCH_CHECK(Contains(description, TorchHasMps() ? ", MPS yes)" : ", MPS no)"));
  CATCH_CHECK(Contains(description, "(CUDA no,") != TorchHasCuda());
  // PyPI's torch for Linux x86_64 is the CUDA build: its CUDA library must have been linked in
  // (not dropped by --as-needed) for a trainer to find the GPU; Debian's is CPU only.
#if defined(__linux__) && defined(__x86_64__)
  CATCH_CHECK(TorchHasCuda() == (std::string(HETPS_TEST_TORCH) == "pip"));
#endif
#if defined(__APPLE__) && defined(__aarch64__)
  CATCH_CHECK(TorchHasMps());
#endif
}

CATCH_TEST_CASE("The device spec auto picks an available device and says why", "[trainer][device]") {
  std::string why;
  Result<torch::Device> device = SelectDevice("auto", &why);
  CATCH_REQUIRE(device.ok());
  CATCH_INFO(why);
  CATCH_CHECK(Contains(why, "auto: "));
  const bool cuda = TorchHasCuda() && torch::cuda::device_count() > 0;
  if (cuda) {
    CATCH_CHECK(device->type() == torch::kCUDA);
  } else if (SelectDevice("mps").ok()) {
    CATCH_CHECK(device->type() == torch::kMPS);
    CATCH_CHECK(Contains(why, "CUDA: "));
  } else {
    // The CPU, and why neither GPU backend: the build lacks it or no device is there.
    CATCH_CHECK(device->type() == torch::kCPU);
    CATCH_CHECK(Contains(why, TorchHasCuda() ? "CUDA: no CUDA device is visible"
                                             : "CUDA: this LibTorch build has no CUDA support"));
    CATCH_CHECK(Contains(why, "MPS: "));
    CATCH_CHECK(Contains(why, TorchBuildDescription()));
  }
}

CATCH_TEST_CASE("An absent device is unavailable, with the reason and the build's capabilities",
                "[trainer][device]") {
  const int64_t cuda_devices = TorchHasCuda() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
  for (const std::string spec : {"cuda", "cuda:0", "cuda:3", "cuda:99", "mps"}) {
    const std::string backend = spec == "mps" ? "MPS" : "CUDA";
    const bool has_backend = backend == "MPS" ? TorchHasMps() : TorchHasCuda();
    const int64_t index = spec == "cuda:3" ? 3 : spec == "cuda:99" ? 99 : 0;
    Result<torch::Device> device = SelectDevice(spec);
    // This test is about absent devices; on a machine that has this one, there is nothing to see.
    if (backend == "CUDA" && index < cuda_devices) {
      CATCH_CHECK(device.ok());
      continue;
    }
    if (backend == "MPS" && device.ok()) continue;
    CATCH_REQUIRE_FALSE(device.ok());
    const std::string& message = device.status().message();
    CATCH_INFO(message);
    CATCH_CHECK(device.status().code() == Status::Code::kUnavailable);
    CATCH_CHECK(Contains(message, "--device " + spec + ": "));
    CATCH_CHECK(Contains(message, TorchBuildDescription()));
    if (!has_backend) {
      CATCH_CHECK(Contains(message, "this LibTorch build has no " + backend + " support"));
    } else if (backend == "CUDA") {
      CATCH_CHECK(Contains(message, cuda_devices == 0 ? std::string("no CUDA device is visible")
                                                      : "no CUDA device " + std::to_string(index)));
    } else {
      CATCH_CHECK(Contains(message, "no MPS device is available"));
    }
  }
}

CATCH_TEST_CASE("Malformed device specs are invalid arguments naming the spec", "[trainer][device]") {
  for (const std::string spec : {"gpu", "cuda:x", "cuda:", "cuda:-1", "cuda:1x", "CPU", " cpu", ""}) {
    Result<torch::Device> device = SelectDevice(spec);
    CATCH_REQUIRE_FALSE(device.ok());
    const std::string& message = device.status().message();
    CATCH_INFO(message);
    CATCH_CHECK(device.status().code() == Status::Code::kInvalidArgument);
    CATCH_CHECK(Contains(message, "'" + spec + "'"));
    CATCH_CHECK(Contains(message, "auto, cpu, cuda, cuda:N or mps"));
  }
}

CATCH_TEST_CASE("Debian's reference BLAS is recognised and warned about", "[trainer][blas]") {
  const std::vector<std::string> paths =
      With(CommonLibraries(), {"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0",
                               "/usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3.11.0"});
  CATCH_CHECK(ClassifyBlas(paths) == BlasKind::kReference);
  const std::optional<std::string> warning = ReferenceBlasWarningFor(paths);
  CATCH_REQUIRE(warning.has_value());
  CATCH_INFO(*warning);
  CATCH_CHECK(Contains(*warning, "reference BLAS"));
  CATCH_CHECK(Contains(*warning, "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"));
  CATCH_CHECK(Contains(*warning, "scripts/install-deps.sh"));
  CATCH_CHECK(Contains(*warning, "update-alternatives --config libblas.so.3-x86_64-linux-gnu"));
  CATCH_CHECK(Contains(*warning, "openblas-openmp"));

  // The same library reached through the /lib symlink of a merged-/usr system, on another arch.
  const std::vector<std::string> arm = {"/lib/aarch64-linux-gnu/blas/libblas.so.3"};
  CATCH_CHECK(ClassifyBlas(arm) == BlasKind::kReference);
  CATCH_REQUIRE(ReferenceBlasWarningFor(arm).has_value());
  CATCH_CHECK(Contains(*ReferenceBlasWarningFor(arm), "libblas.so.3-aarch64-linux-gnu"));

  // OpenBLAS mapped as well does not hide the reference copy that libtorch may bind to.
  const std::vector<std::string> both =
      With(paths, {"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblasp-r0.3.21.so"});
  CATCH_CHECK(ClassifyBlas(both) == BlasKind::kReference);
}

CATCH_TEST_CASE("OpenBLAS and other optimised BLAS libraries give no warning", "[trainer][blas]") {
  const std::vector<std::string> openblas =
      With(CommonLibraries(), {"/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3",
                               "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblasp-r0.3.21.so",
                               "/usr/lib/x86_64-linux-gnu/openblas-openmp/liblapack.so.3"});
  CATCH_CHECK(ClassifyBlas(openblas) == BlasKind::kOpenBlas);
  CATCH_CHECK_FALSE(ReferenceBlasWarningFor(openblas).has_value());

  const std::vector<std::string> pthread =
      With(CommonLibraries(), {"/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"});
  CATCH_CHECK(ClassifyBlas(pthread) == BlasKind::kOpenBlas);

  const std::vector<std::string> blis =
      With(CommonLibraries(), {"/usr/lib/x86_64-linux-gnu/blis-openmp/libblas.so.3"});
  CATCH_CHECK(ClassifyBlas(blis) == BlasKind::kOther);
  CATCH_CHECK_FALSE(ReferenceBlasWarningFor(blis).has_value());

  CATCH_CHECK(ClassifyBlas(CommonLibraries()) == BlasKind::kNotLoaded);
  CATCH_CHECK_FALSE(ReferenceBlasWarningFor(CommonLibraries()).has_value());
  CATCH_CHECK_FALSE(ReferenceBlasWarningFor({}).has_value());
  // A directory merely named like a BLAS does not count without a libblas in it.
  CATCH_CHECK(ClassifyBlas({"/usr/lib/x86_64-linux-gnu/blas/README"}) == BlasKind::kNotLoaded);
}

#ifdef __linux__  // MappedFilePaths reads /proc/self/maps
CATCH_TEST_CASE("This process has LibTorch's BLAS mapped and the check agrees with it", "[trainer][blas]") {
  // No tensor work before this point: Debian's libtorch_cpu links libblas.so.3 directly, so the
  // library is mapped from start-up and the check needs no warm-up matmul.
  const std::vector<std::string> mapped = MappedFilePaths();
  CATCH_REQUIRE_FALSE(mapped.empty());
  bool has_libtorch = false;
  for (const std::string& path : mapped) {
    has_libtorch = has_libtorch || Contains(path, "libtorch_cpu.so");
  }
  CATCH_CHECK(has_libtorch);
  const BlasKind kind = ClassifyBlas(mapped);
  CATCH_INFO("BLAS in this process: " << BlasKindName(kind) << ", LibTorch from --torch "
                                      << HETPS_TEST_TORCH);
  // Debian's LibTorch calls the system BLAS; PyPI's carries MKL inside libtorch_cpu (on Linux)
  // and maps no libblas at all.
  CATCH_CHECK((kind != BlasKind::kNotLoaded) == (std::string(HETPS_TEST_TORCH) == "system"));
  CATCH_CHECK(ReferenceBlasWarning().has_value() == (kind == BlasKind::kReference));
}
#endif

}  // namespace hetps
