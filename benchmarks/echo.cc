#include "benchmarks/echo.h"

#include <chrono>
#include <iterator>
#include <string>

#include <zmq_addon.hpp>

namespace hetps::bench {
namespace {

void NoFree(void*, void*) {}

}  // namespace

Echo::Echo(const std::vector<std::vector<size_t>>& frames_per_server, size_t bytes,
           std::chrono::microseconds reply_spin)
    : context_(1), frames_(frames_per_server), buffer_(bytes), reply_spin_(reply_spin) {
  for (size_t s = 0; s < frames_.size(); ++s) {
    zmq::socket_t router(context_, zmq::socket_type::router);
    router.set(zmq::sockopt::linger, 0);
    router.bind("tcp://127.0.0.1:*");
    const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
    threads_.emplace_back([this, socket = std::move(router)]() mutable { Serve(socket); });
    dealers_.emplace_back(context_, zmq::socket_type::dealer);
    dealers_.back().set(zmq::sockopt::linger, 0);
    dealers_.back().connect(endpoint);
  }
}

Echo::~Echo() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
}

Status Echo::Round() {
  size_t offset = 0;
  for (size_t s = 0; s < frames_.size(); ++s) {
    for (size_t size : frames_[s]) {
      zmq::message_t frame(buffer_.data() + offset, size, NoFree, nullptr);
      offset += size;
      dealers_[s].send(frame, zmq::send_flags::none);
    }
  }
  for (size_t s = 0; s < frames_.size(); ++s) {
    for (size_t f = 0; f < frames_[s].size(); ++f) {
      std::vector<zmq::message_t> reply;
      if (!Receive(dealers_[s], &reply)) return Status::Internal("echo lost");
    }
  }
  return Status::Ok();
}

bool Echo::Receive(zmq::socket_t& socket, std::vector<zmq::message_t>* reply) {
  const auto spin_end = std::chrono::steady_clock::now() + reply_spin_;
  while (std::chrono::steady_clock::now() < spin_end) {
    if (zmq::recv_multipart(socket, std::back_inserter(*reply), zmq::recv_flags::dontwait)) return true;
    std::this_thread::yield();
  }
  return zmq::recv_multipart(socket, std::back_inserter(*reply)).has_value();
}

void Echo::Serve(zmq::socket_t& socket) {
  std::vector<char> own(buffer_.size());
  while (!stop_) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(100));
    if (!(item.revents & ZMQ_POLLIN)) continue;
    std::vector<zmq::message_t> request;
    (void)zmq::recv_multipart(socket, std::back_inserter(request));
    std::vector<zmq::message_t> reply;
    reply.push_back(std::move(request[0]));  // routing id
    size_t offset = 0;
    for (size_t f = 1; f < request.size(); ++f) {
      reply.emplace_back(own.data() + offset, request[f].size(), NoFree, nullptr);
      offset += request[f].size();
    }
    zmq::send_multipart(socket, reply);
  }
}

}  // namespace hetps::bench
