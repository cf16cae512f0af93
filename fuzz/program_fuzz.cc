// Fuzz target: the binary program decoder, the verifier and the engine.
//
// Input: an 8-byte header, then an encoded program (pulse/program.h):
//   [0] which range cur_ptr starts in (TenantMemory::PickAddress), [1] where,
//   [2] scratch pad length / 16 (0: exactly what the program needs),
//   [3] max iterations - 1 (mod 64), [4..6] seed of the scratch pad's words,
//   [7] bit 0: run as tenant B instead of A.
// A program that decodes and verifies runs on the Pipeline and on the
// reference interpreter, each over its own copy of the same memory; they
// must agree on outcome, state and memory, the interpreter must only touch
// the tenant's ranges with the right permission (CheckedMemory), and nobody
// may write another tenant's or a read-only range or the guard bytes.
// Programs that only read also run three at a time on one pipeline, to
// exercise the interleaving.
#include <cstring>

#include "fuzz_check.h"
#include "pulse/assembler.h"
#include "pulse/engine.h"
#include "pulse/program.h"
#include "tenant_memory.h"

namespace pulse::fuzz {
namespace {

constexpr size_t kHeaderBytes = 8;

struct Start {
  TraversalState state;
  uint32_t max_iterations;
};

Start MakeStart(const TenantMemory& memory, const ProgramInfo& info, const uint8_t* h, uint8_t variant) {
  Start s;
  s.state.cur_ptr = memory.PickAddress(static_cast<uint8_t>(h[0] + variant), static_cast<uint8_t>(h[1] + 3 * variant));
  const size_t len = h[2] == 0 ? info.scratch_bytes : std::min<size_t>(h[2] * 16u, isa::kDefaultScratchPadBytes + 16);
  s.state.scratch.assign(len, 0);
  memory.FillWords(h[4] | h[5] << 8 | h[6] << 16, &s.state.scratch);
  s.max_iterations = h[3] % 64 + 1;
  return s;
}

void CheckAgree(const TraversalOutcome& eo, const TraversalState& es, const TraversalOutcome& ro,
                const TraversalState& rs) {
  PULSE_FUZZ_CHECK(eo.status == ro.status, "engine status {} vs interpreter {}", TraversalStatusName(eo.status),
                   TraversalStatusName(ro.status));
  PULSE_FUZZ_CHECK(eo.iterations == ro.iterations, "iterations {} vs {}", eo.iterations, ro.iterations);
  PULSE_FUZZ_CHECK(eo.fault_pc == ro.fault_pc, "fault_pc {} vs {}", eo.fault_pc, ro.fault_pc);
  PULSE_FUZZ_CHECK(eo.fault_addr == ro.fault_addr, "fault_addr {:#x} vs {:#x}", eo.fault_addr, ro.fault_addr);
  PULSE_FUZZ_CHECK(es.cur_ptr == rs.cur_ptr, "cur_ptr {:#x} vs {:#x}", es.cur_ptr, rs.cur_ptr);
  PULSE_FUZZ_CHECK(es.iterations == rs.iterations, "state iterations {} vs {}", es.iterations, rs.iterations);
  PULSE_FUZZ_CHECK(es.scratch == rs.scratch, "scratch pads differ ({} bytes)", es.scratch.size());
}

// Disassemble -> Assemble gives back the program whenever it prints.
void CheckDisassembly(const std::vector<isa::Instruction>& insns) {
  const std::string text = Disassemble(insns);
  if (text.find("<invalid") != std::string::npos) return;
  auto again = Assemble(text);
  PULSE_FUZZ_CHECK(again.ok(), "disassembly does not assemble: {}\n{}", again.status().ToString(), text);
  PULSE_FUZZ_CHECK(*again == insns, "disassembly assembles to a different program:\n{}", text);
}

}  // namespace

void FuzzProgram(std::span<const uint8_t> data) {
  if (data.size() < kHeaderBytes) return;
  const uint8_t* h = data.data();
  auto insns = DecodeProgram(data.subspan(kHeaderBytes));
  if (!insns.ok()) return;
  PULSE_FUZZ_CHECK(EncodeProgram(*insns) ==
                       std::vector<uint8_t>(data.begin() + kHeaderBytes, data.end()),
                   "decode/encode round trip changed the program");
  CheckDisassembly(*insns);
  auto program = VerifiedProgram::Create(*insns);
  if (!program.ok()) return;
  const ProgramRef& p = *program;
  const ProgramInfo& info = p->info();
  PULSE_FUZZ_CHECK(info.window_bytes <= isa::kMaxWindowBytes, "window {}", info.window_bytes);
  PULSE_FUZZ_CHECK(info.scratch_bytes <= isa::kDefaultScratchPadBytes, "scratch {}", info.scratch_bytes);

  const TenantId tenant = (h[7] & 1) ? kTenantB : kTenantA;
  const TenantMemory original;
  // Reads only: three traversals interleaved on one pipeline.  Otherwise one
  // (STOREs of concurrent traversals would make the order matter).
  const int runs = info.has_store ? 1 : 3;

  TenantMemory engine_memory;
  RangeTable engine_table = engine_memory.Table();
  EngineOptions options;
  options.workspaces = 2;  // fewer than runs: admission waits for a free workspace
  Pipeline pipeline(&engine_table, options);
  std::vector<Start> starts;
  for (int i = 0; i < runs; ++i) starts.push_back(MakeStart(original, info, h, static_cast<uint8_t>(i)));
  std::vector<TraversalOutcome> outcomes(runs);
  std::vector<TraversalState> states(runs);
  std::vector<bool> finished(runs, false);
  int admitted = 0;
  auto admit = [&] {
    while (admitted < runs && pipeline.HasFreeWorkspace()) {
      TraversalRequest req;
      req.id = admitted;
      req.program = p;
      req.tenant = tenant;
      req.max_iterations = starts[admitted].max_iterations;
      req.state = starts[admitted].state;
      pipeline.Admit(std::move(req));
      ++admitted;
    }
  };
  admit();
  pipeline.Run([&](TraversalRequest&& done, const TraversalOutcome& out) {
    PULSE_FUZZ_CHECK(done.id < static_cast<uint64_t>(runs) && !finished[done.id], "completion of id {}", done.id);
    finished[done.id] = true;
    outcomes[done.id] = out;
    states[done.id] = std::move(done.state);
    admit();
  });
  for (int i = 0; i < runs; ++i) PULSE_FUZZ_CHECK(finished[i], "traversal {} never completed", i);
  PULSE_FUZZ_CHECK(pipeline.active() == 0, "{} traversals still active", pipeline.active());
  engine_memory.CheckUntouched(original, tenant, "engine");

  TenantMemory ref_memory;
  RangeTable ref_table = ref_memory.Table();
  CheckedMemory checked(ref_table, tenant);
  for (int i = 0; i < runs; ++i) {
    TraversalState state = starts[i].state;
    const TraversalOutcome out = InterpretTraversal(*p, checked, starts[i].max_iterations, &state);
    CheckAgree(outcomes[i], states[i], out, state);
  }
  ref_memory.CheckUntouched(original, tenant, "interpreter");
  engine_memory.CheckSame(ref_memory, "engine vs interpreter");
}

}  // namespace pulse::fuzz
