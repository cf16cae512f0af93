// The CXL model's arithmetic (src/bench/cxl_model.h) on hand-built traces:
// exact nanoseconds for a tiny chase in each configuration, cache hits and
// LRU evictions, and node crossings against a plain reference count.
#include <gtest/gtest.h>

#include <random>

#include "bench/cxl_model.h"

namespace pulse::bench {
namespace {

// The documented defaults, written out so the expected figures below can be
// checked by hand: l3 15, dram 80, cxl 170, switch 70, stack 430,
// scheduler 4, logic 21 (ns); 64-byte lines.
CxlParams HandParams(uint32_t nodes) {
  CxlParams p;
  p.line_bytes = 64;
  p.l3_ns = 15;
  p.dram_ns = 80;
  p.cxl_ns = 170;
  p.cxl_switch_ns = 70;
  p.pulse_stack_ns = 430;
  p.pulse_scheduler_ns = 4;
  p.pulse_logic_ns = 21;
  p.nodes = nodes;
  return p;
}

CxlAccess Window(uint64_t addr, uint32_t node, uint32_t traversal = 0) {
  return CxlAccess{.addr = addr, .bytes = 24, .write = false, .node = node, .traversal = true,
                   .traversal_index = traversal};
}

CxlAccess CpuRead(uint64_t addr, uint32_t bytes) {
  return CxlAccess{.addr = addr, .bytes = bytes, .write = false, .node = 0, .traversal = false, .traversal_index = 0};
}

CxlTrace OneOp(std::vector<CxlAccess> accesses) {
  CxlTrace t;
  t.ops.push_back(CxlOp{std::move(accesses)});
  return t;
}

TEST(CxlModel, DerivedLatenciesFollowTheFormulas) {
  const CxlParams one = HandParams(1), four = HandParams(4);
  EXPECT_DOUBLE_EQ(CxlFarNs(one), 170);
  EXPECT_DOUBLE_EQ(CxlFarNs(four), 240);
  EXPECT_DOUBLE_EQ(PulseRequestNs(one), 90 + 860 + 4);    // link round trip + 2 stacks + scheduler
  EXPECT_DOUBLE_EQ(PulseRequestNs(four), 160 + 860 + 4);  // the switch on the round trip too
  EXPECT_DOUBLE_EQ(PulseContinuationNs(four), 860 + 70 + 4);
  EXPECT_DOUBLE_EQ(PulseIterationNs(one), 101);
}

TEST(CxlModel, ThreeNodeChaseColdCacheSingleNode) {
  // Three dependent windows on three distinct lines; nothing cached.
  const CxlTrace t = OneOp({Window(0x1000, 0), Window(0x2000, 0), Window(0x3000, 0)});
  const CxlModelResult r = RunCxlModel(t, HandParams(1));
  EXPECT_EQ(r.ops, 1u);
  EXPECT_EQ(r.requests, 1u);
  EXPECT_EQ(r.continuations, 0u);
  EXPECT_DOUBLE_EQ(r.local_ns_per_op(), 3 * 80);
  EXPECT_DOUBLE_EQ(r.cxl_ns_per_op(), 3 * 170);
  EXPECT_DOUBLE_EQ(r.pulse_ns_per_op(), 954 + 3 * 101);
  EXPECT_DOUBLE_EQ(r.cxl_slowdown(), 510.0 / 240);
  EXPECT_DOUBLE_EQ(r.pulse_slowdown(), 1257.0 / 240);
  EXPECT_EQ(r.cxl.far_lines, 3u);
}

TEST(CxlModel, ThreeNodeChaseAcrossFourNodesPaysTheSwitch) {
  // Nodes 0, 1, 1: one continuation.
  const CxlTrace t = OneOp({Window(0x1000, 0), Window(0x2000, 1), Window(0x3000, 1)});
  const CxlModelResult r = RunCxlModel(t, HandParams(4));
  EXPECT_EQ(r.requests, 1u);
  EXPECT_EQ(r.continuations, 1u);
  EXPECT_DOUBLE_EQ(r.local_ns_per_op(), 240);
  EXPECT_DOUBLE_EQ(r.cxl_ns_per_op(), 3 * 240);
  EXPECT_DOUBLE_EQ(r.pulse_ns_per_op(), 1024 + 934 + 3 * 101);
  // The same trace priced on one node: every access on the one device.
  const CxlModelResult single = RunCxlModel(t, HandParams(1));
  EXPECT_EQ(single.continuations, 0u);
  EXPECT_DOUBLE_EQ(single.pulse_ns_per_op(), 954 + 3 * 101);
}

TEST(CxlModel, CpuAccessesStayAtTheCpuUnderPulseAndACacheLineIsItsSlowestLine) {
  // A lookup of two windows (one request), then a 128-byte object read at
  // the CPU node spanning two lines.
  CxlParams p = HandParams(1);
  const CxlTrace t = OneOp({Window(0x1000, 0), Window(0x2000, 0), CpuRead(0x8000, 128)});
  const CxlModelResult r = RunCxlModel(t, p);
  EXPECT_DOUBLE_EQ(r.local_ns_per_op(), 3 * 80);
  EXPECT_DOUBLE_EQ(r.cxl_ns_per_op(), 3 * 170);  // the object's two lines overlap: one CXL latency
  EXPECT_DOUBLE_EQ(r.pulse_ns_per_op(), 954 + 2 * 101 + 170);
  EXPECT_EQ(r.cxl.far_lines, 4u);
}

TEST(CxlModel, CacheHitsLowerTheCxlTimeExactly) {
  // The same three-line chase twice; the DRAM cache holds all of it.
  CxlTrace t = OneOp({Window(0x1000, 0), Window(0x2000, 0), Window(0x3000, 0)});
  t.ops.push_back(t.ops[0]);
  CxlParams p = HandParams(1);
  p.cache_bytes = 1 << 20;
  CxlModelResult r = RunCxlModel(t, p);
  EXPECT_DOUBLE_EQ(r.cxl.total_ns, 3 * 170 + 3 * 80);  // cold, then every line from the DRAM cache
  EXPECT_DOUBLE_EQ(r.local.total_ns, 6 * 80);           // no L3: local DRAM both times
  EXPECT_EQ(r.cxl.cache_hits, 3u);
  // Pulse offloads both traversals: the CPU's cache does not help them.
  EXPECT_DOUBLE_EQ(r.pulse.total_ns, 2 * (954 + 3 * 101));

  // With an L3 that holds it too, the second pass is all L3 hits.
  p.l3_bytes = 1 << 16;
  r = RunCxlModel(t, p);
  EXPECT_DOUBLE_EQ(r.cxl.total_ns, 3 * 170 + 3 * 15);
  EXPECT_DOUBLE_EQ(r.local.total_ns, 3 * 80 + 3 * 15);
  EXPECT_EQ(r.cxl.l3_hits, 3u);

  // Warm-up: only the second operation is priced.
  p.warmup_ops = 1;
  r = RunCxlModel(t, p);
  EXPECT_EQ(r.ops, 1u);
  EXPECT_DOUBLE_EQ(r.cxl_ns_per_op(), 3 * 15);
  EXPECT_DOUBLE_EQ(r.cxl_slowdown(), 1.0);
}

TEST(CxlModel, LruEvictsTheLeastRecentlyUsedLine) {
  // A two-line DRAM cache; lines a b a c b: the c evicts b (a was used
  // after b), so the last b misses; a's second access hits.
  CxlParams p = HandParams(1);
  p.cache_bytes = 2 * 64;
  const CxlTrace t =
      OneOp({CpuRead(0x0, 8), CpuRead(0x40, 8), CpuRead(0x0, 8), CpuRead(0x80, 8), CpuRead(0x40, 8)});
  const CxlModelResult r = RunCxlModel(t, p);
  EXPECT_EQ(r.cxl.cache_hits, 1u);
  EXPECT_EQ(r.cxl.far_lines, 4u);
  EXPECT_DOUBLE_EQ(r.cxl.total_ns, 4 * 170 + 80);
}

TEST(CxlModel, CrossingsMatchAPlainReferenceCount) {
  std::mt19937_64 rng(16);
  CxlTrace t;
  for (int i = 0; i < 200; ++i) {
    CxlOp op;
    const uint32_t traversals = 1 + rng() % 3;
    for (uint32_t tr = 0; tr < traversals; ++tr)
      for (uint64_t k = 0, n = 1 + rng() % 20; k < n; ++k)
        op.accesses.push_back(Window(rng() % (1 << 24), static_cast<uint32_t>(rng() % 4), tr));
    t.ops.push_back(std::move(op));
  }
  // The reference: a request per traversal, a crossing per change of node
  // within one.
  uint64_t requests = 0, crossings = 0, accesses = 0;
  for (const CxlOp& op : t.ops) {
    for (size_t i = 0; i < op.accesses.size(); ++i) {
      ++accesses;
      const bool starts = i == 0 || op.accesses[i].traversal_index != op.accesses[i - 1].traversal_index;
      if (starts) {
        ++requests;
      } else if (op.accesses[i].node != op.accesses[i - 1].node) {
        ++crossings;
      }
    }
  }
  const CxlParams p = HandParams(4);
  const CxlModelResult r = RunCxlModel(t, p);
  EXPECT_EQ(r.requests, requests);
  EXPECT_EQ(r.continuations, crossings);
  EXPECT_EQ(r.traversal_accesses, accesses);
  EXPECT_DOUBLE_EQ(r.pulse.total_ns, static_cast<double>(requests) * PulseRequestNs(p) +
                                         static_cast<double>(crossings) * PulseContinuationNs(p) +
                                         static_cast<double>(accesses) * PulseIterationNs(p));
  // One node: no crossings at all, whatever the trace's node numbers say.
  EXPECT_EQ(RunCxlModel(t, HandParams(1)).continuations, 0u);
}

TEST(CxlModel, FootprintCountsDistinctLines) {
  const CxlTrace t = OneOp({CpuRead(0x0, 64), CpuRead(0x20, 64), CpuRead(0x1000, 1)});
  EXPECT_EQ(CxlFootprintLines(t, 64), 3u);  // lines 0, 1 and 64
}

TEST(CxlModel, RefusesBadParameters) {
  CxlParams p = HandParams(1);
  EXPECT_TRUE(ValidateCxlParams(p).ok());
  p.line_bytes = 48;
  EXPECT_EQ(ValidateCxlParams(p).code(), Status::Code::kInvalidArgument);
  p = HandParams(0);
  EXPECT_EQ(ValidateCxlParams(p).code(), Status::Code::kInvalidArgument);
  p = HandParams(1);
  p.cxl_ns = 50;  // below DRAM
  EXPECT_EQ(ValidateCxlParams(p).code(), Status::Code::kInvalidArgument);
  p = HandParams(1);
  p.l3_ns = -1;
  EXPECT_EQ(ValidateCxlParams(p).code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace pulse::bench
