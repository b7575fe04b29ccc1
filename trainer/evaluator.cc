#include "trainer/evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <torch/torch.h>

#include "common/logging.h"
#include "trainer/device/device.h"
#include "trainer/models/loss.h"

namespace hetps {

Evaluator::Evaluator(Model& model, ModelBuffers& buffers, PsClient& client, ControlChannel& control,
                     Sender& sender, const Dataset& test, torch::Device device, Options options)
    : model_(model),
      buffers_(buffers),
      client_(client),
      control_(control),
      sender_(sender),
      test_(test),
      device_(device),
      options_(std::move(options)) {}

Result<uint64_t> Evaluator::Handle(const wire::EvalRequest& request, uint64_t clock) {
  if (request.snapshot() > 0) {
    HETPS_ASSIGN_OR_RETURN(const uint64_t version, PullLatest(clock));
    Snapshot snapshot{request.snapshot(), request.epoch(), version, {}};
    const auto& targets = buffers_.weight_targets();
    for (size_t t = 0; t < targets.size(); ++t) {
      const float* data = targets[t];
      snapshot.weights.emplace_back(data, data + buffers_.signature()[t].numel());
    }
    snapshots_.push_back(std::move(snapshot));
    return version;
  }
  if (request.final()) {
    // The snapshots first, each loaded into the model in turn; the pull below restores the newest.
    for (const Snapshot& snapshot : snapshots_) {
      HETPS_RETURN_IF_ERROR(buffers_.FinishWeightCopies());
      for (size_t t = 0; t < snapshot.weights.size(); ++t) {
        std::copy(snapshot.weights[t].begin(), snapshot.weights[t].end(), buffers_.weight_targets()[t]);
      }
      HETPS_RETURN_IF_ERROR(buffers_.CommitWeights());
      HETPS_RETURN_IF_ERROR(EvaluateAndReport(snapshot.epoch, false, snapshot.id, snapshot.version));
    }
    snapshots_.clear();
  }
  HETPS_ASSIGN_OR_RETURN(const uint64_t version, PullLatest(clock));
  HETPS_RETURN_IF_ERROR(EvaluateAndReport(request.epoch(), request.final(), 0, version));
  return version;
}

void Evaluator::KeepSnapshot(const wire::EvalRequest& request, uint64_t version,
                             std::vector<std::vector<float>> weights) {
  snapshots_.push_back(Snapshot{request.snapshot(), request.epoch(), version, std::move(weights)});
}

Result<uint64_t> Evaluator::PullLatest(uint64_t clock) {
  HETPS_RETURN_IF_ERROR(buffers_.FinishWeightCopies());
  auto pulled = client_.Pull(clock, /*latest=*/true, buffers_.weight_targets());
  if (!pulled.ok()) return pulled.status();
  HETPS_RETURN_IF_ERROR(buffers_.CommitWeights());
  return pulled->weight_version;
}

Status Evaluator::EvaluateAndReport(uint32_t epoch, bool final, uint32_t snapshot, uint64_t version) {
  const auto start = std::chrono::steady_clock::now();
  TestMeasures measures(options_.loss);
  const int64_t n = test_.size();
  std::vector<int64_t> indices;
  try {
    torch::NoGradGuard no_grad;
    model_.eval();
    for (int64_t begin = 0; begin < n; begin += options_.batch_size) {
      const int64_t end = std::min<int64_t>(n, begin + options_.batch_size);
      indices = OrderedSampleIndices(test_, begin, end);
      Batch batch = MakeBatch(test_, indices.data(), indices.size(), device_);
      measures.Add(model_.forward(batch.input), batch.target);
      HETPS_RETURN_IF_ERROR(control_.Check());  // stop when the scheduler is gone
    }
    model_.train();
  } catch (const c10::Error& e) {
    return Status::Internal("LibTorch failed evaluating model " + options_.model_name + " on " +
                            DeviceDescription(device_) + ": " + e.what_without_backtrace());
  }
  const bool regression = options_.loss == Loss::kMse;
  const bool sequences = measures.positions() > measures.samples();
  HETPS_LOG(INFO) << "evaluated weights version " << version << " on " << n << " test samples"
                  << (sequences ? " (" + std::to_string(measures.positions()) + " positions)" : "") << ": "
                  << (regression ? "R2 " : "accuracy ")
                  << (regression ? measures.r_squared() : measures.accuracy()) << ", loss "
                  << measures.mean_loss()
                  << (sequences ? ", perplexity " + std::to_string(std::exp(measures.mean_loss())) : "")
                  << " (" << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                  << " s)";
  flatbuffers::FlatBufferBuilder fbb(128);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::BufferValue>>> buffers;
  if (final) {
    HETPS_ASSIGN_OR_RETURN(buffers, BuildBuffers(fbb));
  }
  auto body = wire::CreateEvalReport(fbb, epoch, final, version, measures.mean_loss(), measures.accuracy(),
                                     static_cast<uint64_t>(n), snapshot, regression, measures.r_squared(),
                                     buffers, static_cast<uint64_t>(measures.positions()));
  return control_.Send(sender_.Seal(fbb, wire::Body::EvalReport, body.Union()));
}

Result<flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::BufferValue>>>>
Evaluator::BuildBuffers(flatbuffers::FlatBufferBuilder& fbb) {
  std::vector<flatbuffers::Offset<wire::BufferValue>> values;
  for (const auto& item : model_.named_buffers()) {
    std::string name = item.key();
    torch::Tensor host;
    try {
      host = item.value().to(torch::kCPU).contiguous();
    } catch (const c10::Error& e) {
      return Status::Internal("copying buffer " + name + " of model " + options_.model_name + " from " +
                              DeviceDescription(device_) + ": " + e.what_without_backtrace());
    }
    const wire::DType dtype = WireDTypeOf(host.scalar_type());
    if (dtype == wire::DType::Other) {
      HETPS_LOG(WARNING) << "buffer " << name << " of model " << options_.model_name
                         << " has a dtype the exported model cannot hold; left out";
      continue;
    }
    const std::vector<int64_t> shape = host.sizes().vec();
    auto spec = wire::CreateTensorSpecDirect(fbb, name.c_str(), &shape, dtype);
    auto data = fbb.CreateVector(static_cast<const uint8_t*>(host.data_ptr()), host.nbytes());
    values.push_back(wire::CreateBufferValue(fbb, spec, data));
  }
  return fbb.CreateVector(values);
}

}  // namespace hetps
