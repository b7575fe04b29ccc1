#include "trainer/ps_client.h"

#include <algorithm>
#include <cstring>

#include "common/dtype.h"
#include "common/transport.h"

namespace hetps {

PsClient::PsClient(zmq::context_t& context, const ShardMap& map, std::vector<std::string> endpoints,
                   Sender* sender, ControlChannel* control, Options options)
    : context_(context),
      map_(map),
      endpoints_(std::move(endpoints)),
      sender_(sender),
      control_(control),
      options_(options),
      versions_(map.partitions().size(), 0) {
  for (uint32_t s = 0; s < map.num_servers(); ++s) partitions_of_.push_back(map.PartitionsOf(s));
}

std::string PsClient::ServerName(uint32_t server) const {
  return "server " + std::to_string(server) + " at " + endpoints_[server];
}

Status PsClient::Connect() {
  if (endpoints_.size() != map_.num_servers()) {
    return Status::Protocol("shard map has " + std::to_string(map_.num_servers()) +
                            " servers but lists " + std::to_string(endpoints_.size()) + " endpoints");
  }
  for (uint32_t s = 0; s < endpoints_.size(); ++s) {
    SocketOptions options;
    options.router_mandatory = false;
    options.send_timeout_ms = static_cast<int>(options_.request_timeout.count());
    sockets_.push_back(MakeSocket(context_, zmq::socket_type::dealer, options));
    HETPS_RETURN_IF_ERROR(hetps::Connect(sockets_.back(), endpoints_[s]));
  }
  return Status::Ok();
}

Status PsClient::SendToAll(const std::function<void(uint32_t, Message*)>& build) {
  for (uint32_t s = 0; s < sockets_.size(); ++s) {
    Message request;
    build(s, &request);
    Status status = Send(sockets_[s], std::move(request));
    if (!status.ok()) return Status::Unavailable("cannot send to " + ServerName(s) + ": " + status.message());
  }
  return Status::Ok();
}

Status PsClient::AwaitReplies(wire::Body expected, const char* request_name,
                              const std::function<Status(uint32_t, const Message&)>& accept) {
  using Clock = std::chrono::steady_clock;
  std::vector<bool> answered(sockets_.size(), false);
  size_t remaining = sockets_.size();
  std::vector<zmq::socket_t*> polled;
  for (auto& socket : sockets_) polled.push_back(&socket);
  polled.push_back(&control_->socket());
  auto last_progress = Clock::now();
  while (remaining > 0) {
    auto readable = PollReadable(polled, std::chrono::milliseconds(100));
    HETPS_RETURN_IF_ERROR(control_->Service());
    if (control_->shutdown()) {
      return Status::Unavailable("the scheduler ended the job: " +
                                 (control_->shutdown()->reason.empty() ? std::string("finished")
                                                                       : control_->shutdown()->reason));
    }
    for (uint32_t s = 0; s < sockets_.size(); ++s) {
      if (!readable[s]) continue;
      auto received = TryReceive(sockets_[s], /*router=*/false);
      if (!received.ok()) return received.status();
      if (!received->has_value()) continue;
      const Message& reply = **received;
      Status valid = VerifyEnvelope(reply);
      if (!valid.ok()) return Status::Protocol(ServerName(s) + " sent a malformed reply: " + valid.message());
      if (reply.kind() == wire::Body::Error) {
        return Status::FailedPrecondition(ServerName(s) + " refused the " + request_name + ": " +
                                          reply.body<wire::Error>()->reason()->str());
      }
      if (reply.kind() != expected || answered[s]) {
        return Status::Protocol(ServerName(s) + " answered a " + request_name + " with an unexpected " +
                                KindName(reply.kind()));
      }
      HETPS_RETURN_IF_ERROR(accept(s, reply));
      answered[s] = true;
      --remaining;
      last_progress = Clock::now();
    }
    if (remaining > 0 && Clock::now() - last_progress > options_.request_timeout) {
      for (uint32_t s = 0; s < sockets_.size(); ++s) {
        if (!answered[s]) {
          return Status::Timeout(ServerName(s) + " did not answer a " + request_name + " within " +
                                 std::to_string(options_.request_timeout.count() / 1000) + " s");
        }
      }
    }
  }
  return Status::Ok();
}

Status PsClient::InitWeights(const std::vector<const float*>& weights, std::shared_ptr<const void> owner) {
  HETPS_RETURN_IF_ERROR(SendToAll([&](uint32_t s, Message* request) {
    flatbuffers::FlatBufferBuilder fbb(128 + 8 * partitions_of_[s].size());
    auto body = wire::CreateInitWeightsDirect(fbb, &partitions_of_[s]);
    request->envelope = sender_->Seal(fbb, wire::Body::InitWeights, body.Union());
    for (uint32_t id : partitions_of_[s]) {
      const PartitionInfo& p = map_.partitions()[id];
      request->tensors.push_back(BorrowFrame(weights[p.tensor] + p.offset, p.length * sizeof(float), owner));
    }
  }));
  return AwaitReplies(wire::Body::Ack, "InitWeights", [](uint32_t, const Message&) { return Status::Ok(); });
}

Status PsClient::AcceptWeights(uint32_t server, const Message& reply, const std::vector<float*>& weights,
                               PullResult* result) {
  const auto* body = reply.body<wire::Weights>();
  const wire::DType dtype = body->dtype();
  if (!IsWireFloat(dtype)) {
    return Status::Protocol(ServerName(server) + " sent weights as " + DTypeName(dtype));
  }
  const auto& expected = partitions_of_[server];
  const auto* ids = body->partitions();
  if (ids->size() != expected.size() || reply.tensors.size() != expected.size() ||
      !std::equal(ids->begin(), ids->end(), expected.begin())) {
    return Status::Protocol(ServerName(server) + " sent weights for other partitions than asked");
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const PartitionInfo& p = map_.partitions()[expected[i]];
    const size_t bytes = p.length * DTypeSize(dtype);
    if (reply.tensors[i].size() != bytes) {
      return Status::Protocol(ServerName(server) + " sent " + std::to_string(reply.tensors[i].size()) +
                              " bytes for partition " + std::to_string(p.id) + ", expected " +
                              std::to_string(bytes) + " (" + DTypeName(dtype) + ")");
    }
    UnpackFloats(reply.tensors[i].data(), p.length, dtype, weights[p.tensor] + p.offset);
    const uint64_t version = body->versions() && i < body->versions()->size() ? body->versions()->Get(i) : 0;
    versions_[p.id] = version;
    result->weight_version = std::max(result->weight_version, version);
  }
  result->round_samples = std::max(result->round_samples, body->round_samples());
  return Status::Ok();
}

Result<PsClient::PullResult> PsClient::Pull(uint64_t clock, bool latest, const std::vector<float*>& weights) {
  HETPS_RETURN_IF_ERROR(SendToAll([&](uint32_t s, Message* request) {
    flatbuffers::FlatBufferBuilder fbb(128 + 8 * partitions_of_[s].size());
    auto body = wire::CreatePullDirect(fbb, clock, latest, &partitions_of_[s], options_.wire_dtype);
    request->envelope = sender_->Seal(fbb, wire::Body::Pull, body.Union());
  }));
  PullResult result;
  HETPS_RETURN_IF_ERROR(AwaitReplies(wire::Body::Weights, "Pull", [&](uint32_t s, const Message& reply) {
    return AcceptWeights(s, reply, weights, &result);
  }));
  return result;
}

Result<PsClient::PullResult> PsClient::PushPull(uint64_t clock, uint32_t batch_size,
                                                const std::vector<const float*>& grads,
                                                std::shared_ptr<const void> owner,
                                                const std::vector<float*>& weights) {
  HETPS_RETURN_IF_ERROR(SendToAll([&](uint32_t s, Message* request) {
    const auto& ids = partitions_of_[s];
    std::vector<uint64_t> versions;
    versions.reserve(ids.size());
    for (uint32_t id : ids) versions.push_back(versions_[id]);
    flatbuffers::FlatBufferBuilder fbb(128 + 16 * ids.size());
    const wire::DType dtype = options_.wire_dtype;
    auto body = wire::CreatePushDirect(fbb, clock, batch_size, &ids, &versions, dtype,
                                       /*pull=*/true);
    request->envelope = sender_->Seal(fbb, wire::Body::Push, body.Union());
    for (uint32_t id : ids) {
      const PartitionInfo& p = map_.partitions()[id];
      const float* grad = batch_size == 0 ? nullptr : grads[p.tensor] + p.offset;
      if (grad == nullptr) {
        request->tensors.emplace_back();
      } else if (dtype == wire::DType::F32) {
        request->tensors.push_back(BorrowFrame(grad, p.length * sizeof(float), owner));
      } else {
        // Narrowed straight into the frame ZeroMQ sends.
        request->tensors.emplace_back(p.length * DTypeSize(dtype));
        PackFloats(grad, p.length, dtype, request->tensors.back().data());
      }
    }
  }));
  PullResult result;
  HETPS_RETURN_IF_ERROR(AwaitReplies(wire::Body::Weights, "Push", [&](uint32_t s, const Message& reply) {
    return AcceptWeights(s, reply, weights, &result);
  }));
  return result;
}

Status PsClient::MarkIdle(uint64_t clock) {
  HETPS_RETURN_IF_ERROR(SendToAll([&](uint32_t s, Message* request) {
    const auto& ids = partitions_of_[s];
    flatbuffers::FlatBufferBuilder fbb(128 + 8 * ids.size());
    auto body = wire::CreatePushDirect(fbb, clock, /*batch_size=*/0, &ids, nullptr,
                                       options_.wire_dtype, /*pull=*/false);
    request->envelope = sender_->Seal(fbb, wire::Body::Push, body.Union());
    request->tensors.resize(ids.size());  // empty frames
  }));
  return AwaitReplies(wire::Body::Ack, "Push", [](uint32_t, const Message&) { return Status::Ok(); });
}

}  // namespace hetps
