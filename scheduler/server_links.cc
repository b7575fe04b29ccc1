#include "scheduler/server_links.h"

#include "common/logging.h"

namespace hetps {

Status ServerLinks::Connect(uint32_t rank, const std::string& endpoint, const std::string& server_key) {
  SocketOptions options;
  options.linger_ms = 0;
  options.router_mandatory = false;
  options.routing_id = token_;
  if (own_.on()) {
    if (server_key.empty()) {
      return Status::FailedPrecondition("server " + std::to_string(rank) +
                                        " has no CURVE public key among the job's keys");
    }
    options.curve = own_;
    options.curve.server_key = server_key;
  }
  auto socket = std::make_unique<zmq::socket_t>(MakeSocket(context_, zmq::socket_type::dealer, options));
  HETPS_RETURN_IF_ERROR(hetps::Connect(*socket, endpoint));
  links_[rank] = std::move(socket);
  return Status::Ok();
}

void ServerLinks::Disconnect(uint32_t rank) {
  links_.erase(rank);
}

Status ServerLinks::Send(uint32_t rank, zmq::message_t envelope, std::vector<zmq::message_t> frames) {
  auto it = links_.find(rank);
  if (it == links_.end()) return Status::Unavailable("no connection to server " + std::to_string(rank));
  Message message;
  message.envelope = std::move(envelope);
  message.tensors = std::move(frames);
  Status status = hetps::Send(*it->second, std::move(message), SendMode::kDontWait);
  if (!status.ok()) return status.WithContext("server " + std::to_string(rank));
  return Status::Ok();
}

std::vector<zmq::socket_t*> ServerLinks::sockets() {
  std::vector<zmq::socket_t*> sockets;
  for (auto& [rank, socket] : links_) sockets.push_back(socket.get());
  return sockets;
}

std::vector<std::pair<uint32_t, Message>> ServerLinks::ReceiveAll() {
  std::vector<std::pair<uint32_t, Message>> received;
  for (auto& [rank, socket] : links_) {
    while (true) {
      auto message = TryReceive(*socket, /*router=*/false);
      if (!message.ok()) {
        HETPS_LOG(WARNING) << "receiving from server " << rank << ": " << message.status().message();
        break;
      }
      if (!message->has_value()) break;
      received.emplace_back(rank, std::move(**message));
    }
  }
  return received;
}

}  // namespace hetps
