// `pulse bench ycsb` (src/bench/ycsb_bench.h) on a tiny scale against a real
// local cluster of two racks: every system runs, checks every read against
// the value its client wrote, and counts what the systems are about (the
// all-local upper bound sends nothing; the tiered store runs part of its
// operations in the rack; object-rpc sends a message per operation; paging
// faults pages in).  No timing is asserted.  And the option checks.
#include "bench/ycsb_bench.h"

#include "bench/ycsb_ablation.h"

#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace pulse::bench {
namespace {

YcsbBenchOptions Tiny(char workload, std::vector<std::string> systems) {
  YcsbBenchOptions o;
  o.workload.workload = workload;
  o.workload.records = 400;
  o.systems = std::move(systems);
  o.racks = 2;
  o.clients = 1;
  o.ops = 400;
  o.warmup = 20;
  o.pool_mib = 32;
  o.binary = PULSE_BINARY;
  o.run_dir = (std::filesystem::path(::testing::TempDir()) / fmt::format("ycsb-{}", getpid())).string();
  return o;
}

const YcsbSystemResult& Of(const YcsbBenchResult& r, const std::string& system) {
  for (const auto& s : r.systems)
    if (s.system == system) return s;
  static YcsbSystemResult none;
  ADD_FAILURE() << "no result for " << system;
  return none;
}

TEST(YcsbBench, EverySystemRunsWorkloadCAndCountsItsPath) {
  const YcsbBenchOptions o = Tiny('C', {"tiered", "all-local", "object-rpc", "paging"});
  auto r = RunYcsbBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::filesystem::remove_all(o.run_dir);
  ASSERT_EQ(r->systems.size(), 4u);
  for (const auto& s : r->systems) {
    EXPECT_EQ(s.ops, 400u) << s.system;
    EXPECT_EQ(s.reads, 400u) << s.system;
    EXPECT_GE(s.verified_reads, 400u) << s.system;
    EXPECT_GT(s.throughput_ops, 0) << s.system;
  }
  const auto& local = Of(*r, "all-local");
  EXPECT_EQ(local.local_rack_fraction, 1.0);
  EXPECT_EQ(local.messages_per_op, 0.0);
  EXPECT_EQ(local.one_sided_per_op, 0.0);
  const auto& tiered = Of(*r, "tiered");
  EXPECT_GT(tiered.local_rack_fraction, 0.0) << "buckets in the client's rack run there";
  EXPECT_LT(tiered.local_rack_fraction, 1.0) << "the other rack's are offloaded";
  EXPECT_GT(tiered.offloaded_per_op, 0.0);
  const auto& rpc = Of(*r, "object-rpc");
  EXPECT_GE(rpc.messages_per_op, 1.0) << "every GET is an RPC";
  EXPECT_EQ(rpc.local_rack_fraction, 0.0);
  const auto& paging = Of(*r, "paging");
  EXPECT_GT(paging.page_cache_hit_ratio, 0.0);
  EXPECT_LT(paging.page_cache_hit_ratio, 1.0);
  EXPECT_GT(paging.one_sided_per_op, 0.0) << "faults read whole pages";
  EXPECT_EQ(paging.messages_per_op, 0.0);
  const nlohmann::json j = r->ToJson(o);
  EXPECT_EQ(j["swap"], "off");
  EXPECT_TRUE(j["systems"][0].contains("throughput_ops"));
}

TEST(YcsbBench, WritesAndInsertsOnTheSystemsThatHaveThem) {
  for (char w : {'A', 'F'}) {
    const YcsbBenchOptions o = Tiny(w, {"tiered", "paging", "object-rpc"});
    auto r = RunYcsbBench(o);
    ASSERT_TRUE(r.ok()) << w << ": " << r.status().ToString();
    std::filesystem::remove_all(o.run_dir);
    for (const auto& s : r->systems) EXPECT_GT(s.updates + s.read_modify_writes, 100u) << w << " " << s.system;
  }
  const YcsbBenchOptions d = Tiny('D', {"tiered", "object-rpc"});
  auto r = RunYcsbBench(d);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::filesystem::remove_all(d.run_dir);
  for (const auto& s : r->systems) EXPECT_GT(s.inserts, 0u) << s.system;
  EXPECT_GE(Of(*r, "object-rpc").messages_per_op, 1.0) << "inserts are RPCs too";
  EXPECT_EQ(r->ToJson(d)["distribution"], "latest");
}

TEST(YcsbBench, RefusesWhatASystemCannotRun) {
  EXPECT_TRUE(CheckYcsbBenchOptions(Tiny('A', {"object-rpc"})).ok());
  YcsbBenchOptions rrpc_writes = Tiny('A', {"object-rpc"});
  rrpc_writes.rrpc_threshold = 512;
  EXPECT_EQ(CheckYcsbBenchOptions(rrpc_writes).code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(CheckYcsbBenchOptions(Tiny('D', {"paging"})).code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(CheckYcsbBenchOptions(Tiny('C', {"fastswap"})).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(CheckYcsbBenchOptions(Tiny('E', {"tiered"})).code(), Status::Code::kInvalidArgument);
  YcsbBenchOptions o = Tiny('C', {"tiered"});
  o.racks = 0;
  EXPECT_EQ(CheckYcsbBenchOptions(o).code(), Status::Code::kInvalidArgument);
  o = Tiny('C', {"paging"});
  o.page_cache_ratio = 0;
  EXPECT_EQ(CheckYcsbBenchOptions(o).code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(CheckYcsbBenchOptions(Tiny('C', {"tiered", "all-local", "object-rpc", "paging"})).ok());
}

// object-rpc over RRPC: values of 64 and 4096 bytes as objects, every read
// checked against the value written; the small ones come back inline, the
// large ones by address, repeats from the cached address (no RPC).
TEST(YcsbBench, ObjectRpcOverRrpcTakesThePathItsSizeAsksFor) {
  for (uint32_t value_bytes : {64u, 4096u}) {
    YcsbBenchOptions o = Tiny('C', {"object-rpc"});
    o.workload.value_bytes = value_bytes;
    o.rrpc_threshold = 512;
    auto r = RunYcsbBench(o);
    ASSERT_TRUE(r.ok()) << value_bytes << ": " << r.status().ToString();
    std::filesystem::remove_all(o.run_dir);
    const YcsbSystemResult& s = r->systems.at(0);
    EXPECT_GE(s.verified_reads, 400u);
    EXPECT_GT(s.rrpc_cached_per_op, 0.0) << "zipfian keys repeat";
    EXPECT_EQ(s.rrpc_stale, 0u);
    if (value_bytes <= 512) {
      EXPECT_GT(s.rrpc_inline_per_op, 0.0);
      EXPECT_EQ(s.rrpc_address_per_op, 0.0);
    } else {
      EXPECT_EQ(s.rrpc_inline_per_op, 0.0);
      EXPECT_GT(s.rrpc_address_per_op, 0.0);
    }
    EXPECT_DOUBLE_EQ(s.rrpc_inline_per_op + s.rrpc_address_per_op + s.rrpc_cached_per_op, 1.0);
    EXPECT_EQ(r->ToJson(o)["rrpc_threshold"], 512);
  }
  // Values that do not fit an item need RRPC objects.
  YcsbBenchOptions big = Tiny('C', {"tiered"});
  big.workload.value_bytes = 4096;
  EXPECT_EQ(CheckYcsbBenchOptions(big).code(), Status::Code::kInvalidArgument);
}

// Swaps on: each client's partition in the other rack becomes hot while it
// loads, and the switch moves it into the client's rack with its
// allocations (each client's slabs are whole pages), exchanged with a page
// that holds nothing; every read still returns what was written.  Counted,
// not timed: how many operations then ran in the rack depends on when the
// swaps ended.
TEST(YcsbBench, SwapsMoveTheOtherRacksPagesOfEachClientIntoItsRack) {
  YcsbBenchOptions o = Tiny('A', {"tiered"});
  o.swap = true;
  auto r = RunYcsbBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::filesystem::remove_all(o.run_dir);
  const YcsbSystemResult& s = r->systems.at(0);
  EXPECT_GE(s.verified_reads, 200u);
  EXPECT_GE(s.swap_requests, 2u) << "one client per rack, each with a partition in the other";
  EXPECT_GE(s.swaps_finished, 2u);
  EXPECT_GE(s.swap_outcomes.count("swapped") ? s.swap_outcomes.at("swapped") : 0, 2u)
      << "exchanged with a page of the client's rack";
  EXPECT_EQ(s.swap_outcomes.count("rejected"), 0u) << "no page is used by both racks";
  const nlohmann::json j = r->ToJson(o);
  EXPECT_EQ(j["swap"], "on");
  EXPECT_EQ(j["hot_threshold"], 4.0);
  EXPECT_EQ(j["systems"][0]["swaps_finished"], s.swaps_finished);

  // Off: nothing counted, nothing asked for.
  o.swap = false;
  auto off = RunYcsbBench(o);
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  std::filesystem::remove_all(o.run_dir);
  EXPECT_EQ(off->systems.at(0).swap_requests, 0u);
  EXPECT_EQ(off->systems.at(0).swaps_finished, 0u);

  YcsbBenchOptions bad = Tiny('C', {"tiered"});
  bad.swap = true;
  bad.tiered_rrpc = true;
  EXPECT_EQ(CheckYcsbBenchOptions(bad).code(), Status::Code::kFailedPrecondition);
  bad = Tiny('C', {"tiered"});
  bad.page_bytes = 3 << 20;
  EXPECT_EQ(CheckYcsbBenchOptions(bad).code(), Status::Code::kInvalidArgument);
  bad = Tiny('C', {"tiered"});
  bad.hot_threshold = -1;
  EXPECT_EQ(CheckYcsbBenchOptions(bad).code(), Status::Code::kInvalidArgument);
}

// The tiered system with RRPC for the other rack's buckets: its GETs go by
// RRPC instead of offloaded programs, repeats by the cached item address.
TEST(YcsbBench, TieredRrpcReadsTheOtherRacksItemsByRrpc) {
  YcsbBenchOptions o = Tiny('C', {"tiered"});
  auto base = RunYcsbBench(o);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  o.tiered_rrpc = true;
  auto r = RunYcsbBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::filesystem::remove_all(o.run_dir);
  const YcsbSystemResult& b = base->systems.at(0);
  const YcsbSystemResult& rrpc = r->systems.at(0);
  EXPECT_GT(b.offloaded_per_op, 0.0) << "the other rack's GETs are offloaded";
  EXPECT_EQ(b.one_sided_per_op, 0.0);
  EXPECT_EQ(rrpc.offloaded_per_op, 0.0) << "the other rack's GETs go by RRPC instead";
  EXPECT_GT(rrpc.rrpc_cached_per_op, 0.0) << "repeats read the cached item address";
  EXPECT_GT(rrpc.one_sided_per_op, 0.0);
  EXPECT_LT(rrpc.messages_per_op, b.messages_per_op);
  EXPECT_GE(rrpc.verified_reads, 400u);
}

// The ablation ladder: the rungs in order, the unbuilt one unmeasured, and
// each measured rung with the techniques it names (counted, not timed).
TEST(YcsbBench, AblationLadderRunsTheBuiltRungs) {
  const YcsbBenchOptions o = Tiny('C', {"tiered"});
  auto r = RunYcsbAblation(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::filesystem::remove_all(o.run_dir);
  ASSERT_EQ(r->size(), 5u);
  const std::vector<std::string> names = {"Base", "+double ring", "+swap", "+write buffer", "+RRPC"};
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ((*r)[i].name, names[i]);
    EXPECT_EQ((*r)[i].result.has_value(), (*r)[i].built) << names[i];
  }
  EXPECT_FALSE((*r)[1].built);
  EXPECT_TRUE((*r)[2].built);
  const YcsbSystemResult& base = *(*r)[0].result;
  const YcsbSystemResult& swap = *(*r)[2].result;
  const YcsbSystemResult& rrpc = *(*r)[4].result;
  EXPECT_GT(base.offloaded_per_op, 0.0) << "the other rack's GETs are offloaded";
  EXPECT_EQ(base.swap_requests, 0u);
  EXPECT_GE(swap.swaps_finished, 2u) << "+swap moves each client's other-rack pages";
  EXPECT_EQ(rrpc.swaps_finished, 0u) << "RRPC does not follow moving pages: its rung runs without swaps";
  EXPECT_EQ(rrpc.offloaded_per_op, 0.0) << "the other rack's GETs go by RRPC, not offloaded";
  EXPECT_GT(rrpc.rrpc_cached_per_op, 0.0);
  for (const YcsbAblationRung& rung : *r)
    if (rung.result) EXPECT_GE(rung.result->verified_reads, 400u) << rung.name;
  const nlohmann::json j = YcsbAblationJson(o, *r);
  EXPECT_EQ(j["rungs"].size(), 5u);
  EXPECT_EQ(j["rungs"][0]["swap"], false);
  EXPECT_EQ(j["rungs"][2]["swap"], true);
  EXPECT_EQ(j["rungs"][4]["rrpc"], true);
  EXPECT_EQ(j["rungs"][0]["speedup_vs_base"], 1.0);
}

}  // namespace
}  // namespace pulse::bench
