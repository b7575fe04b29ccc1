// Trainer::Session's end of the job and its recovery (trainer/session.h): waiting for the
// scheduler's Shutdown, and when a server is lost, the Pause, the wait for Resume, reconnecting to
// the replacement and going on from where the scheduler says.
#include "common/logging.h"
#include "trainer/session.h"

namespace hetps {

Status Trainer::Session::WaitForShutdown() {
  while (true) {
    Status handled = HandleControl();  // Aborted (mapped by Run) once the job ends
    if (!handled.ok()) {
      HETPS_RETURN_IF_ERROR(RecoverIfPaused(handled));
      if (epoch_ < job_.epochs) return Status::Ok();  // a rollback: train again
      continue;
    }
    HETPS_RETURN_IF_ERROR(position_->MaybeReport(clock_, epoch_, samples_, *sampler_, /*idle=*/true));
    control_->WaitForInbox(std::chrono::milliseconds(200));
  }
}

Status Trainer::Session::RecoverIfPaused(Status status) {
  if (control_->paused() == 0 || control_->shutdown()) return status;
  return Recover();
}

Status Trainer::Session::Recover() {
  HETPS_LOG(WARNING) << "paused by the scheduler: a server was lost; waiting for it to be replaced";
  if (step_) step_->Abandon();  // the weights pulled after the resume replace any travelling
  if (progress_) progress_->Report(Position(), /*force=*/true);  // the samples trained so far
  while (true) {
    HETPS_RETURN_IF_ERROR(control_->Check());
    if (control_->shutdown()) return Status::Aborted("the scheduler shut the job down");
    while (auto message = control_->TakeInbox()) {
      if (message->kind() != wire::Body::Resume) continue;  // anything else predates the pause
      const auto* resume = message->body<wire::Resume>();
      if (resume->generation() < control_->paused()) continue;  // another server was lost since
      return ApplyResume(*resume);
    }
    control_->WaitForInbox(std::chrono::milliseconds(200));
  }
}

Status Trainer::Session::ApplyResume(const wire::Resume& resume) {
  sender_.set_generation(resume.generation());
  control_->ClearPause();
  std::vector<std::string> endpoints, keys;
  HETPS_RETURN_IF_ERROR(
      ReadServers(resume.servers(), map_->num_servers(), &endpoints, &keys).WithContext("Resume"));
  HETPS_RETURN_IF_ERROR(client_->Reconnect(endpoints, keys));
  if (resume.reinitialize()) {
    // Nothing to restore from: the restored servers take the initial weights, offered again.
    auto initial = LoadModel(torch::kCPU);
    if (!initial.ok()) return initial.status();
    auto buffers = ModelBuffers::Create(**initial, torch::kCPU);
    if (!buffers.ok()) return buffers.status();
    HETPS_ASSIGN_OR_RETURN(HostTensors weights, (*buffers)->HostWeights());
    HETPS_RETURN_IF_ERROR(client_->InitWeights(weights.data, weights.owner));
  }
  if (resume.rollback()) {
    clock_ = resume.clock();
    epoch_ = resume.epoch();
    sampler_->Reset();
    position_->Forget();
    idle_ = false;
  } else if (idle_) {
    HETPS_RETURN_IF_ERROR(client_->MarkIdle(clock_));  // a replacement does not know it
  }
  const bool sync = HasRounds(job_.mode, job_.diloco);
  HETPS_RETURN_IF_ERROR(buffers_->FinishWeightCopies());
  auto pulled = client_->Pull(sync ? clock_ : 0, /*latest=*/!sync, buffers_->weight_targets());
  if (!pulled.ok()) return RecoverIfPaused(pulled.status());
  HETPS_RETURN_IF_ERROR(buffers_->CommitWeights());
  weight_version_ = pulled->weight_version;
  if (round_) round_->Restart();  // diloco: the next round starts from the servers' weights
  HETPS_LOG(INFO) << "resumed" << (resume.rollback() ? " at step " + std::to_string(clock_) : std::string())
                  << " with the servers' weights of version " << weight_version_;
  return Status::Ok();
}

}  // namespace hetps
