// The CXL model (seed 000 section 7, Fig. 12; issue 16): a trace-driven
// model, not a measurement.  It replays the far-memory accesses of
// application operations (cxl_trace.h captures them) against stated
// latencies and prices each operation three ways:
//
//   local      every line from the CPU's L3 or local DRAM;
//   cxl        the working set on CXL-attached memory behind a CPU-attached
//              DRAM cache: L3 hit, DRAM-cache hit, or a CXL load;
//   cxl+pulse  as cxl, except that each traversal is offloaded: the CPU pays
//              one request/response crossing to the memory node and the
//              traversal's accesses run there at the node's DRAM latency
//              plus the engine's logic time per iteration; a continuation
//              crosses the CXL switch when the next pointer is on another
//              memory node.
//
// Every access of an operation is serial (a pointer chase: the next address
// depends on the last load); the 64-byte lines of one access are fetched in
// parallel, so an access costs its slowest line.  Caches are LRU over lines.
// docs/cxl.md gives the formulas, the parameters' sources, and what the
// model leaves out.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pulse/status.h"

namespace pulse::bench {

// One far-memory access of an operation, in program order.
struct CxlAccess {
  uint64_t addr = 0;
  uint32_t bytes = 0;
  bool write = false;
  uint32_t node = 0;  // the memory node holding addr
  // Part of a pointer traversal (a window a traversal iteration loads, or its
  // STORE): pulse runs it at the memory node.  False: the CPU node's own
  // access (e.g. reading the object a lookup found), at the CPU either way.
  bool traversal = false;
  // Which traversal of the operation this access belongs to (0, 1, ...):
  // each traversal is one offloaded request.  Meaningless when !traversal.
  uint32_t traversal_index = 0;
};

// The accesses of one application operation.
struct CxlOp {
  std::vector<CxlAccess> accesses;
};

struct CxlTrace {
  std::string app;
  std::vector<CxlOp> ops;
};

// The model's parameters; docs/cxl.md cites the source of each default.
struct CxlParams {
  uint32_t line_bytes = 64;       // access granularity (seed 000 section 7)
  double l3_ns = 15;              // L3 hit
  double dram_ns = 80;            // local DRAM: the CPU's, and a memory node's own
  double cxl_ns = 170;            // a CPU load from CXL memory attached without a switch
  double cxl_switch_ns = 70;      // added to a round trip by one CXL switch level
  double pulse_stack_ns = 430;    // the accelerator handling one request or response message
  double pulse_scheduler_ns = 4;  // the accelerator's scheduler, per request or continuation
  double pulse_logic_ns = 21;     // logic per iteration at the memory node
  uint64_t l3_bytes = 0;          // L3 capacity (0: no L3)
  uint64_t cache_bytes = 0;       // the CPU-attached DRAM cache in front of CXL memory
  // 1: one CXL memory device, no switch.  >1: that many memory nodes behind
  // a CXL switch, each access going to the node the trace recorded (modulo
  // nodes).
  uint32_t nodes = 1;
  // The first warmup_ops operations fill the caches and are not priced.
  uint64_t warmup_ops = 0;
};

// InvalidArgument naming the field: line_bytes not a power of two, a
// negative latency, nodes == 0.
Status ValidateCxlParams(const CxlParams& p);

// Latency of a CPU load that misses every cache: cxl_ns, plus cxl_switch_ns
// with more than one node.
double CxlFarNs(const CxlParams& p);
// The CPU's cost of one offloaded request: the interconnect's round trip
// (CxlFarNs - dram_ns: a CXL load minus the DRAM access at its end), the
// accelerator's stack for the request and for the response, its scheduler.
double PulseRequestNs(const CxlParams& p);
// One continuation from a memory node to another through the switch: the
// stack out of one node and into the next, the switch, the scheduler.
double PulseContinuationNs(const CxlParams& p);
// One iteration (window) at the memory node: dram_ns + pulse_logic_ns.
double PulseIterationNs(const CxlParams& p);

// What one configuration cost, over the priced (post-warmup) operations.
struct CxlConfigResult {
  double total_ns = 0;
  uint64_t l3_hits = 0, cache_hits = 0, far_lines = 0;  // lines by where they came from
};

struct CxlModelResult {
  uint64_t ops = 0;       // priced operations
  uint64_t accesses = 0;  // their accesses
  uint64_t traversal_accesses = 0;
  uint64_t requests = 0;       // offloaded requests (traversals) in cxl+pulse
  uint64_t continuations = 0;  // node-to-node crossings in cxl+pulse
  CxlConfigResult local, cxl, pulse;
  double local_ns_per_op() const { return ops ? local.total_ns / ops : 0; }
  double cxl_ns_per_op() const { return ops ? cxl.total_ns / ops : 0; }
  double pulse_ns_per_op() const { return ops ? pulse.total_ns / ops : 0; }
  double cxl_slowdown() const { return local.total_ns > 0 ? cxl.total_ns / local.total_ns : 0; }
  double pulse_slowdown() const { return local.total_ns > 0 ? pulse.total_ns / local.total_ns : 0; }
};

// Prices `trace` under `p` (which must be valid: ValidateCxlParams).
CxlModelResult RunCxlModel(const CxlTrace& trace, const CxlParams& p);

// Distinct lines of line_bytes the trace touches (its footprint in lines).
uint64_t CxlFootprintLines(const CxlTrace& trace, uint32_t line_bytes);

}  // namespace pulse::bench
