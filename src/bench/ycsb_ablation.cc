// The ablation ladder (ycsb_ablation.h).
#include "bench/ycsb_ablation.h"

#include <fmt/format.h>

namespace pulse::bench {

Result<std::vector<YcsbAblationRung>> RunYcsbAblation(const YcsbBenchOptions& base) {
  auto rung = [](std::string name, std::string measures, bool swap, bool write_buffer, bool rrpc) {
    YcsbAblationRung r;
    r.name = std::move(name);
    r.built = true;
    r.measures = std::move(measures);
    r.swap = swap;
    r.write_buffer = write_buffer;
    r.rrpc = rrpc;
    return r;
  };
  auto not_built = [](std::string name, std::string note) {
    YcsbAblationRung r;
    r.name = std::move(name);
    r.note = std::move(note);
    return r;
  };
  std::vector<YcsbAblationRung> rungs = {
      rung("Base",
           "kv::Store on CPU nodes of both racks: rack-local buckets by loads and stores, other racks' offloaded "
           "(one message each); no swaps, no write buffer, no RRPC",
           false, false, false),
      not_built("+double ring",
                "not a rung here: the double-layer ring is built (ClientOptions::ring_layout, docs/ring.md) but the "
                "racks talk over tcp, where the ring has no one-sided puts (each put a message); measured by "
                "pulse bench ring"),
      rung("+swap",
           "Base with hot-page swaps (bench ycsb --swap on): each client asks for the other rack's pages it uses "
           "(H_p as given), the switch moves them with their allocations into its rack, and the operations on them "
           "then run there",
           true, false, false),
      rung("+write buffer",
           "+swap with ClientOptions::lock_tier.write_buffer on; kv::Store takes no FarLock, so no YCSB write is "
           "buffered (lock_buffered_writes_per_op): the same path as +swap",
           true, true, false),
      rung("+RRPC",
           "+write buffer with GETs of another rack's buckets by RRPC (item mode): one kRpcKvGet RPC (the item "
           "inline, below the threshold), then the cached item address: one one-sided read; without swaps (the "
           "RRPC path does not follow a page that moved), so it adds to +write buffer minus +swap",
           false, true, true)};
  for (YcsbAblationRung& r : rungs) {
    if (!r.built) continue;
    YcsbBenchOptions o = base;
    o.systems = {"tiered"};
    o.swap = r.swap;
    o.tiered_write_buffer = r.write_buffer;
    o.tiered_rrpc = r.rrpc;
    if (o.progress) o.progress(fmt::format("ablation: {}", r.name));
    PULSE_ASSIGN_OR_RETURN(YcsbBenchResult res, RunYcsbBench(o));
    r.load_average = res.load_average;
    if (!res.systems.empty()) r.result = res.systems.front();
  }
  return rungs;
}

nlohmann::json YcsbAblationJson(const YcsbBenchOptions& o, const std::vector<YcsbAblationRung>& rungs) {
  // The run's own description (workload, scale), without its systems.
  nlohmann::json out = YcsbBenchResult{}.ToJson(o);
  out.erase("systems");
  out.erase("swap");
  out.erase("load_average_1m");
  out["rungs"] = nlohmann::json::array();
  double base = 0;
  for (const YcsbAblationRung& rung : rungs) {
    nlohmann::json j = {{"rung", rung.name}, {"built", rung.built}, {"measures", rung.measures}, {"note", rung.note}};
    if (rung.result) {
      YcsbBenchResult one;
      one.systems = {*rung.result};
      YcsbBenchOptions ro = o;
      ro.swap = rung.swap;
      ro.tiered_write_buffer = rung.write_buffer;
      ro.tiered_rrpc = rung.rrpc;
      j.update(one.ToJson(ro)["systems"][0]);
      j["swap"] = rung.swap;
      j["load_average_1m"] = rung.load_average;
      if (rung.name == "Base") base = rung.result->throughput_ops;
      if (base > 0) j["speedup_vs_base"] = rung.result->throughput_ops / base;
    }
    out["rungs"].push_back(std::move(j));
  }
  return out;
}

}  // namespace pulse::bench
