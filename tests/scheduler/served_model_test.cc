// The scheduler's side of the served model file, through real sockets on 127.0.0.1: a trainer
// that joined receives the pieces of the job's TorchScript file it asks for, each with a CRC-32,
// from the bytes read at the scheduler's start (the file may be gone since); a request beyond the
// file, for too many bytes or none, from a server, in a job without a model file, or that is not
// a valid envelope, is refused with a reason and counted.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "checkpoint/checksum.h"
#include "common/control_channel.h"
#include "scheduler/scheduler.h"
#include "tests/support/scheduler_thread.h"
#include "tests/support/temp_dir.h"

namespace hetps {
namespace {

using std::chrono::seconds;
using testing::JoinAs;
using testing::SchedulerThread;

std::string RandomBytes(size_t size, uint32_t seed) {
  std::mt19937 random(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(random() & 0xff);
  return bytes;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

Result<Message> AskPiece(ControlChannel& control, Sender& sender, uint64_t offset, uint64_t length) {
  flatbuffers::FlatBufferBuilder fbb(64);
  auto body = wire::CreateModelFileRequest(fbb, offset, length, control.served_receipt());
  return control.Request(sender.Seal(fbb, wire::Body::ModelFileRequest, body.Union()),
                         wire::Body::ModelFilePiece, seconds(5));
}

SchedulerOptions TorchScriptJob(const std::string& model_file, uint64_t max_message_bytes) {
  SchedulerOptions options;
  options.job.listen = "tcp://127.0.0.1:*";
  options.job.trainers = 1;
  options.job.model = "torchscript";
  options.job.model_file = model_file;
  options.job.max_message_bytes = max_message_bytes;
  options.job.partition_bytes = max_message_bytes / 2;
  return options;
}

bool Says(const Status& status, const std::string& text) {
  CATCH_INFO(status.message());
  return status.message().find(text) != std::string::npos;
}

}  // namespace

CATCH_TEST_CASE("The scheduler sends a trainer the pieces of the job's model file, each with its CRC-32",
                "[scheduler][model]") {
  testing::TempDir dir("served_model");
  const std::string path = dir / "net.pt";
  const std::string bytes = RandomBytes((3u << 20) + 123, 1);
  WriteFile(path, bytes);
  SchedulerThread thread(TorchScriptJob(path, 1u << 20));
  CATCH_REQUIRE(thread.Start().ok());
  // Read at the start: the scheduler sends what it checksummed even once the file is gone.
  std::filesystem::remove(path);

  Sender sender(wire::Role::Trainer);
  ControlChannel::Options control_options;
  control_options.scheduler = thread.scheduler().endpoint();
  ControlChannel control(thread.context(), control_options, &sender);
  auto accepted = JoinAs(control, wire::Role::Trainer);
  CATCH_REQUIRE(accepted.ok());
  const wire::TrainerJob* job = accepted->body<wire::JoinAccepted>()->job();
  CATCH_CHECK(job->model_file()->str() == path);
  CATCH_CHECK(job->model_checksum()->str() == FormatCrc32(Crc32(bytes.data(), bytes.size())));
  CATCH_CHECK(job->model_file_bytes() == bytes.size());
  const uint64_t piece_bytes = job->model_piece_bytes();
  CATCH_CHECK(piece_bytes == ModelPieceBytes(1u << 20));
  CATCH_CHECK(piece_bytes < (1u << 20));  // a piece in its envelope fits max_message_bytes
  CATCH_CHECK(ModelPieceBytes(64u << 20) == kMaxServedReplyBytes);

  std::string received;
  for (uint64_t offset = 0; offset < bytes.size(); offset += piece_bytes) {
    const uint64_t length = std::min<uint64_t>(piece_bytes, bytes.size() - offset);
    auto reply = AskPiece(control, sender, offset, length);
    CATCH_REQUIRE(reply.ok());
    const auto* piece = reply->body<wire::ModelFilePiece>();
    CATCH_CHECK(piece->offset() == offset);
    CATCH_REQUIRE(piece->bytes()->size() == length);
    CATCH_CHECK(piece->crc32() == Crc32(piece->bytes()->data(), length));
    received.append(reinterpret_cast<const char*>(piece->bytes()->data()), length);
  }
  CATCH_CHECK(received == bytes);
  // Any piece, in any order, as often as asked: a trainer that lost one asks again.
  auto last_byte = AskPiece(control, sender, bytes.size() - 1, 1);
  CATCH_REQUIRE(last_byte.ok());
  CATCH_CHECK(last_byte->body<wire::ModelFilePiece>()->bytes()->Get(0) == static_cast<uint8_t>(bytes.back()));
  CATCH_CHECK(thread.scheduler().refusals().total() == 0);
}

CATCH_TEST_CASE("The scheduler refuses and counts model file requests beyond the file or its piece size",
                "[scheduler][model]") {
  testing::TempDir dir("served_model");
  const std::string path = dir / "net.pt";
  const std::string bytes = RandomBytes(5000, 2);
  WriteFile(path, bytes);
  SchedulerThread thread(TorchScriptJob(path, 1u << 20));
  CATCH_REQUIRE(thread.Start().ok());
  Sender sender(wire::Role::Trainer);
  ControlChannel::Options control_options;
  control_options.scheduler = thread.scheduler().endpoint();
  {
    ControlChannel control(thread.context(), control_options, &sender);
    CATCH_REQUIRE(JoinAs(control, wire::Role::Trainer).ok());
    const uint64_t piece_bytes = ModelPieceBytes(1u << 20);

    auto past_end = AskPiece(control, sender, 5000, 1);
    CATCH_REQUIRE_FALSE(past_end.ok());
    CATCH_CHECK(past_end.status().code() == Status::Code::kFailedPrecondition);
    CATCH_CHECK(Says(past_end.status(), "1 bytes from byte 5000 are beyond the end of the model file " +
                                            path + " (5000 bytes)"));
    auto across_end = AskPiece(control, sender, 4000, 1001);
    CATCH_REQUIRE_FALSE(across_end.ok());
    CATCH_CHECK(Says(across_end.status(), "beyond the end of the model file"));
    // offset + length wraps around to a small number: still beyond the end.
    auto wrapping = AskPiece(control, sender, UINT64_MAX, 2);
    CATCH_REQUIRE_FALSE(wrapping.ok());
    CATCH_CHECK(Says(wrapping.status(), "beyond the end of the model file"));
    auto empty = AskPiece(control, sender, 0, 0);
    CATCH_REQUIRE_FALSE(empty.ok());
    CATCH_CHECK(Says(empty.status(), "must ask for 1 to " + std::to_string(piece_bytes) + " bytes, not 0"));
    auto too_long = AskPiece(control, sender, 0, piece_bytes + 1);
    CATCH_REQUIRE_FALSE(too_long.ok());
    CATCH_CHECK(Says(too_long.status(), "not " + std::to_string(piece_bytes + 1)));
    auto huge = AskPiece(control, sender, 0, UINT64_MAX);
    CATCH_REQUIRE_FALSE(huge.ok());
    // The trainer is still served after its bad requests.
    auto whole = AskPiece(control, sender, 0, 5000);
    CATCH_REQUIRE(whole.ok());
    CATCH_CHECK(whole->body<wire::ModelFilePiece>()->bytes()->size() == 5000);

    // Bytes that are no valid envelope, with the kind of a model file request in them.
    zmq::socket_t raw(thread.context(), zmq::socket_type::dealer);
    raw.connect(thread.scheduler().endpoint());
    flatbuffers::FlatBufferBuilder fbb(64);
    auto body = wire::CreateModelFileRequest(fbb, 0, 100);
    zmq::message_t sealed = sender.Seal(fbb, wire::Body::ModelFileRequest, body.Union());
    raw.send(zmq::buffer(sealed.data(), sealed.size() / 2), zmq::send_flags::none);
    zmq::message_t answer;
    raw.set(zmq::sockopt::rcvtimeo, 5000);
    CATCH_CHECK(raw.recv(answer).has_value());  // an Error, not a piece
    raw.close();
  }
  const RefusalTally refusals = thread.scheduler().refusals();
  CATCH_CHECK(refusals.of(Refusal::Invalid) == 3);
  CATCH_CHECK(refusals.of(Refusal::OverLimit) == 3);
  CATCH_CHECK(refusals.of(Refusal::Unverified) == 1);
}

CATCH_TEST_CASE("The model file goes to trainers of a job that has one only", "[scheduler][model]") {
  testing::TempDir dir("served_model");
  const std::string path = dir / "net.pt";
  WriteFile(path, RandomBytes(100, 3));
  {
    // A server is no trainer.
    SchedulerOptions options = TorchScriptJob(path, 1u << 20);
    options.job.servers = 1;
    SchedulerThread thread(options);
    CATCH_REQUIRE(thread.Start().ok());
    Sender sender(wire::Role::Server);
    ControlChannel::Options control_options;
    control_options.scheduler = thread.scheduler().endpoint();
    {
      ControlChannel control(thread.context(), control_options, &sender);
      CATCH_REQUIRE(JoinAs(control, wire::Role::Server).ok());
      auto asked = AskPiece(control, sender, 0, 100);
      CATCH_REQUIRE_FALSE(asked.ok());
      CATCH_CHECK(Says(asked.status(), "the model file is sent to trainers only"));
    }
    CATCH_CHECK(thread.scheduler().refusals().of(Refusal::Unexpected) == 1);
  }
  {
    // A built-in model has no file to send.
    SchedulerOptions options;
    options.job.listen = "tcp://127.0.0.1:*";
    options.job.trainers = 1;
    SchedulerThread thread(options);
    CATCH_REQUIRE(thread.Start().ok());
    Sender sender(wire::Role::Trainer);
    ControlChannel::Options control_options;
    control_options.scheduler = thread.scheduler().endpoint();
    {
      ControlChannel control(thread.context(), control_options, &sender);
      auto accepted = JoinAs(control, wire::Role::Trainer);
      CATCH_REQUIRE(accepted.ok());
      CATCH_CHECK(accepted->body<wire::JoinAccepted>()->job()->model_file_bytes() == 0);
      auto asked = AskPiece(control, sender, 0, 1);
      CATCH_REQUIRE_FALSE(asked.ok());
      CATCH_CHECK(Says(asked.status(), "it has no model file to send"));
    }
    CATCH_CHECK(thread.scheduler().refusals().of(Refusal::Unexpected) == 1);
  }
}

}  // namespace hetps
