#include <fmt/format.h>

#include "pulse/traversal.h"

namespace pulse {

std::string_view TraversalStatusName(TraversalStatus s) {
  switch (s) {
    case TraversalStatus::kDone: return "done";
    case TraversalStatus::kContinue: return "continue";
    case TraversalStatus::kNotLocal: return "not local";
    case TraversalStatus::kAllocExhausted: return "allocation regions exhausted";
    case TraversalStatus::kFaultProtection: return "protection fault";
    case TraversalStatus::kFaultBounds: return "bounds fault";
    case TraversalStatus::kFaultDivZero: return "division by zero";
    case TraversalStatus::kFaultBadRequest: return "bad request";
    case TraversalStatus::kFaultInvalidPointer: return "invalid pointer";
    case TraversalStatus::kUnknownProgram: return "unknown program";
    case TraversalStatus::kNodeUnavailable: return "memory node unavailable";
    case TraversalStatus::kOutcomeUnknown: return "outcome unknown";
  }
  return "unknown status";
}

Status::Code TraversalStatusCode(TraversalStatus s) {
  switch (s) {
    case TraversalStatus::kDone: return Status::Code::kOk;
    case TraversalStatus::kContinue: return Status::Code::kResourceExhausted;
    case TraversalStatus::kNotLocal: return Status::Code::kNotFound;
    case TraversalStatus::kAllocExhausted: return Status::Code::kResourceExhausted;
    case TraversalStatus::kFaultProtection: return Status::Code::kPermissionDenied;
    case TraversalStatus::kFaultBounds: return Status::Code::kOutOfRange;
    case TraversalStatus::kFaultDivZero: return Status::Code::kInvalidArgument;
    case TraversalStatus::kFaultBadRequest: return Status::Code::kInvalidArgument;
    case TraversalStatus::kFaultInvalidPointer: return Status::Code::kNotFound;
    case TraversalStatus::kUnknownProgram: return Status::Code::kNotFound;
    case TraversalStatus::kNodeUnavailable: return Status::Code::kUnavailable;
    case TraversalStatus::kOutcomeUnknown: return Status::Code::kOutcomeUnknown;
  }
  return Status::Code::kInternal;
}

Status TraversalStatusError(TraversalStatus s, std::string_view what, uint64_t fault_addr, uint32_t fault_pc) {
  if (s == TraversalStatus::kDone) return Status::Ok();
  return Status::FromCode(TraversalStatusCode(s), fmt::format("{}: traversal ended with {} at {:#x} (pc {})", what,
                                                              TraversalStatusName(s), fault_addr, fault_pc));
}

}  // namespace pulse
