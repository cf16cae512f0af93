// ForwardList against std::forward_list: random push_front / pop_front / insert_after /
// erase_after (at positions found by value) / find / aggregate / iteration with a fixed seed;
// every read traversal runs offloaded, at the CPU node and as the dispatch engine decides.
#include "pulse/ds/forward_list.h"

#include <algorithm>
#include <forward_list>
#include <iterator>
#include <random>
#include <vector>

#include "support/ds_cluster.h"
#include "ds/lists_test_util.h"

namespace pulse::ds::testing {
namespace {

using DsForwardList = DsCluster;

uint64_t Self(uint64_t v) { return v; }

TEST_F(DsForwardList, RandomOperationsMatchStdForwardList) {
  auto created = ForwardList::Create(client_.get());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ForwardList& list = **created;
  std::forward_list<uint64_t> native;
  size_t native_size = 0;
  std::mt19937_64 rng(21);
  uint64_t hits = 0;
  const uint64_t ops = ScaledOps(1200);
  for (uint64_t op = 0; op < ops; ++op) {
    const uint64_t value = rng() % 64, anchor = rng() % 64;
    const int kind = static_cast<int>(rng() % 20);
    // Keep the list short: a CPU-node find reads one node per element.
    const bool grow = native_size < 48;
    if (kind < 3 && grow) {
      ASSERT_TRUE(list.PushFront(value).ok());
      native.push_front(value);
      ++native_size;
    } else if (kind < 6 && grow) {  // insert_after the first `anchor`, or before_begin
      auto pos = list.Find(anchor);
      ASSERT_TRUE(pos.ok()) << pos.status().ToString();
      auto npos = std::find(native.begin(), native.end(), anchor);
      ASSERT_EQ(pos->done(), npos == native.end()) << "find " << anchor;
      ForwardList::Iterator at = pos->done() ? list.BeforeBegin() : *pos;
      auto r = list.InsertAfter(at, value);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->value(), value);
      native.insert_after(npos == native.end() ? native.before_begin() : npos, value);
      ++native_size;
    } else if (kind < 8) {  // erase_after the first `anchor`
      auto pos = list.Find(anchor);
      ASSERT_TRUE(pos.ok()) << pos.status().ToString();
      auto npos = std::find(native.begin(), native.end(), anchor);
      ASSERT_EQ(pos->done(), npos == native.end()) << "find " << anchor;
      if (pos->done()) continue;
      auto r = list.EraseAfter(*pos);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(*r, std::next(npos) != native.end()) << "erase_after " << anchor;
      if (*r) {
        native.erase_after(npos);
        --native_size;
      }
    } else if (kind < 9) {
      const Status s = list.PopFront();
      ASSERT_EQ(s.ok(), !native.empty()) << s.ToString();
      if (!native.empty()) {
        native.pop_front();
        --native_size;
      }
    } else if (kind < 16) {
      auto it = std::find(native.begin(), native.end(), value);
      for (ExecutionMode mode : kModes) {
        list.set_mode(mode);
        auto r = list.IndexOf(value);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(r->has_value(), it != native.end()) << "find " << value;
        if (it != native.end()) {
          EXPECT_EQ(**r, static_cast<uint64_t>(std::distance(native.begin(), it)));
        }
        ++OpsCounted();
      }
      hits += it != native.end();
    } else if (kind < 19) {
      const uint64_t lo = rng() % 64, hi = lo + rng() % 32;
      const Aggregate want = ReferenceAggregate(native, lo, hi, Self, Self);
      for (ExecutionMode mode : kModes) {
        list.set_mode(mode);
        auto r = list.AggregateRange(lo, hi);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        EXPECT_EQ(*r, want) << "aggregate [" << lo << ", " << hi << "]";
        ++OpsCounted();
      }
    } else {
      auto v = list.ToVector();
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      EXPECT_EQ(*v, std::vector<uint64_t>(native.begin(), native.end()));
    }
    ++OpsCounted();
    ASSERT_EQ(list.size(), native_size);
  }
  if (ops >= 1000) {
    EXPECT_GT(hits, ops / 25) << "the mix should find present values";
  }
  auto v = list.ToVector();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, std::vector<uint64_t>(native.begin(), native.end()));
  ExpectBothPathsUsed();
}

TEST_F(DsForwardList, PositionsAndErrors) {
  EXPECT_EQ(ForwardList::Create(nullptr).status().code(), Status::Code::kInvalidArgument);
  auto created = ForwardList::Create(client_.get());
  ASSERT_TRUE(created.ok());
  ForwardList& list = **created;
  EXPECT_EQ(list.PopFront().code(), Status::Code::kOutOfRange);
  auto end = list.Find(7);
  ASSERT_TRUE(end.ok());
  EXPECT_TRUE(end->done());
  EXPECT_EQ(list.InsertAfter(*end, 1).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(list.EraseAfter(*end).status().code(), Status::Code::kInvalidArgument);
  auto e = list.EraseAfter(list.BeforeBegin());
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(*e);
  // before_begin follows the head as it changes.
  ForwardList::Iterator bb = list.BeforeBegin();
  ASSERT_TRUE(list.PushFront(3).ok());
  ASSERT_TRUE(list.PushFront(2).ok());
  ASSERT_TRUE(bb.Next().ok());
  ASSERT_FALSE(bb.done());
  EXPECT_EQ(bb.value(), 2u);
  ASSERT_TRUE(bb.Next().ok());
  EXPECT_EQ(bb.value(), 3u);
  ASSERT_TRUE(bb.Next().ok());
  EXPECT_TRUE(bb.done());
  EXPECT_EQ(bb.Next().code(), Status::Code::kOutOfRange);
}

}  // namespace
}  // namespace pulse::ds::testing
