// UnorderedMap against std::unordered_map: random insert / insert_or_assign / erase / find with a
// fixed seed; every find runs offloaded, at the CPU node and as the dispatch engine decides
// (kModes).
#include "pulse/ds/unordered_map.h"

#include <random>
#include <unordered_map>

#include "support/ds_cluster.h"
#include "ds/ops_tally.h"

namespace pulse::ds::testing {
namespace {

using DsUnorderedMap = DsCluster;

TEST_F(DsUnorderedMap, RandomOperationsMatchStdUnorderedMap) {
  UnorderedMapOptions options;
  options.buckets = 97;  // short chains of several nodes
  auto created = UnorderedMap::Create(client_.get(), options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  UnorderedMap& map = **created;
  std::unordered_map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(5);
  int hits = 0;
  uint64_t ops = 0;  // each read in each mode counts as one
  for (uint64_t op = 0; op < ScaledOps(25000); ++op) {
    const uint64_t key = rng() % 800, value = rng();
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 7) ++ops;  // a write
    if (kind < 4) {
      auto r = map.Insert(key, value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, native.emplace(key, value).second) << "insert " << key;
    } else if (kind < 5) {
      auto r = map.InsertOrAssign(key, value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, native.insert_or_assign(key, value).second) << "insert_or_assign " << key;
    } else if (kind < 7) {
      auto r = map.Erase(key);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, native.erase(key) == 1) << "erase " << key;
    } else {
      auto it = native.find(key);
      for (ExecutionMode mode : kModes) {
        ++ops;
        map.set_mode(mode);
        auto r = map.Find(key);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(r->has_value(), it != native.end()) << "find " << key;
        if (it != native.end()) {
          EXPECT_EQ(**r, it->second) << "find " << key;
        }
      }
      hits += it != native.end();
    }
    ASSERT_EQ(map.size(), native.size());
  }
  EXPECT_GT(hits, 100);
  TallyOps("unordered_map random", ops);
  // Every key, both paths, at the end.
  for (uint64_t key = 0; key < 800; ++key) {
    map.set_mode(key % 2 ? ExecutionMode::kOffload : ExecutionMode::kCpuNode);
    auto r = map.Find(key);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto it = native.find(key);
    ASSERT_EQ(r->has_value(), it != native.end()) << key;
    if (it != native.end()) {
      EXPECT_EQ(**r, it->second);
    }
  }
  ExpectBothPathsUsed();
}

TEST_F(DsUnorderedMap, RejectsZeroBucketsAndNullClient) {
  UnorderedMapOptions options;
  options.buckets = 0;
  EXPECT_EQ(UnorderedMap::Create(client_.get(), options).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(UnorderedMap::Create(nullptr).status().code(), Status::Code::kInvalidArgument);
}

TEST_F(DsUnorderedMap, AutoModeAnswersLikeForcedModes) {
  auto map = UnorderedMap::Create(client_.get(), {.buckets = 7, .mode = ExecutionMode::kAuto});
  ASSERT_TRUE(map.ok());
  for (uint64_t k = 0; k < 100; ++k) ASSERT_TRUE((*map)->Insert(k * 3, k).ok());
  for (uint64_t k = 0; k < 300; ++k) {
    auto r = (*map)->Find(k);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->has_value(), k % 3 == 0);
    if (k % 3 == 0) {
      EXPECT_EQ(**r, k / 3);
    }
  }
}

}  // namespace
}  // namespace pulse::ds::testing
