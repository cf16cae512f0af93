#include "bench/cxl_bench.h"

#include <algorithm>

#include <fmt/format.h>

#include "bench/cxl_trace.h"

namespace pulse::bench {
namespace {

using nlohmann::json;

// Whole lines, at least one.
uint64_t LinesBytes(double bytes, uint32_t line_bytes) {
  return std::max<uint64_t>(1, static_cast<uint64_t>(bytes) / line_bytes) * line_bytes;
}

json ParamsJson(const CxlParams& p) {
  return json{{"line_bytes", p.line_bytes},       {"l3_ns", p.l3_ns},
              {"dram_ns", p.dram_ns},             {"cxl_ns", p.cxl_ns},
              {"cxl_switch_ns", p.cxl_switch_ns}, {"pulse_stack_ns", p.pulse_stack_ns},
              {"pulse_scheduler_ns", p.pulse_scheduler_ns}, {"pulse_logic_ns", p.pulse_logic_ns},
              {"pulse_continuation_ns", PulseContinuationNs(p)}, {"pulse_iteration_ns", PulseIterationNs(p)}};
}

json ConfigJson(const CxlConfigResult& c, uint64_t ops) {
  const double lines = static_cast<double>(c.l3_hits + c.cache_hits + c.far_lines);
  return json{{"ns_per_op", ops ? c.total_ns / ops : 0},
              {"l3_hit_fraction", lines > 0 ? c.l3_hits / lines : 0},
              {"cache_hit_fraction", lines > 0 ? c.cache_hits / lines : 0},
              {"far_lines_per_op", ops ? static_cast<double>(c.far_lines) / ops : 0}};
}

}  // namespace

json CxlBenchResult::ToJson(const CxlBenchOptions& o) const {
  json out{{"bench", "cxl"},
           {"kind", "model"},
           {"note", "a trace-driven model (docs/cxl.md), not a measurement"},
           {"ops", o.ops},
           {"chain_length", o.chain_length},
           {"cache_fraction", o.cache_fraction},
           {"cache_mib", o.cache_mib},
           {"l3_kib", o.l3_kib},
           {"slab_kib", o.slab_kib},
           {"warmup_ops", o.warmup_ops},
           {"params", ParamsJson(o.params)},
           {"rows", json::array()}};
  for (const CxlBenchRow& r : rows) {
    const CxlModelResult& m = r.model;
    const double ops = static_cast<double>(std::max<uint64_t>(m.ops, 1));
    out["rows"].push_back(json{{"app", r.app},
                               {"nodes", r.nodes},
                               {"footprint_bytes", r.footprint_bytes},
                               {"cache_bytes", r.params.cache_bytes},
                               {"l3_bytes", r.params.l3_bytes},
                               {"cxl_far_ns", CxlFarNs(r.params)},
                               {"pulse_request_ns", PulseRequestNs(r.params)},
                               {"priced_ops", m.ops},
                               {"accesses_per_op", m.accesses / ops},
                               {"traversal_accesses_per_op", m.traversal_accesses / ops},
                               {"requests_per_op", m.requests / ops},
                               {"continuations_per_op", m.continuations / ops},
                               {"local_ns_per_op", m.local_ns_per_op()},
                               {"cxl_ns_per_op", m.cxl_ns_per_op()},
                               {"cxl_pulse_ns_per_op", m.pulse_ns_per_op()},
                               {"cxl_slowdown", m.cxl_slowdown()},
                               {"cxl_pulse_slowdown", m.pulse_slowdown()},
                               {"cxl_pulse_native_ns_per_op", r.native.pulse_ns_per_op()},
                               {"cxl_pulse_native_slowdown", r.native.pulse_slowdown()},
                               {"local", ConfigJson(m.local, m.ops)},
                               {"cxl", ConfigJson(m.cxl, m.ops)},
                               {"cxl_pulse", ConfigJson(m.pulse, m.ops)}});
  }
  return out;
}

Result<CxlBenchResult> RunCxlBench(const CxlBenchOptions& o) {
  PULSE_RETURN_IF_ERROR(ValidateCxlParams(o.params));
  if (o.apps.empty()) return Status::InvalidArgument("bench cxl: no --app");
  for (const std::string& app : o.apps)
    if (app != "webservice" && app != "wiredtiger" && app != "btrdb")
      return Status::InvalidArgument(fmt::format("bench cxl: --app '{}' (webservice, wiredtiger, btrdb)", app));
  if (o.nodes.empty()) return Status::InvalidArgument("bench cxl: no --nodes");
  for (uint32_t n : o.nodes)
    if (n != 1 && n != 4) return Status::InvalidArgument(fmt::format("bench cxl: --nodes {} (1 or 4)", n));
  if (o.warmup_ops >= o.ops)
    return Status::InvalidArgument(fmt::format("bench cxl: --warmup-ops {} leaves none of --ops {}", o.warmup_ops, o.ops));
  if (!(o.cache_mib >= 0) || !(o.l3_kib >= 0) || !(o.cache_fraction > 0 && o.cache_fraction <= 1))
    return Status::InvalidArgument(fmt::format("bench cxl: --cache-mib {}, --l3-kib {} must be >= 0 and "
                                               "--cache-fraction {} in (0, 1]",
                                               o.cache_mib, o.l3_kib, o.cache_fraction));
  if (o.slab_kib == 0) return Status::InvalidArgument("bench cxl: --slab-kib must be at least 1");
  CxlBenchResult res;
  const uint32_t capture_nodes = *std::max_element(o.nodes.begin(), o.nodes.end());
  for (const std::string& app : o.apps) {
    CxlCaptureOptions c;
    c.app = app;
    c.memory_nodes = capture_nodes;
    c.size = o.size;
    c.chain_length = o.chain_length;
    c.slab_bytes = o.slab_kib * 1024;
    c.ops = o.ops;
    c.seed = o.seed;
    c.binary = o.binary;
    c.run_dir = o.run_dir;
    c.ucx_tls = o.ucx_tls;
    c.progress = o.progress;
    auto trace = CaptureAppTrace(c);
    if (!trace.ok()) return trace.status();
    const uint32_t line = o.params.line_bytes;
    const uint64_t footprint = CxlFootprintLines(*trace, line) * line;
    for (uint32_t nodes : o.nodes) {
      CxlBenchRow row;
      row.app = app;
      row.nodes = nodes;
      row.footprint_bytes = footprint;
      row.params = o.params;
      row.params.nodes = nodes;
      row.params.warmup_ops = o.warmup_ops;
      row.params.cache_bytes =
          LinesBytes(o.cache_mib > 0 ? o.cache_mib * (1 << 20) : o.cache_fraction * static_cast<double>(footprint), line);
      row.params.l3_bytes =
          LinesBytes(o.l3_kib > 0 ? o.l3_kib * 1024 : static_cast<double>(row.params.cache_bytes) * CxlBenchOptions::kL3PerCache, line);
      row.model = RunCxlModel(*trace, row.params);
      CxlParams native = row.params;
      native.pulse_stack_ns = 0;
      row.native = RunCxlModel(*trace, native);
      if (o.progress)
        o.progress(fmt::format("{} on {} node(s): local {:.0f} ns/op, cxl {:.0f} ns/op ({:.2f}x), cxl+pulse {:.0f} "
                               "ns/op ({:.2f}x; CXL-native request path {:.2f}x) [model]",
                               app, nodes, row.model.local_ns_per_op(), row.model.cxl_ns_per_op(),
                               row.model.cxl_slowdown(), row.model.pulse_ns_per_op(), row.model.pulse_slowdown(),
                               row.native.pulse_slowdown()));
      res.rows.push_back(std::move(row));
    }
  }
  return res;
}

}  // namespace pulse::bench
