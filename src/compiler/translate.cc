#include "compiler/translate.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "compiler/abstract_state.h"
#include "compiler/bpf_checks.h"
#include "compiler/context_access.h"
#include "compiler/control_flow.h"
#include "compiler/interval.h"
#include "compiler/opcode_map.h"

namespace pulse::compiler {
namespace {

using isa::Instruction;
using isa::Opcode;
using isa::Operand;

// ---------------------------------------------------------------------------

class Translator {
 public:
  struct Edge {
    AbsState state;
    std::vector<int> jumps;  // jumps in code_ to patch with the block's position
    bool fallthrough = false;
  };

  Translator(const FunctionInput& fn, const TranslateOptions& options, DiagnosticSink* diags)
      : fn_(fn), options_(options), diags_(diags), n_(static_cast<int>(fn.insns.size())) {}

  bool Run(std::vector<Emitted>* out) {
    bool jumps_ok = true;
    const bool checks_ok = CheckInstructions(fn_, diags_, &jumps_ok);
    if (!jumps_ok) return false;
    cfg_ = BuildControlFlow(fn_.insns);
    // Loops are reported even when other problems were found.
    const auto loops = FindLoops(cfg_);
    for (const auto& [from, to] : loops)
      Error(from, fmt::format("backward jump to instruction {}: a loop that clang could not unroll "
                              "(an iteration may only jump forward; give the loop a constant trip "
                              "count and `#pragma unroll`, or continue it in the next iteration)",
                              to));
    if (!loops.empty() || !checks_ok) return false;
    LayOut(fn_.insns, &cfg_);
    edges_.assign(cfg_.blocks.size(), {});
    AbsState entry;
    entry.r[1] = AbsValue::Pointer(Kind::kCtx, kCtxCurPtr);
    entry.r[kBpfFramePointer] = AbsValue::Pointer(Kind::kStack, 0);
    // The pulse register of the context pointer holds its offset, 0.
    Emit(Opcode::kMove, 8, Operand::Reg(1), Operand::Imm(0), 0);
    edges_[0].push_back({entry, {}, true});
    for (size_t k = 0; k < cfg_.order.size(); ++k) {
      cur_order_ = k;
      const int b = cfg_.order[k];
      std::vector<Edge> edges = std::move(edges_[b]);
      if (edges.empty()) continue;  // no feasible path reaches the block
      // A fall-through edge continues into the code laid out next.
      std::stable_sort(edges.begin(), edges.end(),
                       [](const Edge& x, const Edge& y) { return x.fallthrough > y.fallthrough; });
      if (ShouldClone(b, edges)) {
        // One copy of a short tail per distinct incoming state: clang merges
        // common tails (stores, `return 1`) that are cheaper specialised.
        std::vector<int> group(edges.size(), -1);
        std::vector<size_t> leaders;
        for (size_t i = 0; i < edges.size(); ++i) {
          if (group[i] >= 0) continue;
          for (size_t j = i; j < edges.size(); ++j)
            if (group[j] < 0 && edges[j].state == edges[i].state)
              group[j] = static_cast<int>(leaders.size());
          leaders.push_back(i);
        }
        for (size_t g = 0; g < leaders.size(); ++g) {
          const int pos = static_cast<int>(code_.size());
          for (size_t j = 0; j < edges.size(); ++j)
            if (group[j] == static_cast<int>(g)) Patch(edges[j].jumps, pos);
          clone_budget_ -= cfg_.blocks[b].end - cfg_.blocks[b].start;
          // Only the last copy may fall through into the next block.
          not_last_copy_ = g + 1 < leaders.size();
          EmitBlock(b, edges[leaders[g]].state);
          not_last_copy_ = false;
        }
      } else {
        AbsState joined = edges[0].state;
        for (size_t i = 1; i < edges.size(); ++i) joined = JoinState(joined, edges[i].state);
        for (const auto& e : edges) Patch(e.jumps, static_cast<int>(code_.size()));
        EmitBlock(b, joined);
      }
    }
    if (errors_) return false;
    *out = std::move(code_);
    return true;
  }

 private:
  // -- diagnostics ----------------------------------------------------------
  void Error(int slot, std::string msg) {
    ++errors_;
    diags_->Error(fn_.ref, slot, std::move(msg));
  }
  void Warning(int slot, std::string msg) { diags_->Warning(fn_.ref, slot, std::move(msg)); }

  // True if `slot` starts the block laid out right after the current one.
  bool IsNextInOrder(int slot) const {
    if (not_last_copy_ || !cfg_.starts_block(slot)) return false;
    return cfg_.order_pos[cfg_.block_of[slot]] == static_cast<int>(cur_order_) + 1;
  }

  bool ShouldClone(int b, const std::vector<Edge>& edges) const {
    if (edges.size() < 2 || edges.size() > 8 || cfg_.tail[b] > 12) return false;
    if (clone_budget_ < (cfg_.blocks[b].end - cfg_.blocks[b].start) * static_cast<int>(edges.size()))
      return false;
    for (const auto& e : edges)
      if (!(e.state == edges[0].state)) return true;
    return false;
  }

  void Patch(const std::vector<int>& jumps, int pos) {
    for (int j : jumps) {
      code_[j].insn.a = Operand::Imm(pos);
      code_[j].target = Target::kIndex;
    }
  }

  // Emits block b starting from state s.
  void EmitBlock(int b, AbsState s) {
    const BasicBlock& blk = cfg_.blocks[b];
    for (int slot = blk.start; slot < blk.end; ++slot) {
      const BpfInsn& in = fn_.insns[slot];
      if (in.slots == 0) continue;
      if (in.is_call()) {  // PULSE_PREFETCH, the only call CheckInstructions lets through
        Prefetch(slot, &s);
        continue;
      }
      if (in.is_jmp()) {  // only the last instruction of a block
        Jump(slot, in, s);
        return;
      }
      Step(slot, &s);
    }
    // The block ends without a jump: it falls through.
    Continue(blk.last, NextSlot(fn_.insns[blk.last], blk.last), s);
  }

  // Control goes from `slot` to the block starting at `target` (a jump
  // edge, or falling through).
  void Continue(int slot, int target, const AbsState& s) {
    if (target >= n_) {
      Error(slot, "control falls off the end of the function");
      return;
    }
    const Target where = EdgeTarget(target, s);
    if (where == Target::kEndReturn) {
      Emit(Opcode::kReturn, 8, Operand::None(), Operand::None(), slot);
      return;
    }
    if (where == Target::kNextStart) {
      EmitJump(Opcode::kJump, Target::kNextStart, slot);
      return;
    }
    const int tb = cfg_.block_of[target];
    if (IsNextInOrder(target)) {
      edges_[tb].push_back({s, {}, true});
      return;
    }
    const int j = EmitJump(Opcode::kJump, Target::kIndex, slot);
    edges_[tb].push_back({s, {j}, false});
  }

  // -- emission -------------------------------------------------------------
  Emitted& Emit(Opcode op, int width, Operand a, Operand b, int slot) {
    Emitted e;
    e.insn.op = op;
    e.insn.width = static_cast<uint8_t>(width);
    e.insn.a = a;
    e.insn.b = b;
    e.bpf_slot = slot;
    code_.push_back(e);
    return code_.back();
  }
  // A jump whose target is patched later; returns its index in code_.
  int EmitJump(Opcode op, Target target, int slot) {
    Emitted& e = Emit(op, 8, Operand::Imm(0), Operand::None(), slot);
    e.target = target;
    return static_cast<int>(code_.size()) - 1;
  }
  void EmitAccess(Emitted& e, const Access& acc, bool is_a) {
    if (acc.where == Access::Where::kStack) (is_a ? e.stack_a : e.stack_b) = true;
    e.data_extent = std::max(e.data_extent, acc.data_extent);
    e.scratch_extent = std::max(e.scratch_extent, acc.scratch_extent);
    e.scratch_unbounded = e.scratch_unbounded || acc.scratch_unbounded;
    e.stack_low = std::min(e.stack_low, acc.stack_low);
  }

  // The value a register operand reads, or nullopt (with an error) if the
  // register may be unset on some path.
  std::optional<AbsValue> Read(int slot, const AbsState& s, int reg) {
    const AbsValue& v = s.r[reg];
    if (v.kind == Kind::kUninit) {
      Error(slot, fmt::format("reads r{} before it is written on some path", reg));
      return std::nullopt;
    }
    if (v.kind == Kind::kConflict) {
      Error(slot, fmt::format("r{} is a pointer into the context or stack on one path and a "
                              "different kind of value on another",
                              reg));
      return std::nullopt;
    }
    return v;
  }
  // The pulse operand for reading BPF register `reg` as a value.
  static Operand ValueOperand(int reg) {
    return reg == kBpfFramePointer ? Operand::Imm(0) : Operand::Reg(reg);
  }

  // -- one instruction ------------------------------------------------------
  // A non-jump instruction.
  void Step(int slot, AbsState* s) {
    const BpfInsn& in = fn_.insns[slot];
    switch (in.cls()) {
      case kBpfLd:  // ld_imm64 (everything else was rejected)
        s->r[in.dst] = AbsValue::Scalar(Interval::Const(in.imm64));
        Emit(Opcode::kMove, 8, Operand::Reg(in.dst), Operand::Imm(in.imm64), slot);
        return;
      case kBpfLdx:
        Load(slot, in, s);
        return;
      case kBpfSt:
      case kBpfStx:
        Store(slot, in, s);
        return;
      default:
        Alu(slot, in, s);
        return;
    }
  }

  // `call kPulseHelperPrefetch`: PREFETCH [r1].  r1 must hold a far address
  // (a number), not a pointer into the context or stack.  As after any BPF
  // call, r0..r5 hold nothing afterwards.
  void Prefetch(int slot, AbsState* s) {
    if (auto v = Read(slot, *s, 1)) {
      if (v->is_ptr())
        Error(slot, fmt::format("PULSE_PREFETCH of a pointer into {}: it takes a far address (a "
                                "number, e.g. a pointer read from the node)",
                                PtrName(v->kind)));
      else
        Emit(Opcode::kPrefetch, 8, Operand::Mem(1, 0), Operand::None(), slot);
    }
    for (int r = 0; r <= 5; ++r) s->r[r] = AbsValue{};
  }

  void Alu(int slot, const BpfInsn& in, AbsState* s) {
    const bool a32 = in.cls() == kBpfAlu;
    const int width = a32 ? 4 : 8;
    const int d = in.dst;  // never r10: CheckInstructions refused that
    const uint8_t op = in.op();
    AbsValue& dv = s->r[d];
    if (op == kBpfEnd) {  // to little endian: a zero-extending truncation
      auto v = Read(slot, *s, d);
      if (!v) return;
      if (v->is_ptr()) {
        Error(slot, fmt::format("byte-order conversion of a pointer into {}", PtrName(v->kind)));
        return;
      }
      if (in.imm == 16 || in.imm == 32) {
        const int w = in.imm / 8;
        Emit(Opcode::kMove, w, Operand::Reg(d), Operand::Reg(d), slot);
        if (!v->range.within(0, Interval::Unsigned(w).hi)) dv = AbsValue::Scalar(Interval::Unsigned(w));
      }
      return;
    }
    // The source.
    Operand src_op;
    AbsValue sv;
    if (op == kBpfNeg) {
      sv = AbsValue::Scalar(Interval::Const(0));
      src_op = Operand::None();
    } else if (in.src_is_reg()) {
      auto v = Read(slot, *s, in.src);
      if (!v) {
        dv = AbsValue::Scalar(Interval::Top());
        return;
      }
      sv = *v;
      src_op = ValueOperand(in.src);
    } else {
      const int64_t imm = a32 ? static_cast<int64_t>(static_cast<uint32_t>(in.imm)) : in.imm;
      sv = AbsValue::Scalar(Interval::Const(imm));
      src_op = Operand::Imm(in.imm);
    }
    const Opcode pop = *PulseAluOp(op);

    if (op == kBpfMov) {
      if (a32 && sv.is_ptr()) {
        Error(slot, fmt::format("32-bit copy of a pointer into {}", PtrName(sv.kind)));
        dv = AbsValue::Scalar(Interval::Unsigned(4));
        return;
      }
      AbsValue r = sv;
      if (a32) r = AbsValue::Scalar(AluRange(kBpfMov, true, Interval::Top(), sv.range));
      dv = r;
      if (r.range.is_const()) {
        Emit(Opcode::kMove, 8, Operand::Reg(d), Operand::Imm(r.range.lo), slot);
      } else if (!(in.src_is_reg() && in.src == d && !a32)) {
        Emit(Opcode::kMove, width, Operand::Reg(d), src_op, slot);
      }
      return;
    }

    auto dread = Read(slot, *s, d);
    if (!dread) {
      dv = AbsValue::Scalar(Interval::Top());
      return;
    }
    const AbsValue dcur = *dread;
    AbsValue result;
    if (!dcur.is_ptr() && !sv.is_ptr()) {
      result = AbsValue::Scalar(AluRange(op, a32, dcur.range, sv.range));
    } else {
      const bool dptr = dcur.is_ptr(), sptr = sv.is_ptr();
      const Kind pk = dptr ? dcur.kind : sv.kind;
      if (a32) {
        Error(slot, fmt::format("32-bit arithmetic on a pointer into {}", PtrName(pk)));
        dv = AbsValue::Scalar(Interval::Unsigned(4));
        return;
      }
      if (op == kBpfAdd && dptr != sptr) {
        const AbsValue& p = dptr ? dcur : sv;
        const AbsValue& k = dptr ? sv : dcur;
        result = {pk, AluRange(kBpfAdd, false, dcur.range, sv.range), false, 0};
        if (auto a = p.Anchor()) {
          result.has_anchor = true;
          result.anchor = k.range.is_const() ? *a + k.range.lo : *a;
        }
      } else if (op == kBpfSub && dptr && !sptr) {
        result = {pk, AluRange(kBpfSub, false, dcur.range, sv.range), false, 0};
        if (auto a = dcur.Anchor()) {
          result.has_anchor = true;
          result.anchor = sv.range.is_const() ? *a - sv.range.lo : *a;
        }
      } else if (op == kBpfSub && dptr && sptr && dcur.kind == sv.kind) {
        result = AbsValue::Scalar(AluRange(kBpfSub, false, dcur.range, sv.range));
      } else {
        Error(slot, fmt::format("this operation on a pointer into {} is not supported (only "
                                "adding or subtracting an offset, or subtracting two such "
                                "pointers)",
                                PtrName(pk)));
        dv = AbsValue::Scalar(Interval::Top());
        return;
      }
    }
    dv = result;
    if (result.range.is_const()) {
      Emit(Opcode::kMove, 8, Operand::Reg(d), Operand::Imm(result.range.lo), slot);
    } else if (op == kBpfAdd && !a32 && dcur.range.is_const() && in.src_is_reg()) {
      // c + x: start from x (often c == 0: a context pointer plus an index).
      Emit(Opcode::kMove, 8, Operand::Reg(d), src_op, slot);
      if (dcur.range.lo != 0)
        Emit(Opcode::kAdd, 8, Operand::Reg(d), Operand::Imm(dcur.range.lo), slot);
    } else {
      Emit(pop, width, Operand::Reg(d), src_op, slot);
    }
  }

  // Resolves a load or store at base + off, reporting problems.
  std::optional<Access> Resolve(int slot, const AbsState& s, int base, int16_t off, int width,
                                bool is_store) {
    std::string error, warning;
    auto acc = ResolveAccess(s.r[base], base, off, width, is_store, options_.scratch_pad_bytes,
                             &error, &warning);
    if (!error.empty()) Error(slot, std::move(error));
    if (!warning.empty()) Warning(slot, std::move(warning));
    return acc;
  }

  void Load(int slot, const BpfInsn& in, AbsState* s) {
    const int width = BpfSizeBytes(in.size());
    AbsValue result = AbsValue::Scalar(Interval::Unsigned(width));
    auto acc = Resolve(slot, *s, in.src, in.off, width, false);
    if (acc) {
      if (acc->where == Access::Where::kStack && acc->stack_slot && width == 8) {
        auto it = s->slots.find(*acc->stack_slot);
        if (it != s->slots.end()) result = it->second;
      }
      if (acc->where == Access::Where::kStack && !result.is_ptr()) {
        // A spilled pointer comes back only whole, as the pointer: its bytes
        // are an offset here and an address in BPF.
        const auto spill = std::find_if(s->pointer_spills.begin(), s->pointer_spills.end(), [&](int64_t at) {
          return at < acc->stack_high && at + 8 > acc->stack_low;
        });
        if (spill != s->pointer_spills.end()) {
          Error(slot, fmt::format("reads stack bytes (frame offsets [{}, {})) as a number where a pointer "
                                  "into the context or the stack may have been stored (frame offset {}): "
                                  "such a pointer has no numeric value (only reloading it whole, as a "
                                  "pointer, is supported)",
                                  acc->stack_low, acc->stack_high, *spill));
          s->r[in.dst] = result;
          return;
        }
      }
      Emitted& e = Emit(Opcode::kMove, width, Operand::Reg(in.dst), acc->op, slot);
      EmitAccess(e, *acc, false);
    }
    s->r[in.dst] = result;
  }

  void Store(int slot, const BpfInsn& in, AbsState* s) {
    const int width = BpfSizeBytes(in.size());
    Operand src_op;
    AbsValue sv;
    if (in.cls() == kBpfSt) {
      src_op = Operand::Imm(in.imm);
      sv = AbsValue::Scalar(Interval::Const(in.imm));
    } else {
      auto v = Read(slot, *s, in.src);
      if (!v) return;
      sv = *v;
      src_op = ValueOperand(in.src);
    }
    auto acc = Resolve(slot, *s, in.dst, in.off, width, true);
    if (!acc) return;
    const bool to_stack = acc->where == Access::Where::kStack;
    if (sv.is_ptr() && !(to_stack && acc->stack_slot && width == 8)) {
      Error(slot, fmt::format("stores a pointer into {} to memory: such pointers have no far "
                              "address",
                              PtrName(sv.kind)));
      return;
    }
    if (to_stack) {
      if (acc->stack_slot) {
        const int64_t lo = *acc->stack_slot, hi = lo + width;
        for (auto it = s->slots.begin(); it != s->slots.end();) {
          if (it->first < hi && it->first + 8 > lo) it = s->slots.erase(it);
          else ++it;
        }
        if (width == 8) s->slots[lo] = sv;
        // Only a whole 8-byte store replaces a spilled pointer's bytes.
        if (width == 8) s->pointer_spills.erase(lo);
        if (sv.is_ptr()) s->pointer_spills.insert(lo);
      } else {
        s->slots.clear();
      }
    }
    const Opcode op = acc->where == Access::Where::kFar ? Opcode::kStore : Opcode::kMove;
    Emitted& e = Emit(op, width, acc->op, src_op, slot);
    EmitAccess(e, *acc, true);
  }

  // end(): does r0 say "done"?  nullopt if it depends on the path.
  std::optional<bool> EndDecision(const AbsValue& r0) {
    if (r0.kind != Kind::kScalar) return std::nullopt;
    if (r0.range.is_const()) return (static_cast<uint64_t>(r0.range.lo) & 0xffffffffu) != 0;
    if (r0.range.within(1, 0xffffffffLL)) return true;
    return std::nullopt;
  }

  void Exit(int slot, const AbsState& s) {
    auto r0 = Read(slot, s, 0);
    if (!r0) return;
    if (r0->is_ptr()) {
      Error(slot, fmt::format("{}() returns a pointer into {}{}", fn_.ref.role, PtrName(r0->kind),
                              fn_.role == Role::kNext
                                  ? ": next() must return a far pointer read from the node"
                                  : ""));
      return;
    }
    if (fn_.role == Role::kNext) {
      Emit(Opcode::kMove, 8, Operand::CurPtr(), Operand::Reg(0), slot);
      Emit(Opcode::kNextIter, 8, Operand::None(), Operand::None(), slot);
      return;
    }
    if (auto done = EndDecision(*r0)) {
      if (*done) {
        Emit(Opcode::kReturn, 8, Operand::None(), Operand::None(), slot);
      } else {
        EmitJump(Opcode::kJump, Target::kNextStart, slot);
      }
      return;
    }
    Emit(Opcode::kCompare, 4, Operand::Reg(0), Operand::Imm(0), slot);
    EmitJump(Opcode::kJumpEq, Target::kNextStart, slot);
    Emit(Opcode::kReturn, 8, Operand::None(), Operand::None(), slot);
  }

  // An edge to `target` with state s: where the jump should go.  end()'s
  // exits are threaded when r0 is known on the edge.
  Target EdgeTarget(int target, const AbsState& s) {
    if (fn_.role == Role::kEnd && target < n_ && fn_.insns[target].is_exit()) {
      if (auto done = EndDecision(s.r[0])) return *done ? Target::kEndReturn : Target::kNextStart;
    }
    return Target::kIndex;
  }

  void Jump(int slot, const BpfInsn& in, const AbsState& s) {
    if (in.op() == kBpfExit) {
      Exit(slot, s);
      return;
    }
    const int target = slot + 1 + in.off;
    if (in.op() == kBpfJa) {
      Continue(slot, target, s);
      return;
    }
    const bool j32 = in.cls() == kBpfJmp32;
    const int width = j32 ? 4 : 8;
    auto lv = Read(slot, s, in.dst);
    if (!lv) return;
    AbsValue rv;
    Operand rhs;
    if (in.src_is_reg()) {
      auto v = Read(slot, s, in.src);
      if (!v) return;
      rv = *v;
      rhs = ValueOperand(in.src);
    } else {
      rv = AbsValue::Scalar(Interval::Const(j32 ? static_cast<int64_t>(static_cast<uint32_t>(in.imm))
                                                : int64_t{in.imm}));
      rhs = Operand::Imm(in.imm);
    }
    uint8_t op = in.op();
    if (lv->is_ptr() || rv.is_ptr()) {
      if (lv->kind != rv.kind || j32) {
        Error(slot, fmt::format("compares a pointer into {} with {}",
                                PtrName(lv->is_ptr() ? lv->kind : rv.kind),
                                lv->is_ptr() && rv.is_ptr() ? "a pointer elsewhere" : "a number"));
        return;
      }
      // The registers hold offsets (the frame pointer's is 0, the slots below
      // it negative); BPF compares addresses, which are ordered as the offsets
      // are taken signed.
      switch (op) {
        case kBpfJgt: op = kBpfJsgt; break;
        case kBpfJge: op = kBpfJsge; break;
        case kBpfJlt: op = kBpfJslt; break;
        case kBpfJle: op = kBpfJsle; break;
        case kBpfJset:
          Error(slot, fmt::format("tests bits of a pointer into {}: such a pointer has no numeric value",
                                  PtrName(lv->kind)));
          return;
        default: break;
      }
    }
    Interval lt = lv->range, rt = rv.range, lf = lv->range, rf = rv.range;
    const bool can_take = RefineBranch(op, j32, true, &lt, &rt);
    const bool can_fall = RefineBranch(op, j32, false, &lf, &rf);
    AbsState taken = s, fall = s;
    auto apply = [&](AbsState* st, Interval l, Interval r) {
      if (in.dst != kBpfFramePointer) st->r[in.dst].range = l;
      if (in.src_is_reg() && in.src != kBpfFramePointer && in.src != in.dst) st->r[in.src].range = r;
    };
    apply(&taken, lt, rt);
    apply(&fall, lf, rf);
    const int next = slot + 1;
    if (can_take && !can_fall) {
      Continue(slot, target, taken);
      return;
    }
    if (!can_take) {
      if (can_fall) Continue(slot, next, fall);
      return;
    }
    if (target == next) {  // both ways lead to the next instruction
      Continue(slot, next, JoinState(taken, fall));
      return;
    }
    if (target >= n_) {  // the checks allow a branch to just past the end
      Error(slot, "control falls off the end of the function");
      return;
    }
    Emit(Opcode::kCompare, width, ValueOperand(in.dst), rhs, slot);
    const Target where = EdgeTarget(target, taken);
    const int j = EmitJump(*PulseJumpOp(op), where, slot);
    if (where == Target::kIndex) edges_[cfg_.block_of[target]].push_back({taken, {j}, false});
    Continue(slot, next, fall);
  }

  const FunctionInput& fn_;
  const TranslateOptions& options_;
  DiagnosticSink* diags_;
  const int n_;
  int errors_ = 0;
  std::vector<std::vector<Edge>> edges_;  // incoming edges of each block
  int clone_budget_ = 256;  // instructions that tail cloning may add
  std::vector<Emitted> code_;
  ControlFlow cfg_;
  size_t cur_order_ = 0;        // the block being emitted: cfg_.order[cur_order_]
  bool not_last_copy_ = false;  // emitting a tail copy that another copy follows
};

}  // namespace

bool TranslateFunction(const FunctionInput& fn, const TranslateOptions& options,
                       DiagnosticSink* diags, std::vector<Emitted>* out) {
  Translator t(fn, options, diags);
  return t.Run(out);
}

}  // namespace pulse::compiler
