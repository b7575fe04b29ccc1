#include "trainer/job_info.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace hetps {

Result<JobInfo> ReadJob(const Message& accepted) {
  const wire::TrainerJob* job = accepted.body<wire::JoinAccepted>()->job();
  if (job == nullptr) return Status::Protocol("the scheduler admitted this trainer without a job");
  JobInfo info;
  info.model = job->model()->str();
  if (job->model_file()) info.model_file = job->model_file()->str();
  if (job->model_checksum()) info.model_checksum = job->model_checksum()->str();
  info.model_file_bytes = job->model_file_bytes();
  info.model_piece_bytes = job->model_piece_bytes();
  info.loss = FromWire(job->loss());
  if (!info.model_file.empty() && info.model_checksum.empty()) {
    return Status::Protocol("the scheduler named the model file " + info.model_file +
                            " without its checksum");
  }
  info.mode = FromWire(job->mode());
  info.epochs = job->epochs();
  info.batch_size = job->batch_size();
  info.seed = job->seed();
  info.train_samples = job->train_samples();
  info.eval_batch_size = std::max<uint32_t>(job->eval_batch_size(), 1);
  info.progress_interval = std::chrono::milliseconds(job->progress_interval_ms());
  info.request_timeout = std::chrono::milliseconds(job->request_timeout_ms());
  const auto* token = accepted.body<wire::JoinAccepted>()->data_token();
  if (token == nullptr || token->size() == 0) {
    return Status::Protocol("the scheduler admitted this trainer without a data token");
  }
  info.data_token = token->str();
  if (job->data() != nullptr) {
    HETPS_ASSIGN_OR_RETURN(info.data, DataOptionsFromWire(*job->data()));
  }
  if (job->optimizer() != nullptr) {
    info.has_optimizer = true;
    info.optimizer = OptimizerFromWire(*job->optimizer());
  }
  info.global_batch_size = job->global_batch_size();
  info.diloco = DilocoFromWire(job->diloco());
  if (job->model_options() != nullptr) {
    HETPS_ASSIGN_OR_RETURN(info.model_options, ModelOptionsFromWire(*job->model_options()));
  }
  info.clip_grad_norm = job->clip_grad_norm();
  info.eval_interval_samples = job->eval_interval_samples();
  if (!std::isfinite(info.clip_grad_norm) || info.clip_grad_norm < 0) {
    return Status::Protocol("the scheduler sent a job with clip_grad_norm " +
                            std::to_string(info.clip_grad_norm));
  }
  if (info.epochs == 0 || info.batch_size == 0 || info.train_samples == 0) {
    return Status::Protocol("the scheduler sent a job with no epochs, batch or samples");
  }
  return info;
}

}  // namespace hetps
