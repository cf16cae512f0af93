// The x86-64 backend of engine/jit.h: a template JIT.  Each instruction
// becomes a few machine instructions that read its operands into rax/rcx,
// compute, and write the result back; pulse registers stay in the Frame
// (rbx), the scratch pad base in r12, the data window base in r13.  Faults
// jump to a stub that returns (pc << 8) | 0x80 | status.  The semantics are
// those of the reference interpreter (interpreter.cc), operation by
// operation; tests/engine and fuzz/jit_fuzz.cc hold it to that.
#include "engine/jit.h"

#if defined(__x86_64__)

#define XBYAK_NO_EXCEPTION
#include <xbyak/xbyak.h>

#include <fmt/format.h>

#include <vector>

namespace pulse::engine {

struct JitProgram::Code {
  explicit Code(size_t bytes) : gen(bytes, Xbyak::DontSetProtectRWE) {}
  Xbyak::CodeGenerator gen;  // pages RW while generating, RE afterwards
};

namespace {

using isa::Opcode;
using isa::Operand;
using isa::OperandKind;
using namespace Xbyak;
using namespace Xbyak::util;

constexpr int kData = static_cast<int>(offsetof(Frame, data));
constexpr int kSpLen = static_cast<int>(offsetof(Frame, sp_len));
constexpr int kSp = static_cast<int>(offsetof(Frame, sp));
constexpr int kCmpLhs = static_cast<int>(offsetof(Frame, cmp_lhs));
constexpr int kCmpRhs = static_cast<int>(offsetof(Frame, cmp_rhs));
constexpr int kCmpSlhs = static_cast<int>(offsetof(Frame, cmp_slhs));
constexpr int kCmpSrhs = static_cast<int>(offsetof(Frame, cmp_srhs));
constexpr int RegOffset(int slot) { return static_cast<int>(offsetof(Frame, regs)) + 8 * slot; }

bool FitsInt32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

uint64_t TruncateImm(int64_t v, unsigned w) {
  const uint64_t u = static_cast<uint64_t>(v);
  return w == 8 ? u : u & ((uint64_t{1} << (w * 8)) - 1);
}

class Emitter {
 public:
  Emitter(CodeGenerator& g, const VerifiedProgram& program, const JitHooks& hooks)
      : g_(g), program_(program), hooks_(hooks), labels_(program.instructions().size()) {}

  // Returns false when an instruction has no translation.
  bool Emit() {
    const auto& insns = program_.instructions();
    // A conditional jump right after its COMPARE that no jump lands on is
    // fused with it (compares the registers the COMPARE left); only unfused
    // jumps read the compare state from the frame, and only signed jumps
    // need the sign-extended operands.
    std::vector<bool> is_target(insns.size(), false);
    for (const auto& in : insns)
      if (isa::IsJump(in.op) && in.a.value >= 0 && static_cast<size_t>(in.a.value) < insns.size())
        is_target[static_cast<size_t>(in.a.value)] = true;
    fused_.assign(insns.size(), false);
    for (size_t pc = 2; pc < insns.size(); ++pc) {
      if (!isa::IsConditionalJump(insns[pc].op)) continue;
      fused_[pc] = insns[pc - 1].op == Opcode::kCompare && !is_target[pc];
      if (!fused_[pc]) compare_state_in_frame_ = true;
      if (IsSignedJump(insns[pc].op)) signed_jumps_ = true;
    }
    g_.push(rbx);
    g_.push(r12);
    g_.push(r13);  // rsp is 16-byte aligned from here on: helper calls need that
    g_.mov(rbx, rdi);
    g_.mov(r12, ptr[rbx + kSp]);
    g_.mov(r13, ptr[rbx + kData]);
    for (size_t pc = 1; pc < insns.size(); ++pc) {
      g_.L(labels_[pc]);
      if (!EmitInstruction(insns[pc], static_cast<uint32_t>(pc))) return false;
    }
    g_.L(epilogue_);
    g_.pop(r13);
    g_.pop(r12);
    g_.pop(rbx);
    g_.ret();
    for (auto& f : faults_) {  // out of line: the straight path stays dense
      g_.L(*f.label);
      if (f.dynamic) {  // status in eax (a hook's answer)
        g_.or_(eax, (f.pc << 8) | JitExit::kFaultFlag);
      } else {
        g_.mov(eax, (f.pc << 8) | JitExit::kFaultFlag | static_cast<uint32_t>(f.status));
      }
      g_.jmp(epilogue_, CodeGenerator::T_NEAR);
    }
    return true;
  }

 private:
  struct Fault {
    std::unique_ptr<Label> label;
    uint32_t pc;
    TraversalStatus status;
    bool dynamic;
  };

  Label& FaultLabel(uint32_t pc, TraversalStatus status, bool dynamic = false) {
    faults_.push_back(Fault{std::make_unique<Label>(), pc, status, dynamic});
    return *faults_.back().label;
  }

  static bool IsSignedJump(Opcode op) {
    return op == Opcode::kJumpLt || op == Opcode::kJumpGt || op == Opcode::kJumpLe || op == Opcode::kJumpGe;
  }

  void SignExtendInto(const Reg64& dst, const Reg64& src, unsigned w) {
    switch (w) {
      case 1: g_.movsx(dst, src.cvt8()); break;
      case 2: g_.movsx(dst, src.cvt16()); break;
      case 4: g_.movsxd(dst, src.cvt32()); break;
      default: g_.mov(dst, src); break;
    }
  }

  void Truncate(const Reg64& r, unsigned w) {
    switch (w) {
      case 1: g_.movzx(r.cvt32(), r.cvt8()); break;
      case 2: g_.movzx(r.cvt32(), r.cvt16()); break;
      case 4: g_.mov(r.cvt32(), r.cvt32()); break;
      default: break;
    }
  }

  void SignExtend(const Reg64& r, unsigned w) {
    switch (w) {
      case 1: g_.movsx(r, r.cvt8()); break;
      case 2: g_.movsx(r, r.cvt16()); break;
      case 4: g_.movsxd(r, r.cvt32()); break;
      default: break;
    }
  }

  // Where a scratch-pad or data operand's bytes are; for an indexed operand
  // emits the bounds check (into r8/r9) that jumps to a bounds fault.
  RegExp Locate(const Operand& op, unsigned w, uint32_t pc) {
    switch (op.kind) {
      case OperandKind::kSp: return r12 + static_cast<int>(op.value);   // verifier: inside the pad
      case OperandKind::kData: return r13 + static_cast<int>(op.value);  // verifier: inside the window
      default: break;
    }
    // off = reg + value (wrapping), then off > len || w > len - off faults.
    g_.mov(r8, ptr[rbx + RegOffset(RegSlot(op.reg))]);
    if (FitsInt32(op.value)) {
      if (op.value != 0) g_.add(r8, static_cast<uint32_t>(op.value));
    } else {
      g_.mov(r9, static_cast<uint64_t>(op.value));
      g_.add(r8, r9);
    }
    Label& fault = FaultLabel(pc, TraversalStatus::kFaultBounds);
    if (op.kind == OperandKind::kSpIdx) {
      g_.mov(r9, ptr[rbx + kSpLen]);
      g_.sub(r9, w);
      g_.jb(fault, CodeGenerator::T_NEAR);
      g_.cmp(r8, r9);
      g_.ja(fault, CodeGenerator::T_NEAR);
      return r12 + r8;
    }
    const uint32_t window = program_.info().window_bytes;
    if (window < w) {
      g_.jmp(fault, CodeGenerator::T_NEAR);
    } else {
      g_.cmp(r8, window - w);
      g_.ja(fault, CodeGenerator::T_NEAR);
    }
    return r13 + r8;
  }

  // Reads op at width w into dst, zero-extended.
  void Read(const Reg64& dst, const Operand& op, unsigned w, uint32_t pc) {
    switch (op.kind) {
      case OperandKind::kReg:
        g_.mov(dst, ptr[rbx + RegOffset(RegSlot(op.reg))]);
        Truncate(dst, w);
        return;
      case OperandKind::kCurPtr:
        g_.mov(dst, ptr[rbx + RegOffset(kCurPtrSlot)]);
        Truncate(dst, w);
        return;
      case OperandKind::kImm:
        g_.mov(dst, TruncateImm(op.value, w));
        return;
      default: break;
    }
    const RegExp at = Locate(op, w, pc);
    switch (w) {
      case 1: g_.movzx(dst.cvt32(), byte[at]); break;
      case 2: g_.movzx(dst.cvt32(), word[at]); break;
      case 4: g_.mov(dst.cvt32(), dword[at]); break;
      default: g_.mov(dst, qword[at]); break;
    }
  }

  // Writes rax (already truncated to w) to op.
  void Write(const Operand& op, unsigned w, uint32_t pc) {
    switch (op.kind) {
      case OperandKind::kReg: g_.mov(ptr[rbx + RegOffset(RegSlot(op.reg))], rax); return;
      case OperandKind::kCurPtr: g_.mov(ptr[rbx + RegOffset(kCurPtrSlot)], rax); return;
      default: break;
    }
    const RegExp at = Locate(op, w, pc);
    switch (w) {
      case 1: g_.mov(byte[at], al); break;
      case 2: g_.mov(word[at], ax); break;
      case 4: g_.mov(dword[at], eax); break;
      default: g_.mov(qword[at], rax); break;
    }
  }

  // rsi = the far address of a [rN+off] operand (clobbers rax).
  void FarAddressIntoRsi(const Operand& mem) {
    g_.mov(rsi, ptr[rbx + RegOffset(RegSlot(mem.reg))]);
    if (FitsInt32(mem.value)) {
      if (mem.value != 0) g_.add(rsi, static_cast<uint32_t>(mem.value));
    } else {
      g_.mov(rax, static_cast<uint64_t>(mem.value));
      g_.add(rsi, rax);
    }
  }

  void CallHook(const void* fn) {
    g_.mov(rax, reinterpret_cast<uint64_t>(fn));
    g_.call(rax);
  }

  // rax = rax op rcx at width w (both zero-extended from w), truncated.
  bool EmitAlu(Opcode op, unsigned w, uint32_t pc) {
    const unsigned bits = w * 8;
    switch (op) {
      case Opcode::kAdd: g_.add(rax, rcx); break;
      case Opcode::kSub: g_.sub(rax, rcx); break;
      case Opcode::kMul: g_.imul(rax, rcx); break;
      case Opcode::kAnd: g_.and_(rax, rcx); break;
      case Opcode::kOr: g_.or_(rax, rcx); break;
      case Opcode::kXor: g_.xor_(rax, rcx); break;
      case Opcode::kNot: g_.not_(rax); break;
      case Opcode::kNeg: g_.neg(rax); break;
      case Opcode::kMove: g_.mov(rax, rcx); break;
      case Opcode::kDiv:
      case Opcode::kMod:
        g_.test(rcx, rcx);
        g_.jz(FaultLabel(pc, TraversalStatus::kFaultDivZero), CodeGenerator::T_NEAR);
        g_.xor_(edx, edx);
        g_.div(rcx);
        if (op == Opcode::kMod) g_.mov(rax, rdx);
        break;
      case Opcode::kSdiv:
      case Opcode::kSmod: {
        g_.test(rcx, rcx);
        g_.jz(FaultLabel(pc, TraversalStatus::kFaultDivZero), CodeGenerator::T_NEAR);
        SignExtend(rax, w);
        SignExtend(rcx, w);
        // x / -1 wraps (INT_MIN / -1 would trap): quotient -x, remainder 0.
        Label general, done;
        g_.cmp(rcx, -1);
        g_.jne(general);
        if (op == Opcode::kSdiv) g_.neg(rax); else g_.xor_(eax, eax);
        g_.jmp(done);
        g_.L(general);
        g_.cqo();
        g_.idiv(rcx);
        if (op == Opcode::kSmod) g_.mov(rax, rdx);
        g_.L(done);
        break;
      }
      case Opcode::kShl:
      case Opcode::kShr:
      case Opcode::kSar:
        if (w == 4) {  // 32-bit shifts take the count mod 32 and zero the upper half
          if (op == Opcode::kShl) g_.shl(eax, cl);
          else if (op == Opcode::kShr) g_.shr(eax, cl);
          else g_.sar(eax, cl);
          return true;
        }
        if (w < 4) g_.and_(ecx, bits - 1);  // 64-bit shifts take it mod 64 themselves
        if (op == Opcode::kShl) {
          g_.shl(rax, cl);
        } else if (op == Opcode::kShr) {
          g_.shr(rax, cl);
        } else {
          SignExtend(rax, w);
          g_.sar(rax, cl);
        }
        break;
      default:
        return false;
    }
    Truncate(rax, w);
    return true;
  }

  bool EmitInstruction(const isa::Instruction& in, uint32_t pc) {
    const unsigned w = in.width;
    if (w != 1 && w != 2 && w != 4 && w != 8) return false;
    switch (in.op) {
      case Opcode::kNextIter:
        g_.mov(eax, JitExit::kNext);
        g_.jmp(epilogue_, CodeGenerator::T_NEAR);
        return true;
      case Opcode::kReturn:
        g_.mov(eax, JitExit::kReturn);
        g_.jmp(epilogue_, CodeGenerator::T_NEAR);
        return true;
      case Opcode::kJump:
        g_.jmp(labels_.at(static_cast<size_t>(in.a.value)), CodeGenerator::T_NEAR);
        return true;
      case Opcode::kCompare:
        // rax, rcx: the operands zero-extended; r8, r9: sign-extended.
        Read(rax, in.a, w, pc);
        Read(rcx, in.b, w, pc);
        if (signed_jumps_) {
          SignExtendInto(r8, rax, w);
          SignExtendInto(r9, rcx, w);
        }
        if (compare_state_in_frame_) {
          g_.mov(ptr[rbx + kCmpLhs], rax);
          g_.mov(ptr[rbx + kCmpRhs], rcx);
          if (signed_jumps_) {
            g_.mov(ptr[rbx + kCmpSlhs], r8);
            g_.mov(ptr[rbx + kCmpSrhs], r9);
          }
        }
        return true;
      case Opcode::kStore:
        if (in.a.kind != OperandKind::kMem) return false;
        Read(rdx, in.b, w, pc);
        FarAddressIntoRsi(in.a);
        g_.mov(rdi, rbx);
        g_.mov(ecx, w);
        CallHook(reinterpret_cast<const void*>(hooks_.store));
        g_.test(eax, eax);
        g_.jnz(FaultLabel(pc, TraversalStatus::kDone, /*dynamic=*/true), CodeGenerator::T_NEAR);
        return true;
      case Opcode::kPrefetch:
        if (in.a.kind != OperandKind::kMem) return false;
        if (hooks_.prefetch == nullptr) return true;  // a hint: doing nothing is correct
        FarAddressIntoRsi(in.a);
        g_.mov(rdi, rbx);
        CallHook(reinterpret_cast<const void*>(hooks_.prefetch));
        return true;
      case Opcode::kAlloc:
        if (in.a.kind != OperandKind::kReg || in.b.kind != OperandKind::kSp) return false;
        g_.mov(rdi, rbx);
        g_.mov(rsi, static_cast<uint64_t>(in.b.value));
        g_.mov(edx, in.a.reg);
        CallHook(reinterpret_cast<const void*>(hooks_.alloc));
        g_.test(eax, eax);
        g_.jnz(FaultLabel(pc, TraversalStatus::kDone, /*dynamic=*/true), CodeGenerator::T_NEAR);
        return true;
      default: break;
    }
    if (isa::IsConditionalJump(in.op)) {
      Label& target = labels_.at(static_cast<size_t>(in.a.value));
      const bool is_signed = IsSignedJump(in.op);
      const Reg64& lhs = is_signed ? r8 : rax;
      const Reg64& rhs = is_signed ? r9 : rcx;
      if (!fused_[pc]) {
        g_.mov(lhs, ptr[rbx + (is_signed ? kCmpSlhs : kCmpLhs)]);
        g_.mov(rhs, ptr[rbx + (is_signed ? kCmpSrhs : kCmpRhs)]);
      }
      if (in.op == Opcode::kJumpSet) {
        g_.test(lhs, rhs);
        g_.jnz(target, CodeGenerator::T_NEAR);
        return true;
      }
      g_.cmp(lhs, rhs);
      switch (in.op) {
        case Opcode::kJumpEq: g_.je(target, CodeGenerator::T_NEAR); break;
        case Opcode::kJumpNe: g_.jne(target, CodeGenerator::T_NEAR); break;
        case Opcode::kJumpLt: g_.jl(target, CodeGenerator::T_NEAR); break;
        case Opcode::kJumpGt: g_.jg(target, CodeGenerator::T_NEAR); break;
        case Opcode::kJumpLe: g_.jle(target, CodeGenerator::T_NEAR); break;
        case Opcode::kJumpGe: g_.jge(target, CodeGenerator::T_NEAR); break;
        case Opcode::kJumpLtu: g_.jb(target, CodeGenerator::T_NEAR); break;
        case Opcode::kJumpGtu: g_.ja(target, CodeGenerator::T_NEAR); break;
        case Opcode::kJumpLeu: g_.jbe(target, CodeGenerator::T_NEAR); break;
        case Opcode::kJumpGeu: g_.jae(target, CodeGenerator::T_NEAR); break;
        default: return false;
      }
      return true;
    }
    if (!isa::IsAlu(in.op) && in.op != Opcode::kMove) return false;
    // dst op= src, in the interpreter's order: read a (not for MOVE), read b
    // (not for NOT/NEG), compute (division by zero), write a.
    if (in.op != Opcode::kMove) Read(rax, in.a, w, pc);
    if (!isa::IsUnaryAlu(in.op)) Read(rcx, in.b, w, pc);
    if (!EmitAlu(in.op, w, pc)) return false;
    Write(in.a, w, pc);
    return true;
  }

  CodeGenerator& g_;
  const VerifiedProgram& program_;
  const JitHooks& hooks_;
  std::vector<Label> labels_;
  Label epilogue_;
  std::vector<Fault> faults_;
  std::vector<bool> fused_;              // per pc: a conditional jump fused with its COMPARE
  bool compare_state_in_frame_ = false;  // some conditional jump is not fused
  bool signed_jumps_ = false;
};

}  // namespace

JitProgram::~JitProgram() = default;

bool JitAvailable() { return true; }

Result<std::unique_ptr<JitProgram>> JitProgram::Compile(const VerifiedProgram& program, const JitHooks& hooks) {
  if (hooks.store == nullptr || hooks.alloc == nullptr) return Status::InvalidArgument("jit: hooks missing");
  const size_t insns = program.instructions().size();
  // Generous per-instruction bound (the longest, an indexed SDIV, is < 120
  // bytes), rounded up to pages by the allocator.
  const size_t bytes = ((insns * 160 + 256) + 4095) & ~size_t{4095};
  Xbyak::ClearError();
  std::unique_ptr<JitProgram> jit(new JitProgram);
  jit->code_ = std::make_unique<Code>(bytes);
  if (Xbyak::GetError() != 0)
    return Status::Internal(fmt::format("jit: code buffer: {}", Xbyak::ConvertErrorToString(Xbyak::GetError())));
  Emitter emitter(jit->code_->gen, program, hooks);
  if (!emitter.Emit()) return Status::Internal("jit: an instruction has no translation");
  CodeGenerator& gen = jit->code_->gen;
  if (Xbyak::GetError() != 0)
    return Status::Internal(fmt::format("jit: generation: {}", Xbyak::ConvertErrorToString(Xbyak::GetError())));
  if (!gen.setProtectModeRE(false)) return Status::Internal("jit: cannot make the code read-execute");
  jit->entry_ = gen.getCode<uint64_t (*)(Frame*)>();
  jit->code_bytes_ = gen.getSize();
  return jit;
}

}  // namespace pulse::engine

#else  // no backend for this architecture: the engine interprets

namespace pulse::engine {

struct JitProgram::Code {};
JitProgram::~JitProgram() = default;
bool JitAvailable() { return false; }
Result<std::unique_ptr<JitProgram>> JitProgram::Compile(const VerifiedProgram&, const JitHooks&) {
  return Status::FailedPrecondition("jit: no code generator for this architecture");
}

}  // namespace pulse::engine

#endif
