// The agent wire format: every field survives a round trip, a Status keeps
// its code, and malformed bytes are refused with InvalidArgument.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "farmem/agent_wire.h"

namespace pulse::farmem {
namespace {

TEST(AgentWire, RequestAndReplyRoundTrip) {
  AgentRequest q;
  q.op = AgentOp::kMemPreload;
  q.request_id = 0x1122334455667788ull;
  q.region = 7;
  q.first = 1ull << 40;
  q.count = 3;
  q.page_bytes = 65536;
  q.cls = PageClass::kStaticLoad;
  q.read_only = true;
  q.tenant = 9;
  q.addr = 0xabcdef;
  q.bytes = 1 << 20;
  q.name = "edges";
  q.file = "/tmp/graph.bin";
  q.data = {1, 2, 3, 4, 5};
  auto d = DecodeAgentRequest(EncodeAgentRequest(q));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->op, q.op);
  EXPECT_EQ(d->request_id, q.request_id);
  EXPECT_EQ(d->region, q.region);
  EXPECT_EQ(d->first, q.first);
  EXPECT_EQ(d->count, q.count);
  EXPECT_EQ(d->page_bytes, q.page_bytes);
  EXPECT_EQ(d->cls, q.cls);
  EXPECT_EQ(d->read_only, q.read_only);
  EXPECT_EQ(d->tenant, q.tenant);
  EXPECT_EQ(d->addr, q.addr);
  EXPECT_EQ(d->bytes, q.bytes);
  EXPECT_EQ(d->name, q.name);
  EXPECT_EQ(d->file, q.file);
  EXPECT_EQ(d->data, q.data);

  AgentReply a;
  a.request_id = 5;
  a.status = Status::FailedPrecondition("region 3 ('x') is read-only");
  a.value = 77;
  a.stamps = {.received_ns = 1234567, .replied_ns = 2345678};
  a.data = {9, 8};
  auto r = DecodeAgentReply(EncodeAgentReply(a));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->request_id, 5u);
  EXPECT_EQ(r->stamps.received_ns, 1234567u);
  EXPECT_EQ(r->stamps.replied_ns, 2345678u);
  EXPECT_EQ(r->status.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(r->status.message(), a.status.message());
  EXPECT_EQ(r->value, 77u);
  EXPECT_EQ(r->data, a.data);
  a.status = Status::Ok();
  r = DecodeAgentReply(EncodeAgentReply(a));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->status.ok()) << r->status.ToString();
}

TEST(AgentWire, AReplyViewPointsIntoTheMessage) {
  AgentReply a;
  a.request_id = 9;
  a.value = 3;
  a.stamps = {.received_ns = 10, .replied_ns = 20};
  a.data.resize(70000);
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(i * 7);
  const std::vector<uint8_t> wire = EncodeAgentReply(a);
  auto v = DecodeAgentReplyView(wire);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->request_id, 9u);
  EXPECT_EQ(v->value, 3u);
  EXPECT_EQ(v->stamps.replied_ns, 20u);
  EXPECT_TRUE(v->status.ok());
  ASSERT_EQ(v->data.size(), a.data.size());
  EXPECT_EQ(v->data.data(), wire.data() + wire.size() - a.data.size()) << "no copy";
  EXPECT_TRUE(std::equal(v->data.begin(), v->data.end(), a.data.begin()));
  for (size_t cut : {size_t{0}, size_t{10}, wire.size() - 1}) {
    auto d = DecodeAgentReplyView(std::span<const uint8_t>(wire.data(), cut));
    EXPECT_EQ(d.status().code(), Status::Code::kInvalidArgument) << "cut at " << cut;
  }
  std::vector<uint8_t> longer = wire;
  longer.push_back(0);
  EXPECT_EQ(DecodeAgentReplyView(longer).status().code(), Status::Code::kInvalidArgument) << "trailing bytes";
}

TEST(AgentWire, PagesGoEagerlyUnlessTheThresholdIsGiven) {
  if (getenv("UCX_RNDV_THRESH") != nullptr) GTEST_SKIP() << "UCX_RNDV_THRESH is set here";
  net::WorkerOptions w;
  SendPagesEagerly(&w);
  ASSERT_EQ(w.ucx_config.size(), 1u);
  EXPECT_EQ(w.ucx_config[0].first, "RNDV_THRESH");
  EXPECT_EQ(w.ucx_config[0].second, std::to_string(kAgentEagerBytes));
  SendPagesEagerly(&w);
  EXPECT_EQ(w.ucx_config.size(), 1u) << "set once";
  net::WorkerOptions given;
  given.ucx_config = {{"RNDV_THRESH", "16K"}};
  SendPagesEagerly(&given);
  ASSERT_EQ(given.ucx_config.size(), 1u);
  EXPECT_EQ(given.ucx_config[0].second, "16K") << "the caller's choice stands";
}

TEST(AgentWire, MalformedBytesAreRefused) {
  AgentRequest q;
  q.op = AgentOp::kReadPages;
  q.name = "n";
  std::vector<uint8_t> b = EncodeAgentRequest(q);
  for (size_t cut = 0; cut < b.size(); ++cut) {
    auto d = DecodeAgentRequest(std::span<const uint8_t>(b.data(), cut));
    EXPECT_EQ(d.status().code(), Status::Code::kInvalidArgument) << "cut at " << cut;
  }
  std::vector<uint8_t> bad = b;
  bad[2] = 99;  // op
  EXPECT_EQ(DecodeAgentRequest(bad).status().code(), Status::Code::kInvalidArgument);
  bad = b;
  bad[0] ^= 1;  // magic
  EXPECT_EQ(DecodeAgentRequest(bad).status().code(), Status::Code::kInvalidArgument);
  bad = b;
  bad.push_back(0);
  EXPECT_EQ(DecodeAgentRequest(bad).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(DecodeAgentReply(b).status().code(), Status::Code::kInvalidArgument) << "a request is not a reply";
}

}  // namespace
}  // namespace pulse::farmem
