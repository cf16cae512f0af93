// pulse::kv::Store over a client with the CPU-node cache, against
// std::unordered_map, on a local cluster (switch and two memory nodes as
// processes; two racks under $PULSE_RACK like the other DsCluster tests).
// The store's batches keep many STORE-bearing PUTs in flight, and a PUT
// answered "needs a bucket" or "needs a region" makes the store write a new
// bucket through the cache (Store::TakeSpareBucket) while the client waits
// in the fabric for its fetch, where other PUTs' answers arrive and drop the
// cache (TraversalTracker -> StoresDone).  That once freed the block the
// write was filling (heap corruption in BlockCache::Write, two clients on
// their own threads, page cache); BlockCache owes such an invalidation now.
// Also the cache alone: random Client::Write/Read of any size against a
// plain copy.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "pulse/kv/store.h"
#include "support/ds_cluster.h"

namespace pulse::kv {
namespace {

using KvStoreOverCache = ds::testing::DsCluster;
using ds::testing::ScaledOps;

ClientOptions WithCache(ClientOptions options, CacheGranularity granularity) {
  options.cache.bytes = 64 * 1024;  // 16 pages: the store's buckets and items do not fit, blocks are evicted
  options.cache.granularity = granularity;
  return options;
}

std::string KeyOf(int thread, uint64_t k) { return fmt::format("t{}-key-{}", thread, k); }

// One CPU node's workload: a store loaded with `records` keys by batches,
// then rounds of batched PUTs and GETs, each answer checked against
// std::unordered_map.  Returns what went wrong ("" if nothing).
std::string LoadAndUse(const ClientOptions& options, int thread, uint64_t records) {
  auto client = Client::Connect(options);
  if (!client.ok()) return "connect: " + client.status().ToString();
  StoreOptions so;
  so.buckets = 8;  // overflow chains: spare buckets taken during the load
  so.slab_items = 64;
  so.max_in_flight = 32;
  auto created = Store::Create(client->get(), so);
  if (!created.ok()) return "create: " + created.status().ToString();
  Store& store = **created;
  std::unordered_map<std::string, std::string> native;
  std::mt19937_64 rng(thread + 40);
  auto value = [&] {
    std::string v(rng() % 41, '\0');
    for (char& c : v) c = static_cast<char>(rng());
    return v;
  };
  auto put = [&](std::vector<std::pair<std::string, std::string>> items) -> std::string {
    auto r = store.PutBatch(items);
    if (r.size() != items.size()) return "put batch: wrong answer count";
    for (size_t i = 0; i < items.size(); ++i) {
      if (!r[i].ok()) return "put " + items[i].first + ": " + r[i].ToString();
      native[items[i].first] = items[i].second;
    }
    return "";
  };
  auto check = [&](uint64_t key_space) -> std::string {
    std::vector<std::string> keys;
    for (uint64_t k = 0; k < key_space; ++k) keys.push_back(KeyOf(thread, k));
    auto got = store.GetBatch(keys);
    if (got.size() != keys.size()) return "get batch: wrong answer count";
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!got[i].ok()) return "get " + keys[i] + ": " + got[i].status().ToString();
      auto it = native.find(keys[i]);
      if (got[i]->has_value() != (it != native.end())) return "get " + keys[i] + ": presence differs";
      if (it != native.end() && **got[i] != it->second) return "get " + keys[i] + ": value differs";
    }
    return store.size() == native.size() ? "" : "size differs";
  };
  for (uint64_t k = 0; k < records; k += 100) {  // the load
    std::vector<std::pair<std::string, std::string>> items;
    for (uint64_t i = k; i < std::min(records, k + 100); ++i) items.emplace_back(KeyOf(thread, i), value());
    if (std::string e = put(std::move(items)); !e.empty()) return fmt::format("thread {} load: {}", thread, e);
  }
  if (std::string e = check(records); !e.empty()) return fmt::format("thread {} after load: {}", thread, e);
  for (int round = 0; round < 4; ++round) {
    std::vector<std::pair<std::string, std::string>> items;
    for (int i = 0; i < 100; ++i) items.emplace_back(KeyOf(thread, rng() % (records + records / 4)), value());
    if (std::string e = put(std::move(items)); !e.empty()) return fmt::format("thread {} round {}: {}", thread, round, e);
    if (std::string e = check(records + records / 4); !e.empty())
      return fmt::format("thread {} round {}: {}", thread, round, e);
  }
  if ((*client)->counters().cache_misses == 0) return fmt::format("thread {}: the cache was not used", thread);
  return "";
}

// Clients on their own threads, each loading and using its own store.
void RunOnThreads(const ClientOptions& options, int threads, uint64_t records) {
  std::vector<std::string> errors(threads);
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back([&, t] { errors[t] = LoadAndUse(options, t, records); });
  for (std::thread& t : running) t.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
}

TEST_F(KvStoreOverCache, TwoClientsOnTheirOwnThreadsWithPageCaches) {
  RunOnThreads(WithCache(RackClientOptions(), CacheGranularity::kPage), 2, ScaledOps(5000));
}

TEST_F(KvStoreOverCache, OneClientWithAPageCache) {
  RunOnThreads(WithCache(RackClientOptions(), CacheGranularity::kPage), 1, ScaledOps(500));
}

TEST_F(KvStoreOverCache, TwoClientsOnTheirOwnThreadsWithObjectCaches) {
  RunOnThreads(WithCache(RackClientOptions(), CacheGranularity::kObject), 2, ScaledOps(5000));
}

// Random writes and reads of 1..6000 bytes (across page boundaries) through
// a page cache that holds a quarter of the data, against a plain copy; after
// a flush a client without a cache reads the same bytes.
TEST_F(KvStoreOverCache, PageCacheReadsAndWritesOfAnySizeMatchAPlainCopy) {
  auto created = Client::Connect(WithCache(RackClientOptions(), CacheGranularity::kPage));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Client& cached = **created;
  constexpr uint64_t kBytes = 256 * 1024;
  // On two racks, memory of the client's own rack is read and written by the
  // rack tier, not through the cache: memory of the other rack's node then
  // (rack "a" is node 0, DsCluster; placement round-robins).
  const uint32_t node = Racked() && std::string(std::getenv("PULSE_RACK")) == "a" ? 1 : 0;
  Result<uint64_t> base = Status::NotFound("no allocation");
  for (int attempt = 0; attempt < 4 && !(base.ok() && cached.NodeOf(*base) == node); ++attempt)
    base = cached.Allocate(kBytes, node);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  ASSERT_EQ(cached.NodeOf(*base), node);
  std::vector<uint8_t> shadow(kBytes, 0);
  ASSERT_TRUE(cached.Write(*base, shadow.data(), kBytes).ok());
  std::mt19937_64 rng(7);
  for (uint64_t op = 0; op < ScaledOps(2000); ++op) {
    const uint64_t len = 1 + rng() % 6000, off = rng() % (kBytes - len);
    if (rng() % 2 == 0) {
      std::vector<uint8_t> data(len);
      for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
      ASSERT_TRUE(cached.Write(*base + off, data.data(), len).ok()) << "op " << op;
      std::memcpy(shadow.data() + off, data.data(), len);
    } else {
      std::vector<uint8_t> got(len);
      ASSERT_TRUE(cached.Read(*base + off, got.data(), len).ok()) << "op " << op;
      ASSERT_EQ(0, std::memcmp(got.data(), shadow.data() + off, len)) << "read of " << len << " at " << off;
    }
  }
  EXPECT_GT(cached.counters().cache_evictions, 0u);
  ASSERT_TRUE(cached.FlushCache().ok());
  std::vector<uint8_t> far(kBytes);  // the fixture's client has no cache
  ASSERT_TRUE(client_->Read(*base, far.data(), kBytes).ok());
  EXPECT_EQ(far, shadow);
}

}  // namespace
}  // namespace pulse::kv
