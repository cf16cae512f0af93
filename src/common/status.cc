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
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

}  // namespace pulse
