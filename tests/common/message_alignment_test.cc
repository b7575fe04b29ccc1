// Tests of VerifyEnvelope's check that FlatBuffers' verifier leaves out: vectors of 64-bit values
// at misaligned offsets, which only a forged buffer has and whose reading is undefined behaviour.
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/message.h"
#include "common/refusals.h"
#include "common/shard_map.h"
#include "tests/fuzz/fuzz_input.h"

namespace hetps {
namespace {

std::string ReadCorpusFile(const std::string& path) {
  std::ifstream in(std::string(HETPS_SOURCE_DIR) + "/tests/fuzz/corpus/" + path, std::ios::binary);
  CATCH_REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Found by fuzzing: a Restore whose TensorSpec.shape starts 4 bytes off an 8-byte boundary passed
// the verifier, and SignatureFromWire read it as int64 values.
CATCH_TEST_CASE("A Restore with a misaligned shape vector is refused, naming why", "[common][message]") {
  const std::string bytes = ReadCorpusFile("shard/found_restore_misaligned_shape");
  fuzz::FuzzInput in(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  (void)in.Bytes(5);  // the shard target's job header
  int misaligned = 0;
  while (auto message = fuzz::NextMessage(in)) {
    const Status status = VerifyEnvelope(*message);
    if (!status.ok() && status.message().find("misaligned") != std::string::npos) {
      CATCH_CHECK(status.code() == Status::Code::kProtocol);
      CATCH_CHECK(status.message().find("Restore") != std::string::npos);
      ++misaligned;
    }
  }
  CATCH_CHECK(misaligned == 1);
}

CATCH_TEST_CASE("Vectors of 64-bit values that a builder wrote are aligned and accepted",
                "[common][message]") {
  Sender sender(wire::Role::Trainer);
  for (size_t names = 1; names <= 9; ++names) {
    // Names of every length shift the shapes around in the buffer; the builder aligns each one.
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<TensorInfo> tensors = {{std::string(names, 'w'), {int64_t(names), 3}, wire::DType::F32},
                                       {std::string(names + 1, 'b'), {3}, wire::DType::F32}};
    auto body = wire::CreateRegisterModel(fbb, SignatureToWire(fbb, tensors));
    Message message;
    message.envelope = sender.Seal(fbb, wire::Body::RegisterModel, body.Union());
    CATCH_CHECK(VerifyEnvelope(message).ok());
  }
}

// ZeroMQ hands over a received frame wherever its buffers hold it, often off an 8-byte boundary:
// a server's heartbeat, built by the builder, is accepted there too, with its staleness counts
// and without (an empty vector, whose unused start the builder may leave unaligned), after a
// vector of offsets as the server builds it.
CATCH_TEST_CASE("A built envelope is accepted at any address a received frame may have",
                "[common][message]") {
  Sender sender(wire::Role::Server);
  for (const std::vector<uint64_t>& counts : {std::vector<uint64_t>{5, 0, 2, 1}, std::vector<uint64_t>{}}) {
    flatbuffers::FlatBufferBuilder fbb;
    RefusalTally refusals;
    auto refused = refusals.ToWire(fbb);
    auto stats = wire::CreateServerStats(fbb, 7, 3, 3, 0, 2, fbb.CreateVector(counts), 0, 0, refused);
    auto body = wire::CreateHeartbeat(fbb, stats);
    const zmq::message_t sealed = sender.Seal(fbb, wire::Body::Heartbeat, body.Union());
    std::vector<uint8_t> storage(sealed.size() + 8);
    for (size_t shift = 0; shift < 8; ++shift) {
      std::memcpy(storage.data() + shift, sealed.data(), sealed.size());
      Message message;
      message.envelope = zmq::message_t(
          storage.data() + shift, sealed.size(), [](void*, void*) {}, nullptr);
      const Status status = VerifyEnvelope(message);
      CATCH_INFO(counts.size() << " counts, frame at offset " << shift << ": " << status.ToString());
      CATCH_CHECK(status.ok());
    }
  }
}

}  // namespace
}  // namespace hetps
