// Several CPU nodes in one process: threads, each with its own Client,
// against one cluster of real switch and memory-node processes.  A Client is
// single-threaded, but what the library keeps per process (embedded
// iterators decoded once, the fabric's global setup, logging) is shared by
// Clients on different threads; scripts/sanitize.sh runs this under TSan.
// Each thread checks its own UnorderedMap and BTree against std::map, and
// all of them increment one shared far counter by offloaded STORE
// traversals, which must add up.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/ds_cluster.h"
#include "pulse/assembler.h"
#include "pulse/client.h"
#include "pulse/ds/btree.h"
#include "pulse/ds/unordered_map.h"
#include "support/local_rack.h"

namespace pulse::testing {
namespace {

using ds::testing::ScaledOps;

constexpr const char* kIncrement = "LOAD data, 8\nMOVE r1, cur_ptr\nADD sp[0], data[0]\nADD sp[0], 1\nSTORE [r1], sp[0]\nRETURN";

// One CPU node's workload; returns what went wrong ("" if nothing) and
// counts its acknowledged increments of `counter`.
std::string Workload(const ClientOptions& options, int seed, uint64_t ops, uint64_t counter, uint64_t* increments) {
  auto client = Client::Connect(options);
  if (!client.ok()) return "connect: " + client.status().ToString();
  auto insns = Assemble(kIncrement);
  if (!insns.ok()) return insns.status().ToString();
  auto increment = VerifiedProgram::Create(std::move(*insns));
  if (!increment.ok()) return increment.status().ToString();
  auto map = ds::UnorderedMap::Create(client->get(), {.buckets = 61, .mode = std::nullopt});
  if (!map.ok()) return "map: " + map.status().ToString();
  auto tree = ds::BTree::Create(client->get());
  if (!tree.ok()) return "tree: " + tree.status().ToString();
  std::map<uint64_t, uint64_t> shadow;
  std::mt19937_64 rng(seed);
  for (uint64_t i = 0; i < ops; ++i) {
    const uint64_t key = rng() % 200, value = rng() >> 1;
    const std::string at = fmt::format("thread {} op {} key {}: ", seed, i, key);
    switch (rng() % 4) {
      case 0: {  // the same write to both structures
        auto m = (*map)->InsertOrAssign(key, value);
        if (!m.ok()) return at + m.status().ToString();
        if (shadow.count(key)) {
          if (auto e = (*tree)->Erase(key); !e.ok() || !*e) return at + "tree erase before re-insert failed";
        }
        auto t = (*tree)->Insert(key, value);
        if (!t.ok() || !*t) return at + "tree insert failed";
        shadow[key] = value;
        break;
      }
      case 1: {
        std::optional<uint64_t> want;
        if (auto it = shadow.find(key); it != shadow.end()) want = it->second;
        auto m = (*map)->Find(key);
        auto t = (*tree)->Find(key);
        if (!m.ok() || !t.ok()) return at + "find failed";
        if (*m != want || *t != want) return at + "find disagrees with std::map";
        break;
      }
      case 2: {
        TraverseOptions off;
        off.mode = ExecutionMode::kOffload;
        auto r = (*client)->Traverse(*increment, counter, std::vector<uint8_t>(8, 0), off);
        if (!r.ok() || r->status != TraversalStatus::kDone) return at + "increment failed";
        ++*increments;
        break;
      }
      default: {
        auto m = (*map)->Erase(key);
        auto t = (*tree)->Erase(key);
        if (!m.ok() || !t.ok()) return at + "erase failed";
        if (*m != (shadow.count(key) == 1) || *t != (shadow.count(key) == 1)) return at + "erase disagrees";
        shadow.erase(key);
      }
    }
  }
  if (Status v = (*tree)->Validate(); !v.ok()) return fmt::format("thread {}: {}", seed, v.ToString());
  return "";
}

TEST(ClientThreads, ClientsOnSeveralThreadsKeepTheirStructuresAndSharedCountsAddUp) {
  SetUcxTestEnvironment();
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2, /*pool_mib=*/16));
  ClientOptions options;
  options.switch_address = fmt::format("127.0.0.1:{}", rack.switch_port());
  options.slab_bytes = 4096;
  options.request_timeout = std::chrono::milliseconds(2000);
  auto setup = Client::Connect(options);
  ASSERT_TRUE(setup.ok()) << setup.status().ToString();
  auto counter = (*setup)->Allocate(8);
  ASSERT_TRUE(counter.ok()) << counter.status().ToString();
  const uint64_t zero = 0;
  ASSERT_TRUE((*setup)->Write(*counter, &zero, 8).ok());

  constexpr int kThreads = 4;
  const uint64_t ops = ScaledOps(200);
  std::vector<std::string> errors(kThreads);
  std::vector<uint64_t> increments(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { errors[t] = Workload(options, t + 1, ops, *counter, &increments[t]); });
  for (std::thread& t : threads) t.join();
  uint64_t total = 0;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    total += increments[t];
  }
  uint64_t value = 0;
  ASSERT_TRUE((*setup)->Read(*counter, &value, 8).ok());
  EXPECT_EQ(value, total) << "each acknowledged increment, from every CPU node, applied once";
  EXPECT_GT(total, 0u);
}

}  // namespace
}  // namespace pulse::testing
