// Error codes survive a control reply: the server's builder
// (node::ControlError / ControlOk) -> wire JSON -> ControlReplyStatus on the
// calling side gives back the same code and message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "memnode/node_control.h"
#include "protocol/control_reply.h"

namespace pulse {
namespace {

using nlohmann::json;
using Code = Status::Code;

json Parse(const std::vector<uint8_t>& bytes) { return json::parse(bytes.begin(), bytes.end()); }

TEST(ControlReply, EveryCodeRoundTrips) {
  for (uint32_t wire = 1; wire <= StatusCodeToWire(Code::kOutcomeUnknown); ++wire) {
    const Status sent = Status::FromCode(static_cast<Code>(wire), "op: field x is wrong on node 3");
    const json reply = Parse(node::ControlError(7, sent));
    EXPECT_EQ(reply["seq"], 7);
    EXPECT_EQ(reply["ok"], false);
    EXPECT_EQ(reply["code"], wire);
    EXPECT_EQ(reply["error"], sent.message());
    const Status got = ControlReplyStatus(reply);
    EXPECT_EQ(got.code(), sent.code()) << StatusCodeName(sent.code()) << " came back as " << got.ToString();
    EXPECT_EQ(got.message(), sent.message());
  }
}

TEST(ControlReply, ContextPrefixesTheMessageNotTheCode) {
  const json reply = Parse(node::ControlError(1, Status::ResourceExhausted("alloc: pool exhausted")));
  const Status got = ControlReplyStatus(reply, "control alloc");
  EXPECT_EQ(got.code(), Code::kResourceExhausted);
  EXPECT_EQ(got.message(), "control alloc: alloc: pool exhausted");
}

TEST(ControlReply, OkRepliesAreOk) {
  EXPECT_TRUE(ControlReplyStatus(Parse(node::ControlOk(3, json{{"base", 4096}}))).ok());
  EXPECT_TRUE(ControlReplyStatus(Parse(node::ControlOk(3))).ok());
}

TEST(ControlReply, AnOkStatusNeverReadsAsSuccess) {
  const json reply = Parse(node::ControlError(1, Status::Ok()));
  EXPECT_EQ(reply["ok"], false);
  EXPECT_EQ(ControlReplyStatus(reply).code(), Code::kInternal);
}

TEST(ControlReply, AReplyWithoutACodeIsInvalidArgument) {
  // What a peer from before codes on the wire sends.
  const Status got = ControlReplyStatus(json{{"seq", 1}, {"ok", false}, {"error", "lock: mode is missing"}});
  EXPECT_EQ(got.code(), Code::kInvalidArgument);
  EXPECT_EQ(got.message(), "lock: mode is missing");
  EXPECT_EQ(ControlReplyStatus(json{{"seq", 1}, {"ok", false}}).message(), "refused");
}

TEST(ControlReply, UnknownOrMalformedCodesAreInternal) {
  const Status newer = ControlReplyStatus(json{{"ok", false}, {"error", "from the future"}, {"code", 200}});
  EXPECT_EQ(newer.code(), Code::kInternal);
  EXPECT_NE(newer.message().find("200"), std::string::npos) << newer.message();  // names the number
  EXPECT_EQ(ControlReplyStatus(json{{"ok", false}, {"error", "x"}, {"code", 0}}).code(), Code::kInternal);
  EXPECT_EQ(ControlReplyStatus(json{{"ok", false}, {"error", "x"}, {"code", -3}}).code(), Code::kInternal);
  EXPECT_EQ(ControlReplyStatus(json{{"ok", false}, {"error", "x"}, {"code", "5"}}).code(), Code::kInternal);
  EXPECT_EQ(ControlReplyStatus(json{{"ok", false}, {"code", 1ull << 40}}).code(), Code::kInternal);
}

TEST(ControlReply, MalformedRepliesAreErrors) {
  EXPECT_EQ(ControlReplyStatus(json::array()).code(), Code::kInternal);
  EXPECT_FALSE(ControlReplyStatus(json{{"ok", "yes"}, {"code", 5}}).ok()) << "only boolean true is success";
  EXPECT_FALSE(ControlReplyStatus(json::object()).ok());
}

}  // namespace
}  // namespace pulse
