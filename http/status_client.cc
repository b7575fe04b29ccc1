#include "http/status_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <zmq.hpp>

#include "common/handshake_monitor.h"
#include "common/message.h"
#include "common/transport.h"

namespace hetps {

Result<std::string> FetchStatusOverZmq(const std::string& endpoint, std::chrono::milliseconds timeout,
                                       const CurveKeys& curve) {
  zmq::context_t context(1);
  SocketOptions options;
  options.linger_ms = 0;
  options.max_message_bytes = int64_t{64} << 20;
  options.curve = curve;
  zmq::socket_t socket = MakeSocket(context, zmq::socket_type::dealer, options);
  // A refused handshake would otherwise look like a scheduler that never answers.
  HandshakeMonitor monitor(context, socket);
  HETPS_RETURN_IF_ERROR(Connect(socket, endpoint).WithContext("--scheduler"));
  Sender sender(wire::Role::Unknown);
  Message request;
  request.envelope = sender.MakeEmpty(wire::Body::StatusRequest);
  HETPS_RETURN_IF_ERROR(Send(socket, std::move(request), SendMode::kDontWait).WithContext(endpoint));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const std::vector<bool> readable =
        PollReadable({&socket, &monitor.socket()}, std::max(left, std::chrono::milliseconds(1)));
    if (readable[1]) {
      if (auto failure = monitor.TakeFailure()) {
        return Status::FailedPrecondition("the scheduler at " + endpoint +
                                          " refused the connection: " + *failure);
      }
    }
    if (!readable[0]) continue;
    auto received = TryReceive(socket, /*router=*/false);
    if (!received.ok()) return received.status();
    if (!received->has_value()) continue;
    Message& reply = **received;
    HETPS_RETURN_IF_ERROR(VerifyEnvelope(reply).WithContext("the answer from " + endpoint));
    if (reply.kind() == wire::Body::Error) {
      return Status::Unavailable(
          endpoint + " refused the status request: " + reply.body<wire::Error>()->reason()->str());
    }
    if (reply.kind() != wire::Body::StatusReply) continue;
    return reply.body<wire::StatusReply>()->json()->str();
  }
  return Status::Unavailable("no answer from a scheduler at " + endpoint + " within " +
                             std::to_string(timeout.count()) + " ms (is the job running there?)");
}

Result<std::string> FetchStatusOverHttp(const std::string& url, std::chrono::milliseconds timeout) {
  namespace beast = boost::beast;
  namespace http = boost::beast::http;
  using Tcp = boost::asio::ip::tcp;
  const std::string prefix = "http://";
  if (url.compare(0, prefix.size(), prefix) != 0) {
    return Status::InvalidArgument("--http '" + url + "': expected http://HOST:PORT[/]");
  }
  std::string rest = url.substr(prefix.size());
  rest = rest.substr(0, rest.find('/'));
  const size_t colon = rest.rfind(':');
  std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
  const std::string port = colon == std::string::npos ? "80" : rest.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty() || port.empty()) return Status::InvalidArgument("--http '" + url + "': no host or port");
  try {
    boost::asio::io_context ioc;
    Tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.expires_after(timeout);
    stream.connect(resolver.resolve(host, port));
    http::request<http::empty_body> request(http::verb::get, "/status", 11);
    request.set(http::field::host, rest);
    request.set(http::field::user_agent, "hetps-status");
    http::write(stream, request);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    http::read(stream, buffer, parser);
    beast::error_code ignored;
    stream.socket().shutdown(Tcp::socket::shutdown_both, ignored);
    const auto& response = parser.get();
    if (response.result() != http::status::ok) {
      return Status::Unavailable(url + " answered " + std::to_string(response.result_int()) +
                                 " to GET /status");
    }
    return response.body();
  } catch (const std::exception& e) {
    return Status::Unavailable("cannot read " + url + "status: " + e.what());
  }
}

}  // namespace hetps
