// pulse::kv::Store unchanged on tiered memory (issue 16): a cluster of two
// racks (memory node 0 = rack "a", memory node 1 = rack "b", transports
// without shared memory), a CPU node in each rack with a store of its own
// partitioned over both racks.  Random GETs, PUTs and DELETEs of both
// clients, single and batched, interleaved, against std::unordered_map per
// client; and the store's programs ran both ways: at the CPU node through
// the rack pool (no message) for buckets in the client's rack, offloaded for
// the other rack's.
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "pulse/client.h"
#include "pulse/kv/store.h"
#include "support/cpu_node.h"
#include "support/local_rack.h"

namespace pulse {
namespace {

using testing::LocalRack;
using namespace std::chrono_literals;

class TieredKv : public ::testing::Test {
 public:  // RunBothRacksAgainstUnorderedMap uses it
  void SetUp() override {
    testing::SetUcxTestEnvironment();
    // With pages that move: 64 KiB pages, and the switch running the swaps
    // the clients ask for (docs/tier.md); the store and its reference must
    // not notice.
    const bool moving = std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())
                            .find("PagesMoving") != std::string::npos;
    std::vector<std::string> flags;
    if (moving) flags = {"--page-bytes", std::to_string(kMovingPageBytes), "--swaps", "on"};
    ASSERT_TRUE(rack_.StartTwoRacks(/*pool_mib=*/32, flags));
    if (moving) slab_bytes_ = 16 << 10;  // slabs inside pages, so that pages can move
  }
  void TearDown() override { unsetenv("UCX_TLS"); }
  static constexpr uint64_t kMovingPageBytes = 64 << 10;
  std::unique_ptr<Client> Connect(const std::string& rack) {
    ClientOptions o;
    o.switch_address = rack_.switch_address();
    o.policy = AllocationPolicy::kPartitioned;
    o.request_timeout = 1000ms;
    o.rack = rack;
    if (slab_bytes_ != 0) o.slab_bytes = slab_bytes_;
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  LocalRack rack_;
  uint64_t slab_bytes_ = 0;
};

// One client, its store and the reference.
struct Side {
  std::string rack;
  std::unique_ptr<Client> client;
  std::unique_ptr<kv::Store> store;
  std::unordered_map<std::string, std::string> ref;
};

std::string Key(int k) { return fmt::format("key-{}", k); }
std::string Value(std::mt19937_64& rng) {
  std::string v(1 + rng() % 40, '\0');
  for (char& c : v) c = static_cast<char>('a' + rng() % 26);
  return v;
}

// The differential run: both clients' stores against their references.
void RunBothRacksAgainstUnorderedMap(TieredKv* test, std::vector<Side>& sides, bool pages_move);

TEST_F(TieredKv, StoreOnRackClientsOfBothRacksMatchesUnorderedMap) {
  std::vector<Side> sides(2);
  RunBothRacksAgainstUnorderedMap(this, sides, /*pages_move=*/false);
}

// The same while the pages the stores use move between the racks: each
// client asks for the other rack's pages it uses most (the 5th access in a
// row, H_p = 4), the switch swaps them with its rack's coldest, and the
// stores' GETs, PUTs, DELETEs and batches race the swaps.
TEST_F(TieredKv, StoreOnRackClientsOfBothRacksMatchesUnorderedMapWithPagesMoving) {
  std::vector<Side> sides(2);
  RunBothRacksAgainstUnorderedMap(this, sides, /*pages_move=*/true);
  const nlohmann::json swaps = rack_.SwitchStats()["counters"]["swaps"];
  EXPECT_GT(swaps["outcomes"].value("swapped", uint64_t{0}) + swaps["outcomes"].value("moved", uint64_t{0}), 0u)
      << swaps.dump();
  uint64_t moved = 0;
  for (uint32_t node = 0; node < 2; ++node)
    moved += rack_.MemNodeStats(node)["counters"]["page_moves"].value("allocations_moved_in", uint64_t{0});
  EXPECT_GT(moved, 0u) << "no allocation moved with a page";
  std::cout << "pages moving under the stores: " << swaps.dump() << "\n";
}

void RunBothRacksAgainstUnorderedMap(TieredKv* test, std::vector<Side>& sides, bool pages_move) {
  sides[0].rack = "a";
  sides[1].rack = "b";
  for (Side& s : sides) {
    s.client = test->Connect(s.rack);
    ASSERT_NE(s.client, nullptr);
    kv::StoreOptions options;
    options.buckets = 16;  // 128 slots per partition for ~300 keys: overflow chains too
    options.slab_items = 64;
    auto created = kv::Store::Create(s.client.get(), options);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    s.store = std::move(*created);
  }
  std::mt19937_64 rng(16);
  const int kKeys = 300, kRounds = 3000;
  for (int round = 0; round < kRounds; ++round) {
    Side& s = sides[rng() % 2];
    const std::string key = Key(static_cast<int>(rng() % kKeys));
    const int what = static_cast<int>(rng() % 10);
    if (what < 4) {
      auto got = s.store->Get(key);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      auto it = s.ref.find(key);
      ASSERT_EQ(got->has_value(), it != s.ref.end()) << s.rack << " GET " << key;
      if (it != s.ref.end()) {
        ASSERT_EQ(**got, it->second) << s.rack << " GET " << key;
      }
    } else if (what < 8) {
      const std::string v = Value(rng);
      ASSERT_TRUE(s.store->Put(key, v).ok()) << s.rack << " PUT " << key;
      s.ref[key] = v;
    } else if (what < 9) {
      auto gone = s.store->Delete(key);
      ASSERT_TRUE(gone.ok()) << gone.status().ToString();
      ASSERT_EQ(*gone, s.ref.erase(key) == 1) << s.rack << " DELETE " << key;
    } else {
      // A batch: buckets of both racks at once, some run here, some offloaded.
      std::vector<std::pair<std::string, std::string>> puts;
      std::vector<std::string> gets;
      for (int i = 0; i < 16; ++i) {
        const std::string k = Key(static_cast<int>(rng() % kKeys));
        if (i % 2 == 0) {
          bool dup = false;
          for (const auto& p : puts) dup = dup || p.first == k;
          if (!dup) puts.emplace_back(k, Value(rng));
        } else {
          gets.push_back(k);
        }
      }
      for (const Status& st : s.store->PutBatch(puts)) ASSERT_TRUE(st.ok()) << st.ToString();
      for (const auto& [k, v] : puts) s.ref[k] = v;
      auto got = s.store->GetBatch(gets);
      ASSERT_EQ(got.size(), gets.size());
      for (size_t i = 0; i < gets.size(); ++i) {
        ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
        auto it = s.ref.find(gets[i]);
        ASSERT_EQ(got[i]->has_value(), it != s.ref.end()) << s.rack << " batched GET " << gets[i];
        if (it != s.ref.end()) {
          ASSERT_EQ(*got[i].value(), it->second);
        }
      }
    }
  }
  // Every key of both stores at the end.
  for (Side& s : sides) {
    for (int k = 0; k < kKeys; ++k) {
      auto got = s.store->Get(Key(k));
      ASSERT_TRUE(got.ok());
      auto it = s.ref.find(Key(k));
      ASSERT_EQ(got->has_value(), it != s.ref.end()) << s.rack << " final GET " << Key(k);
      if (it != s.ref.end()) {
        EXPECT_EQ(**got, it->second);
      }
    }
    EXPECT_EQ(s.store->size(), s.ref.size());
    // Both tiers served: programs ran here over the rack pool, others went
    // to the other rack's memory node.
    const ClientCounters& c = s.client->counters();
    EXPECT_GT(c.rack_reads, 0u) << s.rack;
    EXPECT_GT(c.rack_prefix_iterations, 0u) << s.rack;
    EXPECT_GT(c.executed_locally, 100u) << s.rack << ": GETs and PUTs of its own rack's buckets run here";
    if (!pages_move) {
      EXPECT_GT(c.offloaded, 100u) << s.rack << ": the other rack's are offloaded";
    } else {
      // The other rack's pages this client used came into its rack: most
      // of its operations ran here.
      EXPECT_GT(c.swap_requests, 0u) << s.rack;
      EXPECT_GT(c.executed_locally, 4 * c.offloaded) << s.rack;
    }
    EXPECT_EQ(c.rack_dead_mappings, 0u);
  }
}

// A GET of a key whose bucket is in the client's rack sends no message.
TEST_F(TieredKv, LocalRackGetSendsNoMessage) {
  auto client = Connect("a");
  ASSERT_NE(client, nullptr);
  kv::StoreOptions options;
  options.partitions = 1;  // partition 0: memory node 0, rack "a"
  auto store = kv::Store::Create(client.get(), options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Put("k", "v").ok());
  const uint64_t m0 = client->net_counters().messages_sent, r0 = client->net_counters().rma_ops;
  const uint64_t off0 = client->counters().offloaded;
  for (int i = 0; i < 50; ++i) {
    auto got = (*store)->Get("k");
    ASSERT_TRUE(got.ok() && got->has_value());
    EXPECT_EQ(**got, "v");
    auto miss = (*store)->Get(fmt::format("absent-{}", i));
    ASSERT_TRUE(miss.ok());
    EXPECT_FALSE(miss->has_value());
  }
  EXPECT_EQ(client->net_counters().messages_sent, m0);
  EXPECT_EQ(client->net_counters().rma_ops, r0);
  EXPECT_EQ(client->counters().offloaded, off0);
}

}  // namespace
}  // namespace pulse
