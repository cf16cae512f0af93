#include "bench/cxl_model.h"

#include <algorithm>
#include <list>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

namespace pulse::bench {
namespace {

// The first and last line an access touches (a 0-byte access: its first).
std::pair<uint64_t, uint64_t> LinesOf(const CxlAccess& a, uint32_t line_bytes) {
  return {a.addr / line_bytes, (a.addr + std::max<uint32_t>(a.bytes, 1) - 1) / line_bytes};
}

// An LRU set of line numbers with a fixed capacity (0: holds nothing).
class LruLines {
 public:
  explicit LruLines(uint64_t capacity) : capacity_(capacity) {}
  // True on a hit; either way the line is now the most recently used.
  bool Touch(uint64_t line) {
    if (capacity_ == 0) return false;
    if (auto it = where_.find(line); it != where_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return true;
    }
    if (where_.size() == capacity_) {
      where_.erase(order_.back());
      order_.pop_back();
    }
    order_.push_front(line);
    where_[line] = order_.begin();
    return false;
  }

 private:
  uint64_t capacity_;
  std::list<uint64_t> order_;  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where_;
};

// The CPU's cache hierarchy in front of one kind of far memory: L3, then
// (with CXL) the CPU-attached DRAM cache, then far memory at far_ns.
class CpuCaches {
 public:
  CpuCaches(const CxlParams& p, bool dram_cache, double far_ns)
      : p_(p), l3_(p.l3_bytes / p.line_bytes), cache_(dram_cache ? p.cache_bytes / p.line_bytes : 0),
        dram_cache_(dram_cache), far_ns_(far_ns) {}

  // The cost of one access: its lines overlap, so the slowest one.
  double Access(const CxlAccess& a, CxlConfigResult* counts) {
    const auto [first, last] = LinesOf(a, p_.line_bytes);
    double worst = 0;
    for (uint64_t line = first; line <= last; ++line) {
      double ns;
      if (l3_.Touch(line)) {
        ns = p_.l3_ns;
        ++counts->l3_hits;
      } else if (dram_cache_ && cache_.Touch(line)) {
        ns = p_.dram_ns;
        ++counts->cache_hits;
      } else {
        ns = far_ns_;
        ++counts->far_lines;
      }
      worst = std::max(worst, ns);
    }
    return worst;
  }

 private:
  const CxlParams& p_;
  LruLines l3_, cache_;
  bool dram_cache_;
  double far_ns_;
};

}  // namespace

Status ValidateCxlParams(const CxlParams& p) {
  if (p.line_bytes == 0 || (p.line_bytes & (p.line_bytes - 1)) != 0)
    return Status::InvalidArgument(fmt::format("cxl model: line_bytes {} is not a power of two", p.line_bytes));
  if (p.nodes == 0) return Status::InvalidArgument("cxl model: nodes must be at least 1");
  const std::pair<const char*, double> latencies[] = {
      {"l3_ns", p.l3_ns}, {"dram_ns", p.dram_ns}, {"cxl_ns", p.cxl_ns}, {"cxl_switch_ns", p.cxl_switch_ns},
      {"pulse_stack_ns", p.pulse_stack_ns}, {"pulse_scheduler_ns", p.pulse_scheduler_ns},
      {"pulse_logic_ns", p.pulse_logic_ns}};
  for (const auto& [name, ns] : latencies)
    if (!(ns >= 0)) return Status::InvalidArgument(fmt::format("cxl model: {} = {} must be >= 0", name, ns));
  if (p.cxl_ns < p.dram_ns)
    return Status::InvalidArgument(
        fmt::format("cxl model: cxl_ns {} is below dram_ns {} (a CXL load includes a DRAM access)", p.cxl_ns, p.dram_ns));
  return Status::Ok();
}

double CxlFarNs(const CxlParams& p) { return p.cxl_ns + (p.nodes > 1 ? p.cxl_switch_ns : 0); }

double PulseRequestNs(const CxlParams& p) {
  return (CxlFarNs(p) - p.dram_ns) + 2 * p.pulse_stack_ns + p.pulse_scheduler_ns;
}

double PulseContinuationNs(const CxlParams& p) {
  return 2 * p.pulse_stack_ns + p.cxl_switch_ns + p.pulse_scheduler_ns;
}

double PulseIterationNs(const CxlParams& p) { return p.dram_ns + p.pulse_logic_ns; }

CxlModelResult RunCxlModel(const CxlTrace& trace, const CxlParams& p) {
  CxlModelResult r;
  CpuCaches local(p, /*dram_cache=*/false, p.dram_ns);
  CpuCaches cxl(p, /*dram_cache=*/true, CxlFarNs(p));
  CpuCaches pulse_cpu(p, /*dram_cache=*/true, CxlFarNs(p));  // the CPU's own accesses under pulse
  CxlConfigResult scratch;  // counts of the warm-up operations, dropped
  for (uint64_t i = 0; i < trace.ops.size(); ++i) {
    const bool priced = i >= p.warmup_ops;
    CxlConfigResult* lc = priced ? &r.local : &scratch;
    CxlConfigResult* cc = priced ? &r.cxl : &scratch;
    CxlConfigResult* pc = priced ? &r.pulse : &scratch;
    double local_ns = 0, cxl_ns = 0, pulse_ns = 0;
    uint64_t requests = 0, continuations = 0, traversal_accesses = 0;
    bool in_traversal = false;
    uint32_t traversal = 0, node = 0;
    for (const CxlAccess& a : trace.ops[i].accesses) {
      local_ns += local.Access(a, lc);
      cxl_ns += cxl.Access(a, cc);
      if (!a.traversal) {
        in_traversal = false;
        pulse_ns += pulse_cpu.Access(a, pc);
        continue;
      }
      ++traversal_accesses;
      const uint32_t at = a.node % p.nodes;
      if (!in_traversal || a.traversal_index != traversal) {
        in_traversal = true;
        traversal = a.traversal_index;
        node = at;
        ++requests;
        pulse_ns += PulseRequestNs(p);
      } else if (at != node) {
        node = at;
        ++continuations;
        pulse_ns += PulseContinuationNs(p);
      }
      pulse_ns += a.write ? p.dram_ns : PulseIterationNs(p);
    }
    if (!priced) continue;
    ++r.ops;
    r.accesses += trace.ops[i].accesses.size();
    r.traversal_accesses += traversal_accesses;
    r.requests += requests;
    r.continuations += continuations;
    r.local.total_ns += local_ns;
    r.cxl.total_ns += cxl_ns;
    r.pulse.total_ns += pulse_ns;
  }
  return r;
}

uint64_t CxlFootprintLines(const CxlTrace& trace, uint32_t line_bytes) {
  std::unordered_set<uint64_t> lines;
  for (const CxlOp& op : trace.ops)
    for (const CxlAccess& a : op.accesses) {
      const auto [first, last] = LinesOf(a, line_bytes);
      for (uint64_t l = first; l <= last; ++l) lines.insert(l);
    }
  return lines.size();
}

}  // namespace pulse::bench
