// A bare ZeroMQ echo, the baseline of the data-plane benchmarks: each server thread answers every
// message with one of the same size, sent from its own buffer without copying; the client sends
// the same messages as the PS client does (one per partition when every partition is larger than
// the client's coalescing threshold), zero-copy too, all before it waits for the replies, and
// waits for each as the PS client does: it looks for it for `reply_spin`, yielding the core
// between looks, before it sleeps until it comes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "common/status.h"

namespace hetps::bench {

class Echo {
 public:
  // One server thread per element of `frames_per_server`, which lists the sizes of the messages
  // sent to it each round; `bytes`: their sum over every server; `reply_spin`: as
  // PsClient::Options::reply_spin.
  Echo(const std::vector<std::vector<size_t>>& frames_per_server, size_t bytes,
       std::chrono::microseconds reply_spin);
  ~Echo();

  // Sends every message and waits for every reply.
  Status Round();

 private:
  void Serve(zmq::socket_t& socket);
  bool Receive(zmq::socket_t& socket, std::vector<zmq::message_t>* reply);

  zmq::context_t context_;
  std::vector<std::vector<size_t>> frames_;
  std::vector<char> buffer_;
  std::chrono::microseconds reply_spin_;
  std::vector<zmq::socket_t> dealers_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
};

}  // namespace hetps::bench
