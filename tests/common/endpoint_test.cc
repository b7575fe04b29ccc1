// NormalizeEndpoint: host:port means tcp://host:port; a malformed endpoint is refused naming its
// value and what is wrong with it.
#include "common/endpoint.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace hetps {
namespace {

using Catch::Matchers::Contains;

CATCH_TEST_CASE("An endpoint without a scheme is taken as tcp://", "[common][endpoint]") {
  CATCH_CHECK(NormalizeEndpoint("127.0.0.1:7400").value() == "tcp://127.0.0.1:7400");
  CATCH_CHECK(NormalizeEndpoint("scheduler.lan:7400").value() == "tcp://scheduler.lan:7400");
  CATCH_CHECK(NormalizeEndpoint("0.0.0.0:*").value() == "tcp://0.0.0.0:*");
  CATCH_CHECK(NormalizeEndpoint("[::1]:7400").value() == "tcp://[::1]:7400");
  CATCH_CHECK(NormalizeEndpoint("127.0.0.1:65535").value() == "tcp://127.0.0.1:65535");
}

CATCH_TEST_CASE("Endpoints with a known scheme are kept as given", "[common][endpoint]") {
  for (const char* endpoint : {"tcp://127.0.0.1:7400", "tcp://127.0.0.1:*", "tcp://[::1]:0",
                               "ipc:///tmp/hetps.sock", "inproc://scheduler"}) {
    CATCH_CAPTURE(endpoint);
    CATCH_CHECK(NormalizeEndpoint(endpoint).value() == endpoint);
  }
}

CATCH_TEST_CASE("A malformed endpoint is refused with its value and what is wrong", "[common][endpoint]") {
  struct Case {
    std::string value;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"127.0.0.1", {"'127.0.0.1' has no port", "give HOST:PORT or tcp://HOST:PORT"}},
      {"127.0.0.1:", {"'127.0.0.1:' has no port"}},
      {"tcp://127.0.0.1", {"'tcp://127.0.0.1' has no port"}},
      {"7400", {"'7400' has no host"}},
      {":7400", {"':7400' has no host"}},
      {"127.0.0.1:70000", {"'127.0.0.1:70000'", "port 70000, out of range (0..65535)"}},
      {"127.0.0.1:123456789012", {"port 123456789012, out of range"}},
      {"127.0.0.1:http", {"port 'http', not a number"}},
      {"[::1:7400", {"closing ']'"}},
      {"http://127.0.0.1:7400", {"'http://127.0.0.1:7400' has an unknown scheme 'http'", "tcp://, ipc://"}},
      {"udp://127.0.0.1:7400", {"unknown scheme 'udp'"}},
      {"ipc://", {"'ipc://' has no path"}},
      {"", {"an empty endpoint"}},
  };
  for (const Case& c : cases) {
    CATCH_CAPTURE(c.value);
    auto result = NormalizeEndpoint(c.value);
    CATCH_REQUIRE_FALSE(result.ok());
    CATCH_CHECK(result.status().code() == Status::Code::kInvalidArgument);
    for (const std::string& part : c.parts) CATCH_CHECK_THAT(result.status().message(), Contains(part));
  }
}

}  // namespace
}  // namespace hetps
