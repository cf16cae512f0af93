// Fuzz target: the JIT against the interpreted engine and the reference
// interpreter, on programs that always verify.
//
// Input: an 8-byte header, then the bytes a program is built from.
//   [0] which range cur_ptr starts in (TenantMemory::PickAddress), [1] where,
//   [2] scratch pad: 0 exactly what the program needs, else that plus
//       (h[2] % 8) * 16 bytes, [3] max iterations - 1 (mod 32),
//   [4..6] seed of the scratch pad's words, [7] bit 0: tenant B, bit 1: the
//   program ends in a bounded walk (else it walks until the iteration limit),
//   bit 2: the walk follows data[0] as it is (else folded into the tenant's
//   own range).  h[0] & 0xc0 == 0: start anywhere (PickAddress), else at
//   home, the tenant's read-write range.
// The body bytes become instructions (4 bytes each, at most 48): ALU at
// every width into registers, sp[] (static and register-indexed) and cur_ptr,
// reading data[] too; COMPARE + a forward conditional jump; STORE through a register
// that holds a word of the node (so far pointers into both tenants' ranges,
// read-only ones, guard bytes and nowhere); ALLOC.  All three runs must agree
// on status, iterations, fault pc and address, cur_ptr, scratch pad and far
// memory; none may touch what the tenant may not write.
#include <algorithm>
#include <cstring>

#include "fuzz_check.h"
#include "pulse/engine.h"
#include "pulse/program.h"
#include "tenant_memory.h"

namespace pulse::fuzz {
namespace {

using isa::Instruction;
using isa::Opcode;
using isa::Operand;

constexpr size_t kHeaderBytes = 8;
constexpr uint32_t kWindow = 64;
constexpr int kSpArea = 96;        // static sp[] operands lie in [16, kSpArea + 16)
constexpr int kAllocTable = 112;   // ALLOC's table: count, then regions
constexpr size_t kMaxBody = 48;

class Builder {
 public:
  explicit Builder(std::span<const uint8_t> bytes) : in_(bytes) {}

  // `home`: a far address in the tenant's read-write range, where most
  // STOREs (through r15) and walks (data[0] folded into it) go.
  // With fold_walk the walk goes to home + (data[0] & 0x1f8), else to data[0].
  std::vector<Instruction> Build(bool bounded_walk, uint64_t home, bool fold_walk) {
    out_.push_back({Opcode::kLoad, 8, Operand::Imm(kWindow), Operand::None()});
    for (int r = 0; r < isa::kNumRegisters - 1; ++r)  // every register defined before the body reads it
      out_.push_back({Opcode::kMove, 8, Operand::Reg(r),
                      r % 2 == 0 ? Operand::Data(8 * (r / 2)) : Operand::Imm(r * 5)});
    out_.push_back({Opcode::kMove, 8, Operand::Reg(15), Operand::Imm(static_cast<int64_t>(home + 256))});
    const size_t body = std::min(kMaxBody, in_.size() / 4);
    const size_t body_start = out_.size();
    for (size_t i = 0; i < body; ++i) {
      const uint8_t* b = &in_[4 * i];
      const uint8_t width = static_cast<uint8_t>(1u << (b[1] & 3));
      switch (b[0] % 12) {
        case 0: case 1: case 2: case 3: {
          static const Opcode kAlu[] = {Opcode::kAdd, Opcode::kSub, Opcode::kMul, Opcode::kDiv, Opcode::kSdiv,
                                        Opcode::kMod, Opcode::kSmod, Opcode::kAnd, Opcode::kOr, Opcode::kXor,
                                        Opcode::kShl, Opcode::kShr, Opcode::kSar, Opcode::kMove};
          out_.push_back({kAlu[b[2] % 14], width, Dest(b[3], width), Source(b[2] / 14 + b[3], width)});
          break;
        }
        case 4:
          out_.push_back({b[2] & 1 ? Opcode::kNot : Opcode::kNeg, width, Dest(b[3], width), Operand::None()});
          break;
        case 5: case 6: {
          static const Opcode kJumps[] = {Opcode::kJumpEq,  Opcode::kJumpNe,  Opcode::kJumpLt,  Opcode::kJumpGt,
                                          Opcode::kJumpLe,  Opcode::kJumpGe,  Opcode::kJumpLtu, Opcode::kJumpGtu,
                                          Opcode::kJumpLeu, Opcode::kJumpGeu, Opcode::kJumpSet, Opcode::kJump};
          if (b[0] % 12 == 5) {
            out_.push_back({Opcode::kCompare, width, Source(b[2], width), Source(b[3], width)});
          }
          // A forward target inside the body or the tail's first instruction.
          const size_t at = out_.size();
          const size_t target = at + 1 + b[1] % 12;  // past the body: clamped below
          // (the verifier wants a COMPARE before every conditional jump)
          const Opcode jump = b[0] % 12 == 5 ? kJumps[(b[2] ^ b[3]) % 12] : Opcode::kJump;
          out_.push_back({jump, 8, Operand::Imm(static_cast<int64_t>(target)), Operand::None()});
          break;
        }
        case 7:
          out_.push_back({Opcode::kStore, width, Operand::Mem(b[2] < 192 ? 15 : b[2] % isa::kNumRegisters, (b[3] % 16) * 4 - 8),
                          Source(b[2] >> 4, width)});
          break;
        case 8:
          out_.push_back({Opcode::kAlloc, 8, Operand::Reg(b[2] % isa::kNumRegisters), Operand::Sp(kAllocTable)});
          break;
        case 9:  // a hint: into the tenant's range (through r15), anywhere, or another tenant's
          out_.push_back({Opcode::kPrefetch, 8, Operand::Mem(b[2] < 128 ? 15 : b[2] % isa::kNumRegisters,
                                                             (b[3] % 16) * 64 - 256),
                          Operand::None()});
          break;
        default:
          out_.push_back({Opcode::kMove, width, Dest(b[3], width), Source(b[2], width)});
          break;
      }
    }
    const size_t tail_at = out_.size();  // targets past the body go to the tail's first instruction
    for (size_t i = body_start; i < tail_at; ++i) {
      if (!isa::IsJump(out_[i].op)) continue;
      size_t target = std::min(static_cast<size_t>(out_[i].a.value), tail_at);
      // Never into a COMPARE + jump pair's second half (it would lack its COMPARE).
      if (target < tail_at && isa::IsConditionalJump(out_[target].op)) ++target;
      out_[i].a.value = static_cast<int64_t>(target);
    }
    out_.push_back({Opcode::kMove, 8, Operand::Reg(14), Operand::Data(0)});
    if (fold_walk) {
      out_.push_back({Opcode::kAnd, 8, Operand::Reg(14), Operand::Imm(0x1f8)});
      out_.push_back({Opcode::kAdd, 8, Operand::Reg(14), Operand::Imm(static_cast<int64_t>(home))});
    }
    if (bounded_walk) {
      const size_t stop = out_.size() + 5;
      out_.push_back({Opcode::kSub, 8, Operand::Sp(0), Operand::Imm(1)});
      out_.push_back({Opcode::kCompare, 8, Operand::Sp(0), Operand::Imm(0)});
      out_.push_back({Opcode::kJumpLe, 8, Operand::Imm(static_cast<int64_t>(stop)), Operand::None()});
      out_.push_back({Opcode::kMove, 8, Operand::CurPtr(), Operand::Reg(14)});
      out_.push_back({Opcode::kNextIter, 8, Operand::None(), Operand::None()});
      out_.push_back({Opcode::kReturn, 8, Operand::None(), Operand::None()});
    } else {
      out_.push_back({Opcode::kMove, 8, Operand::CurPtr(), Operand::Reg(14)});
      out_.push_back({Opcode::kNextIter, 8, Operand::None(), Operand::None()});
    }
    return out_;
  }

 private:
  Operand Source(uint8_t b, uint8_t width) {
    switch (b % 8) {
      case 0: return Operand::Imm(static_cast<int8_t>(b));
      case 1: return Operand::Imm(static_cast<int64_t>(0x8000000000000000ull >> (b % 64)) - (b & 1));
      case 2: case 3: return Operand::Reg(b / 8 % isa::kNumRegisters);
      case 4: return Operand::Data(b / 8 % (kWindow - width + 1));
      case 5: return Operand::Sp(16 + b / 8 % (kSpArea - width + 1));
      case 6: return b & 8 ? Operand::DataIdx(Index(b), static_cast<int8_t>(b) / 4) : Operand::SpIdx(Index(b), b % 32);
      default: return Operand::CurPtr();
    }
  }
  // Index registers: mostly the odd ones, which start small.
  static int Index(uint8_t b) { return b & 0x80 ? b / 8 % 16 : (b / 16) % 7 * 2 + 1; }
  Operand Dest(uint8_t b, uint8_t width) {
    switch (b % 6) {
      case 0: case 1: return Operand::Reg(b / 6 % isa::kNumRegisters);
      case 2: return Operand::Sp(16 + b / 6 % (kSpArea - width + 1));
      case 3: return Operand::Sp(16 + b / 3 % (kSpArea - width + 1));
      case 4: return Operand::SpIdx(Index(b), b & 64 ? 8 : -4);  // (the data window is read-only)
      default: return b & 128 ? Operand::CurPtr() : Operand::Reg(b / 6 % isa::kNumRegisters);
    }
  }

  std::span<const uint8_t> in_;
  std::vector<Instruction> out_;
};

struct Run {
  TraversalOutcome outcome;
  TraversalState state;
};

Run RunOnPipeline(EngineKind kind, const ProgramRef& p, TenantId tenant, const TraversalState& start,
                  uint32_t max_iterations, TenantMemory* memory) {
  RangeTable table = memory->Table();
  EngineOptions options;
  options.engine = kind;
  options.workspaces = 2;
  Pipeline pipeline(&table, options);
  TraversalRequest req;
  req.program = p;
  req.tenant = tenant;
  req.max_iterations = max_iterations;
  req.state = start;
  pipeline.Admit(std::move(req));
  Run r;
  int completions = 0;
  pipeline.Run([&](TraversalRequest&& done, const TraversalOutcome& out) {
    r.outcome = out;
    r.state = std::move(done.state);
    ++completions;
  });
  PULSE_FUZZ_CHECK(completions == 1, "{} completions on the {} engine", completions, EngineKindName(kind));
  if (kind == EngineKind::kJit && DefaultEngineKind() == EngineKind::kJit)
    PULSE_FUZZ_CHECK(pipeline.jit_compiled_programs() == 1, "the JIT did not compile a verified program");
  return r;
}

void CheckSameRun(const Run& a, const Run& b, const char* who) {
  PULSE_FUZZ_CHECK(a.outcome.status == b.outcome.status, "{}: status {} vs {}", who,
                   TraversalStatusName(a.outcome.status), TraversalStatusName(b.outcome.status));
  PULSE_FUZZ_CHECK(a.outcome.iterations == b.outcome.iterations, "{}: iterations {} vs {}", who,
                   a.outcome.iterations, b.outcome.iterations);
  PULSE_FUZZ_CHECK(a.outcome.fault_pc == b.outcome.fault_pc, "{}: fault_pc {} vs {}", who, a.outcome.fault_pc,
                   b.outcome.fault_pc);
  PULSE_FUZZ_CHECK(a.outcome.fault_addr == b.outcome.fault_addr, "{}: fault_addr {:#x} vs {:#x}", who,
                   a.outcome.fault_addr, b.outcome.fault_addr);
  PULSE_FUZZ_CHECK(a.state.cur_ptr == b.state.cur_ptr, "{}: cur_ptr {:#x} vs {:#x}", who, a.state.cur_ptr,
                   b.state.cur_ptr);
  PULSE_FUZZ_CHECK(a.state.iterations == b.state.iterations, "{}: state iterations", who);
  PULSE_FUZZ_CHECK(a.state.scratch == b.state.scratch, "{}: scratch pads differ", who);
}

}  // namespace

void FuzzJit(std::span<const uint8_t> data) {
  if (data.size() < kHeaderBytes) return;
  const uint8_t* h = data.data();
  const TenantId tenant = (h[7] & 1) ? kTenantB : kTenantA;
  const TenantMemory original;
  // Home: the tenant's read-write range; bit 2 walks where data[0] points.
  const uint64_t home = tenant == kTenantA ? 0x10000 : 0x10400;
  auto program = VerifiedProgram::Create(
      Builder(data.subspan(kHeaderBytes)).Build((h[7] & 2) != 0, home, (h[7] & 4) == 0));
  PULSE_FUZZ_CHECK(program.ok(), "the builder made a program the verifier rejects: {}", program.status().ToString());
  const ProgramRef& p = *program;

  TraversalState start;
  start.cur_ptr = (h[0] & 0xc0) ? home + (h[1] % 56) * 8 : original.PickAddress(h[0], h[1]);
  start.scratch.assign(h[2] == 0 ? p->info().scratch_bytes : p->info().scratch_bytes + (h[2] % 8) * 16, 0);
  original.FillWords(h[4] | h[5] << 8 | h[6] << 16, &start.scratch);
  if (start.scratch.size() >= kAllocTable + 8) {  // a short ALLOC table: count 0..3
    const uint64_t count = h[6] % 4;
    std::memcpy(&start.scratch[kAllocTable], &count, 8);
  }
  if (start.scratch.size() >= 8) start.scratch[0] = static_cast<uint8_t>(h[3] % 5 + 1);  // bounded walk's counter
  const uint32_t max_iterations = h[3] % 32 + 1;

  TenantMemory ref_memory;
  RangeTable ref_table = ref_memory.Table();
  CheckedMemory checked(ref_table, tenant);
  Run ref;
  ref.state = start;
  ref.outcome = InterpretTraversal(*p, checked, max_iterations, &ref.state);
  ref_memory.CheckUntouched(original, tenant, "interpreter");

  TenantMemory interp_memory;
  const Run interp = RunOnPipeline(EngineKind::kInterpreter, p, tenant, start, max_iterations, &interp_memory);
  interp_memory.CheckUntouched(original, tenant, "interpreted engine");
  CheckSameRun(interp, ref, "interpreted engine vs interpreter");
  interp_memory.CheckSame(ref_memory, "interpreted engine vs interpreter");

  TenantMemory jit_memory;
  const Run jit = RunOnPipeline(EngineKind::kJit, p, tenant, start, max_iterations, &jit_memory);
  jit_memory.CheckUntouched(original, tenant, "jit");
  CheckSameRun(jit, ref, "jit vs interpreter");
  jit_memory.CheckSame(ref_memory, "jit vs interpreter");
}

}  // namespace pulse::fuzz
