// Which bound endpoints other machines can reach (common/exposure.h), and the warning.
#include "common/exposure.h"

#include <catch2/catch.hpp>

namespace hetps {
namespace {

CATCH_TEST_CASE("Loopback, ipc and inproc endpoints are local; every other address is exposed",
                "[common][exposure]") {
  for (const char* local : {"tcp://127.0.0.1:7400", "tcp://127.1.2.3:1", "tcp://localhost:7400",
                            "tcp://[::1]:7400", "ipc:///tmp/hetps.sock", "inproc://scheduler"}) {
    CATCH_INFO(local);
    CATCH_CHECK(IsLoopbackOnly(local));
    CATCH_CHECK_FALSE(WarnIfExposed("the scheduler", local, /*curve=*/false));
  }
  for (const char* exposed : {"tcp://0.0.0.0:7400", "tcp://192.168.1.20:7400", "tcp://[::]:7400",
                              "tcp://gpu-box:7500", "tcp://128.0.0.1:1", "tcp://eth0:7400"}) {
    CATCH_INFO(exposed);
    CATCH_CHECK_FALSE(IsLoopbackOnly(exposed));
    CATCH_CHECK(WarnIfExposed("the scheduler", exposed, /*curve=*/false));
    // With CURVE the port is encrypted and authenticated: no warning.
    CATCH_CHECK_FALSE(WarnIfExposed("the scheduler", exposed, /*curve=*/true));
  }
}

}  // namespace
}  // namespace hetps
