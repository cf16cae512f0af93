// A traversal's end travels as a TraversalStatus in the response message;
// a caller that turns it into an error gets the code that fits
// (TraversalStatusCode), never a guess from text.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "pulse/protocol.h"
#include "pulse/traversal.h"

namespace pulse {
namespace {

using Code = Status::Code;

TEST(TraversalStatusError, EveryStatusSurvivesTheMessageWithItsCode) {
  const std::pair<TraversalStatus, Code> expected[] = {
      {TraversalStatus::kDone, Code::kOk},
      {TraversalStatus::kContinue, Code::kResourceExhausted},
      {TraversalStatus::kNotLocal, Code::kNotFound},
      {TraversalStatus::kAllocExhausted, Code::kResourceExhausted},
      {TraversalStatus::kFaultProtection, Code::kPermissionDenied},
      {TraversalStatus::kFaultBounds, Code::kOutOfRange},
      {TraversalStatus::kFaultDivZero, Code::kInvalidArgument},
      {TraversalStatus::kFaultBadRequest, Code::kInvalidArgument},
      {TraversalStatus::kFaultInvalidPointer, Code::kNotFound},
      {TraversalStatus::kUnknownProgram, Code::kNotFound},
      {TraversalStatus::kNodeUnavailable, Code::kUnavailable},
      {TraversalStatus::kOutcomeUnknown, Code::kOutcomeUnknown},
  };
  std::set<std::string_view> names;
  for (const auto& [status, code] : expected) {
    TraversalMessage m;
    m.kind = MessageKind::kResponse;
    m.status = status;
    m.fault_addr = 0xbeef;
    m.fault_pc = 3;
    auto decoded = DecodeMessage(EncodeMessage(m), 64);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    ASSERT_EQ(decoded->status, status);
    const Status s = TraversalStatusError(decoded->status, "lookup of key 5", decoded->fault_addr, decoded->fault_pc);
    EXPECT_EQ(s.code(), code) << TraversalStatusName(status);
    EXPECT_EQ(TraversalStatusCode(status), code);
    if (status != TraversalStatus::kDone) {
      EXPECT_EQ(s.message(), "lookup of key 5: traversal ended with " + std::string(TraversalStatusName(status)) +
                                 " at 0xbeef (pc 3)");
    }
    names.insert(TraversalStatusName(status));
  }
  EXPECT_EQ(names.size(), std::size(expected)) << "every status has its own name";
  EXPECT_EQ(TraversalStatusCode(static_cast<TraversalStatus>(200)), Code::kInternal);
}

}  // namespace
}  // namespace pulse
