// The verifier: a program is accepted only if every path through one
// iteration is bounded, ends in NEXT_ITER or RETURN, reads only what it may
// (its window, its scratch pad, registers it wrote earlier on every path) and
// writes far memory only through STORE.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "pulse/program.h"

namespace pulse {
namespace {

using isa::Instruction;
using isa::Opcode;
using isa::Operand;
using isa::OperandKind;

// Dataflow facts at the entry of an instruction: which registers hold a value
// written earlier in this iteration, and whether a COMPARE has run.
struct Facts {
  uint32_t defined_regs = 0;
  bool compared = false;
  bool reached = false;
};

class Verifier {
 public:
  Verifier(std::span<const Instruction> insns, const VerifierOptions& options)
      : insns_(insns), options_(options) {}

  Result<ProgramInfo> Run() {
    if (insns_.empty()) return Status::InvalidArgument("program is empty: it needs at least LOAD and a terminal");
    if (insns_.size() > options_.max_instructions)
      return Status::InvalidArgument(fmt::format("program has {} instructions; the limit is {}",
                                                 insns_.size(), options_.max_instructions));
    if (insns_[0].op != Opcode::kLoad)
      return Fail(0, "the program must start with LOAD (one window load per iteration)");
    PULSE_RETURN_IF_ERROR(CheckLoad());
    for (size_t i = 0; i < insns_.size(); ++i) PULSE_RETURN_IF_ERROR(CheckShape(i));
    PULSE_RETURN_IF_ERROR(CheckFlow());
    info_.longest_path = LongestPath();
    return info_;
  }

 private:
  Status Fail(size_t i, const std::string& why) const {
    return Status::InvalidArgument(
        fmt::format("instruction {} ({}): {}", i, isa::OpcodeName(insns_[i].op), why));
  }

  Status CheckLoad() {
    const Instruction& load = insns_[0];
    if (load.b.kind != OperandKind::kNone) return Fail(0, "LOAD takes at most one operand (the window size)");
    if (load.a.kind == OperandKind::kImm) {
      if (load.a.value < 0 || load.a.value > static_cast<int64_t>(isa::kMaxWindowBytes))
        return Fail(0, fmt::format("window of {} bytes is outside 0..{}", load.a.value, isa::kMaxWindowBytes));
      declared_window_ = static_cast<int64_t>(load.a.value);
    } else if (load.a.kind != OperandKind::kNone) {
      return Fail(0, "LOAD's operand must be an immediate window size");
    }
    return Status::Ok();
  }

  static bool IsSource(OperandKind k) {
    return k == OperandKind::kReg || k == OperandKind::kImm || k == OperandKind::kCurPtr ||
           k == OperandKind::kSp || k == OperandKind::kSpIdx || k == OperandKind::kData ||
           k == OperandKind::kDataIdx;
  }

  Status CheckDestination(size_t i, const Operand& op) const {
    switch (op.kind) {
      case OperandKind::kReg:
      case OperandKind::kCurPtr:
      case OperandKind::kSp:
      case OperandKind::kSpIdx:
        return Status::Ok();
      case OperandKind::kData:
      case OperandKind::kDataIdx:
        return Fail(i, "the data window is read-only; write far memory with STORE");
      default:
        return Fail(i, "destination must be a register, cur_ptr or the scratch pad");
    }
  }

  // Checks one operand's register and static bounds; records window and
  // scratch-pad extents.
  Status CheckOperand(size_t i, const Operand& op, uint8_t width) {
    if (op.reg >= isa::kNumRegisters) return Fail(i, fmt::format("register r{} does not exist", op.reg));
    switch (op.kind) {
      case OperandKind::kSp:
        // (op.value > limit - width: op.value + width could overflow)
        if (op.value < 0 || op.value > static_cast<int64_t>(options_.scratch_pad_bytes) - width)
          return Fail(i, fmt::format("sp[{}] ({} bytes) is outside the {}-byte scratch pad", op.value,
                                     width, options_.scratch_pad_bytes));
        info_.scratch_bytes = std::max<uint32_t>(info_.scratch_bytes, op.value + width);
        break;
      case OperandKind::kData: {
        const int64_t limit = declared_window_ >= 0 ? declared_window_ : isa::kMaxWindowBytes;
        if (op.value < 0 || op.value > limit - width)
          return Fail(i, fmt::format("data[{}] ({} bytes) is outside the {}-byte data window", op.value,
                                     width, limit));
        static_window_ = std::max<int64_t>(static_window_, op.value + width);
        break;
      }
      case OperandKind::kDataIdx:
        if (declared_window_ < 0)
          return Fail(i, "a register-indexed data operand needs an explicit window (LOAD data, N)");
        info_.has_indexed = true;
        break;
      case OperandKind::kSpIdx:
        info_.has_indexed = true;
        break;
      default:
        break;
    }
    return Status::Ok();
  }

  Status CheckShape(size_t i) {
    const Instruction& in = insns_[i];
    if (in.width != 1 && in.width != 2 && in.width != 4 && in.width != 8)
      return Fail(i, fmt::format("width {} is not 1, 2, 4 or 8", in.width));
    const auto none = OperandKind::kNone;
    const Opcode op = in.op;
    if (op == Opcode::kLoad) {
      return i == 0 ? Status::Ok() : Fail(i, "LOAD may only be instruction 0 (one load per iteration)");
    }
    if (op == Opcode::kStore) {
      if (in.a.kind != OperandKind::kMem) return Fail(i, "STORE's destination must be far memory [rN+off]");
      if (!IsSource(in.b.kind)) return Fail(i, "STORE's source must be a register, immediate, cur_ptr, sp or data");
      info_.has_store = true;
    } else if (isa::IsUnaryAlu(op)) {
      PULSE_RETURN_IF_ERROR(CheckDestination(i, in.a));
      if (in.b.kind != none) return Fail(i, "takes one operand");
    } else if (isa::IsAlu(op) || op == Opcode::kMove) {
      PULSE_RETURN_IF_ERROR(CheckDestination(i, in.a));
      if (!IsSource(in.b.kind)) return Fail(i, "source must be a register, immediate, cur_ptr, sp or data");
    } else if (op == Opcode::kCompare) {
      if (!IsSource(in.a.kind) || !IsSource(in.b.kind))
        return Fail(i, "COMPARE's operands must be registers, immediates, cur_ptr, sp or data");
    } else if (isa::IsJump(op)) {
      if (in.a.kind != OperandKind::kImm || in.b.kind != none) return Fail(i, "a jump takes one target");
      if (in.a.value <= static_cast<int64_t>(i))
        return Fail(i, fmt::format("jump to {} goes backward; only forward jumps are allowed "
                                   "(loops must be unrolled; NEXT_ITER starts the next iteration)",
                                   in.a.value));
      if (in.a.value >= static_cast<int64_t>(insns_.size()))
        return Fail(i, fmt::format("jump to {} leaves the program ({} instructions)", in.a.value,
                                   insns_.size()));
      return Status::Ok();
    } else if (op == Opcode::kAlloc) {
      if (in.a.kind != OperandKind::kReg || in.b.kind != OperandKind::kSp)
        return Fail(i, "ALLOC takes a destination register and the sp[off] of the region table");
      if (in.width != 8) return Fail(i, "ALLOC has width 8");
      info_.has_alloc = true;
    } else if (op == Opcode::kPrefetch) {
      if (in.a.kind != OperandKind::kMem || in.b.kind != none)
        return Fail(i, "PREFETCH takes one far-memory operand [rN+off]");
      if (in.width != 8) return Fail(i, "PREFETCH has width 8");
    } else if (isa::IsTerminal(op)) {
      if (in.a.kind != none || in.b.kind != none) return Fail(i, "takes no operands");
      return Status::Ok();
    } else {
      return Fail(i, "unknown opcode");
    }
    PULSE_RETURN_IF_ERROR(CheckOperand(i, in.a, in.width));
    if (in.b.kind != none) PULSE_RETURN_IF_ERROR(CheckOperand(i, in.b, in.width));
    return Status::Ok();
  }

  static uint32_t RegsRead(const Instruction& in) {
    uint32_t r = 0;
    auto use = [&](const Operand& op, bool is_read) {
      switch (op.kind) {
        case OperandKind::kReg:
          if (is_read) r |= 1u << op.reg;
          break;
        case OperandKind::kSpIdx:
        case OperandKind::kDataIdx:
        case OperandKind::kMem:
          r |= 1u << op.reg;  // the index is read even when the operand is written
          break;
        default:
          break;
      }
    };
    const bool dst_read = in.op != Opcode::kMove && in.op != Opcode::kAlloc;
    use(in.a, dst_read);
    use(in.b, true);
    return r;
  }

  static uint32_t RegsWritten(const Instruction& in) {
    if ((isa::IsAlu(in.op) || in.op == Opcode::kMove || in.op == Opcode::kAlloc) &&
        in.a.kind == OperandKind::kReg)
      return 1u << in.a.reg;
    return 0;
  }

  // One forward pass suffices: every edge goes forward.
  Status CheckFlow() {
    const size_t n = insns_.size();
    std::vector<Facts> facts(n + 1);
    facts[0].reached = true;
    auto merge = [&](size_t to, const Facts& f) {
      Facts& t = facts[to];
      if (!t.reached) {
        t = f;
        t.reached = true;
      } else {
        t.defined_regs &= f.defined_regs;
        t.compared = t.compared && f.compared;
      }
    };
    for (size_t i = 0; i < n; ++i) {
      if (!facts[i].reached) continue;
      const Instruction& in = insns_[i];
      const uint32_t missing = RegsRead(in) & ~facts[i].defined_regs;
      if (missing) {
        int r = __builtin_ctz(missing);
        return Fail(i, fmt::format("reads r{} before it is written on some path in this iteration "
                                   "(registers do not survive NEXT_ITER; keep state in sp)", r));
      }
      if (isa::IsConditionalJump(in.op) && !facts[i].compared)
        return Fail(i, "conditional jump without a COMPARE before it on some path");
      if (isa::IsTerminal(in.op)) continue;
      Facts out = facts[i];
      out.defined_regs |= RegsWritten(in);
      if (in.op == Opcode::kCompare) out.compared = true;
      if (isa::IsJump(in.op)) merge(static_cast<size_t>(in.a.value), out);
      if (in.op != Opcode::kJump) {
        if (i + 1 == n) return Fail(i, "this path reaches the end of the program without NEXT_ITER or RETURN");
        merge(i + 1, out);
      }
    }
    info_.window_bytes = static_cast<uint32_t>(declared_window_ >= 0 ? declared_window_ : static_window_);
    return Status::Ok();
  }

  uint32_t LongestPath() const {
    const size_t n = insns_.size();
    std::vector<uint32_t> len(n, 0);
    for (size_t k = n; k-- > 0;) {
      const Instruction& in = insns_[k];
      uint32_t best = 0;
      if (!isa::IsTerminal(in.op)) {
        if (isa::IsJump(in.op)) best = std::max(best, len[static_cast<size_t>(in.a.value)]);
        if (in.op != Opcode::kJump && k + 1 < n) best = std::max(best, len[k + 1]);
      }
      len[k] = best + 1;
    }
    return len[0];
  }

  std::span<const Instruction> insns_;
  VerifierOptions options_;
  ProgramInfo info_;
  int64_t declared_window_ = -1;
  int64_t static_window_ = 0;
};

}  // namespace

Result<ProgramInfo> VerifyProgram(std::span<const isa::Instruction> insns, const VerifierOptions& options) {
  return Verifier(insns, options).Run();
}

}  // namespace pulse
