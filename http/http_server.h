// HttpServer: the scheduler's status endpoint. Serves GET /metrics (Prometheus text), GET /status
// (JSON) and GET / (the status page), each rendered from the newest snapshot on a SnapshotBoard,
// with Boost.Beast on one thread of its own (Boost.Asio's io_context), at the lowest CPU priority.
//
// It never touches the scheduler's state and never blocks its loop: the loop publishes snapshots
// and goes on. Hostile clients are bounded: at most max_connections at once (a connection beyond
// them takes the place of the oldest one still waiting for a request, so that idle or slow
// clients cannot lock out one that sends its request at once; when every one is answering, the
// new one is closed on accept), a request must arrive whole within request_timeout, headers beyond
// header_limit_bytes get 431, a body beyond max_body_bytes 413, anything unparsable 400, a method other than
// GET or HEAD 405, an unknown path 404. Start and Stop from one thread; counters from any.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "http/status_snapshot.h"

namespace hetps {

struct HttpServerOptions {
  std::string listen;                               // "ADDR:PORT" ("[::1]:PORT"); port 0 picks one
  uint32_t max_connections = 64;                    // open at once; a new one evicts the oldest idle one
  std::chrono::milliseconds request_timeout{5000};  // a request's header (and body) must arrive within it
  std::chrono::milliseconds idle_timeout{15000};    // a kept-alive connection waits this long for the next
  std::chrono::milliseconds write_timeout{5000};    // a response must be taken within it
  uint32_t header_limit_bytes = 8192;               // request line and headers
  uint32_t max_body_bytes = 1024;                   // GET requests carry none; a little is tolerated
  uint32_t max_requests_per_connection = 1000;      // then the connection is closed
};

// Splits "ADDR:PORT" (IPv6 in brackets); InvalidArgument naming `what` and the text otherwise.
Status ParseHostPort(const std::string& text, const std::string& what, std::string* host, uint16_t* port);

class HttpServer {
 public:
  HttpServer(const SnapshotBoard& board, HttpServerOptions options);
  ~HttpServer();  // Stop()

  // Binds and starts the server thread. InvalidArgument naming the address when it is malformed
  // or cannot be bound (e.g. in use).
  Status Start();
  // "http://127.0.0.1:7480/" once started (the port actually bound).
  const std::string& url() const { return url_; }
  // Closes every connection and joins the thread. Idempotent; counters() stay readable.
  void Stop();

  struct Counters {
    uint64_t requests = 0;  // answered with any status
    uint64_t errors = 0;    // answered 4xx or 5xx
    uint64_t dropped = 0;   // closed unanswered: over max_connections, evicted mid-request, timed out, reset
  };
  Counters counters() const;

  class Impl;

 private:
  const SnapshotBoard& board_;
  HttpServerOptions options_;
  std::string url_;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
};

}  // namespace hetps
