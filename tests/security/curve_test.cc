// CURVE keys on disk (security/curve_keys.h) and the authentication handler
// (security/zap_handler.h) over real sockets on 127.0.0.1: a listed key is admitted under its
// name, an unlisted key and a plaintext client are refused, counted, and told why
// (common/handshake_monitor.h).
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "common/handshake_monitor.h"
#include "common/transport.h"
#include "security/curve_keys.h"
#include "security/member_curve.h"
#include "security/zap_handler.h"

namespace hetps {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A fresh directory, removed at the end of the test.
struct TempDir {
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "hetps-curve-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

CATCH_TEST_CASE("Key pairs are written once, secret keys private, and read back checked",
                "[security][curve]") {
  TempDir dir;
  const std::string keys = dir.path + "/keys";
  auto pair = NewCurveKeyPair("trainer-0", KeyRole::kTrainer);
  CATCH_REQUIRE(pair.ok());
  CATCH_REQUIRE(WriteCurveKeyPair(keys, *pair).ok());
  struct stat info {};
  CATCH_REQUIRE(::stat((keys + "/trainer-0.key").c_str(), &info) == 0);
  CATCH_CHECK((info.st_mode & 0777) == 0600);
  auto read = ReadCurveKeyPair(keys, "trainer-0");
  CATCH_REQUIRE(read.ok());
  CATCH_CHECK(read->public_key == pair->public_key);
  CATCH_CHECK(read->secret_key == pair->secret_key);
  // Never overwritten.
  Status again = WriteCurveKeyPair(keys, *NewCurveKeyPair("trainer-0", KeyRole::kTrainer));
  CATCH_CHECK(Contains(again.message(), "never overwritten"));
  CATCH_CHECK(ReadCurveKeyPair(keys, "trainer-0")->secret_key == pair->secret_key);
  // A secret key others can read is refused, naming the file.
  ::chmod((keys + "/trainer-0.key").c_str(), 0644);
  auto exposed = ReadCurveKeyPair(keys, "trainer-0");
  CATCH_REQUIRE_FALSE(exposed.ok());
  CATCH_CHECK(Contains(exposed.status().message(), "trainer-0.key: the secret key is readable by others"));
  ::chmod((keys + "/trainer-0.key").c_str(), 0600);
  // A public key that is not the secret key's.
  CATCH_REQUIRE(WriteCurveKeyPair(keys, *NewCurveKeyPair("other", KeyRole::kTrainer)).ok());
  fs::copy_file(keys + "/other.pub", keys + "/trainer-0.pub", fs::copy_options::overwrite_existing);
  auto mismatched = ReadCurveKeyPair(keys, "trainer-0");
  CATCH_REQUIRE_FALSE(mismatched.ok());
  CATCH_CHECK(Contains(mismatched.status().message(), "is not the public key of"));
  // Not a key at all.
  std::ofstream(keys + "/broken.pub") << "hello\n";
  auto broken = ReadAllowedKeys(keys, {"broken"});
  CATCH_REQUIRE_FALSE(broken.ok());
  CATCH_CHECK(Contains(broken.status().message(), "broken.pub: not a CURVE key"));
  // Allowed names without a file, and names that cannot be file names.
  CATCH_CHECK(Contains(ReadAllowedKeys(keys, {"nobody"}).status().message(), "allowed key 'nobody'"));
  CATCH_CHECK_FALSE(NewCurveKeyPair("../escape", KeyRole::kTrainer).ok());
  CATCH_CHECK_FALSE(ReadAllowedKeys(keys, {"a/b"}).ok());
}

CATCH_TEST_CASE("A key has one role, written beside its public key and read back with it",
                "[security][curve]") {
  TempDir dir;
  const std::string keys = dir.path + "/keys";
  for (const auto& [name, role] :
       std::vector<std::pair<std::string, KeyRole>>{{"scheduler", KeyRole::kScheduler},
                                                    {"server-0", KeyRole::kServer},
                                                    {"laptop", KeyRole::kTrainer},
                                                    {"status", KeyRole::kStatus}}) {
    CATCH_REQUIRE(WriteCurveKeyPair(keys, *NewCurveKeyPair(name, role)).ok());
    CATCH_CHECK(ReadCurveKeyPair(keys, name)->role == role);
  }
  std::ifstream pub(keys + "/server-0.pub");
  std::string key_line, role_line;
  std::getline(pub, key_line);
  std::getline(pub, role_line);
  CATCH_CHECK(key_line.size() == 40);
  CATCH_CHECK(role_line == "role: server");
  auto allowed = ReadAllowedKeys(keys, {});
  CATCH_REQUIRE(allowed.ok());
  CATCH_CHECK(allowed->size() == 4);
  CATCH_CHECK(allowed->at("laptop").role == KeyRole::kTrainer);
  CATCH_CHECK(allowed->at("status").role == KeyRole::kStatus);

  // The scheduler's key is named so, and no other key is.
  CATCH_CHECK(Contains(NewCurveKeyPair("scheduler", KeyRole::kTrainer).status().message(),
                       "'scheduler' cannot be a trainer key"));
  CATCH_CHECK_FALSE(NewCurveKeyPair("boss", KeyRole::kScheduler).ok());
  // Names that say their role, and names that do not.
  CATCH_CHECK(RoleOfKeyName("server-3") == KeyRole::kServer);
  CATCH_CHECK(RoleOfKeyName("trainer-mac") == KeyRole::kTrainer);
  CATCH_CHECK(RoleOfKeyName("status") == KeyRole::kStatus);
  CATCH_CHECK_FALSE(RoleOfKeyName("laptop").has_value());
  CATCH_CHECK(ParseKeyRole("server") == KeyRole::kServer);
  CATCH_CHECK_FALSE(ParseKeyRole("admin").has_value());

  // A public key without a role (as written before keys had roles), or with an unknown one, is
  // refused, naming the file and the command that makes a new pair.
  const std::string old_key = key_line;
  std::ofstream(keys + "/old.pub") << old_key << "\n";
  auto old = ReadAllowedKeys(keys, {"old"});
  CATCH_REQUIRE_FALSE(old.ok());
  CATCH_CHECK(Contains(old.status().message(), "old.pub: the key has no role"));
  CATCH_CHECK(Contains(old.status().message(), "hetps-keygen " + keys + " old --role ROLE"));
  std::ofstream(keys + "/odd.pub") << old_key << "\nrole: admin\n";
  CATCH_CHECK(Contains(ReadAllowedKeys(keys, {"odd"}).status().message(), "odd.pub: unknown role 'admin'"));

  // A member's own key must be of its role (hetps-status takes any).
  CATCH_CHECK(LoadMemberCurve({keys, "server-0"}, KeyRole::kServer).ok());
  auto swapped = LoadMemberCurve({keys, "laptop"}, KeyRole::kServer);
  CATCH_REQUIRE_FALSE(swapped.ok());
  CATCH_CHECK(Contains(swapped.status().message(),
                       "the key 'laptop' is a trainer key, and this process is a server"));
  CATCH_CHECK(LoadMemberCurve({keys, "laptop"}, std::nullopt).ok());
}

// A CURVE server ROUTER on 127.0.0.1 whose context admits `allowed`.
struct CurveServer {
  explicit CurveServer(const AllowedKeys& allowed) {
    auto zap = ZapHandler::Start(context, allowed, &refusals, "the test server");
    CATCH_REQUIRE(zap.ok());
    handler = std::move(*zap);
    SocketOptions options;
    options.curve_server = true;
    options.curve.secret_key = keys.secret_key;
    socket = MakeSocket(context, zmq::socket_type::router, options);
    handler->Watch(socket);
    auto bound = Bind(socket, "tcp://127.0.0.1:*");
    CATCH_REQUIRE(bound.ok());
    endpoint = *bound;
  }

  zmq::context_t context{1};
  CurveKeyPair keys = *NewCurveKeyPair("server", KeyRole::kServer);
  RefusalCounter refusals;
  std::unique_ptr<ZapHandler> handler;
  zmq::socket_t socket;
  std::string endpoint;
};

// A DEALER to `server` (CURVE when `keys` is set) and its handshake monitor.
struct Client {
  Client(zmq::context_t& context, const CurveServer& server, const CurveKeyPair* keys) {
    SocketOptions options;
    options.router_mandatory = false;
    options.linger_ms = 0;
    if (keys != nullptr)
      options.curve = CurveKeys{keys->public_key, keys->secret_key, server.keys.public_key};
    socket = MakeSocket(context, zmq::socket_type::dealer, options);
    monitor = std::make_unique<HandshakeMonitor>(context, socket);
    CATCH_REQUIRE(Connect(socket, server.endpoint).ok());
  }
  ~Client() { monitor.reset(); }

  // Why the handshake failed, waiting up to 5 s.
  std::string Failure() {
    for (int i = 0; i < 50; ++i) {
      if (PollReadable({&monitor->socket()}, milliseconds(100))[0]) {
        if (auto failure = monitor->TakeFailure()) return *failure;
      }
    }
    return "";
  }

  zmq::socket_t socket;
  std::unique_ptr<HandshakeMonitor> monitor;
};

CATCH_TEST_CASE("A CURVE server admits listed keys under their names and refuses the rest",
                "[security][curve]") {
  const CurveKeyPair trainer = *NewCurveKeyPair("trainer-0", KeyRole::kTrainer);
  const CurveKeyPair intruder = *NewCurveKeyPair("intruder", KeyRole::kTrainer);
  CurveServer server({{"trainer-0", {trainer.public_key, trainer.role}}});
  zmq::context_t client_context(1);

  CATCH_SECTION("a listed key: its messages arrive with its name as the user id") {
    Client client(client_context, server, &trainer);
    Message hello;
    hello.envelope = zmq::message_t(std::string("hello"));
    const Status sent = Send(client.socket, std::move(hello));
    CATCH_REQUIRE(sent.ok());
    CATCH_REQUIRE(PollReadable({&server.socket}, milliseconds(5000))[0]);
    auto received = TryReceive(server.socket, /*router=*/true);
    CATCH_REQUIRE(received.ok());
    CATCH_REQUIRE(received->has_value());
    CATCH_CHECK((*received)->user_id == "trainer-0");
    CATCH_CHECK((*received)->peer_address == "127.0.0.1");
    CATCH_CHECK(server.handler->admitted() == 1);
    CATCH_CHECK(server.refusals.total() == 0);
  }
  CATCH_SECTION("an unlisted key: refused, counted, and the client is told") {
    Client client(client_context, server, &intruder);
    CATCH_CHECK(Contains(client.Failure(), "refused this process's CURVE key (status 400)"));
    CATCH_CHECK(server.refusals.Snapshot().of(Refusal::Unauthenticated) >= 1);
    CATCH_CHECK(server.handler->admitted() == 0);
  }
  CATCH_SECTION("a plaintext client: refused, and told that one side uses CURVE") {
    Client client(client_context, server, nullptr);
    const std::string failure = client.Failure();
    CATCH_INFO(failure);
    CATCH_CHECK(Contains(failure, "one side uses CURVE and the other does not"));
    // The server counted it, although no key was ever checked.
    for (int i = 0; i < 50 && server.refusals.total() == 0; ++i)
      std::this_thread::sleep_for(milliseconds(20));
    CATCH_CHECK(server.refusals.Snapshot().of(Refusal::Unauthenticated) >= 1);
    CATCH_CHECK_FALSE(PollReadable({&server.socket}, milliseconds(200))[0]);
  }
  CATCH_SECTION("a second handler in the same context is refused") {
    auto second = ZapHandler::Start(server.context, {}, nullptr, "another");
    CATCH_REQUIRE_FALSE(second.ok());
    CATCH_CHECK(Contains(second.status().message(), "one per ZeroMQ context"));
  }
}

}  // namespace
}  // namespace hetps
