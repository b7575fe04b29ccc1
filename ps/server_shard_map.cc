// The Server's shard map: taking the scheduler's map, checking it fits this server, and building
// the Shard it describes (partitions, optimizer, mode, rounds). Part of the Server class
// (ps/server.h), on the loop thread like the rest.
#include "common/logging.h"
#include "ps/server.h"

namespace hetps {

Status Server::HandleShardMap(const Message& message) {
  const auto* wire_map = message.body<wire::ShardMap>();
  if (shard_) {
    HETPS_LOG(WARNING) << "ignored a second shard map (version " << wire_map->version() << ")";
    return Status::Ok();
  }
  Status installed = InstallShard(*wire_map);
  if (!installed.ok()) {
    // The scheduler ends the job at once with this reason instead of waiting for this server.
    Status told =
        control_->Send(sender_.MakeError(wire::ErrorCode::Refused, installed.message(), message.env().seq()));
    if (!told.ok()) HETPS_LOG(WARNING) << told.message();
    return installed;
  }
  return control_->Send(sender_.MakeEmpty(wire::Body::ShardReady));
}

Status Server::InstallShard(const wire::ShardMap& wire_map) {
  auto map = ShardMap::FromWire(wire_map);
  if (!map.ok()) return map.status().WithContext("shard map from the scheduler");
  uint64_t largest_frame = 0;
  for (const PartitionInfo& p : map->partitions())
    largest_frame = std::max(largest_frame, p.length * sizeof(float));
  if (largest_frame > static_cast<uint64_t>(options_.max_message_bytes)) {
    return Status::ResourceExhausted(
        "the job's partitions reach " + std::to_string(largest_frame) + " bytes, more than this server's " +
        "--max-message-bytes (" + std::to_string(options_.max_message_bytes) +
        "); start the servers with --max-message-bytes of at least the job's max_message_bytes (" +
        std::to_string(wire_map.max_message_bytes()) + ")");
  }
  map_ = std::make_unique<ShardMap>(std::move(*map));
  if (wire_map.membership_epoch() > membership_epoch_) {
    // A Membership that came first (over the data socket) is newer than the map's trainers.
    membership_epoch_ = wire_map.membership_epoch();
    identities_.Set(wire_map.identities());
    live_trainers_.clear();
    if (wire_map.trainers() != nullptr)
      live_trainers_.assign(wire_map.trainers()->begin(), wire_map.trainers()->end());
    from_clocks_.clear();
    if (wire_map.identities() != nullptr) {
      for (const wire::TrainerIdentity* t : *wire_map.identities()) {
        if (t->from_clock() > 0) from_clocks_[t->rank()] = t->from_clock();
      }
    }
  }
  scheduler_token_ = wire_map.scheduler_token() ? wire_map.scheduler_token()->str() : "";
  Shard::Options shard_options;
  shard_options.mode = FromWire(wire_map.mode());
  shard_options.staleness = wire_map.staleness();
  shard_options.staleness_aware_lr = wire_map.staleness_aware_lr();
  shard_options.global_batch_size = wire_map.global_batch_size();
  shard_options.threads = options_.threads;
  shard_options.diloco = DilocoFromWire(wire_map.diloco());
  const wire::OptimizerConfig* config = wire_map.optimizer();
  if (config == nullptr) return Status::Protocol("shard map from the scheduler has no optimizer");
  shard_options.optimizer = OptimizerFromWire(*config);
  if (const wire::OptimizerConfig* outer = wire_map.outer_optimizer(); outer != nullptr) {
    shard_options.outer_optimizer = OptimizerFromWire(*outer);
  }
  const OptimizerOptions& o = shard_options.optimizer;
  auto shard = Shard::Create(*map_, sender_.rank(), shard_options);
  if (!shard.ok()) return shard.status().WithContext("shard map from the scheduler");
  shard_ = std::move(*shard);
  shard_->SetLiveTrainers(live_trainers_, from_clocks_);
  sender_.set_membership_epoch(membership_epoch_);
  // A trainer's largest valid message carries every partition of this server, as float32
  // (InitWeights), besides its envelope; the scheduler's Restore, over its own connection, each
  // partition's weights, optimizer state slots and update count.
  const uint64_t partitions = shard_->partition_ids().size();
  const uint64_t copies = 1 + static_cast<uint64_t>(shard_->state_slots());
  data_limits_ = ReceiveLimits{1 + partitions, kDefaultMaxEnvelopeBytes + map_->BytesOf(sender_.rank())};
  data_limits_.privileged_id = scheduler_token_;
  data_limits_.privileged_max_frames = 1 + partitions * (copies + 1);
  data_limits_.privileged_max_bytes =
      kDefaultMaxEnvelopeBytes + copies * map_->BytesOf(sender_.rank()) + partitions * sizeof(int64_t);
  HETPS_LOG(INFO) << "holding " << shard_->partition_ids().size() << " of " << map_->partitions().size()
                  << " partitions (" << map_->BytesOf(sender_.rank()) / 1024 << " KiB), mode "
                  << ModeName(shard_options.mode) << ", optimizer " << OptimizerKindName(o.kind) << ", "
                  << options_.threads << (options_.threads == 1 ? " thread" : " worker threads");
  return Status::Ok();
}

}  // namespace hetps
