// HttpServer over real sockets: the three documents, the error statuses, and the bounds on slow
// and numerous clients.
#include "http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "http/status_json.h"

namespace hetps {
namespace {

uint16_t PortOf(const std::string& url) {
  const size_t colon = url.rfind(':');
  return static_cast<uint16_t>(std::stoi(url.substr(colon + 1)));
}

// A plain TCP client, closed on destruction.
class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~Client() { close(fd_); }
  bool connected() const { return connected_; }
  void Send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }
  // Everything until the server closes, or until `timeout` passes; `closed` says which.
  std::string ReadAll(std::chrono::milliseconds timeout, bool* closed = nullptr) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      char buffer[65536];
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        if (closed) *closed = true;
        return out;
      }
      out.append(buffer, static_cast<size_t>(n));
    }
    if (closed) *closed = false;
    return out;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

std::string Get(uint16_t port, const std::string& request) {
  Client client(port);
  client.Send(request);
  return client.ReadAll(std::chrono::seconds(5));
}

std::string StatusLine(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

std::string Body(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

std::shared_ptr<const StatusSnapshot> OneTrainer(uint64_t samples) {
  auto s = std::make_shared<StatusSnapshot>();
  s->mode = "async";
  MemberStatus t;
  t.role = "trainer";
  t.host = "h";
  t.device = "cpu";
  t.samples = samples;
  s->members.push_back(t);
  return s;
}

CATCH_TEST_CASE("The server answers /metrics, /status and / from the newest snapshot", "[http][server]") {
  SnapshotBoard board;
  board.Publish(OneTrainer(100));
  HttpServer server(board, {"127.0.0.1:0"});
  CATCH_REQUIRE(server.Start().ok());
  const uint16_t port = PortOf(server.url());
  const std::string metrics = Get(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CATCH_CHECK(StatusLine(metrics) == "HTTP/1.1 200 OK");
  CATCH_CHECK(metrics.find("Content-Type: text/plain; version=0.0.4") != std::string::npos);
  CATCH_CHECK(
      Body(metrics).find("hetps_trainer_samples_total{role=\"trainer\",rank=\"0\",host=\"h\",device=\"cpu\"} "
                         "100\n") != std::string::npos);
  board.Publish(OneTrainer(250));
  const std::string status = Get(port, "GET /status?x=1 HTTP/1.0\r\n\r\n");
  CATCH_CHECK(StatusLine(status) == "HTTP/1.0 200 OK");
  auto parsed = ParseStatusJson(Body(status), "/status");
  CATCH_REQUIRE(parsed.ok());
  CATCH_CHECK(parsed->members.at(0).samples == 250);
  const std::string page = Get(port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CATCH_CHECK(StatusLine(page) == "HTTP/1.1 200 OK");
  CATCH_CHECK(Body(page).find("<!DOCTYPE html>") == 0);
  const std::string head = Get(port, "HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CATCH_CHECK(StatusLine(head) == "HTTP/1.1 200 OK");
  CATCH_CHECK(head.find("Content-Length: " + std::to_string(Body(page).size())) != std::string::npos);
  CATCH_CHECK(Body(head).empty());
  // Two requests on one kept-alive connection.
  Client client(port);
  client.Send(
      "GET /status HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string both = client.ReadAll(std::chrono::seconds(5));
  CATCH_CHECK(both.find("HTTP/1.1 200 OK") != both.rfind("HTTP/1.1 200 OK"));
}

CATCH_TEST_CASE("Bad requests get 404, 405, 400, 431 and 413", "[http][server]") {
  SnapshotBoard board;
  HttpServer server(board, {"127.0.0.1:0"});
  CATCH_REQUIRE(server.Start().ok());
  const uint16_t port = PortOf(server.url());
  CATCH_CHECK(StatusLine(Get(port, "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")) ==
              "HTTP/1.1 404 Not Found");
  const std::string post = Get(port, "DELETE /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CATCH_CHECK(StatusLine(post) == "HTTP/1.1 405 Method Not Allowed");
  CATCH_CHECK(post.find("Allow: GET, HEAD") != std::string::npos);
  CATCH_CHECK(StatusLine(Get(port, "HELLO THERE\r\n\r\n")) == "HTTP/1.1 400 Bad Request");
  CATCH_CHECK(StatusLine(Get(port, std::string("GET / HTTP/1.1\r\nX-Junk: ") + std::string(20000, 'a') +
                                       "\r\n\r\n")) == "HTTP/1.1 431 Request Header Fields Too Large");
  CATCH_CHECK(StatusLine(Get(port, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
                                       std::string(100000, 'b'))) == "HTTP/1.1 413 Payload Too Large");
  CATCH_CHECK(server.counters().errors == 5);
}

CATCH_TEST_CASE("A client that never finishes its request is dropped after the request timeout",
                "[http][server]") {
  SnapshotBoard board;
  HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  options.request_timeout = std::chrono::milliseconds(300);
  HttpServer server(board, options);
  CATCH_REQUIRE(server.Start().ok());
  Client slow(PortOf(server.url()));
  slow.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n");  // and never the blank line
  bool closed = false;
  const auto start = std::chrono::steady_clock::now();
  const std::string answer = slow.ReadAll(std::chrono::seconds(5), &closed);
  CATCH_CHECK(closed);
  CATCH_CHECK(answer.empty());
  CATCH_CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  // The stream's timer closes the socket before the read's handler counts the drop, so the
  // client can see the close first: wait for the count.
  const auto counted_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (server.counters().dropped == 0 && std::chrono::steady_clock::now() < counted_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CATCH_CHECK(server.counters().dropped == 1);
}

CATCH_TEST_CASE("At max_connections a new connection takes the place of the oldest one waiting for a request",
                "[http][server]") {
  SnapshotBoard board;
  board.Publish(OneTrainer(7));
  HttpServerOptions options;
  options.listen = "127.0.0.1:0";
  options.max_connections = 4;
  HttpServer server(board, options);
  CATCH_REQUIRE(server.Start().ok());
  const uint16_t port = PortOf(server.url());
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(std::make_unique<Client>(port));
    idle.back()->Send("G");  // a request begun, not finished
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // accepted in this order
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all four accepted
  // A client that sends its request at once is served although idle ones hold every slot ...
  CATCH_CHECK(StatusLine(Get(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")) ==
              "HTTP/1.1 200 OK");
  // ... in place of the oldest, which is closed unanswered and counted as dropped; the rest stay.
  bool closed = false;
  CATCH_CHECK(idle[0]->ReadAll(std::chrono::seconds(2), &closed).empty());
  CATCH_CHECK(closed);
  for (size_t i = 1; i < idle.size(); ++i) {
    closed = true;
    CATCH_CHECK(idle[i]->ReadAll(std::chrono::milliseconds(100), &closed).empty());
    CATCH_CHECK_FALSE(closed);
  }
  CATCH_CHECK(server.counters().dropped == 1);
  CATCH_CHECK(server.counters().requests == 1);
}

CATCH_TEST_CASE("A malformed or taken listen address is an error naming it", "[http][server]") {
  SnapshotBoard board;
  for (const char* bad : {"7480", "localhost:7480", "127.0.0.1:99999", "127.0.0.1:"}) {
    HttpServer server(board, {bad});
    const Status status = server.Start();
    CATCH_CHECK(!status.ok());
    CATCH_CHECK(status.message().find(bad) != std::string::npos);
  }
  HttpServer first(board, {"127.0.0.1:0"});
  CATCH_REQUIRE(first.Start().ok());
  const std::string taken = "127.0.0.1:" + std::to_string(PortOf(first.url()));
  HttpServer second(board, {taken});
  const Status status = second.Start();
  CATCH_CHECK(!status.ok());
  CATCH_CHECK(status.message().find(taken) != std::string::npos);
}

}  // namespace
}  // namespace hetps
