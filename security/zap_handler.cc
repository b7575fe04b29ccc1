#include "security/zap_handler.h"

#include <cstring>
#include <vector>

#include "common/logging.h"

namespace hetps {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";

std::string Text(const zmq::message_t& frame) {
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}

}  // namespace

Result<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& context, const AllowedKeys& allowed,
                                                      RefusalCounter* refusals, std::string what) {
  std::map<std::string, std::string> names;
  for (const auto& [name, key] : allowed) {
    const std::string& z85 = key.key;
    std::string binary(32, '\0');
    if (z85.size() != 40 ||
        zmq_z85_decode(reinterpret_cast<uint8_t*>(binary.data()), z85.c_str()) == nullptr) {
      return Status::InvalidArgument("the public key of '" + name + "' is not a Z85 CURVE key");
    }
    names[binary] = name;
  }
  zmq::socket_t socket(context, zmq::socket_type::rep);
  socket.set(zmq::sockopt::linger, 0);
  try {
    socket.bind(kZapEndpoint);
  } catch (const zmq::error_t& e) {
    return Status::FailedPrecondition("cannot start the CURVE authentication handler of " + what + ": " +
                                      e.what() + " (one per ZeroMQ context)");
  }
  return std::unique_ptr<ZapHandler>(
      new ZapHandler(context, std::move(socket), std::move(names), refusals, std::move(what)));
}

ZapHandler::ZapHandler(zmq::context_t& context, zmq::socket_t socket,
                       std::map<std::string, std::string> names_by_key, RefusalCounter* refusals,
                       std::string what)
    : context_(context),
      socket_(std::move(socket)),
      names_(std::move(names_by_key)),
      refusals_(refusals),
      what_(std::move(what)) {
  thread_ = std::thread([this] { Loop(); });
}

ZapHandler::~ZapHandler() {
  stop_.store(true);
  thread_.join();
}

void ZapHandler::Watch(zmq::socket_t& socket) {
  static std::atomic<uint64_t> next{0};
  const std::string endpoint = "inproc://hetps-zap-watch-" + std::to_string(next.fetch_add(1));
  zmq_socket_monitor(socket.handle(), endpoint.c_str(), kHandshakeFailureEvents);
  auto events = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pair);
  events->set(zmq::sockopt::linger, 0);
  events->connect(endpoint);
  std::lock_guard<std::mutex> lock(watch_mutex_);  // hands the socket over to the handler thread
  new_watches_.push_back(std::move(events));
}

void ZapHandler::Loop() {
  SetThreadLogTag(what_ + " authentication");
  while (!stop_.load()) {
    {
      std::lock_guard<std::mutex> lock(watch_mutex_);
      for (auto& events : new_watches_) watches_.push_back(std::move(events));
      new_watches_.clear();
    }
    std::vector<zmq::pollitem_t> items = {{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0}};
    for (auto& events : watches_) items.push_back({static_cast<void*>(*events), 0, ZMQ_POLLIN, 0});
    try {
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(100));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      HETPS_LOG(ERROR) << "the CURVE authentication handler stopped: " << e.what();
      return;
    }
    if ((items[0].revents & ZMQ_POLLIN) != 0 && !Answer()) return;
    for (size_t i = 1; i < items.size(); ++i) {
      if ((items[i].revents & ZMQ_POLLIN) != 0) TakeHandshakeFailures(*watches_[i - 1]);
    }
  }
  watches_.clear();
  socket_.close();
}

void ZapHandler::TakeHandshakeFailures(zmq::socket_t& events) {
  while (true) {
    zmq::message_t event, address;
    if (!events.recv(event, zmq::recv_flags::dontwait)) return;
    if (event.more()) (void)events.recv(address, zmq::recv_flags::none);
    if (event.size() < 6) continue;
    uint16_t id = 0;
    uint32_t value = 0;
    std::memcpy(&id, event.data(), 2);
    std::memcpy(&value, static_cast<const char*>(event.data()) + 2, 4);
    HandshakeFailed(id, value, Text(address));
  }
}

void ZapHandler::HandshakeFailed(uint16_t event, uint32_t value, const std::string& address) {
  const std::string reason =
      event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL && value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
          ? "it does not use CURVE"
          : "its CURVE handshake failed (ZeroMQ event " + std::to_string(event) + ", value " +
                std::to_string(value) + ")";
  Refused("a peer of " + address, reason);
}

void ZapHandler::Refused(const std::string& address, const std::string& reason) {
  const uint64_t count = refused_.fetch_add(1) + 1;
  if (refusals_ != nullptr) refusals_->Add(Refusal::Unauthenticated);
  if (ShouldLogRefusal(count)) {
    HETPS_LOG(WARNING) << "refused a connection from " << address << " (unauthenticated, " << count
                       << " refused so far): " << reason;
  }
}

bool ZapHandler::Answer() {
  // version, request id, domain, address, routing id, mechanism, credentials...
  std::vector<zmq::message_t> request;
  try {
    do {
      request.emplace_back();
      if (!socket_.recv(request.back(), zmq::recv_flags::none)) return false;
    } while (request.back().more());
  } catch (const zmq::error_t& e) {
    HETPS_LOG(ERROR) << "the CURVE authentication handler cannot receive: " << e.what();
    return false;
  }
  std::string status = "400", reason, user_id;
  const std::string address = request.size() > 3 ? Text(request[3]) : "an unknown address";
  if (request.size() < 6 || Text(request[0]) != "1.0") {
    reason = "malformed authentication request";
  } else if (Text(request[5]) != "CURVE" || request.size() < 7) {
    reason = "not a CURVE handshake (" + Text(request[5]) + ")";
  } else {
    auto it = names_.find(Text(request[6]));
    if (it == names_.end()) {
      char z85[41] = {0};
      zmq_z85_encode(z85, static_cast<const uint8_t*>(request[6].data()), 32);
      reason = "its public key " + std::string(z85) + " is not among the " + std::to_string(names_.size()) +
               " allowed keys";
    } else {
      status = "200";
      user_id = it->second;
    }
  }
  if (status == "200") {
    admitted_.fetch_add(1);
  } else {
    Refused(address, reason);
  }
  const std::string request_id = request.size() > 1 ? Text(request[1]) : "";
  const std::vector<std::string> reply = {"1.0",   request_id, status, status == "200" ? "OK" : reason,
                                          user_id, ""};
  try {
    for (size_t i = 0; i < reply.size(); ++i) {
      socket_.send(zmq::buffer(reply[i]),
                   i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  } catch (const zmq::error_t& e) {
    HETPS_LOG(ERROR) << "the CURVE authentication handler cannot answer: " << e.what();
    return false;
  }
  return true;
}

}  // namespace hetps
