// An independent, deliberately naive model of the ISA -- its ALU, compares
// and protection written from include/pulse/isa.h with typed C++ arithmetic
// and linear range searches, sharing nothing with engine/alu.h or
// engine/access.h -- against the reference interpreter and both engines on
// random programs over two tenants' ranges (one read-only).  When the shared
// arithmetic is wrong, the interpreter and the engines agree with each other
// and this model catches it.
#include <gtest/gtest.h>

#include <random>

#include "engine/random_program.h"
#include "engine/run_both.h"

namespace pulse {
namespace {

using isa::Opcode;
using isa::OperandKind;
using testing::FarHeap;

struct ModelRange {
  uint64_t base, length;
  TenantId owner;
  bool readable, writable;
  std::vector<uint8_t>* bytes;
};

// Typed arithmetic at one width: U is the unsigned type, S the signed one.
template <typename U, typename S>
bool ComputeAt(Opcode op, uint64_t a64, uint64_t b64, uint64_t* out) {
  const U a = static_cast<U>(a64), b = static_cast<U>(b64);
  const S sa = static_cast<S>(a), sb = static_cast<S>(b);
  const unsigned bits = sizeof(U) * 8;
  U r = 0;
  switch (op) {
    case Opcode::kAdd: r = static_cast<U>(a + b); break;
    case Opcode::kSub: r = static_cast<U>(a - b); break;
    case Opcode::kMul: r = static_cast<U>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); break;
    case Opcode::kDiv: if (b == 0) return false; r = static_cast<U>(a / b); break;
    case Opcode::kMod: if (b == 0) return false; r = static_cast<U>(a % b); break;
    case Opcode::kSdiv:
      if (b == 0) return false;
      r = sb == -1 ? static_cast<U>(U{0} - a) : static_cast<U>(static_cast<S>(sa / sb));
      break;
    case Opcode::kSmod:
      if (b == 0) return false;
      r = sb == -1 ? U{0} : static_cast<U>(static_cast<S>(sa % sb));
      break;
    case Opcode::kAnd: r = static_cast<U>(a & b); break;
    case Opcode::kOr: r = static_cast<U>(a | b); break;
    case Opcode::kXor: r = static_cast<U>(a ^ b); break;
    case Opcode::kNot: r = static_cast<U>(~a); break;
    case Opcode::kNeg: r = static_cast<U>(U{0} - a); break;
    case Opcode::kShl: r = static_cast<U>(static_cast<uint64_t>(a) << (b % bits)); break;
    case Opcode::kShr: r = static_cast<U>(a >> (b % bits)); break;
    case Opcode::kSar: r = static_cast<U>(static_cast<S>(sa >> (b % bits))); break;
    case Opcode::kMove: r = b; break;
    default: ADD_FAILURE() << "model: unexpected opcode"; break;
  }
  *out = r;
  return true;
}

bool ComputeModel(Opcode op, unsigned w, uint64_t a, uint64_t b, uint64_t* out) {
  switch (w) {
    case 1: return ComputeAt<uint8_t, int8_t>(op, a, b, out);
    case 2: return ComputeAt<uint16_t, int16_t>(op, a, b, out);
    case 4: return ComputeAt<uint32_t, int32_t>(op, a, b, out);
    default: return ComputeAt<uint64_t, int64_t>(op, a, b, out);
  }
}

int64_t Signed(uint64_t v, unsigned w) {
  switch (w) {
    case 1: return static_cast<int8_t>(v);
    case 2: return static_cast<int16_t>(v);
    case 4: return static_cast<int32_t>(v);
    default: return static_cast<int64_t>(v);
  }
}

uint64_t Narrow(uint64_t v, unsigned w) {
  switch (w) {
    case 1: return static_cast<uint8_t>(v);
    case 2: return static_cast<uint16_t>(v);
    case 4: return static_cast<uint32_t>(v);
    default: return v;
  }
}

uint64_t GetLE(const uint8_t* p, unsigned w) {
  uint64_t v = 0;
  for (unsigned i = 0; i < w; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
void PutLE(uint8_t* p, uint64_t v, unsigned w) {
  for (unsigned i = 0; i < w; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

class Model {
 public:
  Model(const VerifiedProgram& program, std::vector<ModelRange> ranges, TenantId tenant)
      : program_(program), ranges_(std::move(ranges)), tenant_(tenant) {}

  TraversalOutcome Run(uint32_t max_iterations, TraversalState* state) {
    TraversalOutcome out;
    st_ = state;
    if (state->scratch.size() < program_.info().scratch_bytes) return Stop(out, TraversalStatus::kFaultBadRequest, 0, 0);
    const uint32_t window = program_.info().window_bytes;
    const auto& insns = program_.instructions();
    for (;;) {
      if (out.iterations >= max_iterations) return Stop(out, TraversalStatus::kContinue, 0, 0);
      const uint64_t cur = state->cur_ptr;
      TraversalStatus s = Check(cur, window, /*write=*/false, TraversalStatus::kNotLocal);
      if (s != TraversalStatus::kDone) return Stop(out, s, 0, cur);
      data_.assign(window, 0);
      for (uint32_t i = 0; i < window; ++i) data_[i] = *HostByte(cur + i);
      size_t pc = 1;
      for (;;) {
        const isa::Instruction& in = insns[pc];
        const unsigned w = in.width;
        uint64_t a = 0, b = 0;
        if (in.op == Opcode::kNextIter || in.op == Opcode::kReturn) {
          ++out.iterations;
          if (in.op == Opcode::kReturn) return Stop(out, TraversalStatus::kDone, 0, 0);
          break;
        }
        if (isa::IsJump(in.op)) {
          if (Taken(in.op)) {
            pc = static_cast<size_t>(in.a.value);
            continue;
          }
        } else if (in.op == Opcode::kCompare) {
          if (!Get(in.a, w, &a) || !Get(in.b, w, &b)) return Stop(out, TraversalStatus::kFaultBounds, pc, 0);
          lhs_ = a, rhs_ = b, cmp_w_ = w;
        } else if (in.op == Opcode::kStore) {
          if (!Get(in.b, w, &b)) return Stop(out, TraversalStatus::kFaultBounds, pc, 0);
          const uint64_t addr = regs_[in.a.reg] + static_cast<uint64_t>(in.a.value);
          s = Check(addr, w, /*write=*/true, TraversalStatus::kFaultInvalidPointer);
          if (s != TraversalStatus::kDone) return Stop(out, s, pc, addr);
          for (unsigned i = 0; i < w; ++i) *HostByte(addr + i) = static_cast<uint8_t>(b >> (8 * i));
        } else if (in.op == Opcode::kPrefetch) {
          // a hint: no effect on anything the model computes
        } else if (in.op == Opcode::kAlloc) {
          const uint64_t off = static_cast<uint64_t>(in.b.value);
          const uint64_t n = GetLE(&state->scratch[off], 8);
          if (n == 0) return Stop(out, TraversalStatus::kAllocExhausted, pc, 0);
          const unsigned __int128 slot_end = static_cast<unsigned __int128>(off) + 8 * static_cast<unsigned __int128>(n) + 8;
          if (slot_end > state->scratch.size()) return Stop(out, TraversalStatus::kFaultBounds, pc, 0);
          regs_[in.a.reg] = GetLE(&state->scratch[off + 8 * n], 8);
          PutLE(&state->scratch[off], n - 1, 8);
        } else {
          const bool unary = in.op == Opcode::kNot || in.op == Opcode::kNeg;
          if (in.op != Opcode::kMove && !Get(in.a, w, &a)) return Stop(out, TraversalStatus::kFaultBounds, pc, 0);
          if (!unary && !Get(in.b, w, &b)) return Stop(out, TraversalStatus::kFaultBounds, pc, 0);
          uint64_t r;
          if (!ComputeModel(in.op, w, a, b, &r)) return Stop(out, TraversalStatus::kFaultDivZero, pc, 0);
          if (!Set(in.a, w, r)) return Stop(out, TraversalStatus::kFaultBounds, pc, 0);
        }
        ++pc;
      }
    }
  }

 private:
  TraversalOutcome& Stop(TraversalOutcome& out, TraversalStatus s, size_t pc, uint64_t addr) {
    out.status = s;
    out.fault_pc = static_cast<uint32_t>(pc);
    out.fault_addr = addr;
    st_->iterations += out.iterations;
    return out;
  }

  const ModelRange* RangeOf(uint64_t addr) const {
    for (const ModelRange& r : ranges_)
      if (addr >= r.base && addr - r.base < r.length) return &r;
    return nullptr;
  }
  uint8_t* HostByte(uint64_t addr) {
    const ModelRange* r = RangeOf(addr);
    return r->bytes->data() + (addr - r->base);
  }

  // Protection: the range holding addr must be the tenant's, allow the
  // access, and hold all len bytes.
  TraversalStatus Check(uint64_t addr, uint64_t len, bool write, TraversalStatus none) const {
    const ModelRange* r = RangeOf(addr);
    if (r == nullptr) return none;
    if (r->owner != tenant_ || !(write ? r->writable : r->readable)) return TraversalStatus::kFaultProtection;
    const unsigned __int128 end = static_cast<unsigned __int128>(addr) + len;
    if (end > static_cast<unsigned __int128>(r->base) + r->length) return TraversalStatus::kFaultBounds;
    return TraversalStatus::kDone;
  }

  bool Taken(Opcode op) const {
    const int64_t sl = Signed(lhs_, cmp_w_), sr = Signed(rhs_, cmp_w_);
    switch (op) {
      case Opcode::kJump: return true;
      case Opcode::kJumpEq: return lhs_ == rhs_;
      case Opcode::kJumpNe: return lhs_ != rhs_;
      case Opcode::kJumpLt: return sl < sr;
      case Opcode::kJumpGt: return sl > sr;
      case Opcode::kJumpLe: return sl <= sr;
      case Opcode::kJumpGe: return sl >= sr;
      case Opcode::kJumpLtu: return lhs_ < rhs_;
      case Opcode::kJumpGtu: return lhs_ > rhs_;
      case Opcode::kJumpLeu: return lhs_ <= rhs_;
      case Opcode::kJumpGeu: return lhs_ >= rhs_;
      case Opcode::kJumpSet: return (lhs_ & rhs_) != 0;
      default: return false;
    }
  }

  // Bytes of a memory operand, or nullptr when it leaves its area.
  uint8_t* Bytes(const isa::Operand& op, unsigned w) {
    uint64_t off = static_cast<uint64_t>(op.value);
    if (op.kind == OperandKind::kSpIdx || op.kind == OperandKind::kDataIdx) off += regs_[op.reg];
    const bool sp = op.kind == OperandKind::kSp || op.kind == OperandKind::kSpIdx;
    std::vector<uint8_t>& area = sp ? st_->scratch : data_;
    if (static_cast<unsigned __int128>(off) + w > area.size()) return nullptr;
    return area.data() + off;
  }

  bool Get(const isa::Operand& op, unsigned w, uint64_t* v) {
    switch (op.kind) {
      case OperandKind::kReg: *v = Narrow(regs_[op.reg], w); return true;
      case OperandKind::kImm: *v = Narrow(static_cast<uint64_t>(op.value), w); return true;
      case OperandKind::kCurPtr: *v = Narrow(st_->cur_ptr, w); return true;
      default: {
        const uint8_t* p = Bytes(op, w);
        if (p == nullptr) return false;
        *v = GetLE(p, w);
        return true;
      }
    }
  }

  bool Set(const isa::Operand& op, unsigned w, uint64_t v) {
    switch (op.kind) {
      case OperandKind::kReg: regs_[op.reg] = v; return true;
      case OperandKind::kCurPtr: st_->cur_ptr = v; return true;
      default: {
        uint8_t* p = Bytes(op, w);
        if (p == nullptr) return false;
        PutLE(p, v, w);
        return true;
      }
    }
  }

  const VerifiedProgram& program_;
  std::vector<ModelRange> ranges_;
  TenantId tenant_;
  TraversalState* st_ = nullptr;
  uint64_t regs_[isa::kNumRegisters] = {};
  uint64_t lhs_ = 0, rhs_ = 0;
  unsigned cmp_w_ = 8;
  std::vector<uint8_t> data_;
};

constexpr uint64_t kBaseA = 0x100000;  // tenant 1, read-write
constexpr uint64_t kBaseRo = 0x200000; // tenant 1, read-only
constexpr uint64_t kBaseB = 0x300000;  // tenant 2, read-write

// Runs the model on copies of `heaps` (tenant 1 read-write, tenant 1
// read-only, tenant 2).
std::pair<TraversalOutcome, TraversalState> RunModel(const VerifiedProgram& program, std::vector<FarHeap*> heaps,
                                                     std::vector<std::vector<uint8_t>>* memory,
                                                     TraversalState state, uint32_t max_iterations) {
  memory->clear();
  for (FarHeap* h : heaps) memory->push_back(h->bytes());
  std::vector<ModelRange> ranges;
  for (size_t i = 0; i < heaps.size(); ++i) {
    const Range r = heaps[i]->range();
    ranges.push_back(ModelRange{r.base, r.length, r.owner, (r.perms & kPermRead) != 0, (r.perms & kPermWrite) != 0,
                                &(*memory)[i]});
  }
  Model model(program, std::move(ranges), 1);
  const TraversalOutcome out = model.Run(max_iterations, &state);
  return {out, state};
}

TEST(NaiveModel, RandomProgramsOverTwoTenantsMatchInterpreterAndEngines) {
  std::mt19937_64 rng(77);
  int faults = 0, protection = 0, done = 0;
  for (int round = 0; round < 120; ++round) {
    FarHeap a(kBaseA, 64 * 128 + 8 * 1024, 1, kPermReadWrite);
    FarHeap ro(kBaseRo, 64 * 16, 1, kPermRead);
    FarHeap b(kBaseB, 64 * 16, 2, kPermReadWrite);
    std::vector<uint64_t> nodes;
    for (int i = 0; i < 128; ++i) nodes.push_back(a.Alloc(64));
    std::vector<uint64_t> ro_nodes, b_nodes;
    for (int i = 0; i < 16; ++i) ro_nodes.push_back(ro.Alloc(64)), b_nodes.push_back(b.Alloc(64));
    auto fill = [&](FarHeap& h, const std::vector<uint64_t>& ns) {
      for (uint64_t n : ns) {
        for (int k = 1; k < 8; ++k) h.Put<uint64_t>(n + 8 * k, rng() % 4 == 0 ? rng() : rng() % 300);
        const int kind = static_cast<int>(rng() % 24);
        h.Put<uint64_t>(n, kind == 0   ? 0x7000000
                           : kind == 1 ? ro_nodes[rng() % ro_nodes.size()]
                           : kind == 2 ? b_nodes[rng() % b_nodes.size()]
                           : kind == 3 ? h.base() + h.bytes().size() - 8
                                       : nodes[rng() % nodes.size()]);
      }
    };
    fill(a, nodes);
    fill(ro, ro_nodes);
    fill(b, b_nodes);
    testing::RandomProgram gen(&rng);
    const std::string text = gen.Generate();
    auto program = testing::MustBuild(text);
    ASSERT_NE(program, nullptr) << text;
    for (int t = 0; t < 8; ++t) {
      TraversalState s = testing::StateAt(nodes[rng() % nodes.size()], 128);
      for (size_t i = 16; i < s.scratch.size(); ++i) s.scratch[i] = static_cast<uint8_t>(rng());
      testing::SpPut<uint64_t>(&s, 0, 1 + rng() % 10);
      // Where STOREs go: mostly the tenant's own area, sometimes read-only
      // memory, the other tenant's, nowhere, or across a range's end.
      const int where = static_cast<int>(rng() % 10);
      testing::SpPut<uint64_t>(&s, 8, where == 0   ? ro.base()
                                      : where == 1 ? b.base()
                                      : where == 2 ? 0x9000000
                                      : where == 3 ? a.base() + a.bytes().size() - 4
                                                   : a.Alloc(64));
      const uint32_t max_iterations = 1 + static_cast<uint32_t>(rng() % 12);
      std::vector<std::vector<uint8_t>> model_memory;
      auto [mo, ms] = RunModel(*program, {&a, &ro, &b}, &model_memory, s, max_iterations);
      // RunBoth checks the engines against the interpreter and leaves the
      // interpreter's effects in the heaps; the model must match those.
      const testing::RunResult ref = testing::RunBoth(program, {&a, &ro, &b}, s, max_iterations, 1);
      ASSERT_EQ(static_cast<int>(mo.status), static_cast<int>(ref.outcome.status))
          << TraversalStatusName(mo.status) << " vs " << TraversalStatusName(ref.outcome.status) << "\n" << text;
      ASSERT_EQ(mo.iterations, ref.outcome.iterations) << text;
      ASSERT_EQ(mo.fault_pc, ref.outcome.fault_pc) << text;
      ASSERT_EQ(mo.fault_addr, ref.outcome.fault_addr) << text;
      ASSERT_EQ(ms.cur_ptr, ref.state.cur_ptr) << text;
      ASSERT_EQ(ms.iterations, ref.state.iterations) << text;
      ASSERT_EQ(ms.scratch, ref.state.scratch) << text;
      ASSERT_TRUE(model_memory[0] == a.bytes() && model_memory[1] == ro.bytes() && model_memory[2] == b.bytes())
          << "far memory differs:\n" << text;
      faults += IsFault(mo.status);
      protection += mo.status == TraversalStatus::kFaultProtection;
      done += mo.status == TraversalStatus::kDone;
    }
  }
  EXPECT_GT(done, 100);
  EXPECT_GT(faults, 50);
  EXPECT_GT(protection, 10);
}

}  // namespace
}  // namespace pulse
