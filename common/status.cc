#include "common/status.h"

namespace hetps {
namespace {

const char* CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "OK";
    case Status::Code::kInvalidArgument:
      return "invalid argument";
    case Status::Code::kNotFound:
      return "not found";
    case Status::Code::kIoError:
      return "I/O error";
    case Status::Code::kTimeout:
      return "timeout";
    case Status::Code::kUnavailable:
      return "unavailable";
    case Status::Code::kProtocol:
      return "protocol error";
    case Status::Code::kFailedPrecondition:
      return "failed precondition";
    case Status::Code::kInternal:
      return "internal error";
    case Status::Code::kAborted:
      return "aborted";
    case Status::Code::kResourceExhausted:
      return "over a limit";
  }
  return "unknown";
}

}  // namespace

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace hetps
