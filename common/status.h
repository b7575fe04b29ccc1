// Status and Result<T>: the value every fallible call at an I/O boundary returns.
//
// An expected failure (a peer gone, a timeout, a message that fails verification, a bad config
// value) is a Status with a code and a message that names what went wrong. Broken invariants are
// HETPS_CHECK failures instead (common/check.h). Both types are cheap to copy and thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "common/check.h"

namespace hetps {

class Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,     // a bad value from a user: flag, config field, file content
    kNotFound,            // a file or entity that does not exist
    kIoError,             // the operating system refused a read or write
    kTimeout,             // a peer did not answer in time
    kUnavailable,         // a peer is gone or the job is shutting down
    kProtocol,            // a peer sent something malformed or unexpected
    kFailedPrecondition,  // the request does not fit the current state
    kInternal,            // an error in a library we call (e.g. LibTorch)
    kAborted,             // the scheduler ended the job (this process did nothing wrong)
    kResourceExhausted,   // a request or message beyond a configured limit (size, count, memory)
  };

  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
  static Status Timeout(std::string m) { return {Code::kTimeout, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Protocol(std::string m) { return {Code::kProtocol, std::move(m)}; }
  static Status FailedPrecondition(std::string m) { return {Code::kFailedPrecondition, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
  static Status Aborted(std::string m) { return {Code::kAborted, std::move(m)}; }
  static Status ResourceExhausted(std::string m) { return {Code::kResourceExhausted, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "OK", or the code's name followed by the message: "invalid argument: epochs: -1 ...".
  std::string ToString() const;

  // A copy with `context` prepended to the message ("loading x.yaml: " + message).
  Status WithContext(const std::string& context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Either a value or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    HETPS_CHECK(!status_.ok()) << "a Result needs a value or an error";
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & {
    HETPS_CHECK(ok()) << status_.ToString();
    return *value_;
  }
  const T& value() const& {
    HETPS_CHECK(ok()) << status_.ToString();
    return *value_;
  }
  T&& value() && {
    HETPS_CHECK(ok()) << status_.ToString();
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace hetps

#define HETPS_CONCAT_INNER(a, b) a##b
#define HETPS_CONCAT(a, b) HETPS_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define HETPS_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::hetps::Status hetps_status_ = (expr);        \
    if (!hetps_status_.ok()) return hetps_status_; \
  } while (0)

// `lhs = value of expr`, or returns its Status from the enclosing function.
#define HETPS_ASSIGN_OR_RETURN(lhs, expr) \
  HETPS_ASSIGN_OR_RETURN_IMPL(HETPS_CONCAT(hetps_result_, __LINE__), lhs, expr)
#define HETPS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
