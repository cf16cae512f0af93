// The engine against native C++ on data structures written in assembly, and
// against the reference interpreter on random programs, with many
// traversals interleaved in one pipeline.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <list>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include "engine/random_program.h"
#include "engine/run_both.h"

namespace pulse {
namespace {

using testing::FarHeap;
using testing::MustBuild;
using testing::SpGet;
using testing::SpPut;
using testing::StateAt;

constexpr uint64_t kBase = 0x100000;

// Runs every request through one pipeline, admitting as workspaces free up,
// and returns the finished requests in submission order.
std::vector<std::pair<TraversalState, TraversalOutcome>> RunAll(
    FarHeap* heap, const ProgramRef& program, std::vector<TraversalState> states, uint32_t workspaces = 16,
    uint32_t max_iterations = 100000, EngineKind engine = DefaultEngineKind(),
    uint32_t active_workspaces = kAutoActiveWorkspaces, uint32_t turn_rounds = EngineOptions{}.turn_rounds) {
  RangeTable table;
  EXPECT_TRUE(table.Add(heap->range()).ok());
  Pipeline pipeline(&table,
                    testing::PipelineOptions(engine, workspaces, max_iterations, active_workspaces, turn_rounds));
  std::vector<std::pair<TraversalState, TraversalOutcome>> results(states.size());
  size_t next = 0;
  auto admit = [&] {
    while (next < states.size() && pipeline.HasFreeWorkspace()) {
      TraversalRequest req;
      req.id = next;
      req.program = program;
      req.tenant = 1;
      req.state = std::move(states[next++]);
      pipeline.Admit(std::move(req));
    }
  };
  admit();
  pipeline.Run([&](TraversalRequest&& req, const TraversalOutcome& out) {
    results[req.id] = {std::move(req.state), out};
    admit();
  });
  EXPECT_EQ(next, states.size());
  return results;
}

TEST(EngineDataStructures, ListFindMatchesStdFind) {
  FarHeap heap(kBase, 1 << 20);
  std::mt19937_64 rng(1);
  std::list<uint64_t> native;
  uint64_t head = 0;
  for (int i = 0; i < 500; ++i) {  // push_front, like the far list
    const uint64_t key = rng() % 2000;
    const uint64_t node = heap.Alloc(16);
    heap.Put<uint64_t>(node, key);
    heap.Put<uint64_t>(node + 8, head);
    head = node;
    native.push_front(key);
  }
  auto program = MustBuild(R"(
      LOAD data
      COMPARE data[0], sp[0]
      JUMP_EQ found
      COMPARE data[8], 0
      JUMP_EQ missing
      MOVE cur_ptr, data[8]
      NEXT_ITER
    found:
      MOVE sp[8], 1
      MOVE sp[16], cur_ptr
      RETURN
    missing:
      MOVE sp[8], 0
      RETURN)");
  std::vector<TraversalState> states;
  std::vector<uint64_t> keys;
  for (int i = 0; i < 400; ++i) {
    keys.push_back(rng() % 2200);
    states.push_back(StateAt(head, 24));
    SpPut<uint64_t>(&states.back(), 0, keys.back());
  }
  auto results = RunAll(&heap, program, states);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = std::find(native.begin(), native.end(), keys[i]);
    ASSERT_EQ(results[i].second.status, TraversalStatus::kDone);
    EXPECT_EQ(SpGet<uint64_t>(results[i].first, 8), it != native.end() ? 1u : 0u) << keys[i];
    if (it != native.end()) {
      EXPECT_EQ(heap.Get<uint64_t>(SpGet<uint64_t>(results[i].first, 16)), keys[i]);
      EXPECT_EQ(results[i].second.iterations, 1 + std::distance(native.begin(), it));
    }
  }
}

// Listing 4: unordered_map::find over hash-bucket chains.  Node layout
// {key @0, value @8, next @40}.
TEST(EngineDataStructures, HashChainFindMatchesUnorderedMap) {
  FarHeap heap(kBase, 4 << 20);
  constexpr uint64_t kBuckets = 64;  // few buckets: long chains
  constexpr uint64_t kNotFound = 0xffffffff;
  std::vector<uint64_t> bucket(kBuckets, 0);
  std::unordered_map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(2);
  for (int i = 0; i < 3000; ++i) {
    const uint64_t key = rng() % 100000;
    if (native.count(key)) continue;
    const uint64_t value = rng();
    native[key] = value;
    const uint64_t node = heap.Alloc(48);
    heap.Put<uint64_t>(node, key);
    heap.Put<uint64_t>(node + 8, value);
    heap.Put<uint64_t>(node + 40, bucket[key % kBuckets]);
    bucket[key % kBuckets] = node;
  }
  auto program = MustBuild(R"(
      .equ KEY_NOT_FOUND 0xffffffff
      LOAD data
      COMPARE sp[0], data[0]
      JUMP_EQ Return_success
      COMPARE 0, data[40]
      JUMP_EQ Return_fail
      MOVE cur_ptr, data[40]
      NEXT_ITER
    Return_fail:
      MOVE sp[8], KEY_NOT_FOUND
      RETURN
    Return_success:
      MV scratch_pad[8], data[8]
      RETURN)");
  ASSERT_EQ(program->info().window_bytes, 48u);
  std::vector<TraversalState> states;
  std::vector<uint64_t> keys;
  for (int i = 0; i < 2000; ++i) {
    uint64_t key = rng() % 100000;
    if (bucket[key % kBuckets] == 0) continue;  // init() answers empty buckets at the CPU node
    keys.push_back(key);
    states.push_back(StateAt(bucket[key % kBuckets], 16));
    SpPut<uint64_t>(&states.back(), 0, key);
  }
  auto results = RunAll(&heap, program, states);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(results[i].second.status, TraversalStatus::kDone);
    auto it = native.find(keys[i]);
    EXPECT_EQ(SpGet<uint64_t>(results[i].first, 8), it == native.end() ? kNotFound : it->second);
  }
}

// A B+tree whose node search is unrolled and whose child pointer is picked
// with a register-indexed data operand.  Node (256 B): count @0, keys[14]
// @8, children[14] @120, leaf flag @248.  An internal key is the largest key
// of its child's subtree.
constexpr int kFanout = 14;

std::string BtreeLowerBoundProgram() {
  std::string s = "LOAD data, 256\nMOVE r1, 0\n";
  for (int j = 0; j < kFanout; ++j) {
    s += "COMPARE data[0], " + std::to_string(j) + "\nJUMP_LEU searched\n";
    s += "COMPARE data[" + std::to_string(8 + 8 * j) + "], sp[0]\nJUMP_GEU searched\nADD r1, 1\n";
  }
  s += R"(
    searched:
      COMPARE r1, data[0]
      JUMP_EQ missing
      MOVE r2, r1
      SHL r2, 3
      COMPARE data[248], 0
      JUMP_NE leaf
      MOVE cur_ptr, data[r2+120]
      NEXT_ITER
    leaf:
      MOVE sp[8], data[r2+8]
      MOVE sp[16], 1
      RETURN
    missing:
      MOVE sp[16], 0
      RETURN)";
  return s;
}

uint64_t BuildBtree(FarHeap* heap, const std::vector<uint64_t>& sorted) {
  struct Child { uint64_t addr, max; };
  std::vector<Child> level;
  for (size_t i = 0; i < sorted.size(); i += kFanout) {
    const uint64_t node = heap->Alloc(256);
    const size_t n = std::min<size_t>(kFanout, sorted.size() - i);
    heap->Put<uint64_t>(node, n);
    for (size_t k = 0; k < n; ++k) heap->Put<uint64_t>(node + 8 + 8 * k, sorted[i + k]);
    heap->Put<uint64_t>(node + 248, 1);
    level.push_back({node, sorted[i + n - 1]});
  }
  while (level.size() > 1) {
    std::vector<Child> up;
    for (size_t i = 0; i < level.size(); i += kFanout) {
      const uint64_t node = heap->Alloc(256);
      const size_t n = std::min<size_t>(kFanout, level.size() - i);
      heap->Put<uint64_t>(node, n);
      for (size_t k = 0; k < n; ++k) {
        heap->Put<uint64_t>(node + 8 + 8 * k, level[i + k].max);
        heap->Put<uint64_t>(node + 120 + 8 * k, level[i + k].addr);
      }
      up.push_back({node, level[i + n - 1].max});
    }
    level = up;
  }
  return level[0].addr;
}

TEST(EngineDataStructures, BtreeLowerBoundMatchesStdSet) {
  FarHeap heap(kBase, 8 << 20);
  std::mt19937_64 rng(3);
  std::set<uint64_t> native;
  while (native.size() < 5000) native.insert(rng() % 1000000);
  const uint64_t root = BuildBtree(&heap, std::vector<uint64_t>(native.begin(), native.end()));
  auto program = MustBuild(BtreeLowerBoundProgram());
  ASSERT_NE(program, nullptr);
  std::vector<TraversalState> states;
  std::vector<uint64_t> keys;
  for (int i = 0; i < 3000; ++i) {
    keys.push_back(rng() % 1000100);
    states.push_back(StateAt(root, 24));
    SpPut<uint64_t>(&states.back(), 0, keys.back());
  }
  auto results = RunAll(&heap, program, states);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(results[i].second.status, TraversalStatus::kDone);
    auto it = native.lower_bound(keys[i]);
    ASSERT_EQ(SpGet<uint64_t>(results[i].first, 16), it != native.end() ? 1u : 0u) << keys[i];
    if (it != native.end()) EXPECT_EQ(SpGet<uint64_t>(results[i].first, 8), *it);
    EXPECT_EQ(results[i].second.iterations, 4u);  // 5000 keys, fanout 14: four levels
  }
}

// Range aggregation over a sorted list: sum, min, max and count of values
// whose key lies in [sp[0], sp[8]].  Node {key @0, value @8, next @16}.
TEST(EngineDataStructures, RangeAggregationMatchesStdMap) {
  FarHeap heap(kBase, 1 << 20);
  std::mt19937_64 rng(4);
  std::map<uint64_t, uint64_t> native;
  while (native.size() < 800) native[rng() % 10000] = rng() % 1000;
  uint64_t head = 0;
  for (auto it = native.rbegin(); it != native.rend(); ++it) {
    const uint64_t node = heap.Alloc(24);
    heap.Put<uint64_t>(node, it->first);
    heap.Put<uint64_t>(node + 8, it->second);
    heap.Put<uint64_t>(node + 16, head);
    head = node;
  }
  auto program = MustBuild(R"(
      LOAD data
      COMPARE data[0], sp[8]
      JUMP_GTU done          ; past the range
      COMPARE data[0], sp[0]
      JUMP_LTU advance       ; before the range
      ADD sp[16], data[8]
      ADD sp[40], 1
      COMPARE data[8], sp[24]
      JUMP_GEU no_min
      MOVE sp[24], data[8]
    no_min:
      COMPARE data[8], sp[32]
      JUMP_LEU advance
      MOVE sp[32], data[8]
    advance:
      COMPARE data[16], 0
      JUMP_EQ done
      MOVE cur_ptr, data[16]
      NEXT_ITER
    done:
      RETURN)");
  std::vector<TraversalState> states;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (int i = 0; i < 300; ++i) {
    uint64_t lo = rng() % 10000, hi = lo + rng() % 3000;
    ranges.push_back({lo, hi});
    states.push_back(StateAt(head, 48));
    SpPut<uint64_t>(&states.back(), 0, lo);
    SpPut<uint64_t>(&states.back(), 8, hi);
    SpPut<uint64_t>(&states.back(), 24, ~0ull);  // min starts at +inf
  }
  auto results = RunAll(&heap, program, states);
  for (size_t i = 0; i < ranges.size(); ++i) {
    uint64_t sum = 0, mn = ~0ull, mx = 0, count = 0;
    for (auto it = native.lower_bound(ranges[i].first); it != native.end() && it->first <= ranges[i].second; ++it) {
      sum += it->second;
      mn = std::min(mn, it->second);
      mx = std::max(mx, it->second);
      ++count;
    }
    const auto& s = results[i].first;
    ASSERT_EQ(results[i].second.status, TraversalStatus::kDone);
    EXPECT_EQ(SpGet<uint64_t>(s, 16), sum);
    EXPECT_EQ(SpGet<uint64_t>(s, 24), mn);
    EXPECT_EQ(SpGet<uint64_t>(s, 32), mx);
    EXPECT_EQ(SpGet<uint64_t>(s, 40), count);
  }
}

// ---------------------------------------------------------------------------
// Differential test: random programs over a random graph, many traversals in
// flight, against the reference interpreter one at a time.

TEST(EngineDifferential, RandomProgramsMatchReferenceInterpreter) {
  std::mt19937_64 rng(2026);
  std::mt19937_64 active_rng(13);  // its own stream: the programs stay those of rng
  int programs = 0, faults = 0, done = 0, iterations = 0;
  for (int round = 0; round < 150; ++round) {
    // A random graph: 64-byte nodes whose data[0] mostly points at another
    // node, sometimes at nothing (not local) or just before the end.
    FarHeap heap(kBase, 64 * 256 + 16 * 1024);
    std::vector<uint64_t> nodes;
    for (int i = 0; i < 256; ++i) nodes.push_back(heap.Alloc(64));
    for (uint64_t n : nodes) {
      for (int k = 1; k < 8; ++k) heap.Put<uint64_t>(n + 8 * k, rng() % 5 == 0 ? rng() : rng() % 300);
      const int kind = static_cast<int>(rng() % 20);
      heap.Put<uint64_t>(n, kind == 0 ? 0x7000000 : kind == 1 ? heap.base() + heap.bytes().size() - 8
                                                              : nodes[rng() % nodes.size()]);
    }
    testing::RandomProgram gen(&rng);
    const std::string text = gen.Generate();
    auto program = MustBuild(text);
    ASSERT_NE(program, nullptr) << text;
    ++programs;
    std::vector<TraversalState> states;
    for (int t = 0; t < 24; ++t) {
      TraversalState s = StateAt(nodes[rng() % nodes.size()], 128);
      for (size_t b = 16; b < s.scratch.size(); ++b) s.scratch[b] = static_cast<uint8_t>(rng());
      SpPut<uint64_t>(&s, 0, 1 + rng() % 12);
      SpPut<uint64_t>(&s, 8, heap.Alloc(64));  // private store area
      states.push_back(s);
    }
    // The reference, one traversal at a time, on a copy of memory.
    FarHeap ref_heap = heap;
    RangeTable ref_table;
    ASSERT_TRUE(ref_table.Add(ref_heap.range()).ok());
    std::vector<std::pair<TraversalState, TraversalOutcome>> expected;
    for (auto s : states) {
      TraversalOutcome out = InterpretTraversal(*program, ref_table, 1, 8, &s);
      expected.push_back({s, out});
    }
    const uint32_t workspaces = 1 + rng() % 16;
    // Half the rounds with a smaller active set and short turns: traversals
    // wait, rotate and fault from the ready queue.
    const bool small_set = round % 2 == 1;
    const uint32_t active = small_set ? 1 + static_cast<uint32_t>(active_rng() % workspaces) : kAutoActiveWorkspaces;
    const uint32_t turn = small_set ? 1 + static_cast<uint32_t>(active_rng() % 3) : EngineOptions{}.turn_rounds;
    for (EngineKind kind : testing::EnginesToTest()) {
      SCOPED_TRACE(std::string("engine ") + std::string(EngineKindName(kind)) + " active set " +
                   std::to_string(active) + " turn " + std::to_string(turn));
      FarHeap engine_heap = heap;
      auto got = RunAll(&engine_heap, program, states, workspaces, /*max_iterations=*/8, kind, active, turn);
      for (size_t t = 0; t < states.size(); ++t) {
        const auto& [es, eo] = expected[t];
        const auto& [gs, go] = got[t];
        ASSERT_EQ(go.status, eo.status) << text << "\ntraversal " << t;
        ASSERT_EQ(go.iterations, eo.iterations) << text;
        ASSERT_EQ(go.fault_pc, eo.fault_pc) << text;
        ASSERT_EQ(go.fault_addr, eo.fault_addr) << text;
        ASSERT_EQ(gs.cur_ptr, es.cur_ptr) << text;
        ASSERT_EQ(gs.scratch, es.scratch) << text;
      }
      ASSERT_TRUE(engine_heap.bytes() == ref_heap.bytes()) << "far memory differs after:\n" << text;
    }
    for (const auto& [es, eo] : expected) {
      faults += IsFault(eo.status);
      done += eo.status == TraversalStatus::kDone;
      iterations += eo.iterations;
    }
  }
  // The generator must exercise both clean runs and faults.
  EXPECT_GT(done, 200);
  EXPECT_GT(faults, 50);
  EXPECT_GT(iterations, 3000);
}

}  // namespace
}  // namespace pulse
