// Trace capture for the CXL model (src/bench/cxl_trace.h) on a real local
// rack: a list walk of N nodes is exactly N dependent window loads in list
// order, each on the node the client places it; an application's capture
// has traversal accesses and CPU-node accesses.
#include <gtest/gtest.h>

#include <set>

#include "bench/cxl_trace.h"
#include "ds/list_walk.h"
#include "pulse/ds/forward_list.h"
#include "support/cpu_node.h"
#include "support/ds_cluster.h"

namespace pulse::bench {
namespace {

using pulse::ds::testing::DsCluster;

class CxlTrace : public DsCluster {};

TEST_F(CxlTrace, ListWalkIsNDependentNodeLoadsInOrder) {
  constexpr uint64_t kNodes = 50;
  auto list = ds::ForwardList::Create(client_.get(), {.mode = ExecutionMode::kCpuNode});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  for (uint64_t v = 0; v < kNodes; ++v) ASSERT_TRUE((*list)->PushFront(v).ok());

  CxlRecorder recorder(client_.get());
  recorder.BeginOp();
  auto agg = (*list)->AggregateRange();  // walks every node
  const CxlOp op = recorder.EndOp();
  ASSERT_TRUE(agg.ok()) << agg.status().ToString();
  ASSERT_EQ(agg->count, kNodes);

  ASSERT_EQ(op.accesses.size(), kNodes);
  std::set<uint32_t> nodes_seen;
  for (uint64_t i = 0; i < kNodes; ++i) {
    const CxlAccess& a = op.accesses[i];
    EXPECT_TRUE(a.traversal);
    EXPECT_FALSE(a.write);
    EXPECT_EQ(a.traversal_index, 0u) << "one traversal run";
    EXPECT_EQ(a.node, client_->NodeOf(a.addr).value_or(UINT32_MAX));
    nodes_seen.insert(a.node);
    // In list order: from the head (the last value pushed), each window's
    // next pointer is the following window's address.
    uint64_t value = 0, next = 0;
    ASSERT_TRUE(ds::internal::LoadListNode(client_.get(), a.addr, &value, &next).ok());
    EXPECT_EQ(value, kNodes - 1 - i);
    EXPECT_EQ(next, i + 1 < kNodes ? op.accesses[i + 1].addr : 0u) << "window " << i;
  }
  EXPECT_EQ(nodes_seen.size(), 2u) << "small slabs: the list spans both memory nodes";

  // Outside BeginOp/EndOp nothing is recorded, and the walk still works.
  ASSERT_TRUE((*list)->AggregateRange().ok());
  EXPECT_TRUE(recorder.EndOp().accesses.empty());
}

TEST(CxlTraceCapture, RefusesBadOptions) {
  CxlCaptureOptions o;
  o.app = "nosuchapp";
  EXPECT_EQ(CaptureAppTrace(o).status().code(), Status::Code::kInvalidArgument);
  o.app = "btrdb";
  o.ops = 0;
  EXPECT_EQ(CaptureAppTrace(o).status().code(), Status::Code::kInvalidArgument);
}

TEST(CxlTraceCapture, WebServiceOpsAreALookupThenTheObjectRead) {
  pulse::testing::SetUcxTestEnvironment();
  CxlCaptureOptions o;
  o.app = "webservice";
  o.memory_nodes = 2;
  o.size = 200;
  o.ops = 20;
  o.binary = PULSE_BINARY;
  auto t = CaptureAppTrace(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->ops.size(), 20u);
  for (const CxlOp& op : t->ops) {
    // Workload C: every operation reads.  The map's chain walk first (at
    // least the bucket and one chain node), then one 8 KB object read at
    // the CPU node.
    ASSERT_GE(op.accesses.size(), 3u);
    const CxlAccess& last = op.accesses.back();
    EXPECT_FALSE(last.traversal);
    EXPECT_FALSE(last.write);
    EXPECT_EQ(last.bytes, 8192u);
    for (size_t i = 0; i + 1 < op.accesses.size(); ++i) EXPECT_TRUE(op.accesses[i].traversal) << i;
  }
}

}  // namespace
}  // namespace pulse::bench
