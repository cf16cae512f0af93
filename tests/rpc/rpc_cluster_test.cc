// The RPC baselines against a real local cluster (switch and two memory
// nodes as processes; structures span both): the native handlers' answers
// must equal the pulse::ds offloaded traversals' and the std:: references',
// in `rpc` and `rpc-wimpy` mode, with node-boundary re-issues exercised and
// counted; another tenant's RPC on the structure is a protection fault; bad
// handler ids, bad states and malformed messages get clear errors.
#include <algorithm>
#include <iterator>
#include <map>
#include <numeric>
#include <random>
#include <unordered_map>
#include <vector>

#include "client/client_internal.h"
#include "support/ds_cluster.h"
#include "pulse/cluster.h"
#include "pulse/ds/btree.h"
#include "pulse/ds/list.h"
#include "pulse/ds/unordered_map.h"
#include "pulse/rpc.h"
#include "pulse/rpc_cache.h"
#include "pulse/rpc_ds.h"
#include "rpc/handlers/rpc_states.h"

namespace pulse::ds::testing {
namespace {

using namespace std::chrono_literals;

class RpcCluster : public DsCluster {
 protected:
  void SetUp() override {
    DsCluster::SetUp();
    if (HasFatalFailure()) return;
    auto r = RpcClient::Create(client_.get());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    rpc_ = std::move(*r);
  }
  // Total over both memory nodes of one rpc counter.
  uint64_t NodeRpcCounter(const char* name) {
    uint64_t total = 0;
    for (uint32_t n = 0; n < 2; ++n) total += rack_.MemNodeStats(n)["counters"]["rpc"][name].get<uint64_t>();
    return total;
  }
  std::unique_ptr<RpcClient> rpc_;
};

// Both RPC flavours: full speed and the emulated wimpy core.
constexpr bool kWimpy[] = {false, true};

// sum/min/max/count of `values`: the reference for both structures.
Aggregate Reference(const std::vector<uint64_t>& values) {
  Aggregate a;
  a.count = values.size();
  a.sum = std::accumulate(values.begin(), values.end(), uint64_t{0});
  if (!values.empty()) {
    auto [mn, mx] = std::minmax_element(values.begin(), values.end());
    a.min = *mn;
    a.max = *mx;
  }
  return a;
}

TEST_F(RpcCluster, UnorderedMapFindMatchesOffloadAndStd) {
  // Few buckets: long chains whose nodes alternate between the memory nodes.
  auto created = UnorderedMap::Create(client_.get(), {.buckets = 8, .mode = ExecutionMode::kOffload});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  UnorderedMap& map = **created;
  std::unordered_map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(7);
  for (uint64_t i = 0; i < ScaledOps(400); ++i) {
    const uint64_t key = rng() % 1000, value = rng();
    auto r = map.Insert(key, value);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    native.emplace(key, value);
  }
  for (uint64_t i = 0; i < ScaledOps(200); ++i) {
    const uint64_t key = rng() % 1100;  // some absent
    auto it = native.find(key);
    auto offloaded = map.Find(key);
    ASSERT_TRUE(offloaded.ok()) << offloaded.status().ToString();
    ASSERT_EQ(offloaded->has_value(), it != native.end()) << "offloaded find " << key;
    for (bool wimpy : kWimpy) {
      RpcResult info;
      auto r = rpc::Find(*rpc_, map, key, {.wimpy = wimpy}, &info);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->has_value(), it != native.end()) << "rpc find " << key << " wimpy " << wimpy;
      if (it != native.end()) {
        EXPECT_EQ(**r, it->second);
        EXPECT_EQ(**r, **offloaded);
      }
      EXPECT_EQ(info.issues, info.node_crossings + 1 + info.retransmissions);
    }
  }
  EXPECT_GT(rpc_->counters().node_crossings, 0u) << "chains should cross memory nodes";
  EXPECT_GT(NodeRpcCounter("not_local"), 0u);
  EXPECT_GT(NodeRpcCounter("wimpy_calls"), 0u);
}

TEST_F(RpcCluster, BTreeMatchesOffloadAndStd) {
  auto created = BTree::Create(client_.get(), {.mode = ExecutionMode::kOffload});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  BTree& tree = **created;
  std::map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(11);
  constexpr uint64_t kKeys = 5000;
  for (uint64_t i = 0; i < ScaledOps(1500); ++i) {
    const uint64_t key = rng() % kKeys, value = rng() % 1000000;
    auto r = tree.Insert(key, value);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    native.emplace(key, value);
  }
  ASSERT_GE(tree.height(), 2u);
  for (uint64_t i = 0; i < ScaledOps(100); ++i) {
    const uint64_t key = rng() % (kKeys + 50);
    auto want = native.lower_bound(key);
    auto offloaded = tree.LowerBound(key);
    ASSERT_TRUE(offloaded.ok()) << offloaded.status().ToString();
    const uint64_t lo = rng() % kKeys, hi = lo + rng() % 800;
    std::vector<uint64_t> in_range;
    for (auto it = native.lower_bound(lo); it != native.upper_bound(hi); ++it) in_range.push_back(it->second);
    const Aggregate want_agg = Reference(in_range);
    auto offloaded_agg = tree.AggregateRange(lo, hi);
    ASSERT_TRUE(offloaded_agg.ok()) << offloaded_agg.status().ToString();
    EXPECT_EQ(*offloaded_agg, want_agg);
    const uint64_t limit = 1 + rng() % 60;
    auto offloaded_scan = tree.Scan(lo, hi, limit);
    ASSERT_TRUE(offloaded_scan.ok()) << offloaded_scan.status().ToString();
    for (bool wimpy : kWimpy) {
      auto lb = rpc::LowerBound(*rpc_, tree, key, {.wimpy = wimpy});
      ASSERT_TRUE(lb.ok()) << lb.status().ToString();
      ASSERT_EQ(lb->has_value(), want != native.end()) << "lower_bound " << key;
      if (want != native.end()) {
        EXPECT_EQ((*lb)->first, want->first) << "lower_bound " << key;
        EXPECT_EQ((*lb)->second, want->second);
        EXPECT_EQ(**lb, **offloaded);
      }
      auto agg = rpc::AggregateRange(*rpc_, tree, lo, hi, {.wimpy = wimpy});
      ASSERT_TRUE(agg.ok()) << agg.status().ToString();
      EXPECT_EQ(*agg, want_agg) << "aggregate [" << lo << ", " << hi << "]";
      auto scan = rpc::Scan(*rpc_, tree, lo, hi, limit, {.wimpy = wimpy});
      ASSERT_TRUE(scan.ok()) << scan.status().ToString();
      EXPECT_EQ(*scan, *offloaded_scan) << "scan [" << lo << ", " << hi << "] limit " << limit;
      std::vector<BTree::Entry> want_scan;
      for (auto it = native.lower_bound(lo); it != native.end() && it->first <= hi && want_scan.size() < limit; ++it)
        want_scan.emplace_back(it->first, it->second);
      EXPECT_EQ(*scan, want_scan);
    }
  }
  EXPECT_GT(rpc_->counters().node_crossings, 0u) << "the tree should span both memory nodes";
}

TEST_F(RpcCluster, ListMatchesOffloadAndStd) {
  auto created = List::Create(client_.get(), {.mode = ExecutionMode::kOffload});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  List& list = **created;
  std::vector<uint64_t> native;
  std::mt19937_64 rng(5);
  for (uint64_t i = 0; i < ScaledOps(300); ++i) {
    const uint64_t v = rng() % 500;
    ASSERT_TRUE(list.PushBack(v).ok());
    native.push_back(v);
  }
  for (uint64_t i = 0; i < ScaledOps(40); ++i) {
    const uint64_t v = rng() % 600;
    auto it = std::find(native.begin(), native.end(), v);
    auto offloaded = list.Find(v);
    ASSERT_TRUE(offloaded.ok());
    const uint64_t lo = rng() % 500, hi = lo + rng() % 200;
    std::vector<uint64_t> in_range;
    std::copy_if(native.begin(), native.end(), std::back_inserter(in_range),
                 [&](uint64_t x) { return lo <= x && x <= hi; });
    const Aggregate want = Reference(in_range);
    for (bool wimpy : kWimpy) {
      auto r = rpc::Find(*rpc_, list, v, {.wimpy = wimpy});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->has_value(), it != native.end()) << "find " << v;
      if (it != native.end()) {
        EXPECT_EQ(**r, static_cast<uint64_t>(it - native.begin()));
        EXPECT_EQ(**r, **offloaded);
      }
      auto agg = rpc::AggregateRange(*rpc_, list, lo, hi, {.wimpy = wimpy});
      ASSERT_TRUE(agg.ok()) << agg.status().ToString();
      EXPECT_EQ(*agg, want);
    }
  }
  EXPECT_GT(rpc_->counters().node_crossings, 0u);
}

TEST_F(RpcCluster, AnotherTenantGetsAProtectionFault) {
  auto created = UnorderedMap::Create(client_.get(), {.buckets = 4, .mode = std::nullopt});
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE((*created)->Insert(42, 4242).ok());
  ClientOptions options;
  options.switch_address = fmt::format("127.0.0.1:{}", rack_.switch_port());
  options.tenant = 2;
  auto other = Client::Connect(options);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  auto other_rpc = RpcClient::Create(other->get());
  ASSERT_TRUE(other_rpc.ok());
  const rpc::UmapFindState st{42, rpc::kUmapStartIsSlot, 0, 0, 0};
  auto r = (*other_rpc)->Call(kRpcUmapFind, (*created)->BucketAddress(42),
                              std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&st), sizeof(st)));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, TraversalStatus::kFaultProtection);
  EXPECT_EQ(r->fault_addr, (*created)->BucketAddress(42));
  // The owner still gets its answer.
  auto mine = rpc::Find(*rpc_, **created, 42);
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  EXPECT_EQ(mine->value_or(0), 4242u);
}

TEST_F(RpcCluster, BadRequestsGetClearErrors) {
  auto addr = client_->Allocate(64);
  ASSERT_TRUE(addr.ok());
  const std::vector<uint8_t> state(40, 0);
  auto unknown = rpc_->Call(999, *addr, state);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("no handler with id 999"), std::string::npos) << unknown.status().ToString();
  auto short_state = rpc_->Call(kRpcUmapFind, *addr, std::vector<uint8_t>(3, 0));
  ASSERT_FALSE(short_state.ok());
  EXPECT_NE(short_state.status().message().find("takes a 40-byte state, not 3"), std::string::npos)
      << short_state.status().ToString();
  // A start pointer no memory node owns.
  auto nowhere = rpc_->Call(kRpcUmapFind, 8, state);
  ASSERT_TRUE(nowhere.ok());
  EXPECT_EQ(nowhere->status, TraversalStatus::kFaultInvalidPointer);
  // Inside a node's span but not allocated.
  auto unmapped = rpc_->Call(kRpcUmapFind, FarBase(1) + (15ull << 20), state);
  ASSERT_TRUE(unmapped.ok());
  EXPECT_EQ(unmapped->status, TraversalStatus::kFaultInvalidPointer);
  // Bytes that are not a request at all are dropped and counted.
  const uint64_t before = NodeRpcCounter("malformed");
  const net::EndpointId ep = ClientInternal::memnode_endpoint(*client_, 0);
  ASSERT_TRUE(ClientInternal::worker(*client_).Send(ep, kAmRpcRequest, std::vector<uint8_t>{1, 2, 3}).ok());
  ASSERT_TRUE(ClientInternal::worker(*client_).Flush(ep, 5s).ok());
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (NodeRpcCounter("malformed") == before) ASSERT_LT(std::chrono::steady_clock::now(), deadline);
}

TEST_F(RpcCluster, CacheRpcRefusesSeveralMemoryNodes) {
  auto created = UnorderedMap::Create(client_.get());
  ASSERT_TRUE(created.ok());
  auto cache = rpc::CachedUnorderedMap::Create(rpc_.get(), created->get());
  ASSERT_FALSE(cache.ok());
  EXPECT_NE(cache.status().message().find("single memory node"), std::string::npos) << cache.status().ToString();
}

// cache-rpc on one memory node: the same answers as std::, hits once warm,
// and a budget that holds.
TEST(CacheRpc, SingleNodeMatchesStdAndCaches) {
  pulse::testing::SetUcxTestEnvironment();
  pulse::testing::LocalRack rack;
  ASSERT_TRUE(rack.Start(1, /*pool_mib=*/16));
  ClientOptions options;
  options.switch_address = fmt::format("127.0.0.1:{}", rack.switch_port());
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto rpc = RpcClient::Create(client->get());
  ASSERT_TRUE(rpc.ok());
  auto map = UnorderedMap::Create(client->get(), {.buckets = 64, .mode = std::nullopt});
  auto tree = BTree::Create(client->get());
  ASSERT_TRUE(map.ok() && tree.ok());
  std::unordered_map<uint64_t, uint64_t> native_map;
  std::map<uint64_t, uint64_t> native_tree;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 500; ++i) {
    const uint64_t key = rng() % 2000, value = rng();
    ASSERT_TRUE((*map)->Insert(key, value).ok());
    ASSERT_TRUE((*tree)->Insert(key, value).ok());
    native_map.emplace(key, value);
    native_tree.emplace(key, value);
  }
  constexpr uint64_t kBudget = 100 * rpc::kCachedEntryBytes;  // 100 objects
  auto cmap = rpc::CachedUnorderedMap::Create(rpc->get(), map->get(), {.budget_bytes = kBudget});
  auto ctree = rpc::CachedBTree::Create(rpc->get(), tree->get(), {.budget_bytes = kBudget});
  ASSERT_TRUE(cmap.ok()) << cmap.status().ToString();
  ASSERT_TRUE(ctree.ok()) << ctree.status().ToString();
  for (int i = 0; i < 1000; ++i) {
    const uint64_t key = rng() % 150;  // a hot set that fits the budget ...
    const uint64_t cold = rng() % 2100;  // ... and a stream that does not
    for (uint64_t k : {key, cold}) {
      auto f = (*cmap)->Find(k);
      ASSERT_TRUE(f.ok()) << f.status().ToString();
      auto it = native_map.find(k);
      ASSERT_EQ(f->has_value(), it != native_map.end()) << "find " << k;
      if (it != native_map.end()) {
        EXPECT_EQ(**f, it->second);
      }
      auto lb = (*ctree)->LowerBound(k);
      ASSERT_TRUE(lb.ok()) << lb.status().ToString();
      auto want = native_tree.lower_bound(k);
      ASSERT_EQ(lb->has_value(), want != native_tree.end()) << "lower_bound " << k;
      if (want != native_tree.end()) {
        EXPECT_EQ((*lb)->first, want->first);
      }
    }
  }
  for (const rpc::ObjectCacheCounters& c : {(*cmap)->counters(), (*ctree)->counters()}) {
    EXPECT_GT(c.hits, 0u);
    EXPECT_GT(c.misses, 0u);
    EXPECT_GT(c.evictions, 0u);
    EXPECT_LE(c.bytes, kBudget);
  }
  // Every miss was one RPC.
  EXPECT_EQ((*rpc)->counters().calls, (*cmap)->counters().misses + (*ctree)->counters().misses);
}

}  // namespace
}  // namespace pulse::ds::testing
