// List against std::list: random push_front / push_back / erase(first equal) / find / aggregate /
// full iteration with a fixed seed; every read traversal runs offloaded, at the CPU node and as the
// dispatch engine decides (kModes).
#include "pulse/ds/list.h"

#include <algorithm>
#include <iterator>
#include <list>
#include <random>
#include <vector>

#include "support/ds_cluster.h"
#include "ds/testing_hooks.h"
#include "ds/ops_tally.h"

namespace pulse::ds::testing {
namespace {

using DsList = DsCluster;

Aggregate NativeAggregate(const std::list<uint64_t>& l, uint64_t lo, uint64_t hi) {
  Aggregate a;
  for (uint64_t v : l) {
    if (v < lo || v > hi) continue;
    a.sum += v;
    a.min = std::min(a.min, v);
    a.max = std::max(a.max, v);
    ++a.count;
  }
  return a;
}

TEST_F(DsList, RandomOperationsMatchStdList) {
  auto created = List::Create(client_.get());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  List& list = **created;
  std::list<uint64_t> native;
  std::mt19937_64 rng(11);
  int hits = 0;
  uint64_t ops = 0;  // each read in each mode counts as one
  for (uint64_t op = 0; op < ScaledOps(1500); ++op) {
    const uint64_t value = rng() % 300;
    const int kind = static_cast<int>(rng() % 20);
    if (kind < 13 || kind >= 19) ++ops;  // a write or a whole-list read
    if (kind < 5) {
      ASSERT_TRUE(list.PushFront(value).ok());
      native.push_front(value);
    } else if (kind < 10) {
      ASSERT_TRUE(list.PushBack(value).ok());
      native.push_back(value);
    } else if (kind < 13) {
      auto r = list.Erase(value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      auto it = std::find(native.begin(), native.end(), value);
      EXPECT_EQ(*r, it != native.end()) << "erase " << value;
      if (it != native.end()) native.erase(it);
    } else if (kind < 18) {
      auto it = std::find(native.begin(), native.end(), value);
      for (ExecutionMode mode : kModes) {
        ++ops;
        list.set_mode(mode);
        auto r = list.Find(value);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(r->has_value(), it != native.end()) << "find " << value;
        if (it != native.end()) {
          EXPECT_EQ(**r, static_cast<uint64_t>(std::distance(native.begin(), it)));
        }
      }
      hits += it != native.end();
    } else if (kind < 19) {
      uint64_t lo = rng() % 300, hi = rng() % 300;
      if (lo > hi) std::swap(lo, hi);
      const Aggregate want = NativeAggregate(native, lo, hi);
      for (ExecutionMode mode : kModes) {
        ++ops;
        list.set_mode(mode);
        auto r = list.AggregateRange(lo, hi);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        EXPECT_EQ(*r, want) << "aggregate [" << lo << ", " << hi << "] count " << r->count
                            << " want " << want.count;
      }
    } else {
      auto v = list.ToVector();
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      EXPECT_EQ(*v, std::vector<uint64_t>(native.begin(), native.end()));
    }
    ASSERT_EQ(list.size(), native.size());
  }
  // The list grows as the run goes on: only a full-length run finds enough.
  if (ScaledOps(1500) == 1500) EXPECT_GT(hits, 100);
  TallyOps("list random", ops);
  auto all = list.AggregateRange();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, NativeAggregate(native, 0, UINT64_MAX));
  auto v = list.ToVector();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, std::vector<uint64_t>(native.begin(), native.end()));
  ExpectBothPathsUsed();
}

TEST_F(DsList, EmptyListAndIteratorEnd) {
  auto list = List::Create(client_.get(), {.mode = ExecutionMode::kOffload});
  ASSERT_TRUE(list.ok());
  auto f = (*list)->Find(1);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->has_value());
  auto a = (*list)->AggregateRange();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, Aggregate{});
  ASSERT_TRUE((*list)->PushBack(42).ok());
  auto it = (*list)->Begin();
  ASSERT_TRUE(it.ok());
  ASSERT_FALSE(it->done());
  EXPECT_EQ(it->value(), 42u);
  ASSERT_TRUE(it->Next().ok());
  EXPECT_TRUE(it->done());
  EXPECT_EQ(it->Next().code(), Status::Code::kOutOfRange);
  auto e = (*list)->Erase(42);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(*e);
  EXPECT_TRUE((*list)->empty());
  auto v = (*list)->ToVector();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->empty());
}

// An erase whose second write (the next node's prev link) fails leaves the
// element unlinked going forward only; later updates must not trust the
// stale backward link (erasing the next element through it used to leave
// that element in the list).
TEST_F(DsList, EraseThatFailsHalfwayIsRelinkedBeforeTheNextUpdate) {
  for (const bool head : {false, true}) {
    auto list = List::Create(client_.get());
    ASSERT_TRUE(list.ok());
    std::list<uint64_t> native;
    for (uint64_t v = 1; v <= 6; ++v) {
      ASSERT_TRUE((*list)->PushBack(v).ok());
      native.push_back(v);
    }
    const uint64_t victim = head ? 1 : 3;
    internal::TestingHooks::FailWrite(**list, 1);  // the middle: prev.next lands, next.prev fails; the head: next.prev fails
    if (head) internal::TestingHooks::FailWrite(**list, 0);
    EXPECT_FALSE((*list)->Erase(victim).ok());
    native.remove(victim);  // forward it is gone
    auto e = (*list)->Erase(victim + 1);  // its prev link named the victim
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_TRUE(*e);
    native.remove(victim + 1);
    ASSERT_TRUE((*list)->PushBack(7).ok());
    native.push_back(7);
    auto all = (*list)->ToVector();
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(*all, std::vector<uint64_t>(native.begin(), native.end())) << (head ? "head" : "middle");
    EXPECT_EQ((*list)->size(), native.size());
    uint64_t pos = 0;
    for (uint64_t v : native) {
      auto f = (*list)->Find(v);
      ASSERT_TRUE(f.ok());
      EXPECT_EQ(*f, std::optional<uint64_t>(pos++)) << v;
    }
  }
}

}  // namespace
}  // namespace pulse::ds::testing
