// PREFETCH (isa.h): a hint that changes no result on any engine, wherever it
// points, and that the engine acts on only inside the tenant's own ranges.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/far_heap.h"
#include "engine/run_both.h"
#include "engine/sum_list_program.h"
#include "pulse/engine.h"

namespace pulse::testing {
namespace {

// The list sum of sum_list_program.h, hinting the next node and two
// addresses the caller put in sp[8] (and 4 KiB below it).
constexpr const char* kPrefetchingSumList = R"(
    LOAD data
    ADD sp[0], data[8]
    MOVE r1, data[0]
    PREFETCH [r1]
    MOVE r2, sp[8]
    PREFETCH [r2]
    PREFETCH [r2-4096]
    COMPARE data[0], 0
    JUMP_EQ end
    MOVE cur_ptr, data[0]
    NEXT_ITER
  end:
    RETURN)";

constexpr uint64_t kOwnBase = 0x10000;
constexpr uint64_t kOtherBase = 0x900000;
constexpr size_t kHeapBytes = 64 * 1024;
constexpr int kNodes = 40;

// A list of kNodes {next, value} nodes spread over the heap; returns its head.
uint64_t BuildList(FarHeap* heap) {
  std::vector<uint64_t> at;
  for (int i = 0; i < kNodes; ++i) {
    at.push_back(heap->Alloc(16));
    heap->Alloc(1000);  // nodes on different lines and pages
  }
  for (int i = 0; i < kNodes; ++i) {
    heap->Put<uint64_t>(at[i], i + 1 < kNodes ? at[i + 1] : 0);
    heap->Put<uint64_t>(at[i] + 8, 3 * i + 1);
  }
  return at[0];
}

TEST(Prefetch, ChangesNoResultWhereverItPoints) {
  FarHeap own(kOwnBase, kHeapBytes, /*owner=*/1);
  FarHeap other(kOtherBase, kHeapBytes, /*owner=*/2);
  const uint64_t head = BuildList(&own);
  ProgramRef plain = MustBuild(kSumListProgram);
  ProgramRef hinted = MustBuild(kPrefetchingSumList);
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(hinted, nullptr);
  const RunResult expected = RunBoth(plain, {&own, &other}, StateAt(head));
  ASSERT_EQ(expected.outcome.status, TraversalStatus::kDone);

  const uint64_t hints[] = {
      kOwnBase + 8192,                 // the tenant's own memory
      kOwnBase + kHeapBytes - 8,       // its window would run past the range's end
      kOtherBase + 4096 + 64,          // another tenant's memory
      0x7fff00000000,                  // no range at all
      ~uint64_t{0},                    // the address space's end: addr + window overflows
      0,                               // null
  };
  for (uint64_t hint : hints) {
    SCOPED_TRACE("hint " + std::to_string(hint));
    TraversalState s = StateAt(head);
    SpPut<uint64_t>(&s, 8, hint);
    const RunResult got = RunBoth(hinted, {&own, &other}, s);
    EXPECT_EQ(got.outcome.status, TraversalStatus::kDone);
    EXPECT_EQ(got.outcome.iterations, expected.outcome.iterations);
    EXPECT_EQ(SpGet<uint64_t>(got.state, 0), SpGet<uint64_t>(expected.state, 0));
    EXPECT_EQ(SpGet<uint64_t>(got.state, 8), hint);  // the pad is untouched by the hint
  }
}

// The engine prefetches exactly the hints whose window the tenant may read
// here, on both engines: the next node on every iteration but the last (its
// next is null), and sp[8]'s two addresses only when they are the tenant's.
TEST(Prefetch, IsActedOnOnlyInsideTheTenantsRanges) {
  for (EngineKind kind : EnginesToTest()) {
    SCOPED_TRACE(std::string(EngineKindName(kind)));
    for (const bool own_hint : {true, false}) {
      FarHeap own(kOwnBase, kHeapBytes, /*owner=*/1);
      FarHeap other(kOtherBase, kHeapBytes, /*owner=*/2);
      const uint64_t head = BuildList(&own);
      RangeTable table;
      ASSERT_TRUE(table.Add(own.range()).ok());
      ASSERT_TRUE(table.Add(other.range()).ok());
      EngineOptions options;
      options.engine = kind;
      Pipeline pipeline(&table, options);
      TraversalRequest req;
      req.program = MustBuild(kPrefetchingSumList);
      req.tenant = 1;
      req.state = StateAt(head);
      SpPut<uint64_t>(&req.state, 8, own_hint ? kOwnBase + 8192 : kOtherBase + 8192);
      pipeline.Admit(std::move(req));
      int completions = 0;
      pipeline.Run([&](TraversalRequest&&, const TraversalOutcome& out) {
        EXPECT_EQ(out.status, TraversalStatus::kDone);
        ++completions;
      });
      ASSERT_EQ(completions, 1);
      EXPECT_EQ(pipeline.engine(), kind);
      const uint64_t next_hints = kNodes - 1;
      if (own_hint) {
        EXPECT_EQ(pipeline.prefetches_issued(), next_hints + 2 * kNodes);
        EXPECT_EQ(pipeline.prefetches_ignored(), 1u);
      } else {
        EXPECT_EQ(pipeline.prefetches_issued(), next_hints);
        EXPECT_EQ(pipeline.prefetches_ignored(), 1u + 2 * kNodes);
      }
    }
  }
}

}  // namespace
}  // namespace pulse::testing
