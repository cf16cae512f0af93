// Status and Result: errors as values.
//
// A Status is either OK or carries a code and a human-readable message that
// names what was wrong (the field, the instruction index, the node).  A
// Result<T> is a T or a non-OK Status.  Both are cheap to move and are
// thread-compatible (const methods may be called concurrently).
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace pulse {

class Status {
 public:
  enum class Code : unsigned char {
    kOk = 0,
    kInvalidArgument,  // the caller's input is malformed
    kNotFound,
    kOutOfRange,
    kPermissionDenied,
    kResourceExhausted,
    kTimeout,
    kUnavailable,      // a peer is down or unreachable
    kIoError,
    kInternal,
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status OutOfRange(std::string msg) { return Status(Code::kOutOfRange, std::move(msg)); }
  static Status PermissionDenied(std::string msg) { return Status(Code::kPermissionDenied, std::move(msg)); }
  static Status ResourceExhausted(std::string msg) { return Status(Code::kResourceExhausted, std::move(msg)); }
  static Status Timeout(std::string msg) { return Status(Code::kTimeout, std::move(msg)); }
  static Status Unavailable(std::string msg) { return Status(Code::kUnavailable, std::move(msg)); }
  static Status IoError(std::string msg) { return Status(Code::kIoError, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "ok" or "<code name>: <message>".
  std::string ToString() const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// Name of a status code, e.g. "invalid argument".
std::string_view StatusCodeName(Status::Code code);

// A value of type T or an error.  Accessing value() of an error Result is a
// programming error (asserts in debug builds).
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace pulse

// Propagates a non-OK Status from an expression returning Status.
#define PULSE_RETURN_IF_ERROR(expr)          \
  do {                                       \
    ::pulse::Status _pulse_st = (expr);      \
    if (!_pulse_st.ok()) return _pulse_st;   \
  } while (0)
