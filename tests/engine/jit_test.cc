// The JIT's own promises, beyond matching the interpreter (which the
// differential tests check): it is used where it exists, its code pages are
// never writable and executable at once, and --engine interp compiles
// nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "engine/jit.h"
#include "engine/run_both.h"
#include "engine/sum_list_program.h"

namespace pulse {
namespace {

uint32_t NoStore(engine::Frame*, uint64_t, uint64_t, uint32_t) { return 0; }
uint32_t NoAlloc(engine::Frame*, uint64_t, uint32_t) { return 0; }

// The permissions ("r-xp", ...) of the mapping holding `addr`.
std::string PermissionsOf(const void* addr) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi) return perms;
  }
  return "";
}

bool AnyWritableExecutableMapping() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[1] == 'w' && perms[2] == 'x')
      return true;
  }
  return false;
}

TEST(Jit, CodePagesAreReadExecuteNeverWritable) {
  if (!engine::JitAvailable()) GTEST_SKIP() << "no code generator for this architecture";
  auto program = testing::MustBuild(testing::kSumListProgram);
  ASSERT_NE(program, nullptr);
  auto code = engine::JitProgram::Compile(*program, engine::JitHooks{&NoStore, &NoAlloc});
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(PermissionsOf((*code)->code()), "r-xp");
  EXPECT_FALSE(AnyWritableExecutableMapping());
  EXPECT_GT((*code)->code_bytes(), 0u);
}

TEST(Jit, HooksAreRequired) {
  auto program = testing::MustBuild(testing::kSumListProgram);
  ASSERT_NE(program, nullptr);
  EXPECT_FALSE(engine::JitProgram::Compile(*program, engine::JitHooks{}).ok());
}

TEST(Jit, PipelineCompilesEachProgramOnceAndOnlyWithTheJit) {
  testing::FarHeap heap(0x100000, 4096);
  const uint64_t node = heap.Alloc(64);
  heap.Put<uint64_t>(node, 0);
  auto program = testing::MustBuild(testing::kSumListProgram);
  ASSERT_NE(program, nullptr);
  RangeTable table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  for (EngineKind kind : {EngineKind::kInterpreter, EngineKind::kJit}) {
    EngineOptions options;
    options.engine = kind;
    Pipeline pipeline(&table, options);
    for (int i = 0; i < 3; ++i) {
      TraversalRequest req;
      req.program = program;
      req.tenant = 1;
      req.state = testing::StateAt(node, 64);
      pipeline.Admit(std::move(req));
    }
    int done = 0;
    pipeline.Run([&](TraversalRequest&&, const TraversalOutcome&) { ++done; });
    EXPECT_EQ(done, 3);
    const bool jit = kind == EngineKind::kJit && engine::JitAvailable();
    EXPECT_EQ(pipeline.engine(), jit ? EngineKind::kJit : EngineKind::kInterpreter);
    EXPECT_EQ(pipeline.jit_compiled_programs(), jit ? 1u : 0u);
  }
}

TEST(EngineKindNames, RoundTrip) {
  for (EngineKind kind : {EngineKind::kInterpreter, EngineKind::kJit})
    EXPECT_EQ(EngineKindFromName(EngineKindName(kind)), kind);
  EXPECT_FALSE(EngineKindFromName("fast").has_value());
  EXPECT_EQ(EngineKindName(EngineKind::kInterpreter), "interp");
}

}  // namespace
}  // namespace pulse
