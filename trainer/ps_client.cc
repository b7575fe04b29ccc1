#include "trainer/ps_client.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <thread>
#include <utility>

#include <ATen/Parallel.h>

#include "common/check.h"
#include "common/dtype.h"
#include "common/logging.h"
#include "common/refusals.h"
#include "common/transport.h"

namespace hetps {
namespace {

// A reply's weights into the model, on the compute threads (idle while the step waits for the
// weights; the copy of a large partition alone is worth spreading); one thread for a small one.
void UnpackWeights(const void* in, size_t n, wire::DType dtype, float* out) {
  constexpr int64_t kGrain = 64 * 1024;  // floats per thread at least
  const auto* bytes = static_cast<const char*>(in);
  const size_t size = DTypeSize(dtype);
  at::parallel_for(0, static_cast<int64_t>(n), kGrain, [&](int64_t begin, int64_t end) {
    UnpackFloats(bytes + begin * size, static_cast<size_t>(end - begin), dtype, out + begin);
  });
}

}  // namespace

PsClient::PsClient(zmq::context_t& context, const ShardMap& map, std::vector<std::string> endpoints,
                   Sender* sender, ControlChannel* control, Options options)
    : context_(context),
      map_(map),
      endpoints_(std::move(endpoints)),
      sender_(sender),
      control_(control),
      options_(std::move(options)),
      partitions_of_tensor_(map.tensors().size()),
      versions_(map.partitions().size(), 0),
      awaiting_(map.partitions().size(), false),
      left_out_(map.num_servers(), 0),
      outgoing_(map.num_servers()) {
  for (uint32_t s = 0; s < map.num_servers(); ++s) {
    partitions_of_.push_back(map.PartitionsOf(s));
    // A reply holds at most every partition of its server, as float32, besides the envelope.
    reply_limits_.push_back(
        ReceiveLimits{1 + partitions_of_.back().size(), kDefaultMaxEnvelopeBytes + map.BytesOf(s)});
  }
  for (const PartitionInfo& p : map.partitions()) partitions_of_tensor_[p.tensor].push_back(p.id);
  if (options_.int8_pushes) {
    std::vector<uint64_t> lengths;
    lengths.reserve(map.partitions().size());
    for (const PartitionInfo& p : map.partitions()) lengths.push_back(p.length);
    feedback_ = std::make_unique<Int8Feedback>(lengths);
  }
}

std::string PsClient::ServerName(uint32_t server) const {
  return "server " + std::to_string(server) + " at " + endpoints_[server];
}

Status PsClient::Connect() {
  if (endpoints_.size() != map_.num_servers()) {
    return Status::Protocol("shard map has " + std::to_string(map_.num_servers()) + " servers but lists " +
                            std::to_string(endpoints_.size()) + " endpoints");
  }
  for (uint32_t s = 0; s < endpoints_.size(); ++s) {
    auto socket = MakeServerSocket(s, endpoints_[s]);
    if (!socket.ok()) return socket.status();
    sockets_.push_back(std::move(*socket));
    HETPS_RETURN_IF_ERROR(hetps::Connect(sockets_.back(), endpoints_[s]));
  }
  return Status::Ok();
}

Result<zmq::socket_t> PsClient::MakeServerSocket(uint32_t s, const std::string& endpoint) {
  SocketOptions options;
  options.router_mandatory = false;
  options.send_timeout = options_.request_timeout;
  options.max_message_bytes = options_.max_message_bytes;
  options.routing_id = options_.routing_id;
  if (options_.curve.on()) {
    if (s >= options_.server_keys.size() || options_.server_keys[s].empty()) {
      return Status::Protocol("the shard map gives no CURVE key for server " + std::to_string(s) + " at " +
                              endpoint + ", and this trainer uses CURVE");
    }
    options.curve = options_.curve;
    options.curve.server_key = options_.server_keys[s];
  }
  return MakeSocket(context_, zmq::socket_type::dealer, options);
}

Status PsClient::Reconnect(const std::vector<std::string>& endpoints, const std::vector<std::string>& keys) {
  if (endpoints.size() != endpoints_.size() || keys.size() != endpoints.size()) {
    return Status::Protocol("the scheduler named " + std::to_string(endpoints.size()) + " servers, not " +
                            std::to_string(endpoints_.size()));
  }
  options_.server_keys.resize(keys.size());
  for (uint32_t s = 0; s < endpoints.size(); ++s) {
    if (endpoints[s] == endpoints_[s] && keys[s] == options_.server_keys[s]) continue;
    options_.server_keys[s] = keys[s];
    auto socket = MakeServerSocket(s, endpoints[s]);
    if (!socket.ok()) return socket.status();
    sockets_[s].set(zmq::sockopt::linger, 0);
    sockets_[s] = std::move(*socket);
    HETPS_RETURN_IF_ERROR(hetps::Connect(sockets_[s], endpoints[s]));
    endpoints_[s] = endpoints[s];
  }
  awaiting_.assign(awaiting_.size(), false);
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

namespace {

// Which of `sockets` have a message: looks for one for up to `spin`, yielding the core between
// looks, so that a quick reply is taken without waking a sleeping thread; then sleeps for up to
// `timeout` until one comes.
std::vector<bool> AwaitReadable(const std::vector<zmq::socket_t*>& sockets, std::chrono::microseconds spin,
                                std::chrono::milliseconds timeout) {
  const auto spin_end = std::chrono::steady_clock::now() + spin;
  while (true) {
    auto readable = PollReadable(sockets, std::chrono::milliseconds(0));
    if (std::find(readable.begin(), readable.end(), true) != readable.end()) return readable;
    if (std::chrono::steady_clock::now() >= spin_end) return PollReadable(sockets, timeout);
    std::this_thread::yield();
  }
}

}  // namespace

Status PsClient::AwaitReplies(wire::Body expected, const char* request_name, std::vector<size_t> replies,
                              const std::function<Status(uint32_t, const Message&)>& accept) {
  using Clock = std::chrono::steady_clock;
  size_t remaining = std::accumulate(replies.begin(), replies.end(), size_t{0});
  std::vector<zmq::socket_t*> polled;
  for (auto& socket : sockets_) polled.push_back(&socket);
  auto last_progress = Clock::now();
  while (remaining > 0) {
    // The control channel heartbeats on its own thread; this loop only looks at how it stands.
    AwaitReadable(polled, options_.reply_spin, std::chrono::milliseconds(100));
    HETPS_RETURN_IF_ERROR(CheckControl());
    size_t taken = 0;
    HETPS_RETURN_IF_ERROR(TakeReplies(expected, request_name, replies, accept, &taken));
    remaining -= taken;
    if (taken > 0) last_progress = Clock::now();
    if (remaining > 0 && Clock::now() - last_progress > options_.request_timeout) {
      for (uint32_t s = 0; s < sockets_.size(); ++s) {
        if (replies[s] > 0) {
          return Status::Timeout(ServerName(s) + " did not answer a " + request_name + " within " +
                                 std::to_string(options_.request_timeout.count() / 1000) + " s");
        }
      }
    }
  }
  return Status::Ok();
}

Status PsClient::CheckControl() const {
  HETPS_RETURN_IF_ERROR(control_->Check());
  if (control_->paused() != 0) return Status::Unavailable("the scheduler paused the job (a server was lost)");
  if (const auto notice = control_->shutdown()) {
    return Status::Unavailable("the scheduler ended the job: " +
                               (notice->reason.empty() ? std::string("finished") : notice->reason));
  }
  return Status::Ok();
}

Status PsClient::TakeReplies(wire::Body expected, const char* request_name, std::vector<size_t>& replies,
                             const std::function<Status(uint32_t, const Message&)>& accept, size_t* taken) {
  for (uint32_t s = 0; s < sockets_.size(); ++s) {
    // Drain: a streamed step has several replies in flight per server.
    while (true) {
      auto received = TryReceive(sockets_[s], /*router=*/false, reply_limits_[s]);
      if (!received.ok()) return received.status();
      if (!received->has_value()) break;
      const Message& reply = **received;
      Status valid = reply.over_limit.empty() ? VerifyEnvelope(reply) : Status::Protocol(reply.over_limit);
      if (!valid.ok()) return Status::Protocol(ServerName(s) + " sent a malformed reply: " + valid.message());
      // An answer to a request made before the last recovery: what it answers was undone.
      if (reply.env().generation() < sender_->generation()) continue;
      if (reply.kind() == wire::Body::Error) {
        return Status::FailedPrecondition(ServerName(s) + " refused the " + request_name + ": " +
                                          reply.body<wire::Error>()->reason()->str());
      }
      if (reply.kind() != expected || replies[s] == 0) {
        return Status::Protocol(ServerName(s) + " answered a " + request_name + " with an unexpected " +
                                KindName(reply.kind()));
      }
      HETPS_RETURN_IF_ERROR(accept(s, reply));
      --replies[s];
      ++*taken;
    }
  }
  return Status::Ok();
}

std::vector<size_t> PsClient::OnePerServer() const {
  return std::vector<size_t>(sockets_.size(), 1);
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
  return AwaitReplies(wire::Body::Ack, "InitWeights", OnePerServer(),
                      [](uint32_t, const Message&) { return Status::Ok(); });
}

Status PsClient::AcceptWeights(uint32_t server, const Message& reply, const std::vector<float*>& weights,
                               PullResult* result) {
  const auto* body = reply.body<wire::Weights>();
  const wire::DType dtype = body->dtype();
  if (!IsWireFloat(dtype)) {
    return Status::Protocol(ServerName(server) + " sent weights as " + DTypeName(dtype));
  }
  const auto* ids = body->partitions();
  if (ids == nullptr || ids->size() != reply.tensors.size()) {
    return Status::Protocol(ServerName(server) + " sent weights listing " +
                            std::to_string(ids == nullptr ? 0 : ids->size()) + " partitions in " +
                            std::to_string(reply.tensors.size()) + " frames");
  }
  for (size_t i = 0; i < ids->size(); ++i) {
    const uint32_t id = ids->Get(i);
    if (id >= awaiting_.size() || !awaiting_[id] || map_.partitions()[id].server != server) {
      return Status::Protocol(ServerName(server) + " sent weights for partition " + std::to_string(id) +
                              ", which this trainer is not waiting for from it");
    }
    const PartitionInfo& p = map_.partitions()[id];
    const size_t bytes = p.length * DTypeSize(dtype);
    if (reply.tensors[i].size() != bytes) {
      return Status::Protocol(ServerName(server) + " sent " + std::to_string(reply.tensors[i].size()) +
                              " bytes for partition " + std::to_string(p.id) + ", expected " +
                              std::to_string(bytes) + " (" + DTypeName(dtype) + ")");
    }
    UnpackWeights(reply.tensors[i].data(), p.length, dtype, weights[p.tensor] + p.offset);
    bytes_pulled_ += bytes;
    awaiting_[id] = false;
    const uint64_t version = body->versions() && i < body->versions()->size() ? body->versions()->Get(i) : 0;
    versions_[p.id] = version;
    result->weight_version = std::max(result->weight_version, version);
  }
  result->round_samples = std::max(result->round_samples, body->round_samples());
  result->held_seconds = std::max(result->held_seconds, static_cast<double>(body->held_us()) * 1e-6);
  result->round_seconds = std::max(result->round_seconds, body->round_seconds());
  result->left_out = std::max(result->left_out, body->left_out());
  if (body->left_out() > left_out_[server]) {
    left_out_[server] = body->left_out();
    if (ShouldLogRefusal(left_out_[server])) {
      HETPS_LOG(WARNING) << ServerName(server) << " left out " << left_out_[server]
                         << " step(s) of this trainer's gradients so far: they held NaN or infinite values "
                            "(its log names the first element), so the weights did not take them; after "
                            "nonfinite_limit steps in a row the job drops this trainer. A learning rate too "
                            "large or float16 overflow are the usual causes";
    }
  }
  return Status::Ok();
}

Status PsClient::CheckAllReceived(const char* request_name) const {
  for (uint32_t id = 0; id < awaiting_.size(); ++id) {
    if (awaiting_[id]) {
      return Status::Protocol(ServerName(map_.partitions()[id].server) + " answered the " + request_name +
                              " without the weights of partition " + std::to_string(id));
    }
  }
  return Status::Ok();
}

Result<PsClient::PullResult> PsClient::Pull(uint64_t clock, bool latest, const std::vector<float*>& weights) {
  awaiting_.assign(awaiting_.size(), true);
  HETPS_RETURN_IF_ERROR(SendToAll([&](uint32_t s, Message* request) {
    flatbuffers::FlatBufferBuilder fbb(128 + 8 * partitions_of_[s].size());
    auto body = wire::CreatePullDirect(fbb, clock, latest, &partitions_of_[s], options_.wire_dtype);
    request->envelope = sender_->Seal(fbb, wire::Body::Pull, body.Union());
  }));
  PullResult result;
  HETPS_RETURN_IF_ERROR(AwaitReplies(
      wire::Body::Weights, "Pull", OnePerServer(),
      [&](uint32_t s, const Message& reply) { return AcceptWeights(s, reply, weights, &result); }));
  HETPS_RETURN_IF_ERROR(CheckAllReceived("Pull"));
  return result;
}

Result<PsClient::PullResult> PsClient::PushPull(uint64_t clock, uint32_t batch_size,
                                                const std::vector<const float*>& grads,
                                                std::shared_ptr<const void> owner,
                                                const std::vector<float*>& weights) {
  BeginStep(clock, batch_size);
  if (batch_size > 0) {
    for (size_t t = 0; t < map_.tensors().size(); ++t) {
      HETPS_RETURN_IF_ERROR(PushTensor(t, grads[t], owner));
    }
  }
  return FinishStep(weights);
}

void PsClient::BeginStep(uint64_t clock, uint32_t batch_size, uint32_t ahead, RoundPush round) {
  step_clock_ = clock;
  step_batch_ = batch_size;
  step_ahead_ = ahead;
  step_round_ = round;
  step_pushed_.assign(map_.tensors().size(), false);
  for (Outgoing& out : outgoing_) out = Outgoing{};
  step_messages_.assign(sockets_.size(), 0);
  awaiting_.assign(awaiting_.size(), false);
}

Status PsClient::PushTensor(size_t tensor, const float* grad, std::shared_ptr<const void> owner) {
  return PushTensor(tensor, grad, wire::DType::F32, std::move(owner));
}

Status PsClient::PushTensor(size_t tensor, const void* grad, wire::DType grad_dtype,
                            std::shared_ptr<const void> owner) {
  HETPS_CHECK(step_batch_ > 0 && tensor < step_pushed_.size() && !step_pushed_[tensor]);
  const wire::DType dtype = feedback_ ? wire::DType::I8 : options_.wire_dtype;
  HETPS_CHECK(grad_dtype == dtype || grad_dtype == wire::DType::F32) << DTypeName(grad_dtype);
  step_pushed_[tensor] = true;
  for (uint32_t id : partitions_of_tensor_[tensor]) {
    const PartitionInfo& p = map_.partitions()[id];
    Outgoing& out = outgoing_[p.server];
    const size_t bytes = p.length * DTypeSize(dtype);
    const auto* data = static_cast<const char*>(grad) + p.offset * DTypeSize(grad_dtype);
    if (feedback_) {
      out.frames.emplace_back(bytes);
      out.scales.push_back(feedback_->Encode(id, reinterpret_cast<const float*>(data),
                                             static_cast<int8_t*>(out.frames.back().data())));
    } else if (grad_dtype == dtype) {
      out.frames.push_back(BorrowFrame(data, bytes, owner));
    } else {
      // Narrowed straight into the frame ZeroMQ sends.
      out.frames.emplace_back(bytes);
      PackFloats(reinterpret_cast<const float*>(data), p.length, dtype, out.frames.back().data());
    }
    out.partitions.push_back(id);
    out.bytes += bytes;
    if (out.bytes >= options_.coalesce_bytes) HETPS_RETURN_IF_ERROR(Flush(p.server));
  }
  return Status::Ok();
}

Status PsClient::Flush(uint32_t server) {
  Outgoing& out = outgoing_[server];
  if (out.partitions.empty()) return Status::Ok();
  std::vector<uint64_t> versions;
  versions.reserve(out.partitions.size());
  for (uint32_t id : out.partitions) {
    versions.push_back(versions_[id]);
    awaiting_[id] = true;
  }
  // A push without data (batch_size 0) has empty frames, whatever the dtype: no scales.
  const bool int8 = feedback_ && step_batch_ > 0;
  flatbuffers::FlatBufferBuilder fbb(128 + 20 * out.partitions.size());
  auto body = wire::CreatePushDirect(fbb, step_clock_, step_batch_, &out.partitions, &versions,
                                     int8 ? wire::DType::I8 : options_.wire_dtype,
                                     /*pull=*/true, step_ahead_, step_round_.inner_steps, step_round_.sync_us,
                                     int8 ? &out.scales : nullptr, options_.wire_dtype);
  Message request;
  request.envelope = sender_->Seal(fbb, wire::Body::Push, body.Union());
  bytes_pushed_ += out.bytes;
  request.tensors = std::move(out.frames);
  out = Outgoing{};
  ++step_messages_[server];
  Status status = Send(sockets_[server], std::move(request));
  if (!status.ok())
    return Status::Unavailable("cannot send to " + ServerName(server) + ": " + status.message());
  return Status::Ok();
}

Result<PsClient::PullResult> PsClient::FinishStep(const std::vector<float*>& weights) {
  HETPS_RETURN_IF_ERROR(SendStep());
  return AwaitStep(weights);
}

Status PsClient::SendStep() {
  if (step_batch_ == 0) {
    // No data: every partition with an empty frame, so the sync rounds go on without this trainer.
    for (uint32_t s = 0; s < sockets_.size(); ++s) {
      for (uint32_t id : partitions_of_[s]) {
        outgoing_[s].partitions.push_back(id);
        outgoing_[s].frames.emplace_back();
      }
    }
  }
  for (size_t t = 0; t < step_pushed_.size(); ++t) {
    if (step_batch_ > 0 && !step_pushed_[t]) {
      return Status::Internal("step " + std::to_string(step_clock_) + " ended without the gradient of " +
                              map_.tensors()[t].name);
    }
  }
  for (uint32_t s = 0; s < sockets_.size(); ++s) HETPS_RETURN_IF_ERROR(Flush(s));
  step_awaited_ = step_messages_;
  step_result_ = PullResult{};
  return Status::Ok();
}

Result<PsClient::PullResult> PsClient::AwaitStep(const std::vector<float*>& weights) {
  HETPS_RETURN_IF_ERROR(AwaitReplies(
      wire::Body::Weights, "Push", std::exchange(step_awaited_, {}),
      [&](uint32_t s, const Message& reply) { return AcceptWeights(s, reply, weights, &step_result_); }));
  HETPS_RETURN_IF_ERROR(CheckAllReceived("Push"));
  return step_result_;
}

Result<bool> PsClient::PollStep(const std::vector<float*>& weights) {
  HETPS_RETURN_IF_ERROR(CheckControl());
  size_t taken = 0;
  HETPS_RETURN_IF_ERROR(TakeReplies(
      wire::Body::Weights, "Push", step_awaited_,
      [&](uint32_t s, const Message& reply) { return AcceptWeights(s, reply, weights, &step_result_); },
      &taken));
  return std::accumulate(step_awaited_.begin(), step_awaited_.end(), size_t{0}) == 0;
}

Status PsClient::MarkIdle(uint64_t clock) {
  HETPS_RETURN_IF_ERROR(SendToAll([&](uint32_t s, Message* request) {
    const auto& ids = partitions_of_[s];
    flatbuffers::FlatBufferBuilder fbb(128 + 8 * ids.size());
    auto body = wire::CreatePushDirect(fbb, clock, /*batch_size=*/0, &ids, nullptr, options_.wire_dtype,
                                       /*pull=*/false);
    request->envelope = sender_->Seal(fbb, wire::Body::Push, body.Union());
    request->tensors.resize(ids.size());  // empty frames
  }));
  return AwaitReplies(wire::Body::Ack, "Push", OnePerServer(),
                      [](uint32_t, const Message&) { return Status::Ok(); });
}

}  // namespace hetps
