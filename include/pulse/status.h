// Status and Result: errors as values.
//
// A Status is either OK or carries a code and a human-readable message that
// names what was wrong (the field, the instruction index, the node).  A
// Result<T> is a T or a non-OK Status.  Both are cheap to move and are
// thread-compatible (const methods may be called concurrently).
//
// Callers decide what to do from code(), never from message(): messages are
// for people and may be reworded.  Codes survive the wire: a peer's error
// travels as its numeric code (StatusCodeToWire) and is rebuilt with the
// same code on the other side (StatusFromWire).
#pragma once

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace pulse {

// [[nodiscard]]: a Status or Result that is dropped is a compiler warning.
// Handle it, or pass it to IgnoreError with a comment saying why dropping it
// is safe.
class [[nodiscard]] Status {
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
    kFailedPrecondition,  // the system is not in the state the call needs (e.g. no lease held)
    kAlreadyExists,
    kAborted,             // the operation was abandoned and may be retried as a whole
    kOutcomeUnknown,      // a write may or may not have taken effect (its node died running it)
  };
  // Codes are numbered for the wire: never renumber, only append.

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
  static Status FailedPrecondition(std::string msg) { return Status(Code::kFailedPrecondition, std::move(msg)); }
  static Status AlreadyExists(std::string msg) { return Status(Code::kAlreadyExists, std::move(msg)); }
  static Status Aborted(std::string msg) { return Status(Code::kAborted, std::move(msg)); }
  static Status OutcomeUnknown(std::string msg) { return Status(Code::kOutcomeUnknown, std::move(msg)); }
  // A Status with any code; FromCode(kOk, ...) is OK (the message is dropped).
  static Status FromCode(Code code, std::string msg) {
    return code == Code::kOk ? Status() : Status(code, std::move(msg));
  }

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

// The code as it travels in messages (its enum value).
inline uint32_t StatusCodeToWire(Status::Code code) { return static_cast<uint32_t>(code); }
// The Status a peer sent as (wire code, message).  A code this build does
// not know (a newer peer) becomes kInternal with the number in the message;
// wire code 0 with a message is treated the same way, since an error reply
// must not turn into success.
Status StatusFromWire(uint32_t code, std::string msg);

// A value of type T or an error.  Accessing value() of an error Result is a
// programming error (asserts in debug builds).
template <typename T>
class [[nodiscard]] Result {
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

// Drops an error deliberately, e.g. a best-effort close on a path that is
// already failing.  The call site says in a comment why that is safe.
inline void IgnoreError(const Status& /*status*/) {}
template <typename T>
inline void IgnoreError(const Result<T>& /*result*/) {}

}  // namespace pulse

// Propagates a non-OK Status from an expression returning Status.
#define PULSE_RETURN_IF_ERROR(expr)          \
  do {                                       \
    ::pulse::Status _pulse_st = (expr);      \
    if (!_pulse_st.ok()) return _pulse_st;   \
  } while (0)

// `PULSE_ASSIGN_OR_RETURN(auto x, F());` declares x from the value of the
// Result F() returns, or returns its Status from the enclosing function.
#define PULSE_ASSIGN_OR_RETURN(lhs, expr) \
  PULSE_ASSIGN_OR_RETURN_IMPL_(PULSE_STATUS_CONCAT_(_pulse_r, __COUNTER__), lhs, expr)
#define PULSE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
#define PULSE_STATUS_CONCAT_(a, b) PULSE_STATUS_CONCAT_INNER_(a, b)
#define PULSE_STATUS_CONCAT_INNER_(a, b) a##b
