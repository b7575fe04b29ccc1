#include "http/http_server.h"

#include <array>
#include <list>
#include <optional>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "common/logging.h"
#include "http/metrics_text.h"
#include "http/status_json.h"
#include "http/status_page.h"

namespace hetps {

namespace {
constexpr auto kDrainTime = std::chrono::seconds(1);
}  // namespace

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using Tcp = asio::ip::tcp;

Status ParseHostPort(const std::string& text, const std::string& what, std::string* host, uint16_t* port) {
  const size_t colon = text.rfind(':');
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(what + " '" + text + "': " + why +
                                   " (expected ADDR:PORT, e.g. 127.0.0.1:7480)");
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return bad("no address and port");
  std::string address = text.substr(0, colon);
  if (address.front() == '[' && address.back() == ']') address = address.substr(1, address.size() - 2);
  const std::string digits = text.substr(colon + 1);
  if (digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos)
    return bad("bad port");
  const unsigned long value = std::stoul(digits);
  if (value > 65535) return bad("port above 65535");
  boost::system::error_code ec;
  asio::ip::make_address(address, ec);
  if (ec) return bad("'" + address + "' is not an IP address");
  *host = address;
  *port = static_cast<uint16_t>(value);
  return Status::Ok();
}

class HttpServer::Impl {
 public:
  Impl(const SnapshotBoard& board, const HttpServerOptions& options) : board_(board), options_(options) {}

  Status Bind(const std::string& host, uint16_t port, uint16_t* bound) {
    boost::system::error_code ec;
    const Tcp::endpoint endpoint(asio::ip::make_address(host), port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      return Status::InvalidArgument("cannot listen for HTTP on " + options_.listen + ": " + ec.message());
    *bound = acceptor_.local_endpoint().port();
    return Status::Ok();
  }

  void Run() {
#ifdef __linux__
    // Status pages are never worth training time: under a flood this thread yields to the loop.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
#endif
    Accept();
    ioc_.run();
  }

  void Stop() {
    asio::post(ioc_, [this] {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      ioc_.stop();
    });
  }

  HttpServer::Counters counters() const {
    return {requests_.load(), errors_.load(), dropped_.load()};
  }

 private:
  class Session;

  void Accept();
  // At max_connections: closes the oldest open connection still waiting for (the rest of) a
  // request, so that a client that sends its request at once is served while idle or slow ones
  // hold every slot. False when every open connection is busy answering.
  bool EvictOldestWaiting();
  // The response to `request`: the page, JSON, metrics or an error status.
  http::response<http::string_body> Respond(const http::request<http::string_body>& request);

  // Declared before ioc_: sessions destroyed with the io_context still count.
  const SnapshotBoard& board_;
  HttpServerOptions options_;
  std::atomic<uint64_t> requests_{0}, errors_{0}, dropped_{0};
  std::atomic<uint32_t> open_{0};
  asio::io_context ioc_{1};
  Tcp::acceptor acceptor_{ioc_};
  // Every session in the order accepted; used by the io_context's one thread only.
  std::list<std::weak_ptr<Session>> sessions_;
};

class HttpServer::Impl::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Impl& server, Tcp::socket socket) : server_(server), stream_(std::move(socket)) { ++server_.open_; }
  ~Session() { --server_.open_; }

  bool waiting() const { return waiting_; }
  // Closes the connection to make room for a new one; a request begun counts as dropped.
  void Evict() {
    if (parser_ && parser_->got_some()) ++server_.dropped_;
    evicted_ = true;
    Close();
  }

  void Read(bool first) {
    waiting_ = true;
    parser_.emplace();
    parser_->header_limit(server_.options_.header_limit_bytes);
    parser_->body_limit(server_.options_.max_body_bytes);
    stream_.expires_after(first ? server_.options_.request_timeout : server_.options_.idle_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

 private:
  void OnRead(beast::error_code ec) {
    waiting_ = false;
    if (evicted_) return;  // counted by Evict
    if (ec == http::error::end_of_stream) return Close();
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      return Fail(http::status::request_header_fields_too_large, "request headers over the limit");
    }
    if (ec == http::error::body_limit)
      return Fail(http::status::payload_too_large, "request body over the limit");
    if (ec == beast::error::timeout || ec == asio::error::connection_reset || ec == asio::error::eof ||
        ec == asio::error::operation_aborted) {
      if (!parser_->got_some()) return Close();  // an idle keep-alive connection, or nothing at all
      ++server_.dropped_;
      return Close();
    }
    if (ec) return Fail(http::status::bad_request, "malformed request: " + ec.message());
    // A request's header and body are in: the response may take its own time.
    stream_.expires_after(server_.options_.write_timeout);
    auto response = std::make_shared<http::response<http::string_body>>(server_.Respond(parser_->get()));
    ++served_;
    if (served_ >= server_.options_.max_requests_per_connection) response->keep_alive(false);
    Write(response);
  }

  // Answers `status` and closes: the connection's state is unknown after a bad request.
  void Fail(http::status status, const std::string& why) {
    auto response = std::make_shared<http::response<http::string_body>>(status, 11);
    response->set(http::field::content_type, "text/plain; charset=utf-8");
    response->body() = why + "\n";
    response->keep_alive(false);
    response->prepare_payload();
    ++server_.requests_;
    ++server_.errors_;
    stream_.expires_after(server_.options_.write_timeout);
    Write(response);
  }

  void Write(const std::shared_ptr<http::response<http::string_body>>& response) {
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response](beast::error_code ec, size_t) {
                        if (ec) {
                          ++self->server_.dropped_;
                          return self->Close();
                        }
                        if (!response->keep_alive()) return self->DrainAndClose();
                        self->Read(/*first=*/false);
                      });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(Tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  // Ends the connection after a response: reads and discards what the client still sends, for a
  // moment, so that closing with unread bytes does not reset the connection before the client
  // has read the response (a refused oversized request leaves its rest unread).
  void DrainAndClose() {
    beast::error_code ignored;
    stream_.socket().shutdown(Tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kDrainTime);  // for the whole drain: the expiry is not renewed per read
    Drain();
  }
  void Drain() {
    stream_.async_read_some(asio::buffer(drain_), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->Close();
      self->Drain();
    });
  }

  Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  uint32_t served_ = 0;
  bool waiting_ = false;  // for (the rest of) a request, not answering one
  bool evicted_ = false;
  std::array<char, 4096> drain_;
};

void HttpServer::Impl::Accept() {
  acceptor_.async_accept(asio::make_strand(ioc_), [this](beast::error_code ec, Tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      if (open_.load() >= options_.max_connections && !EvictOldestWaiting()) {
        ++dropped_;
        boost::system::error_code ignored;
        socket.close(ignored);
      } else {
        auto session = std::make_shared<Session>(*this, std::move(socket));
        // Closed sessions leave their entries behind; drop them before the list outgrows the limit.
        if (sessions_.size() >= 2 * static_cast<size_t>(options_.max_connections)) {
          sessions_.remove_if([](const std::weak_ptr<Session>& entry) { return entry.expired(); });
        }
        sessions_.push_back(session);
        session->Read(/*first=*/true);
      }
    }
    Accept();
  });
}

bool HttpServer::Impl::EvictOldestWaiting() {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    std::shared_ptr<Session> session = it->lock();
    if (!session) {
      it = sessions_.erase(it);
      continue;
    }
    if (session->waiting()) {
      sessions_.erase(it);
      session->Evict();
      return true;
    }
    ++it;
  }
  return false;
}

http::response<http::string_body> HttpServer::Impl::Respond(const http::request<http::string_body>& request) {
  ++requests_;
  http::response<http::string_body> response(http::status::ok, request.version());
  response.keep_alive(request.keep_alive());
  response.set(http::field::server, "hetps-scheduler");
  response.set(http::field::cache_control, "no-store");
  std::string target(request.target());
  target = target.substr(0, target.find('?'));
  const bool head = request.method() == http::verb::head;
  auto fail = [&](http::status status, const std::string& text) {
    ++errors_;
    response.result(status);
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = text + "\n";
  };
  if (request.method() != http::verb::get && !head) {
    fail(http::status::method_not_allowed, "only GET and HEAD are served");
    response.set(http::field::allow, "GET, HEAD");
  } else if (target == "/metrics") {
    response.set(http::field::content_type, kMetricsContentType);
    response.body() = RenderMetrics(*board_.Latest());
  } else if (target == "/status") {
    response.set(http::field::content_type, "application/json");
    response.body() = RenderStatusJson(*board_.Latest());
  } else if (target == "/" || target == "/index.html") {
    response.set(http::field::content_type, "text/html; charset=utf-8");
    response.body() = RenderStatusPage(*board_.Latest());
  } else {
    fail(http::status::not_found, "no such page; try /, /status or /metrics");
  }
  response.prepare_payload();
  if (head) response.body().clear();  // the length stays that of the GET
  return response;
}

HttpServer::HttpServer(const SnapshotBoard& board, HttpServerOptions options)
    : board_(board), options_(std::move(options)) {}

HttpServer::~HttpServer() {
  Stop();
}

Status HttpServer::Start() {
  std::string host;
  uint16_t port = 0;
  HETPS_RETURN_IF_ERROR(ParseHostPort(options_.listen, "http listen address", &host, &port));
  impl_ = std::make_unique<Impl>(board_, options_);
  uint16_t bound = 0;
  Status status = impl_->Bind(host, port, &bound);
  if (!status.ok()) {
    impl_.reset();
    return status;
  }
  const bool v6 = host.find(':') != std::string::npos;
  url_ = "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(bound) + "/";
  thread_ = std::thread([impl = impl_.get()] {
    SetThreadLogTag("http");
    impl->Run();
  });
  return Status::Ok();
}

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  impl_->Stop();
  thread_.join();
}

HttpServer::Counters HttpServer::counters() const {
  return impl_ ? impl_->counters() : Counters{};
}

}  // namespace hetps
