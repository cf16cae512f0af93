// The reference interpreter: the plainest possible reading of the ISA, one
// traversal at a time.  The engine must match it byte for byte.
#include <cstring>

#include "engine/access.h"
#include "engine/alu.h"
#include "engine/traversal_observer.h"
#include "pulse/traversal.h"

namespace pulse {

namespace {

using isa::Opcode;
using isa::Operand;
using isa::OperandKind;

class Interpreter {
 public:
  Interpreter(const VerifiedProgram& program, FarMemory& memory, TraversalState* state)
      : program_(program), memory_(memory), state_(*state) {}

  TraversalOutcome Run(uint32_t max_iterations) {
    TraversalOutcome out;
    if (state_.scratch.size() < program_.info().scratch_bytes) {
      out.status = TraversalStatus::kFaultBadRequest;
      return out;
    }
    const uint32_t window = program_.info().window_bytes;
    while (true) {
      if (out.iterations >= max_iterations) {
        out.status = TraversalStatus::kContinue;
        return out;
      }
      // LOAD: translate, check, snapshot the window.
      const uint64_t cur = state_.cur_ptr;
      std::memset(data_, 0, sizeof(data_));
      TraversalStatus st = memory_.ReadWindow(cur, window, data_);
      if (st != TraversalStatus::kDone) return Stop(&out, st, 0, cur);

      const auto& insns = program_.instructions();
      size_t pc = 1;
      bool next_iteration = false;
      while (!next_iteration) {
        const isa::Instruction& in = insns[pc];
        const unsigned w = in.width;
        uint64_t a = 0, b = 0;
        switch (in.op) {
          case Opcode::kNextIter:
            ++out.iterations;
            next_iteration = true;
            break;
          case Opcode::kReturn:
            ++out.iterations;
            return Stop(&out, TraversalStatus::kDone, 0, 0);
          case Opcode::kJump:
            pc = static_cast<size_t>(in.a.value);
            continue;
          case Opcode::kCompare:
            if (!Read(in.a, w, &a) || !Read(in.b, w, &b)) return Stop(&out, TraversalStatus::kFaultBounds, pc, 0);
            cmp_lhs_ = a;
            cmp_rhs_ = b;
            cmp_width_ = w;
            break;
          case Opcode::kStore: {
            if (!Read(in.b, w, &b)) return Stop(&out, TraversalStatus::kFaultBounds, pc, 0);
            const uint64_t addr = regs_[in.a.reg] + static_cast<uint64_t>(in.a.value);
            uint8_t bytes[8];
            alu::StoreBytes(bytes, b, w);
            st = memory_.Store(addr, bytes, w);
            if (st != TraversalStatus::kDone) return Stop(&out, st, pc, addr);
            break;
          }
          case Opcode::kPrefetch:  // a hint: no effect on any result (isa.h)
            break;
          case Opcode::kAlloc: {
            const size_t table_off = static_cast<size_t>(in.b.value);
            const uint64_t count = alu::LoadBytes(&state_.scratch[table_off], 8);
            if (count == 0) return Stop(&out, TraversalStatus::kAllocExhausted, pc, 0);
            const uint64_t slot = table_off + 8 + 8 * (count - 1);
            if (count > state_.scratch.size() || slot + 8 > state_.scratch.size())
              return Stop(&out, TraversalStatus::kFaultBounds, pc, 0);
            regs_[in.a.reg] = alu::LoadBytes(&state_.scratch[slot], 8);
            alu::StoreBytes(&state_.scratch[table_off], count - 1, 8);
            break;
          }
          default:
            if (isa::IsConditionalJump(in.op)) {
              if (alu::JumpTaken(in.op, cmp_lhs_, cmp_rhs_, cmp_width_)) {
                pc = static_cast<size_t>(in.a.value);
                continue;
              }
              break;
            }
            // ALU and MOVE: dst op= src.
            if (in.op != Opcode::kMove && !Read(in.a, w, &a)) return Stop(&out, TraversalStatus::kFaultBounds, pc, 0);
            if (!isa::IsUnaryAlu(in.op) && !Read(in.b, w, &b)) return Stop(&out, TraversalStatus::kFaultBounds, pc, 0);
            uint64_t r;
            if (!alu::Compute(in.op, w, a, b, &r)) return Stop(&out, TraversalStatus::kFaultDivZero, pc, 0);
            if (!Write(in.a, w, r)) return Stop(&out, TraversalStatus::kFaultBounds, pc, 0);
            break;
        }
        ++pc;
      }
    }
  }

 private:
  TraversalOutcome& Stop(TraversalOutcome* out, TraversalStatus st, size_t pc, uint64_t addr) {
    out->status = st;
    out->fault_pc = static_cast<uint32_t>(pc);
    out->fault_addr = addr;
    return *out;
  }

  // Address of a scratch-pad or data operand, or nullptr if out of bounds.
  uint8_t* Locate(const Operand& op, unsigned w) {
    uint64_t off = static_cast<uint64_t>(op.value);
    if (op.kind == OperandKind::kSpIdx || op.kind == OperandKind::kDataIdx) off += regs_[op.reg];
    switch (op.kind) {
      case OperandKind::kSp:
      case OperandKind::kSpIdx:
        if (off > state_.scratch.size() || w > state_.scratch.size() - off) return nullptr;
        return state_.scratch.data() + off;
      case OperandKind::kData:
      case OperandKind::kDataIdx:
        if (off > program_.info().window_bytes || w > program_.info().window_bytes - off) return nullptr;
        return data_ + off;
      default:
        return nullptr;
    }
  }

  bool Read(const Operand& op, unsigned w, uint64_t* v) {
    switch (op.kind) {
      case OperandKind::kReg: *v = alu::Truncate(regs_[op.reg], w); return true;
      case OperandKind::kImm: *v = alu::Truncate(static_cast<uint64_t>(op.value), w); return true;
      case OperandKind::kCurPtr: *v = alu::Truncate(state_.cur_ptr, w); return true;
      default: {
        const uint8_t* p = Locate(op, w);
        if (p == nullptr) return false;
        *v = alu::LoadBytes(p, w);
        return true;
      }
    }
  }

  bool Write(const Operand& op, unsigned w, uint64_t v) {
    switch (op.kind) {
      case OperandKind::kReg: regs_[op.reg] = v; return true;
      case OperandKind::kCurPtr: state_.cur_ptr = v; return true;
      default: {
        uint8_t* p = Locate(op, w);
        if (p == nullptr) return false;
        alu::StoreBytes(p, v, w);
        return true;
      }
    }
  }

  const VerifiedProgram& program_;
  FarMemory& memory_;
  TraversalState& state_;
  uint64_t regs_[isa::kNumRegisters] = {};
  uint64_t cmp_lhs_ = 0, cmp_rhs_ = 0;
  unsigned cmp_width_ = 8;
  uint8_t data_[isa::kMaxWindowBytes];
};

// The thread's observer (traversal_observer.h); nullptr almost always.
thread_local TraversalObserver* observer = nullptr;

// FarMemory that reports each access that took effect to an observer.
class ObservedMemory : public FarMemory {
 public:
  ObservedMemory(FarMemory& memory, TraversalObserver& observer) : memory_(memory), observer_(observer) {}
  TraversalStatus ReadWindow(uint64_t addr, uint32_t len, uint8_t* dst) override {
    const TraversalStatus st = memory_.ReadWindow(addr, len, dst);
    if (st == TraversalStatus::kDone) observer_.OnWindow(addr, len);
    return st;
  }
  TraversalStatus Store(uint64_t addr, const uint8_t* src, uint32_t len) override {
    const TraversalStatus st = memory_.Store(addr, src, len);
    if (st == TraversalStatus::kDone) observer_.OnStore(addr, len);
    return st;
  }

 private:
  FarMemory& memory_;
  TraversalObserver& observer_;
};

}  // namespace

TraversalObserver* SetThreadTraversalObserver(TraversalObserver* next) {
  TraversalObserver* previous = observer;
  observer = next;
  return previous;
}

TraversalStatus RangeTableMemory::ReadWindow(uint64_t addr, uint32_t len, uint8_t* dst) {
  const Range* range = table_.Find(addr);
  const TraversalStatus st = CheckAccess(range, tenant_, kPermRead, addr, len, TraversalStatus::kNotLocal);
  if (st == TraversalStatus::kDone && len > 0) std::memcpy(dst, range->Translate(addr), len);
  return st;
}

TraversalStatus RangeTableMemory::Store(uint64_t addr, const uint8_t* src, uint32_t len) {
  const Range* range = table_.Find(addr);
  const TraversalStatus st =
      CheckAccess(range, tenant_, kPermWrite, addr, len, TraversalStatus::kFaultInvalidPointer);
  if (st == TraversalStatus::kDone) std::memcpy(range->Translate(addr), src, len);
  return st;
}

TraversalOutcome InterpretTraversal(const VerifiedProgram& program, FarMemory& memory,
                                    uint32_t max_iterations, TraversalState* state) {
  if (observer != nullptr) {
    observer->OnRun();
    ObservedMemory observed(memory, *observer);
    TraversalOutcome out = Interpreter(program, observed, state).Run(max_iterations);
    state->iterations += out.iterations;
    return out;
  }
  TraversalOutcome out = Interpreter(program, memory, state).Run(max_iterations);
  state->iterations += out.iterations;
  return out;
}

TraversalOutcome InterpretTraversal(const VerifiedProgram& program, const RangeTable& table,
                                    TenantId tenant, uint32_t max_iterations, TraversalState* state) {
  RangeTableMemory memory(table, tenant);
  return InterpretTraversal(program, memory, max_iterations, state);
}

}  // namespace pulse
