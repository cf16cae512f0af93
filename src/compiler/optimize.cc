#include "compiler/optimize.h"

#include <array>
#include <bitset>
#include <optional>

namespace pulse::compiler {
namespace {

using isa::Instruction;
using isa::Opcode;
using isa::Operand;
using isa::OperandKind;

using RegSet = std::bitset<isa::kNumRegisters>;

int Target(const LinkedInsn& l) { return static_cast<int>(l.insn.a.value); }

bool IsIndexed(OperandKind k) {
  return k == OperandKind::kSpIdx || k == OperandKind::kDataIdx || k == OperandKind::kMem;
}

// Rebuilds `code` from per-instruction replacements (jump targets inside the
// replacements are old indices).
void Rebuild(std::vector<LinkedInsn>* code, const std::vector<std::vector<LinkedInsn>>& repl) {
  const size_t n = code->size();
  std::vector<int> new_index(n + 1, 0);
  std::vector<LinkedInsn> out;
  for (size_t i = 0; i < n; ++i) {
    new_index[i] = static_cast<int>(out.size());
    for (const auto& l : repl[i]) out.push_back(l);
  }
  new_index[n] = static_cast<int>(out.size());
  for (auto& l : out)
    if (isa::IsJump(l.insn.op)) l.insn.a = Operand::Imm(new_index[Target(l)]);
  *code = std::move(out);
}

std::vector<std::vector<LinkedInsn>> Identity(const std::vector<LinkedInsn>& code) {
  std::vector<std::vector<LinkedInsn>> r(code.size());
  for (size_t i = 0; i < code.size(); ++i) r[i] = {code[i]};
  return r;
}

std::vector<bool> JumpTargets(const std::vector<LinkedInsn>& code) {
  std::vector<bool> t(code.size() + 1, false);
  for (const auto& l : code)
    if (isa::IsJump(l.insn.op)) t[Target(l)] = true;
  return t;
}

std::optional<Opcode> Inverse(Opcode op) {
  switch (op) {
    case Opcode::kJumpEq: return Opcode::kJumpNe;
    case Opcode::kJumpNe: return Opcode::kJumpEq;
    case Opcode::kJumpLt: return Opcode::kJumpGe;
    case Opcode::kJumpGe: return Opcode::kJumpLt;
    case Opcode::kJumpGt: return Opcode::kJumpLe;
    case Opcode::kJumpLe: return Opcode::kJumpGt;
    case Opcode::kJumpLtu: return Opcode::kJumpGeu;
    case Opcode::kJumpGeu: return Opcode::kJumpLtu;
    case Opcode::kJumpGtu: return Opcode::kJumpLeu;
    case Opcode::kJumpLeu: return Opcode::kJumpGtu;
    default: return std::nullopt;
  }
}

// -- jump threading -----------------------------------------------------------

bool ThreadJumps(std::vector<LinkedInsn>* code) {
  auto& c = *code;
  const int n = static_cast<int>(c.size());
  bool changed = false;
  for (int i = 0; i < n; ++i) {
    if (!isa::IsJump(c[i].insn.op)) continue;
    int t = Target(c[i]);
    while (t < n && t != i && c[t].insn.op == Opcode::kJump) t = Target(c[t]);
    if (t != Target(c[i])) {
      c[i].insn.a = Operand::Imm(t);
      changed = true;
    }
  }
  auto repl = Identity(c);
  const auto targeted = JumpTargets(c);
  bool rebuilt = false;
  for (int i = 0; i < n; ++i) {
    const Instruction& in = c[i].insn;
    const int t = isa::IsJump(in.op) ? Target(c[i]) : -1;
    if (in.op == Opcode::kJump) {
      if (t == i + 1) {
        repl[i].clear();
        rebuilt = true;
        continue;
      }
      // Tail-duplicate a short straight block that ends the iteration.
      int end = t;
      while (end < n && end - t < 3 && !isa::IsJump(c[end].insn.op) &&
             !IsTerminalInsn(c[end].insn))
        ++end;
      if (end < n && end - t < 3 && IsTerminalInsn(c[end].insn)) {
        repl[i].assign(c.begin() + t, c.begin() + end + 1);
        rebuilt = true;
      }
    } else if (isa::IsConditionalJump(in.op) && i + 1 < n && t < n && !targeted[i] &&
               IsTerminalInsn(c[t].insn) && c[i + 1].insn == c[t].insn) {
      // Both ways end the iteration the same way: the jump is moot.
      repl[i].clear();
      if (i > 0 && c[i - 1].insn.op == Opcode::kCompare && !IsIndexed(c[i - 1].insn.a.kind) &&
          !IsIndexed(c[i - 1].insn.b.kind))
        repl[i - 1].clear();
      rebuilt = true;
    } else if (isa::IsConditionalJump(in.op) && t == i + 2 && i + 1 < n &&
               c[i + 1].insn.op == Opcode::kJump && !targeted[i + 1] && Inverse(in.op)) {
      // JUMP_cc L; JUMP M; L:   ->   JUMP_!cc M; L:
      repl[i][0].insn.op = *Inverse(in.op);
      repl[i][0].insn.a = c[i + 1].insn.a;
      repl[i + 1].clear();
      rebuilt = true;
      ++i;
    } else if (isa::IsConditionalJump(in.op) && t == i + 1 && !targeted[i]) {
      repl[i].clear();
      if (i > 0 && c[i - 1].insn.op == Opcode::kCompare && !IsIndexed(c[i - 1].insn.a.kind) &&
          !IsIndexed(c[i - 1].insn.b.kind))
        repl[i - 1].clear();
      rebuilt = true;
    }
  }
  if (rebuilt) Rebuild(code, repl);
  return changed || rebuilt;
}

// -- copy propagation ---------------------------------------------------------

struct Fact {
  Operand src;
  uint8_t width = 8;
  bool operator==(const Fact&) const = default;
};
using Facts = std::array<std::optional<Fact>, isa::kNumRegisters>;

Facts Intersect(const Facts& a, const Facts& b) {
  Facts r;
  for (int i = 0; i < isa::kNumRegisters; ++i)
    if (a[i] && b[i] && *a[i] == *b[i]) r[i] = a[i];
  return r;
}

uint64_t ZeroExtend(int64_t v, int width) {
  if (width >= 8) return static_cast<uint64_t>(v);
  return static_cast<uint64_t>(v) & ((uint64_t{1} << (8 * width)) - 1);
}

// The value `fact` gives register r when read at `width`, if expressible.
std::optional<Operand> Substitute(const Fact& f, int width) {
  switch (f.src.kind) {
    case OperandKind::kImm:
      return Operand::Imm(static_cast<int64_t>(ZeroExtend(f.src.value, f.width)));
    case OperandKind::kReg:
      if (width <= f.width || f.width == 8) return f.src;
      return std::nullopt;
    case OperandKind::kData:
    case OperandKind::kSp:
    case OperandKind::kCurPtr:
      if (width <= f.width) return f.src;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

void KillReg(Facts* f, int r) {
  (*f)[r].reset();
  for (auto& x : *f)
    if (x && x->src.kind == OperandKind::kReg && x->src.reg == r) x.reset();
}

void KillSp(Facts* f, int64_t off, int width, bool all) {
  for (auto& x : *f) {
    if (!x || x->src.kind != OperandKind::kSp) continue;
    if (all || (x->src.value < off + width && off < x->src.value + x->width)) x.reset();
  }
}

// Operand a of these is read (and for ALU also written).
bool ReadsA(Opcode op) {
  return op == Opcode::kCompare || op == Opcode::kStore || op == Opcode::kPrefetch || isa::IsAlu(op);
}

bool CopyPropagate(std::vector<LinkedInsn>* code) {
  auto& c = *code;
  const int n = static_cast<int>(c.size());
  std::vector<std::optional<Facts>> in(n + 1);
  if (n == 0) return false;
  in[0] = Facts{};
  bool changed = false;
  auto merge = [&](int t, const Facts& f) {
    if (t > n) return;
    in[t] = in[t] ? Intersect(*in[t], f) : f;
  };
  for (int i = 0; i < n; ++i) {
    if (!in[i]) continue;
    Facts f = *in[i];
    Instruction& I = c[i].insn;
    // Substitute register reads.
    auto subst_index = [&](Operand* o) {
      if (!IsIndexed(o->kind)) return;
      const auto& fact = f[o->reg];
      if (fact && fact->src.kind == OperandKind::kReg && fact->width == 8) {
        o->reg = fact->src.reg;
        changed = true;
      }
    };
    auto subst_value = [&](Operand* o, const Operand* other) {
      if (o->kind != OperandKind::kReg) return;
      const auto& fact = f[o->reg];
      if (!fact) return;
      auto s = Substitute(*fact, I.width);
      if (!s) return;
      if (s->kind == OperandKind::kImm && other && other->kind == OperandKind::kImm) return;
      *o = *s;
      changed = true;
    };
    switch (I.op) {
      case Opcode::kMove:
        subst_index(&I.a);
        subst_index(&I.b);
        subst_value(&I.b, nullptr);
        break;
      case Opcode::kCompare:
        subst_index(&I.a);
        subst_index(&I.b);
        subst_value(&I.a, &I.b);
        subst_value(&I.b, &I.a);
        break;
      case Opcode::kStore:
      case Opcode::kPrefetch:
        subst_index(&I.a);
        subst_index(&I.b);
        subst_value(&I.b, nullptr);
        break;
      default:
        if (isa::IsAlu(I.op)) {
          subst_index(&I.a);
          subst_index(&I.b);
          if (!isa::IsUnaryAlu(I.op)) subst_value(&I.b, nullptr);
        }
        break;
    }
    // Kill what the instruction writes, then record a new copy.
    const bool writes_a = I.op == Opcode::kMove || isa::IsAlu(I.op) || I.op == Opcode::kAlloc;
    if (writes_a) {
      switch (I.a.kind) {
        case OperandKind::kReg: KillReg(&f, I.a.reg); break;
        case OperandKind::kSp: KillSp(&f, I.a.value, I.width, false); break;
        case OperandKind::kSpIdx: KillSp(&f, 0, 0, true); break;
        case OperandKind::kCurPtr:
          for (auto& x : f)
            if (x && x->src.kind == OperandKind::kCurPtr) x.reset();
          break;
        default: break;
      }
    }
    if (I.op == Opcode::kAlloc) KillSp(&f, 0, 0, true);
    if (I.op == Opcode::kMove && I.a.kind == OperandKind::kReg) {
      const OperandKind k = I.b.kind;
      if (k == OperandKind::kImm || k == OperandKind::kData || k == OperandKind::kSp ||
          k == OperandKind::kCurPtr || (k == OperandKind::kReg && I.b.reg != I.a.reg))
        f[I.a.reg] = Fact{I.b, I.width};
    }
    if (IsTerminalInsn(I)) continue;
    if (isa::IsJump(I.op)) merge(Target(c[i]), f);
    if (FallsThrough(I)) merge(i + 1, f);
  }
  return changed;
}

// -- dead code ----------------------------------------------------------------

void AddReg(RegSet* s, const Operand& o) {
  if (o.kind == OperandKind::kReg || IsIndexed(o.kind)) s->set(o.reg);
}

RegSet Uses(const Instruction& I) {
  RegSet s;
  if (I.op == Opcode::kMove) {
    AddReg(&s, I.b);
    if (IsIndexed(I.a.kind)) s.set(I.a.reg);
  } else if (ReadsA(I.op)) {
    AddReg(&s, I.a);
    AddReg(&s, I.b);
  } else if (I.op == Opcode::kAlloc) {
    AddReg(&s, I.b);
  }
  return s;
}

bool IsPure(Opcode op) {
  switch (op) {
    case Opcode::kMove: case Opcode::kAdd: case Opcode::kSub: case Opcode::kMul:
    case Opcode::kAnd: case Opcode::kOr: case Opcode::kXor: case Opcode::kNot:
    case Opcode::kNeg: case Opcode::kShl: case Opcode::kShr: case Opcode::kSar:
      return true;
    default:
      return false;
  }
}

bool RemoveDead(std::vector<LinkedInsn>* code) {
  auto& c = *code;
  const int n = static_cast<int>(c.size());
  // Reachability.
  std::vector<bool> reach(n + 1, false);
  if (n) reach[0] = true;
  for (int i = 0; i < n; ++i) {
    if (!reach[i]) continue;
    const Instruction& I = c[i].insn;
    if (isa::IsJump(I.op)) reach[Target(c[i])] = true;
    if (FallsThrough(I)) reach[i + 1] = true;
  }
  // Liveness, backwards (all jumps go forward).
  std::vector<RegSet> live_in(n + 1);
  std::vector<bool> remove(n, false);
  for (int i = n - 1; i >= 0; --i) {
    const Instruction& I = c[i].insn;
    if (!reach[i]) {
      remove[i] = true;
      continue;
    }
    RegSet out;
    if (!IsTerminalInsn(I)) {
      if (isa::IsJump(I.op)) out |= live_in[Target(c[i])];
      if (FallsThrough(I)) out |= live_in[i + 1];
    }
    const bool defines_reg = (I.op == Opcode::kMove || isa::IsAlu(I.op) || I.op == Opcode::kAlloc) &&
                             I.a.kind == OperandKind::kReg;
    const bool self_move = I.op == Opcode::kMove && I.width == 8 &&
                           I.a.kind == OperandKind::kReg && I.b == I.a;
    if (self_move || (defines_reg && IsPure(I.op) && !out.test(I.a.reg))) {
      remove[i] = true;
      live_in[i] = out;
      continue;
    }
    RegSet in = out;
    if (defines_reg) in.reset(I.a.reg);
    in |= Uses(I);
    live_in[i] = in;
  }
  bool any = false;
  auto repl = Identity(c);
  for (int i = 0; i < n; ++i)
    if (remove[i]) {
      repl[i].clear();
      any = true;
    }
  if (any) Rebuild(code, repl);
  return any;
}

}  // namespace

bool IsTerminalInsn(const Instruction& in) { return isa::IsTerminal(in.op); }

bool FallsThrough(const Instruction& in) {
  return !isa::IsTerminal(in.op) && in.op != Opcode::kJump;
}

void Optimize(std::vector<LinkedInsn>* code) {
  for (int round = 0; round < 16; ++round) {
    bool changed = false;
    changed |= ThreadJumps(code);
    changed |= CopyPropagate(code);
    changed |= RemoveDead(code);
    if (!changed) break;
  }
}

}  // namespace pulse::compiler
