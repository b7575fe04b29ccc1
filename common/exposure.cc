#include "common/exposure.h"

#include "common/logging.h"

namespace hetps {

bool IsLoopbackOnly(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0) return true;
  const std::string tcp = "tcp://";
  if (endpoint.rfind(tcp, 0) != 0) return false;
  const std::string address = endpoint.substr(tcp.size());
  // IPv6 addresses come in brackets: tcp://[::1]:7400.
  if (address.rfind("[::1]:", 0) == 0) return true;
  const auto colon = address.rfind(':');
  const std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  return host == "localhost" || host.rfind("127.", 0) == 0;
}

bool WarnIfExposed(const std::string& what, const std::string& bound, bool curve) {
  if (curve || IsLoopbackOnly(bound)) return false;
  HETPS_LOG(WARNING)
      << "SECURITY WARNING: " << what << " listens on " << bound
      << ", reachable from other machines, without CURVE: anyone who can reach this port can "
         "read every gradient and weight in flight and send messages as a member of the job. "
         "Use a security section with curve: true (or --curve-keys DIR), or bind to 127.0.0.1.";
  return true;
}

}  // namespace hetps
