#include <gtest/gtest.h>

#include <random>

#include "switch/router.h"

namespace pulse {
namespace {

TEST(Router, OwnerMatchesLinearScan) {
  Router router;
  struct R { uint64_t base, len; NodeId node; };
  std::vector<R> ranges;
  uint64_t at = 1 << 20;
  std::mt19937_64 rng(11);
  for (NodeId n = 0; n < 64; ++n) {
    at += rng() % 8192;
    R r{at, 1 + rng() % (1 << 16), n % 4};
    ASSERT_TRUE(router.AddRange(r.base, r.len, r.node).ok());
    ranges.push_back(r);
    at += r.len;
  }
  EXPECT_FALSE(router.AddRange(ranges[3].base + 1, 10, 9).ok());
  for (int i = 0; i < 10000; ++i) {
    const uint64_t a = rng() % (at + 1000);
    std::optional<NodeId> want;
    for (auto& r : ranges)
      if (a >= r.base && a < r.base + r.len) want = r.node;
    EXPECT_EQ(router.Owner(a), want) << a;
  }
}

TEST(Router, RoutesRequestsContinuationsAndErrors) {
  Router router;
  ASSERT_TRUE(router.AddRange(0x1000, 0x1000, 1).ok());
  ASSERT_TRUE(router.AddRange(0x2000, 0x1000, 2).ok());
  TraversalMessage m;
  m.cpu_node = 7;
  m.cur_ptr = 0x2100;
  auto d = router.Route(&m);
  EXPECT_EQ(d.to, RouteDecision::To::kMemoryNode);
  EXPECT_EQ(d.node, 2u);

  // Node 2 answers "not local" with cur_ptr on node 1: a continuation.
  m.kind = MessageKind::kResponse;
  m.status = TraversalStatus::kNotLocal;
  m.cur_ptr = 0x1800;
  m.scratch = {1, 2, 3};
  d = router.Route(&m);
  EXPECT_EQ(d.to, RouteDecision::To::kMemoryNode);
  EXPECT_EQ(d.node, 1u);
  EXPECT_EQ(m.kind, MessageKind::kRequest);
  EXPECT_EQ(m.scratch, (std::vector<uint8_t>{1, 2, 3}));  // state travels intact
  EXPECT_EQ(router.counters().forwards, 1u);

  // pulse-acc: the same response goes back to the CPU node.
  m.kind = MessageKind::kResponse;
  m.status = TraversalStatus::kNotLocal;
  m.flags = kFlagPulseAcc;
  d = router.Route(&m);
  EXPECT_EQ(d.to, RouteDecision::To::kCpuNode);
  EXPECT_EQ(d.node, 7u);
  EXPECT_EQ(m.status, TraversalStatus::kNotLocal);

  // A pointer nobody owns: an error to the CPU node, for requests and continuations.
  for (MessageKind kind : {MessageKind::kRequest, MessageKind::kResponse}) {
    m.kind = kind;
    m.flags = 0;
    m.status = TraversalStatus::kNotLocal;
    m.cur_ptr = 0x9000;
    d = router.Route(&m);
    EXPECT_EQ(d.to, RouteDecision::To::kCpuNode);
    EXPECT_EQ(m.status, TraversalStatus::kFaultInvalidPointer);
    EXPECT_EQ(m.fault_addr, 0x9000u);
  }
  EXPECT_EQ(router.counters().invalid_pointers, 2u);

  // Final answers go to the CPU node untouched.
  m.kind = MessageKind::kResponse;
  m.status = TraversalStatus::kDone;
  m.cur_ptr = 0x1800;
  d = router.Route(&m);
  EXPECT_EQ(d.to, RouteDecision::To::kCpuNode);
  EXPECT_EQ(m.status, TraversalStatus::kDone);
}

}  // namespace
}  // namespace pulse
