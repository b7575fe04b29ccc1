#include "trainer/evaluator.h"

#include <string>
#include <utility>

#include <torch/torch.h>

#include "common/logging.h"
#include "trainer/device/device.h"

namespace hetps {

Evaluator::Evaluator(Model& model, ModelBuffers& buffers, PsClient& client, ControlChannel& control,
                     Sender& sender, const Dataset& test, torch::Device device, Options options,
                     std::shared_ptr<Model> snapshot_model, torch::Device snapshot_device)
    : model_(model),
      buffers_(buffers),
      client_(client),
      control_(control),
      sender_(sender),
      test_(test),
      device_(device),
      options_(std::move(options)) {
  if (snapshot_model) {
    worker_ = std::make_unique<SnapshotWorker>(std::move(snapshot_model), test_, snapshot_device, options_);
  }
}

Result<uint64_t> Evaluator::Evaluate(const wire::EvalRequest& request, uint64_t clock) {
  if (request.final()) HETPS_RETURN_IF_ERROR(ReportSnapshots(/*wait=*/true));
  HETPS_ASSIGN_OR_RETURN(const uint64_t version, PullLatest(clock));
  auto outcome = RunTestPass(model_, test_, device_, options_, [this] { return control_.Check(); });
  if (!outcome.ok()) return outcome.status();
  HETPS_LOG(INFO) << DescribeTestOutcome(*outcome, version, options_.loss);
  HETPS_RETURN_IF_ERROR(Report(request.epoch(), request.final(), 0, version, *outcome));
  return version;
}

Status Evaluator::TakeSnapshot(const wire::EvalRequest& request, uint64_t clock) {
  if (!worker_) {
    HETPS_LOG(WARNING) << "ignored a request for snapshot " << request.snapshot()
                       << ": this job takes none (eval_interval_samples 0)";
    return Status::Ok();
  }
  std::vector<std::vector<float>> weights;
  std::vector<float*> targets;
  for (const TensorInfo& tensor : buffers_.signature()) {
    weights.emplace_back(static_cast<size_t>(tensor.numel()));
    targets.push_back(weights.back().data());
  }
  auto pulled = client_.Pull(clock, /*latest=*/true, targets);
  if (!pulled.ok()) return pulled.status();
  KeepSnapshot(request, pulled->weight_version, std::move(weights));
  return Status::Ok();
}

void Evaluator::KeepSnapshot(const wire::EvalRequest& request, uint64_t version,
                             std::vector<std::vector<float>> weights) {
  if (!worker_) return;
  SnapshotWorker::Snapshot snapshot{request.snapshot(), request.epoch(), version, std::move(weights), {}};
  try {
    for (const torch::Tensor& buffer : model_.buffers()) snapshot.buffers.push_back(buffer.detach().clone());
  } catch (const c10::Error& e) {
    HETPS_LOG(WARNING) << "snapshot " << request.snapshot() << " left out: copying the buffers of model "
                       << options_.model_name << " failed: " << e.what_without_backtrace();
    return;
  }
  const size_t waiting = worker_->Submit(std::move(snapshot));
  if (waiting > 2) {
    HETPS_LOG(WARNING) << waiting << " snapshots wait for their evaluation: the test set takes longer than "
                       << "eval_interval_samples of training; each holds a copy of the weights";
  }
}

Status Evaluator::SendFinished() {
  return ReportSnapshots(/*wait=*/false);
}

Status Evaluator::ReportSnapshots(bool wait) {
  if (!worker_) return Status::Ok();
  for (const SnapshotWorker::Finished& done : worker_->Take(wait)) {
    HETPS_RETURN_IF_ERROR(done.status.WithContext("evaluating snapshot " + std::to_string(done.id)));
    HETPS_LOG(INFO) << "snapshot " << done.id << ": "
                    << DescribeTestOutcome(done.outcome, done.version, options_.loss);
    HETPS_RETURN_IF_ERROR(Report(done.epoch, /*final=*/false, done.id, done.version, done.outcome));
  }
  return Status::Ok();
}

Result<uint64_t> Evaluator::PullLatest(uint64_t clock) {
  HETPS_RETURN_IF_ERROR(buffers_.FinishWeightCopies());
  auto pulled = client_.Pull(clock, /*latest=*/true, buffers_.weight_targets());
  if (!pulled.ok()) return pulled.status();
  HETPS_RETURN_IF_ERROR(buffers_.CommitWeights());
  return pulled->weight_version;
}

Status Evaluator::Report(uint32_t epoch, bool final, uint32_t snapshot, uint64_t version,
                         const TestOutcome& outcome) {
  flatbuffers::FlatBufferBuilder fbb(128);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::BufferValue>>> buffers;
  if (final) {
    HETPS_ASSIGN_OR_RETURN(buffers, BuildBuffers(fbb));
  }
  const bool regression = options_.loss == Loss::kMse;
  auto body =
      wire::CreateEvalReport(fbb, epoch, final, version, outcome.mean_loss, outcome.accuracy, outcome.samples,
                             snapshot, regression, outcome.r_squared, buffers, outcome.positions);
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
