// hetps-flood: a bounded flood of hostile traffic at one hetps port, for soak tests. Each round
// sends, over fresh connections: random bytes on a bare TCP connection; random frames; every
// few bytes' prefix of a valid envelope (truncated FlatBuffers); a message of more frames than
// any valid one, and now and then a frame of 80 MiB; and valid envelopes with hostile content (a model of
// absurd dimensions, reports with absurd counters, pushes and pulls claiming live trainer ranks, Joins once
// the job is full). It never waits for answers (it reads and drops them) and prints what it sent.
//   hetps-flood --endpoint tcp://127.0.0.1:PORT [--rounds N] [--seed S]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <thread>

#include "common/cli.h"
#include "common/transport.h"

namespace hetps {
namespace {

struct Flood {
  zmq::context_t context{1};
  std::mt19937 rng;
  std::string endpoint;
  uint64_t sent = 0;

  zmq::socket_t Connection() {
    SocketOptions options;
    options.router_mandatory = false;
    options.linger_ms = 0;
    options.send_hwm = 100000;
    zmq::socket_t socket = MakeSocket(context, zmq::socket_type::dealer, options);
    (void)Connect(socket, endpoint);
    return socket;
  }

  void Send(zmq::socket_t& socket, zmq::message_t envelope, std::vector<zmq::message_t> tensors = {}) {
    Message message;
    message.envelope = std::move(envelope);
    message.tensors = std::move(tensors);
    if (hetps::Send(socket, std::move(message), SendMode::kDontWait).ok()) ++sent;
  }

  zmq::message_t RandomFrame(size_t max_bytes) {
    zmq::message_t frame(1 + rng() % max_bytes);
    for (size_t i = 0; i < frame.size(); ++i)
      static_cast<uint8_t*>(frame.data())[i] = static_cast<uint8_t>(rng());
    return frame;
  }

  void RawGarbage() {
    const int port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
      zmq::message_t bytes = RandomFrame(4096);
      if (::write(fd, bytes.data(), bytes.size()) > 0) ++sent;
    }
    ::close(fd);
  }

  // Valid envelopes, hostile content.
  std::vector<zmq::message_t> Hostile(Sender& trainer, Sender& server) {
    std::vector<zmq::message_t> out;
    {
      flatbuffers::FlatBufferBuilder fbb(256);
      std::vector<flatbuffers::Offset<wire::TensorSpec>> specs;
      std::vector<int64_t> shape = {int64_t{1} << 40, int64_t{1} << 40, 3};
      specs.push_back(wire::CreateTensorSpecDirect(fbb, "huge.weight", &shape, wire::DType::F32));
      auto body = wire::CreateRegisterModel(fbb, fbb.CreateVector(specs));
      out.push_back(trainer.Seal(fbb, wire::Body::RegisterModel, body.Union()));
    }
    {
      flatbuffers::FlatBufferBuilder fbb(128);
      auto body =
          wire::CreateProgress(fbb, 1u << 30, UINT64_MAX, UINT64_MAX - rng(), -1.0, 1e300, UINT64_MAX);
      out.push_back(trainer.Seal(fbb, wire::Body::Progress, body.Union()));
    }
    {
      flatbuffers::FlatBufferBuilder fbb(128);
      auto body = wire::CreateJoinDirect(fbb, wire::Role::Trainer, "flood", 1, "", "cpu");
      out.push_back(trainer.Seal(fbb, wire::Body::Join, body.Union()));
    }
    {
      flatbuffers::FlatBufferBuilder fbb(128);
      std::vector<uint32_t> ids = {0, 1, 2, 0xffffffffu};
      std::vector<uint64_t> versions(ids.size(), UINT64_MAX);
      auto body = wire::CreatePushDirect(fbb, rng(), UINT32_MAX, &ids, &versions, wire::DType::F32, true);
      out.push_back(trainer.Seal(fbb, wire::Body::Push, body.Union()));
    }
    {
      flatbuffers::FlatBufferBuilder fbb(128);
      std::vector<uint32_t> ids = {0, 0, 7, 0xffffffffu};
      auto body = wire::CreatePullDirect(fbb, UINT64_MAX, false, &ids, wire::DType::F32);
      out.push_back(trainer.Seal(fbb, wire::Body::Pull, body.Union()));
    }
    out.push_back(server.MakeEmpty(wire::Body::ShardReady));
    return out;
  }

  void Round() {
    RawGarbage();
    zmq::socket_t socket = Connection();
    Sender trainer(wire::Role::Trainer), server(wire::Role::Server);
    trainer.set_rank(rng() % 2);  // a live trainer's rank
    for (int i = 0; i < 20; ++i) Send(socket, RandomFrame(2048));
    for (zmq::message_t& valid : Hostile(trainer, server)) {
      // Every prefix a few bytes apart, then the whole.
      for (size_t cut = 1; cut < valid.size(); cut += 5 + rng() % 11)
        Send(socket, zmq::message_t(valid.data(), cut));
      Send(socket, std::move(valid));
    }
    std::vector<zmq::message_t> frames;
    for (int i = 0; i < 300; ++i) frames.push_back(RandomFrame(1024));
    Send(socket, RandomFrame(64), std::move(frames));
    // A frame beyond any receiver's max_message_bytes, now and then: ZeroMQ drops the connection.
    if (rng() % 10 == 0) {
      zmq::socket_t doomed = Connection();
      Send(doomed, zmq::message_t(size_t{80} << 20));
    }
    // Drop whatever came back; the hostile side does not need answers.
    for (int i = 0; i < 20 && PollReadable({&socket}, std::chrono::milliseconds(5))[0]; ++i) {
      (void)TryReceive(socket, false);
    }
  }
};

}  // namespace
}  // namespace hetps

int main(int argc, char** argv) {
  std::string endpoint;
  int rounds = 50;
  unsigned seed = 1;
  CLI::App app("hetps-flood: a bounded flood of hostile traffic at one hetps port (soak tests)",
               "hetps-flood");
  app.add_option("--endpoint", endpoint, "The port to flood, tcp://127.0.0.1:PORT")->required();
  app.add_option("--rounds", rounds, "Rounds of about 150 messages")->check(CLI::Range(1, 100000));
  app.add_option("--seed", seed, "Random seed");
  if (int code = hetps::ParseFlags(app, argc, argv); code >= 0) return code;
  hetps::Flood flood;
  flood.rng.seed(seed);
  flood.endpoint = endpoint;
  for (int round = 0; round < rounds; ++round) {
    flood.Round();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::printf("hetps-flood: sent %llu messages in %d rounds to %s\n",
              static_cast<unsigned long long>(flood.sent), rounds, endpoint.c_str());
  return 0;
}
