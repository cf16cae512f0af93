// The keyspace of `pulse kv serve` (include/pulse/resp/keyspace.h) driven
// batch by batch as the server drives it (Begin, Prefetch with fused SETs,
// the commands, End(true) keeping the lock) against a std::map: random
// batches of plain SETs of new and existing keys and GETs, so leaves fill
// and batches end with their index entries still in flight ("Deferred index
// entries"), and lookups start at leaves learnt before ("Known leaves"):
// the next batch, and a second keyspace opened on the same root
// after the lock is released, must see every key, and the index must be a
// valid B+tree holding exactly the keys' hashes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "pulse/ds/btree.h"
#include "pulse/resp/keyspace.h"
#include "support/ds_cluster.h"

namespace pulse::resp {
namespace {

using RespKeyspace = ds::testing::DsCluster;

// One batch as the server runs it: the SETs fused where Prefetch could,
// the rest (and the GETs) through Find / Put; the GETs' answers checked.
void RunBatch(Keyspace& ks, const std::vector<std::pair<std::string, std::string>>& sets,
              const std::vector<std::string>& gets, const std::map<std::string, std::string>& model) {
  ASSERT_TRUE(ks.Begin().ok());
  std::vector<std::string_view> keys;
  std::vector<Keyspace::KeyValue> fusable;
  for (const auto& [k, v] : sets) {
    keys.push_back(k);
    fusable.emplace_back(k, v);
  }
  for (const auto& k : gets) keys.push_back(k);
  ks.Prefetch(keys, fusable);
  for (const auto& [k, v] : sets) {
    if (ks.TakeFusedSet(k)) continue;
    auto e = ks.Find(k, 0);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ASSERT_TRUE(ks.Put(k, *e, v, ValueType::kString, 0).ok()) << k;
  }
  for (const auto& k : gets) {
    auto e = ks.Find(k, 0);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    auto it = model.find(k);
    ASSERT_EQ(e->has_value(), it != model.end()) << "GET " << k;
    if (!e->has_value()) continue;
    auto v = ks.ReadValue(**e);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(*v, it->second) << "GET " << k;
  }
  ASSERT_TRUE(ks.End(/*keep=*/true).ok());
  EXPECT_TRUE(ks.FailedStores().empty());
}

// Every key of the model through `ks` (batches of 200 GETs, the size of
// a busy server's), and the key count.
void ExpectAll(Keyspace& ks, const std::map<std::string, std::string>& model) {
  std::vector<std::string> chunk;
  for (auto it = model.begin(); it != model.end(); ++it) {
    chunk.push_back(it->first);
    if (chunk.size() < 200 && std::next(it) != model.end()) continue;
    RunBatch(ks, {}, chunk, model);
    if (::testing::Test::HasFatalFailure()) return;
    chunk.clear();
  }
  EXPECT_EQ(ks.size(), model.size());
}

TEST_F(RespKeyspace, DeferredIndexEntriesAreSeenByTheNextBatchAndASecondServer) {
  const std::string root = fmt::format("/tmp/pulse_resp_keyspace_test.{}.root", ::getpid());
  ::unlink(root.c_str());
  auto opened = Keyspace::OpenOrCreate(client_.get(), root);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Keyspace& ks = **opened;
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(18);
  const uint64_t batches = ds::testing::ScaledOps(150);
  uint64_t next_key = 0;
  for (uint64_t b = 0; b < batches; ++b) {
    // 20-40 SETs of distinct keys (most new, some overwrites) and GETs of
    // keys written before, some in the same leaves as the new ones.
    std::vector<std::pair<std::string, std::string>> sets;
    std::vector<std::string> gets;
    std::set<std::string> named;
    const uint64_t n = 20 + rng() % 21;
    for (uint64_t i = 0; i < n; ++i) {
      std::string k = model.empty() || rng() % 4 != 0 ? fmt::format("key:{}", next_key++)
                                                      : std::next(model.begin(), rng() % model.size())->first;
      if (!named.insert(k).second) continue;
      sets.emplace_back(k, fmt::format("v{}:{}", b, rng() % 1000));
    }
    for (uint64_t i = 0; i < 30 && !model.empty(); ++i) {
      std::string k = std::next(model.begin(), rng() % model.size())->first;
      if (named.insert(k).second) gets.push_back(k);
    }
    gets.push_back(fmt::format("absent:{}", b));
    RunBatch(ks, sets, gets, model);
    if (HasFatalFailure()) return;
    for (const auto& [k, v] : sets) model[k] = v;
    EXPECT_EQ(ks.size(), model.size()) << "batch " << b;
  }
  ExpectAll(ks, model);
  const Keyspace::Stats stats = ks.stats();
  // The path under test was taken: batches answered with splits in flight,
  // lookups held back behind them, splits near memory.
  EXPECT_GT(stats.deferred_batches, 0u);
  EXPECT_GT(stats.held_lookups, 0u);
  EXPECT_GT(stats.near_memory_splits, 0u);
  EXPECT_GT(stats.leaf_starts, 0u);  // lookups started at a known leaf
  EXPECT_EQ(stats.lost_after_reply, 0u);
  // The lock released (what was in flight lands first): a second server.
  ASSERT_TRUE(ks.Release().ok());
  auto client2 = ConnectClient(RackClientOptions());
  ASSERT_NE(client2, nullptr);
  auto second = Keyspace::OpenOrCreate(client2.get(), root);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ExpectAll(**second, model);
  ASSERT_TRUE((*second)->Release().ok());
  // The index: a valid B+tree with exactly the keys' hashes.  (The
  // directory is {magic, version, index header, ...}: keyspace.cc.)
  uint64_t index_header = 0;
  ASSERT_TRUE(client_->Read(ks.directory() + 16, &index_header, sizeof index_header).ok());
  ds::BTreeOptions options;
  options.mode = ExecutionMode::kOffload;
  auto index = ds::BTree::Open(client_.get(), index_header, options);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  ASSERT_TRUE((*index)->Repair().ok());
  Status valid = (*index)->Validate();
  ASSERT_TRUE(valid.ok()) << valid.ToString();
  std::set<uint64_t> hashes;
  for (const auto& [k, v] : model) hashes.insert(KeyHash(k));
  auto entries = (*index)->Scan(0, ~uint64_t{0});
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  std::set<uint64_t> indexed;
  for (const auto& [h, record] : *entries) indexed.insert(h);
  EXPECT_EQ(indexed.size(), entries->size()) << "a hash entered twice";
  EXPECT_TRUE(indexed == hashes);
  ::unlink(root.c_str());
}

}  // namespace
}  // namespace pulse::resp
