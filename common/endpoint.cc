#include "common/endpoint.h"

#include <cctype>

namespace hetps {
namespace {

constexpr const char* kForm = "give HOST:PORT or tcp://HOST:PORT";

bool AllDigits(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// What is wrong with `address` (what follows tcp://) as HOST:PORT, to follow its quoted value
// ("has no port"); empty when nothing is.
std::string TcpProblem(const std::string& address) {
  if (address.empty() || address.front() == ':') return "has no host";
  if (AllDigits(address)) return "has no host";
  size_t colon = std::string::npos;
  if (address.front() == '[') {
    // [ipv6]:port: the address's own colons stay inside the brackets.
    const size_t close = address.find(']');
    if (close == std::string::npos) return "has an IPv6 address without its closing ']'";
    if (close == 1) return "has no host";
    if (close + 1 < address.size() && address[close + 1] != ':') return "has something after the host's ']'";
    if (close + 1 < address.size()) colon = close + 1;
  } else {
    colon = address.rfind(':');
  }
  if (colon == std::string::npos || colon + 1 == address.size()) return "has no port";
  const std::string port = address.substr(colon + 1);
  if (port == "*") return "";
  if (!AllDigits(port)) return "has port '" + port + "', not a number (0..65535, or * to bind any)";
  if (port.size() > 5 || std::stoi(port) > 65535) return "has port " + port + ", out of range (0..65535)";
  return "";
}

}  // namespace

Result<std::string> NormalizeEndpoint(const std::string& value) {
  if (value.empty()) return Status::InvalidArgument(std::string("an empty endpoint; ") + kForm);
  const std::string quoted = "'" + value + "' ";
  const size_t scheme_end = value.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "tcp" : value.substr(0, scheme_end);
  const std::string rest = scheme_end == std::string::npos ? value : value.substr(scheme_end + 3);
  if (scheme == "tcp") {
    const std::string problem = TcpProblem(rest);
    if (!problem.empty()) return Status::InvalidArgument(quoted + problem + "; " + kForm);
    return "tcp://" + rest;
  }
  if (scheme == "ipc" || scheme == "inproc") {
    if (rest.empty())
      return Status::InvalidArgument(quoted + "has no " + (scheme == "ipc" ? "path" : "name"));
    return value;
  }
  return Status::InvalidArgument(quoted + "has an unknown scheme '" + scheme +
                                 "' (tcp://, ipc:// or inproc://); " + kForm);
}

}  // namespace hetps
