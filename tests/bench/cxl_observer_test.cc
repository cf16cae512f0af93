// The interpreter's traversal observer (src/engine/traversal_observer.h),
// the CXL model's trace source: it sees each window in order and each
// STORE, one OnRun per InterpretTraversal call, only while installed, and
// the traversal's result does not change.
#include <gtest/gtest.h>

#include <vector>

#include "engine/far_heap.h"
#include "engine/run_both.h"
#include "engine/sum_list_program.h"
#include "engine/traversal_observer.h"

namespace pulse {
namespace {

struct Seen : TraversalObserver {
  void OnRun() override { ++runs; }
  void OnWindow(uint64_t addr, uint32_t len) override { windows.push_back({addr, len}); }
  void OnStore(uint64_t addr, uint32_t len) override { stores.push_back({addr, len}); }
  int runs = 0;
  std::vector<std::pair<uint64_t, uint32_t>> windows, stores;
};

TEST(TraversalObserver, SeesEveryWindowOfAListWalkInOrder) {
  testing::FarHeap heap(0x10000, 4096);
  std::vector<uint64_t> nodes;
  for (int i = 0; i < 5; ++i) nodes.push_back(heap.Alloc(16));
  for (size_t i = 0; i < nodes.size(); ++i) {
    heap.Put<uint64_t>(nodes[i], i + 1 < nodes.size() ? nodes[i + 1] : 0);
    heap.Put<uint64_t>(nodes[i] + 8, 10 * (i + 1));
  }
  RangeTable table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  const ProgramRef program = testing::MustBuild(testing::kSumListProgram);
  ASSERT_NE(program, nullptr);
  auto run = [&](uint32_t max_iterations) {
    TraversalState state;
    state.cur_ptr = nodes[0];
    state.scratch.assign(program->info().scratch_bytes, 0);
    TraversalOutcome out = InterpretTraversal(*program, table, 1, max_iterations, &state);
    return std::pair{out, state};
  };

  Seen seen;
  EXPECT_EQ(SetThreadTraversalObserver(&seen), nullptr);
  auto [out, state] = run(100);
  EXPECT_EQ(out.status, TraversalStatus::kDone);
  EXPECT_EQ(state.scratch[0], 150);  // 10 + 20 + ... + 50: observing changes nothing
  EXPECT_EQ(seen.runs, 1);
  ASSERT_EQ(seen.windows.size(), nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(seen.windows[i].first, nodes[i]) << i;
    EXPECT_EQ(seen.windows[i].second, program->info().window_bytes);
  }
  EXPECT_TRUE(seen.stores.empty()) << "the sum lives in the scratch pad";

  // A run cut short by its iteration budget is a run of its own.
  run(2);
  EXPECT_EQ(seen.runs, 2);
  EXPECT_EQ(seen.windows.size(), nodes.size() + 2);

  // Removed: nothing more is seen.
  EXPECT_EQ(SetThreadTraversalObserver(nullptr), &seen);
  run(100);
  EXPECT_EQ(seen.runs, 2);
  EXPECT_EQ(seen.windows.size(), nodes.size() + 2);
}

}  // namespace
}  // namespace pulse
