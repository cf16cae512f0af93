// `pulse bench cxl`: pulse's own CXL study (seed 000 section 7, Fig. 12;
// issue 16), a model: each application's operations are captured once
// (cxl_trace.h) and priced by the CXL model (cxl_model.h) for each node
// count, giving time per operation on local DRAM, on CXL memory, and on CXL
// memory with pulse, and the two slowdowns versus local DRAM.
//
// Thread-safety: RunCxlBench starts a cluster per application; do not run
// two at once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/cxl_model.h"
#include "pulse/status.h"

namespace pulse::bench {

struct CxlBenchOptions {
  std::vector<std::string> apps = {"webservice", "wiredtiger", "btrdb"};
  // Node counts to price: 1 (one CXL memory device, no switch) and/or 4
  // (four memory nodes behind a CXL switch).  The traces are captured once,
  // on max(nodes) memory nodes.
  std::vector<uint32_t> nodes = {1, 4};
  uint64_t size = 0;         // data-set size per app (cxl_trace.h); 0: quick default
  uint32_t chain_length = 0; // webservice: > 0 for the high-load-factor variant
  uint64_t slab_kib = 64;    // the capture's allocation granularity (CxlCaptureOptions::slab_bytes)
  uint64_t ops = 2000;       // operations captured per app
  uint64_t warmup_ops = 1000;  // of those, the first fill the caches unpriced
  // The CPU-attached DRAM cache: cache_mib MiB, or 0: cache_fraction of the
  // trace's footprint (the paper's cache of some GB, scaled to the trace;
  // 0.10 as `pulse bench app --system cache` sizes its cache).
  double cache_mib = 0;
  double cache_fraction = 0.10;
  // L3: l3_kib KiB, or 0: kL3PerCache of the DRAM cache.
  static constexpr double kL3PerCache = 1.0 / 64;  // ~32 MiB of L3 beside a 2 GiB DRAM cache
  double l3_kib = 0;
  CxlParams params;          // the latencies (cache sizes and nodes are set per run)
  uint64_t seed = 42;
  std::string binary, run_dir, ucx_tls;
  std::function<void(const std::string&)> progress;
};

// One application at one node count.
struct CxlBenchRow {
  std::string app;
  uint32_t nodes = 0;
  uint64_t footprint_bytes = 0;  // distinct lines the trace touches, in bytes
  CxlParams params;              // as priced (cache sizes, nodes)
  CxlModelResult model;
  // The same trace with pulse_stack_ns = 0: a request path native to CXL,
  // where the accelerator parses no network packet (the link's crossing is
  // still paid).  The bound on what the conservative default leaves out.
  CxlModelResult native;
};

struct CxlBenchResult {
  std::vector<CxlBenchRow> rows;  // app-major, nodes in the order asked
  nlohmann::json ToJson(const CxlBenchOptions& options) const;
};

// Captures and prices every app.  Errors: InvalidArgument (unknown app,
// a node count other than 1 or 4, warmup_ops >= ops, slab_kib == 0, a bad
// parameter: ValidateCxlParams), those of CaptureAppTrace.
Result<CxlBenchResult> RunCxlBench(const CxlBenchOptions& options);

}  // namespace pulse::bench
