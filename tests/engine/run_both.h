// Test helper: runs one traversal on the reference interpreter and on the
// engine, interpreted and JIT-compiled (each against its own copy of memory),
// and checks they agree.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/far_heap.h"
#include "pulse/assembler.h"
#include "pulse/engine.h"
#include "pulse/traversal.h"

namespace pulse::testing {

inline ProgramRef MustBuild(const std::string& text) {
  auto insns = Assemble(text);
  EXPECT_TRUE(insns.ok()) << insns.status().ToString();
  if (!insns.ok()) return nullptr;
  auto p = VerifiedProgram::Create(std::move(*insns));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : nullptr;
}

struct RunResult {
  TraversalOutcome outcome;
  TraversalState state;
};

// Options for a pipeline of `workspaces` with an active set of `active`
// (kAutoActiveWorkspaces: the default) rotating every `turn` rounds.
inline EngineOptions PipelineOptions(EngineKind kind, uint32_t workspaces, uint32_t max_iterations,
                                     uint32_t active = kAutoActiveWorkspaces,
                                     uint32_t turn = EngineOptions{}.turn_rounds) {
  EngineOptions options;
  options.engine = kind;
  options.workspaces = workspaces;
  options.active_workspaces = active;
  options.turn_rounds = turn;
  options.max_iterations = max_iterations;
  return options;
}

// Runs on the engine over `heaps` (copied, so the caller's stay untouched
// unless `write_back`).
// The engines a test runs: the interpreter always, the JIT where it exists.
inline std::vector<EngineKind> EnginesToTest() {
  std::vector<EngineKind> kinds{EngineKind::kInterpreter};
  if (DefaultEngineKind() == EngineKind::kJit) kinds.push_back(EngineKind::kJit);
  return kinds;
}

inline RunResult RunOnEngine(const ProgramRef& program, std::vector<FarHeap*> heaps, TenantId tenant,
                             uint32_t max_iterations, TraversalState state,
                             EngineKind engine = DefaultEngineKind()) {
  RangeTable table;
  for (FarHeap* h : heaps) EXPECT_TRUE(table.Add(h->range()).ok());
  EngineOptions options;
  options.engine = engine;
  options.workspaces = 4;
  Pipeline pipeline(&table, options);
  TraversalRequest req;
  req.program = program;
  req.tenant = tenant;
  req.max_iterations = max_iterations;
  req.state = std::move(state);
  pipeline.Admit(std::move(req));
  RunResult result;
  int completions = 0;
  pipeline.Run([&](TraversalRequest&& done, const TraversalOutcome& out) {
    result.outcome = out;
    result.state = std::move(done.state);
    ++completions;
  });
  EXPECT_EQ(completions, 1);
  return result;
}

// Runs on both; expects identical outcomes, states and memory; returns the
// interpreter's result and leaves the interpreter's memory effects in heaps.
inline RunResult RunBoth(const ProgramRef& program, std::vector<FarHeap*> heaps, TraversalState state,
                         uint32_t max_iterations = 1000, TenantId tenant = 1) {
  RangeTable table;
  for (FarHeap* h : heaps) EXPECT_TRUE(table.Add(h->range()).ok());
  std::vector<FarHeap> before;
  for (FarHeap* h : heaps) before.push_back(*h);
  RunResult ref;
  ref.state = state;
  ref.outcome = InterpretTraversal(*program, table, tenant, max_iterations, &ref.state);

  for (EngineKind kind : EnginesToTest()) {
    SCOPED_TRACE(std::string("engine ") + std::string(EngineKindName(kind)));
    std::vector<FarHeap> engine_copies = before;
    std::vector<FarHeap*> engine_heaps;
    for (auto& h : engine_copies) engine_heaps.push_back(&h);
    RunResult engine = RunOnEngine(program, engine_heaps, tenant, max_iterations, state, kind);
    EXPECT_EQ(static_cast<int>(engine.outcome.status), static_cast<int>(ref.outcome.status))
        << "engine " << TraversalStatusName(engine.outcome.status) << " vs reference "
        << TraversalStatusName(ref.outcome.status);
    EXPECT_EQ(engine.outcome.iterations, ref.outcome.iterations);
    EXPECT_EQ(engine.outcome.fault_pc, ref.outcome.fault_pc);
    EXPECT_EQ(engine.outcome.fault_addr, ref.outcome.fault_addr);
    EXPECT_EQ(engine.state.cur_ptr, ref.state.cur_ptr);
    EXPECT_EQ(engine.state.iterations, ref.state.iterations);
    EXPECT_EQ(engine.state.scratch, ref.state.scratch);
    for (size_t i = 0; i < heaps.size(); ++i) EXPECT_TRUE(engine_copies[i].bytes() == heaps[i]->bytes());
  }
  return ref;
}

inline TraversalState StateAt(uint64_t cur_ptr, size_t scratch_bytes = 64) {
  TraversalState s;
  s.cur_ptr = cur_ptr;
  s.scratch.assign(scratch_bytes, 0);
  return s;
}

template <typename T>
T SpGet(const TraversalState& s, size_t off) {
  T v;
  std::memcpy(&v, s.scratch.data() + off, sizeof(T));
  return v;
}
template <typename T>
void SpPut(TraversalState* s, size_t off, T v) {
  std::memcpy(s->scratch.data() + off, &v, sizeof(T));
}

}  // namespace pulse::testing
