#include "pulse/status.h"

namespace pulse {

std::string_view StatusCodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk: return "ok";
    case Status::Code::kInvalidArgument: return "invalid argument";
    case Status::Code::kNotFound: return "not found";
    case Status::Code::kOutOfRange: return "out of range";
    case Status::Code::kPermissionDenied: return "permission denied";
    case Status::Code::kResourceExhausted: return "resource exhausted";
    case Status::Code::kTimeout: return "timeout";
    case Status::Code::kUnavailable: return "unavailable";
    case Status::Code::kIoError: return "I/O error";
    case Status::Code::kInternal: return "internal error";
    case Status::Code::kFailedPrecondition: return "failed precondition";
    case Status::Code::kAlreadyExists: return "already exists";
    case Status::Code::kAborted: return "aborted";
    case Status::Code::kOutcomeUnknown: return "outcome unknown";
  }
  return "unknown";
}

Status StatusFromWire(uint32_t code, std::string msg) {
  if (code > static_cast<uint32_t>(Status::Code::kOutcomeUnknown) || code == 0) {
    return Status::Internal("peer error code " + std::to_string(code) + ": " + msg);
  }
  return Status::FromCode(static_cast<Status::Code>(code), std::move(msg));
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

}  // namespace pulse
