// A bare ZeroMQ echo, the baseline of the data-plane benchmarks: each server thread answers every
// message with one of the same size, sent from its own buffer without copying; the client sends
// the same messages as the PS client does (one per partition when every partition is larger than
// the client's coalescing threshold), zero-copy too, all before it waits for the replies.
#pragma once

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "common/status.h"

namespace hetps::bench {

class Echo {
 public:
  // One server thread per element of `frames_per_server`, which lists the sizes of the messages
  // sent to it each round; `bytes`: their sum over every server.
  Echo(const std::vector<std::vector<size_t>>& frames_per_server, size_t bytes);
  ~Echo();

  // Sends every message and waits for every reply.
  Status Round();

 private:
  void Serve(zmq::socket_t& socket);

  zmq::context_t context_;
  std::vector<std::vector<size_t>> frames_;
  std::vector<char> buffer_;
  std::vector<zmq::socket_t> dealers_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
};

}  // namespace hetps::bench
