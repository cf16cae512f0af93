// The pipeline's active set (EngineOptions::active_workspaces): with more
// workspaces admitted than interleaved, nothing is lost (every traversal
// ends as the reference interpreter ends it) and nothing starves (a short
// traversal admitted behind long ones finishes within a bounded number of
// scheduler rounds).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "engine/run_both.h"
#include "engine/sum_list_program.h"

namespace pulse {
namespace {

using testing::FarHeap;
using testing::MustBuild;
using testing::SpGet;
using testing::StateAt;

constexpr uint64_t kBase = 0x100000;

// A list of `length` {next @0, value @8} nodes; returns its head.
uint64_t BuildList(FarHeap* heap, uint32_t length, std::mt19937_64* rng) {
  uint64_t head = 0;
  for (uint32_t i = 0; i < length; ++i) {
    const uint64_t node = heap->Alloc(16);
    heap->Put<uint64_t>(node, head);
    heap->Put<uint64_t>(node + 8, (*rng)() % 1000);
    head = node;
  }
  return head;
}

// Admits a sum-list walk from `head` as request `id` of tenant 1.
void AdmitWalk(Pipeline* pipeline, const ProgramRef& program, uint64_t id, uint64_t head) {
  TraversalRequest req;
  req.id = id;
  req.program = program;
  req.tenant = 1;
  req.state = StateAt(head, 8);
  pipeline->Admit(std::move(req));
}

TEST(EngineActiveSet, SizeIsCappedByWorkspacesAndNeverZero) {
  for (EngineKind kind : {EngineKind::kInterpreter, EngineKind::kJit}) {
    SCOPED_TRACE(std::string("engine ") + std::string(EngineKindName(kind)));
    EngineOptions o;
    o.engine = kind;
    o.workspaces = 128;
    o.active_workspaces = 8;
    EXPECT_EQ(ActiveWorkspacesFor(o), 8u);
    o.active_workspaces = 200;
    EXPECT_EQ(ActiveWorkspacesFor(o), 128u);
    o.workspaces = 4;
    o.active_workspaces = 8;
    EXPECT_EQ(ActiveWorkspacesFor(o), 4u);
    o.active_workspaces = kAutoActiveWorkspaces;
    EXPECT_EQ(ActiveWorkspacesFor(o), 4u);
    o.workspaces = 0;
    EXPECT_EQ(ActiveWorkspacesFor(o), 1u);
  }
}

// Auto is per engine: the JIT interleaves at most kJitActiveWorkspaces, the
// interpreter every workspace; a JIT request on a host without a backend is
// interpreted and gets the interpreter's value.  The pipeline runs what
// ActiveWorkspacesFor says.
TEST(EngineActiveSet, AutoResolvesToTheEnginesMeasuredValue) {
  const bool has_jit = DefaultEngineKind() == EngineKind::kJit;
  const RangeTable table;
  for (uint32_t workspaces : {1u, 16u, 31u, 32u, 33u, 64u, 128u, 1000u}) {
    SCOPED_TRACE("workspaces " + std::to_string(workspaces));
    EngineOptions o;
    o.workspaces = workspaces;
    o.engine = EngineKind::kInterpreter;
    EXPECT_EQ(ActiveWorkspacesFor(o), workspaces);
    EXPECT_EQ(Pipeline(&table, o).active_limit(), workspaces);
    o.engine = EngineKind::kJit;
    const uint32_t jit = has_jit ? std::min(workspaces, kJitActiveWorkspaces) : workspaces;
    EXPECT_EQ(ActiveWorkspacesFor(o), jit);
    Pipeline pipeline(&table, o);
    EXPECT_EQ(pipeline.active_limit(), jit);
    EXPECT_EQ(pipeline.capacity(), workspaces);  // admission is about workspaces, not the active set
  }
  EXPECT_EQ(kAutoActiveWorkspaces, EngineOptions{}.active_workspaces);  // auto is the default
}

// With the defaults (auto) and more workspaces than the JIT's active set,
// every workspace still admits and every traversal ends as the reference
// interpreter ends it, on both engines.
TEST(EngineActiveSet, DefaultScheduleAdmitsEveryWorkspace) {
  FarHeap heap(kBase, 8 << 20);
  std::mt19937_64 rng(21);
  auto program = MustBuild(testing::kSumListProgram);
  ASSERT_NE(program, nullptr);
  constexpr uint32_t kWorkspaces = 3 * kJitActiveWorkspaces;
  std::vector<uint64_t> heads;
  for (uint32_t t = 0; t < kWorkspaces; ++t) heads.push_back(BuildList(&heap, 1 + static_cast<uint32_t>(rng() % 200), &rng));
  RangeTable table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  constexpr uint32_t kMaxIterations = 1000;
  std::vector<std::pair<TraversalState, TraversalOutcome>> expected;
  for (uint64_t head : heads) {
    TraversalState s = StateAt(head, 8);
    TraversalOutcome out = InterpretTraversal(*program, table, 1, kMaxIterations, &s);
    expected.push_back({s, out});
  }
  for (EngineKind kind : testing::EnginesToTest()) {
    SCOPED_TRACE(std::string("engine ") + std::string(EngineKindName(kind)));
    Pipeline pipeline(&table, testing::PipelineOptions(kind, kWorkspaces, kMaxIterations));
    for (uint32_t t = 0; t < kWorkspaces; ++t) {
      ASSERT_TRUE(pipeline.HasFreeWorkspace());
      AdmitWalk(&pipeline, program, t, heads[t]);
    }
    EXPECT_FALSE(pipeline.HasFreeWorkspace());
    std::vector<int> completions(kWorkspaces, 0);
    pipeline.Run([&](TraversalRequest&& req, const TraversalOutcome& out) {
      ++completions[req.id];
      const auto& [es, eo] = expected[req.id];
      EXPECT_EQ(out.status, eo.status) << "traversal " << req.id;
      EXPECT_EQ(out.iterations, eo.iterations) << "traversal " << req.id;
      EXPECT_EQ(req.state.cur_ptr, es.cur_ptr) << "traversal " << req.id;
      EXPECT_EQ(SpGet<uint64_t>(req.state, 0), SpGet<uint64_t>(es, 0)) << "traversal " << req.id;
    });
    EXPECT_EQ(pipeline.active(), 0u);
    for (uint32_t t = 0; t < kWorkspaces; ++t) EXPECT_EQ(completions[t], 1) << "traversal " << t;
  }
}

// 128 traversals of lengths 1 to ~3000 (some starting nowhere, some cut by
// the iteration limit) admitted at once to 128 workspaces of which 16 are
// active, with short turns: every one ends exactly as the reference
// interpreter ends it.
TEST(EngineActiveSet, EveryTraversalEndsAsTheReferenceDoes) {
  FarHeap heap(kBase, 8 << 20);
  std::mt19937_64 rng(13);
  auto program = MustBuild(testing::kSumListProgram);
  ASSERT_NE(program, nullptr);
  std::vector<TraversalState> states;
  for (int t = 0; t < 128; ++t) {
    const uint32_t length = t % 7 == 0 ? 1 + static_cast<uint32_t>(rng() % 3000)
                                       : 1 + static_cast<uint32_t>(rng() % 40);
    const uint64_t head = t % 31 == 5 ? 0x7000000 : BuildList(&heap, length, &rng);  // 0x7000000: not local
    states.push_back(StateAt(head, 8));
  }
  constexpr uint32_t kMaxIterations = 2000;  // some lists are longer: kContinue
  RangeTable table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  std::vector<std::pair<TraversalState, TraversalOutcome>> expected;
  for (TraversalState s : states) {
    TraversalOutcome out = InterpretTraversal(*program, table, 1, kMaxIterations, &s);
    expected.push_back({s, out});
  }
  for (EngineKind kind : testing::EnginesToTest()) {
    SCOPED_TRACE(std::string("engine ") + std::string(EngineKindName(kind)));
    Pipeline pipeline(&table, testing::PipelineOptions(kind, 128, kMaxIterations, 16, 5));
    ASSERT_EQ(pipeline.active_limit(), 16u);
    for (size_t t = 0; t < states.size(); ++t) {
      ASSERT_TRUE(pipeline.HasFreeWorkspace());
      TraversalRequest req;
      req.id = t;
      req.program = program;
      req.tenant = 1;
      req.state = states[t];
      pipeline.Admit(std::move(req));
    }
    EXPECT_FALSE(pipeline.HasFreeWorkspace());
    EXPECT_EQ(pipeline.active(), 128u);
    std::vector<int> completions(states.size(), 0);
    std::vector<std::pair<TraversalState, TraversalOutcome>> got(states.size());
    pipeline.Run([&](TraversalRequest&& req, const TraversalOutcome& out) {
      ++completions[req.id];
      got[req.id] = {std::move(req.state), out};
    });
    EXPECT_EQ(pipeline.active(), 0u);
    int continued = 0, not_local = 0;
    for (size_t t = 0; t < states.size(); ++t) {
      const auto& [es, eo] = expected[t];
      const auto& [gs, go] = got[t];
      ASSERT_EQ(completions[t], 1) << "traversal " << t;
      EXPECT_EQ(go.status, eo.status) << "traversal " << t;
      EXPECT_EQ(go.iterations, eo.iterations) << "traversal " << t;
      EXPECT_EQ(go.fault_addr, eo.fault_addr) << "traversal " << t;
      EXPECT_EQ(gs.cur_ptr, es.cur_ptr) << "traversal " << t;
      EXPECT_EQ(gs.iterations, es.iterations) << "traversal " << t;
      EXPECT_EQ(SpGet<uint64_t>(gs, 0), SpGet<uint64_t>(es, 0)) << "traversal " << t;
      continued += eo.status == TraversalStatus::kContinue;
      not_local += eo.status == TraversalStatus::kNotLocal;
    }
    EXPECT_GT(continued, 0);  // the workload has both endings
    EXPECT_GT(not_local, 0);
  }
}

// A request that cannot start completes in the next round even when the
// active set is full, instead of waiting in the ready queue behind long ones.
TEST(EngineActiveSet, FailedAdmissionCompletesInTheNextRound) {
  FarHeap heap(kBase, 1 << 16);
  auto program = MustBuild(testing::kSumListProgram);
  ASSERT_NE(program, nullptr);
  const uint64_t a = heap.Alloc(16);
  heap.Put<uint64_t>(a, a);  // a one-node cycle: runs until the limit
  RangeTable table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  for (EngineKind kind : testing::EnginesToTest()) {
    SCOPED_TRACE(std::string("engine ") + std::string(EngineKindName(kind)));
    Pipeline pipeline(&table, testing::PipelineOptions(kind, 8, 1000, 2, 64));
    for (uint64_t id = 0; id < 5; ++id) AdmitWalk(&pipeline, program, id, a);  // 2 active, 3 waiting
    AdmitWalk(&pipeline, program, 99, 0x7000000);                              // not local
    std::vector<uint64_t> completed;
    pipeline.Run([&](TraversalRequest&& req, const TraversalOutcome& out) {
      completed.push_back(req.id);
      if (req.id == 99) EXPECT_EQ(out.status, TraversalStatus::kNotLocal);
    }, /*max_iterations_budget=*/1);
    EXPECT_EQ(pipeline.rounds(), 1u);
    EXPECT_EQ(completed, std::vector<uint64_t>{99});
    pipeline.Run([](TraversalRequest&&, const TraversalOutcome&) {});
    EXPECT_EQ(pipeline.active(), 0u);
  }
}

// 127 endless traversals (a two-node cycle, ended only by a large iteration
// limit) fill the pipeline, then one of 3 iterations is admitted last, at the
// back of the ready queue.  K slots rotate every `turn` rounds, so the queue
// moves K places every `turn` rounds: the short one enters within
// ceil(waiting / K) * turn rounds and then needs its 3 iterations.  Without
// rotation it would wait for a long one to end (20000 rounds).
TEST(EngineActiveSet, ShortTraversalBehindLongOnesFinishesWithinBoundedRounds) {
  FarHeap heap(kBase, 1 << 16);
  std::mt19937_64 rng(7);
  auto program = MustBuild(testing::kSumListProgram);
  ASSERT_NE(program, nullptr);
  const uint64_t a = heap.Alloc(16), b = heap.Alloc(16);
  heap.Put<uint64_t>(a, b);
  heap.Put<uint64_t>(a + 8, 1);
  heap.Put<uint64_t>(b, a);
  heap.Put<uint64_t>(b + 8, 2);
  const uint64_t short_head = BuildList(&heap, 3, &rng);
  RangeTable table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  constexpr uint32_t kWorkspaces = 128, kActive = 8, kTurn = 4, kLong = 20000;
  for (EngineKind kind : testing::EnginesToTest()) {
    SCOPED_TRACE(std::string("engine ") + std::string(EngineKindName(kind)));
    Pipeline pipeline(&table, testing::PipelineOptions(kind, kWorkspaces, kLong, kActive, kTurn));
    for (uint32_t t = 0; t + 1 < kWorkspaces; ++t) AdmitWalk(&pipeline, program, t, a);
    AdmitWalk(&pipeline, program, kWorkspaces - 1, short_head);
    uint64_t short_done_round = 0;
    uint32_t long_done = 0;
    pipeline.Run([&](TraversalRequest&& req, const TraversalOutcome& out) {
      if (req.id == kWorkspaces - 1) {
        EXPECT_EQ(out.status, TraversalStatus::kDone);
        EXPECT_EQ(out.iterations, 3u);
        short_done_round = pipeline.rounds();
      } else {
        EXPECT_EQ(out.status, TraversalStatus::kContinue);
        EXPECT_EQ(out.iterations, kLong);
        ++long_done;
      }
    });
    EXPECT_EQ(long_done, kWorkspaces - 1);
    const uint64_t waiting = kWorkspaces - kActive;  // ahead of it, or it, in the queue
    const uint64_t bound = (waiting + kActive - 1) / kActive * kTurn + 3 + 1;
    ASSERT_GT(short_done_round, 0u);
    EXPECT_LE(short_done_round, bound);
    // Fair, not just prompt for the newcomer: with 120 of 128 waiting, every
    // long traversal ran its 20000 iterations in about 128/8 x 20000 rounds.
    EXPECT_LE(pipeline.rounds(), uint64_t{kWorkspaces} / kActive * kLong + kWorkspaces * kTurn);
  }
}

}  // namespace
}  // namespace pulse
