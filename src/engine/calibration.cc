#include "pulse/calibration.h"

#include <sys/mman.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "pulse/assembler.h"
#include "pulse/engine.h"

namespace pulse {
namespace {

constexpr uint64_t kBase = uint64_t{1} << 44;
constexpr uint32_t kNodeBytes = 64;
constexpr int kExtraInstructions = 64;

std::string ChaseProgram(int extra) {
  std::string s = "LOAD data\nMOVE r1, data[0]\n";
  for (int i = 0; i < extra; ++i) s += "ADD r1, 1\n";
  s += "MOVE cur_ptr, data[0]\nSUB sp[0], 1\nCOMPARE sp[0], 0\nJUMP_EQ done\nNEXT_ITER\ndone:\nMOVE sp[8], r1\nRETURN\n";
  return s;
}

// Nanoseconds per iteration of `program` with every workspace busy.
double TimePerIteration(const ProgramRef& program, const RangeTable& table, uint64_t nodes, uint32_t workspaces,
                        double seconds, EngineKind engine) {
  EngineOptions eo;
  eo.engine = engine;
  eo.workspaces = workspaces;
  Pipeline pipeline(&table, eo);
  std::mt19937_64 rng(7);
  constexpr uint32_t kHops = 512;
  auto admit = [&] {
    while (pipeline.HasFreeWorkspace()) {
      TraversalRequest r;
      r.program = program;
      r.tenant = 1;
      r.max_iterations = kHops + 1;
      r.state.cur_ptr = kBase + (rng() % nodes) * kNodeBytes;
      r.state.scratch.assign(16, 0);
      std::memcpy(r.state.scratch.data(), &kHops, 4);
      pipeline.Admit(std::move(r));
    }
  };
  uint64_t iterations = 0;
  CompletionFn done = [&](TraversalRequest&&, const TraversalOutcome& out) { iterations += out.iterations; };
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    admit();
    pipeline.Run(done, uint64_t{kHops} * workspaces);
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < seconds);
  pipeline.Run(done);
  return elapsed * 1e9 / static_cast<double>(iterations);
}

}  // namespace

Result<EngineCalibration> CalibrateEngine(uint64_t bytes, uint32_t workspaces, double seconds, EngineKind engine) {
  const uint64_t nodes = bytes / kNodeBytes;
  if (nodes < 2) return Status::InvalidArgument("calibration: at least two nodes of memory are needed");
  void* mem = mmap(nullptr, nodes * kNodeBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return Status::ResourceExhausted("calibration: cannot map the test list");
  auto* base = static_cast<uint8_t*>(mem);
  std::vector<uint32_t> order(nodes);
  for (uint64_t i = 0; i < nodes; ++i) order[i] = static_cast<uint32_t>(i);
  std::mt19937_64 rng(3);
  for (uint64_t i = nodes - 1; i > 0; --i) std::swap(order[i], order[rng() % i]);  // one cycle
  for (uint64_t i = 0; i < nodes; ++i) {
    const uint64_t next = kBase + uint64_t{order[i]} * kNodeBytes;
    std::memcpy(base + i * kNodeBytes, &next, 8);
  }
  RangeTable table;
  Status s = table.Add(Range{kBase, nodes * kNodeBytes, base, kPermRead, 1});
  EngineCalibration c;
  if (s.ok()) {
    auto light = VerifiedProgram::Create(*Assemble(ChaseProgram(0)));
    auto heavy = VerifiedProgram::Create(*Assemble(ChaseProgram(kExtraInstructions)));
    if (!light.ok() || !heavy.ok()) {
      s = Status::Internal("calibration: the calibration programs do not verify");
    } else {
      c.workspaces = workspaces;
      c.t_d_ns = TimePerIteration(*light, table, nodes, workspaces, seconds, engine);
      const double heavy_ns = TimePerIteration(*heavy, table, nodes, workspaces, seconds, engine);
      c.t_i_ns = std::max(0.01, (heavy_ns - c.t_d_ns) / kExtraInstructions);
    }
  }
  munmap(mem, nodes * kNodeBytes);
  if (!s.ok()) return s;
  return c;
}

}  // namespace pulse
