// The three applications on a real local rack (switch + two memory nodes),
// through the pulse and pulse-acc systems, with every answer checked against
// a native computation over the same data.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "bench/app_systems.h"
#include "support/ds_cluster.h"
#include "pulse/apps/btrdb.h"
#include "pulse/apps/webservice.h"
#include "pulse/apps/wiredtiger.h"

namespace pulse::apps {
namespace {

using pulse::ds::testing::DsCluster;
using pulse::ds::testing::kModes;
using pulse::ds::testing::ScaledOps;

class AppsCluster : public DsCluster {
 protected:
  std::unique_ptr<AppSystem> System(const std::string& name, std::optional<ExecutionMode> mode = std::nullopt,
                                    uint64_t slab_bytes = 4096) {
    bench::AppSystemConfig c;
    c.client.switch_address = fmt::format("127.0.0.1:{}", rack_.switch_port());
    c.client.slab_bytes = slab_bytes;  // small slabs: data spans both memory nodes
    c.client.request_timeout = std::chrono::milliseconds(1000);
    c.mode = mode;
    auto s = bench::MakeAppSystem(name, c);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
};

TEST_F(AppsCluster, TsvTreeAggregatesMatchNativeInEveryMode) {
  std::mt19937_64 rng(5);
  std::vector<uint32_t> values(5000);
  for (auto& v : values) v = static_cast<uint32_t>(rng() % 1000000);
  auto tree = TsvTree::Build(client_.get(), values);
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_GE((*tree)->height(), 3u);
  std::vector<std::pair<uint64_t, uint64_t>> windows = {{0, 0}, {0, 4999}, {31, 32}, {4999, 4999}, {4990, 6000},
                                                        {5000, 6000}, {100, 99 + 224}};
  for (uint64_t i = 0; i < ScaledOps(60); ++i) {
    const uint64_t lo = rng() % 5000, len = 1 + rng() % 2000;
    windows.emplace_back(lo, lo + len - 1);
  }
  for (ExecutionMode mode : kModes) {
    (*tree)->set_mode(mode);
    for (auto [lo, hi] : windows) {
      uint32_t iterations = 0;
      auto a = (*tree)->Aggregate(lo, hi, &iterations);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      EXPECT_EQ(*a, NativeAggregate(values, lo, hi)) << "[" << lo << ", " << hi << "]";
      // At most the two edge paths of the window.
      EXPECT_LE(iterations, 2 * (*tree)->height()) << "[" << lo << ", " << hi << "]";
    }
  }
  ExpectBothPathsUsed();
}

TEST_F(AppsCluster, BtrdbQueriesMatchNativeOnPulseAndPulseAcc) {
  for (const char* name : {"pulse", "pulse-acc"}) {
    auto system = System(name, ExecutionMode::kOffload);
    ASSERT_NE(system, nullptr);
    BtrdbOptions o;
    o.seconds = 180;
    auto app = Btrdb::Load(system.get(), o);
    ASSERT_TRUE(app.ok()) << app.status().ToString();
    std::mt19937_64 rng(9);
    for (uint64_t i = 0; i < ScaledOps(80); ++i) {
      const TsvQuery q = (*app)->NextQuery(rng);
      auto r = (*app)->Run(q);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_DOUBLE_EQ(*r, (*app)->Native(q)) << name << " " << TsvStatName(q.stat) << " [" << q.lo << ", " << q.hi << "]";
    }
  }
  BtrdbOptions short_run;
  short_run.seconds = 30;
  auto system = System("pulse");
  EXPECT_EQ(Btrdb::Load(system.get(), short_run).status().code(), Status::Code::kInvalidArgument);
}

TEST_F(AppsCluster, WebServiceResponsesCarryTheCurrentObject) {
  for (uint32_t chain : {0u, 20u}) {
    for (const char* name : {"pulse", "pulse-acc"}) {
      // Slabs that hold several 8 KB objects (an object larger than a slab
      // takes a whole allocation unit of the memory node).
      auto system = System(name, std::nullopt, 64 * 1024);
      ASSERT_NE(system, nullptr);
      WebServiceOptions o;
      o.users = 200;
      o.workload = 'A';
      o.chain_length = chain;
      o.operations = 1000;
      auto app = WebService::Load(system.get(), o);
      ASSERT_TRUE(app.ok()) << app.status().ToString();
      if (chain != 0) EXPECT_EQ((*app)->map().bucket_count(), 10u);
      uint64_t reads = 0, updates = 0;
      for (uint64_t i = 0; i < ScaledOps(150); ++i) {
        const ycsb::Operation op = (*app)->NextOperation();
        auto r = (*app)->Serve(op);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_TRUE(r->found);
        if (op.op == ycsb::Op::kUpdate) {
          ++updates;
          continue;
        }
        ++reads;
        auto obj = (*app)->Open(*r);
        ASSERT_TRUE(obj.ok()) << obj.status().ToString();
        EXPECT_EQ(*obj, (*app)->Expected(op.key));
        EXPECT_LT(r->payload.size(), o.object_bytes);  // compressed
      }
      EXPECT_GT(reads, 0u);
      EXPECT_GT(updates, 0u);
      // An absent user and a tampered response.
      ycsb::Operation missing{ycsb::Op::kRead, 0, 12345, 0};
      auto r = (*app)->Serve(missing);
      ASSERT_TRUE(r.ok());
      EXPECT_FALSE(r->found);
      ycsb::Operation first{ycsb::Op::kRead, 0, ycsb::FnvHash64(0), 0};
      r = (*app)->Serve(first);
      ASSERT_TRUE(r.ok() && r->found);
      r->payload[20] ^= 1;
      EXPECT_EQ((*app)->Open(*r).status().code(), Status::Code::kInvalidArgument);
    }
  }
}

TEST_F(AppsCluster, WiredTigerScansMatchNative) {
  for (const char* name : {"pulse", "pulse-acc"}) {
    auto system = System(name);
    ASSERT_NE(system, nullptr);
    WiredTigerOptions o;
    o.records = 1500;
    o.operations = 1000;
    auto app = WiredTiger::Load(system.get(), o);
    ASSERT_TRUE(app.ok()) << app.status().ToString();
    EXPECT_GE((*app)->tree().height(), 3u);
    uint64_t scans = 0, inserts = 0;
    for (uint64_t i = 0; i < ScaledOps(120); ++i) {
      const ycsb::Operation op = (*app)->NextOperation();
      auto r = (*app)->Serve(op);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (op.op == ycsb::Op::kInsert) {
        ++inserts;
        continue;
      }
      ++scans;
      EXPECT_EQ(*r, (*app)->NativeScan(op.key, op.scan_length)) << name << " scan from " << op.key;
    }
    EXPECT_GT(scans, 0u);
    EXPECT_EQ((*app)->size(), 1500 + inserts);
    // Edges, in every execution mode: before the first key, past the last,
    // the longest scan.
    for (ExecutionMode mode : kModes) {
      for (auto [start, count] : std::vector<std::pair<uint64_t, uint32_t>>{
               {0, 128}, {UINT64_MAX, 5}, {1, 1}, {ycsb::FnvHash64(3), 100}}) {
        auto r = OffloadedScan(system->client(), (*app)->tree().root(), start, count, mode);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        EXPECT_EQ(*r, (*app)->NativeScan(start, count)) << "start " << start;
      }
    }
    EXPECT_EQ(OffloadedScan(system->client(), (*app)->tree().root(), 0, 129, std::nullopt).status().code(),
              Status::Code::kInvalidArgument);
  }
}

// Inserts of new users (the writes study of seed 000 C.2): with offloaded
// allocation the insert carries a pre-allocated region; without, every new
// chain node stops the traversal once for the CPU node to allocate.  Either
// way every inserted user is then served with its own object.
TEST_F(AppsCluster, WebServiceInsertsNewUsersWithAndWithoutOffloadedAllocation) {
  for (uint32_t regions : {1u, 0u}) {
    auto system = System("pulse", ExecutionMode::kOffload, 64 * 1024);
    ASSERT_NE(system, nullptr);
    WebServiceOptions o;
    o.users = 100;
    o.workload = 'C';
    o.operations = 1000;
    o.insert_fraction = 0.5;
    o.regions_per_request = regions;
    auto app = WebService::Load(system.get(), o);
    ASSERT_TRUE(app.ok()) << app.status().ToString();
    const uint64_t exhausted_after_load = (*app)->map().region_stats().exhausted;
    std::vector<uint64_t> added;
    for (uint64_t i = 0; i < std::max<uint64_t>(20, ScaledOps(60)); ++i) {
      const ycsb::Operation op = (*app)->NextOperation();
      auto r = (*app)->Serve(op);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_TRUE(r->found);
      if (op.op == ycsb::Op::kInsert) added.push_back(op.key);
    }
    ASSERT_FALSE(added.empty());
    EXPECT_EQ((*app)->map().size(), o.users + added.size());
    const uint64_t exhausted = (*app)->map().region_stats().exhausted - exhausted_after_load;
    if (regions == 0) {
      EXPECT_EQ(exhausted, added.size());  // one return to the CPU node per new node
    } else {
      EXPECT_LE(exhausted, (added.size() + 31) / 32);  // one replenishment per 32 new nodes
    }
    for (uint64_t key : added) {
      auto r = (*app)->Serve(ycsb::Operation{ycsb::Op::kRead, 0, key, 0});
      ASSERT_TRUE(r.ok() && r->found) << key;
      auto obj = (*app)->Open(*r);
      ASSERT_TRUE(obj.ok()) << obj.status().ToString();
      EXPECT_EQ(*obj, (*app)->Expected(key));
    }
  }
  WebServiceOptions bad;
  bad.insert_fraction = 1;
  auto system = System("pulse");
  EXPECT_EQ(WebService::Load(system.get(), bad).status().code(), Status::Code::kInvalidArgument);
}

// Partitioned allocation (seed 000 C.2, Fig. 5): scans, also across the
// split key, still match the native answer.
TEST_F(AppsCluster, WiredTigerPartitionedScansMatchNative) {
  bench::AppSystemConfig c;
  c.client.switch_address = fmt::format("127.0.0.1:{}", rack_.switch_port());
  c.client.slab_bytes = 4096;
  c.client.policy = AllocationPolicy::kPartitioned;
  auto system = bench::MakeAppSystem("pulse", c);
  ASSERT_TRUE(system.ok()) << system.status().ToString();
  WiredTigerOptions o;
  o.records = 800;
  o.operations = 1000;
  o.partition = ds::BTreePartition{};
  auto app = WiredTiger::Load(system->get(), o);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  for (uint64_t i = 0; i < ScaledOps(60); ++i) {
    const ycsb::Operation op = (*app)->NextOperation();
    auto r = (*app)->Serve(op);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (op.op == ycsb::Op::kScan) EXPECT_EQ(*r, (*app)->NativeScan(op.key, op.scan_length)) << op.key;
  }
  for (uint64_t start : {uint64_t{0}, (uint64_t{1} << 63) - 1000, uint64_t{1} << 63}) {
    auto r = OffloadedScan((*system)->client(), (*app)->tree().root(), start, 100, ExecutionMode::kOffload);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, (*app)->NativeScan(start, 100)) << start;
  }
}

}  // namespace
}  // namespace pulse::apps
