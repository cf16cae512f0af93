// The interleaving engine.  Hot path notes:
//  - programs are decoded once into DecodedInsn, whose static operands are
//    byte offsets from one of three per-workspace bases (registers, data
//    window, scratch pad), so an operand read is a switch and a load;
//  - after NEXT_ITER the new cur_ptr is translated and its window prefetched,
//    and the scheduler moves to the next workspace: by the time it returns,
//    the window is (usually) in cache.
#include <cstring>
#include <unordered_map>
#include <vector>

#include "engine/access.h"
#include "engine/alu.h"
#include "pulse/engine.h"

namespace pulse {
namespace {

using isa::Opcode;
using isa::OperandKind;

// Every operand that needs no run-time check is "static": its bytes live at
// bases[base] + offset, where the bases are per workspace (registers, data
// window, scratch pad) or absolute (base 0: an immediate stored in the
// decoded instruction itself).  A read is then one indexed load, with no
// switch on the operand kind.
enum Base : uint8_t { kBaseAbsolute = 0, kBaseRegs = 1, kBaseData = 2, kBaseSp = 3, kNumBases = 4 };

enum Mode : uint8_t {
  kModeNone,
  kModeStatic,   // bases[base] + offset
  kModeSpIdx,    // scratch pad at reg + value, bounds-checked
  kModeDataIdx,  // data window at reg + value, bounds-checked
  kModeMem,      // far address reg + value (STORE)
};

constexpr int kCurPtrSlot = isa::kNumRegisters;  // cur_ptr lives after r15

struct DecodedOperand {
  Mode mode = kModeNone;
  Base base = kBaseAbsolute;
  uint8_t reg = 0;
  bool is_register = false;  // a register or cur_ptr: written whole (zero-extended)
  int64_t value = 0;         // offset from the base, or the index offset
  uint64_t imm = 0;          // an immediate, truncated to the width
};

struct DecodedInsn {
  Opcode op;
  uint8_t width;
  DecodedOperand a, b;
};

struct DecodedProgram {
  ProgramRef program;
  std::vector<DecodedInsn> insns;  // never resized after decoding: immediates are addressed
  uint32_t window = 0;
  uint32_t in_use = 0;  // workspaces running it
};

void DecodeOperand(const isa::Operand& op, unsigned width, DecodedOperand* d) {
  d->reg = op.reg;
  d->value = op.value;
  d->mode = kModeStatic;
  switch (op.kind) {
    case OperandKind::kNone: d->mode = kModeNone; break;
    case OperandKind::kImm:
      d->imm = alu::Truncate(static_cast<uint64_t>(op.value), width);
      d->base = kBaseAbsolute;
      d->value = static_cast<int64_t>(reinterpret_cast<uintptr_t>(&d->imm));
      break;
    case OperandKind::kReg: d->base = kBaseRegs; d->value = op.reg * 8; d->is_register = true; break;
    case OperandKind::kCurPtr: d->base = kBaseRegs; d->value = kCurPtrSlot * 8; d->is_register = true; break;
    case OperandKind::kSp: d->base = kBaseSp; break;
    case OperandKind::kData: d->base = kBaseData; break;
    case OperandKind::kSpIdx: d->mode = kModeSpIdx; break;
    case OperandKind::kDataIdx: d->mode = kModeDataIdx; break;
    case OperandKind::kMem: d->mode = kModeMem; break;
  }
}

struct Workspace {
  uintptr_t bases[kNumBases] = {};  // see Base; integers, so base 0 + an address is defined
  uint64_t regs[isa::kNumRegisters + 1];  // r0..r15, then cur_ptr
  alignas(64) uint8_t data[isa::kMaxWindowBytes];
  uint8_t* sp = nullptr;
  uint64_t sp_len = 0;
  uint64_t cmp_lhs = 0, cmp_rhs = 0;
  unsigned cmp_width = 8;
  const uint8_t* window_src = nullptr;  // host address of the next window
  DecodedProgram* prog = nullptr;
  uint32_t iterations = 0;
  uint32_t max_iterations = 0;
  bool busy = false;
  TraversalStatus pending = TraversalStatus::kDone;  // set when admission failed
  uint64_t pending_addr = 0;
  TraversalRequest request;
};

}  // namespace

struct Pipeline::Impl {
  const RangeTable* table;
  EngineOptions options;
  std::vector<Workspace> workspaces;
  std::vector<uint32_t> free_list;
  uint32_t active = 0;
  const Range* last_range = nullptr;  // one-entry translation cache
  std::unordered_map<const VerifiedProgram*, std::unique_ptr<DecodedProgram>> decoded;

  const Range* Find(uint64_t addr) {
    if (last_range != nullptr && last_range->Contains(addr)) return last_range;
    const Range* r = table->Find(addr);
    if (r != nullptr) last_range = r;
    return r;
  }

  DecodedProgram* Decode(const ProgramRef& program) {
    auto it = decoded.find(program.get());
    if (it != decoded.end()) return it->second.get();
    if (decoded.size() >= 1024) {  // bound the cache: drop programs not running
      for (auto i = decoded.begin(); i != decoded.end();)
        i = i->second->in_use == 0 ? decoded.erase(i) : std::next(i);
    }
    auto d = std::make_unique<DecodedProgram>();
    d->program = program;
    d->window = program->info().window_bytes;
    const auto& insns = program->instructions();
    d->insns.resize(insns.size());
    for (size_t i = 0; i < insns.size(); ++i) {
      DecodedInsn& di = d->insns[i];
      di.op = insns[i].op;
      di.width = insns[i].width;
      DecodeOperand(insns[i].a, insns[i].width, &di.a);
      DecodeOperand(insns[i].b, insns[i].width, &di.b);
      if (isa::IsJump(di.op)) di.a.value = insns[i].a.value;  // a jump's target is an index
    }
    DecodedProgram* raw = d.get();
    decoded.emplace(program.get(), std::move(d));
    return raw;
  }

  // Memory pipeline: translate and check cur_ptr, then prefetch its window.
  TraversalStatus StartLoad(Workspace& ws) {
    const uint64_t cur = ws.regs[kCurPtrSlot];
    const uint32_t window = ws.prog->window;
    const Range* range = Find(cur);
    const TraversalStatus st = CheckAccess(range, ws.request.tenant, kPermRead, cur, window,
                                           TraversalStatus::kNotLocal);
    if (st != TraversalStatus::kDone) return st;
    const uint8_t* host = range->Translate(cur);
    ws.window_src = host;
    const uintptr_t end = reinterpret_cast<uintptr_t>(host) + window;
    for (uintptr_t line = reinterpret_cast<uintptr_t>(host) & ~uintptr_t{63}; line < end; line += 64)
      __builtin_prefetch(reinterpret_cast<const void*>(line));
    return TraversalStatus::kDone;
  }

  // Address of an operand's bytes, or nullptr if an indexed operand is out
  // of bounds.
  static inline uint8_t* Locate(Workspace& ws, const DecodedOperand& o, unsigned w) {
    if (__builtin_expect(o.mode == kModeStatic, 1)) return reinterpret_cast<uint8_t*>(ws.bases[o.base] + static_cast<uintptr_t>(o.value));
    const uint64_t off = ws.regs[o.reg] + static_cast<uint64_t>(o.value);
    if (o.mode == kModeSpIdx) {
      if (off > ws.sp_len || w > ws.sp_len - off) return nullptr;
      return ws.sp + off;
    }
    if (off > ws.prog->window || w > ws.prog->window - off) return nullptr;
    return ws.data + off;
  }

  static inline bool Read(Workspace& ws, const DecodedOperand& o, unsigned w, uint64_t* v) {
    const uint8_t* p = Locate(ws, o, w);
    if (p == nullptr) return false;
    *v = w == 8 ? alu::LoadBytes(p, 8) : alu::LoadBytes(p, w);
    return true;
  }

  static inline bool Write(Workspace& ws, const DecodedOperand& o, unsigned w, uint64_t v) {
    if (o.is_register) {  // registers and cur_ptr take the zero-extended value
      ws.regs[o.value / 8] = v;
      return true;
    }
    uint8_t* p = Locate(ws, o, w);
    if (p == nullptr) return false;
    alu::StoreBytes(p, v, w);
    return true;
  }

  // The LOAD: snapshot the prefetched window into the workspace, a word at a
  // time (windows are small; a memcpy call costs more than the copy).
  static inline void CopyWindow(Workspace& ws, uint32_t window) {
    const uint8_t* src = ws.window_src;
    uint32_t i = 0;
    for (; i + 8 <= window; i += 8) std::memcpy(ws.data + i, src + i, 8);
    for (; i < window; ++i) ws.data[i] = src[i];
  }

  // Logic pipeline: runs one iteration on the (prefetched) window.  Returns
  // kDone with *next == true for NEXT_ITER, kDone with *next == false for
  // RETURN, or the fault.
  TraversalStatus Iterate(Workspace& ws, bool* next, uint32_t* fault_pc, uint64_t* fault_addr) {
    const DecodedProgram& prog = *ws.prog;
    CopyWindow(ws, prog.window);
    const DecodedInsn* insns = prog.insns.data();
    size_t pc = 1;
    for (;;) {
      const DecodedInsn& in = insns[pc];
      const unsigned w = in.width;
      uint64_t a = 0, b = 0;
      switch (in.op) {
        case Opcode::kNextIter:
          *next = true;
          return TraversalStatus::kDone;
        case Opcode::kReturn:
          *next = false;
          return TraversalStatus::kDone;
        case Opcode::kJump:
          pc = static_cast<size_t>(in.a.value);
          continue;
        case Opcode::kJumpEq: case Opcode::kJumpNe: case Opcode::kJumpLt: case Opcode::kJumpGt:
        case Opcode::kJumpLe: case Opcode::kJumpGe: case Opcode::kJumpLtu: case Opcode::kJumpGtu:
        case Opcode::kJumpLeu: case Opcode::kJumpGeu: case Opcode::kJumpSet:
          if (alu::JumpTaken(in.op, ws.cmp_lhs, ws.cmp_rhs, ws.cmp_width)) {
            pc = static_cast<size_t>(in.a.value);
            continue;
          }
          break;
        case Opcode::kCompare:
          if (!Read(ws, in.a, w, &a) || !Read(ws, in.b, w, &b)) goto bounds;
          ws.cmp_lhs = a;
          ws.cmp_rhs = b;
          ws.cmp_width = w;
          break;
        case Opcode::kMove:
          if (!Read(ws, in.b, w, &b) || !Write(ws, in.a, w, b)) goto bounds;
          break;
        case Opcode::kStore: {
          if (!Read(ws, in.b, w, &b)) goto bounds;
          const uint64_t addr = ws.regs[in.a.reg] + static_cast<uint64_t>(in.a.value);
          const Range* range = Find(addr);
          const TraversalStatus st = CheckAccess(range, ws.request.tenant, kPermWrite, addr, w,
                                                 TraversalStatus::kFaultInvalidPointer);
          if (st != TraversalStatus::kDone) {
            *fault_pc = static_cast<uint32_t>(pc);
            *fault_addr = addr;
            return st;
          }
          alu::StoreBytes(range->Translate(addr), b, w);
          break;
        }
        case Opcode::kAlloc: {
          const uint64_t table_off = static_cast<uint64_t>(in.b.value);
          const uint64_t count = alu::LoadBytes(ws.sp + table_off, 8);
          *fault_pc = static_cast<uint32_t>(pc);
          if (count == 0) return TraversalStatus::kAllocExhausted;
          const uint64_t slot = table_off + 8 + 8 * (count - 1);
          if (count > ws.sp_len || slot + 8 > ws.sp_len) return TraversalStatus::kFaultBounds;
          ws.regs[in.a.reg] = alu::LoadBytes(ws.sp + slot, 8);
          alu::StoreBytes(ws.sp + table_off, count - 1, 8);
          break;
        }
        default: {  // ALU: dst op= src
          if (!Read(ws, in.a, w, &a)) goto bounds;
          if (in.b.mode != kModeNone && !Read(ws, in.b, w, &b)) goto bounds;
          uint64_t r;
          if (!alu::Compute(in.op, w, a, b, &r)) {
            *fault_pc = static_cast<uint32_t>(pc);
            return TraversalStatus::kFaultDivZero;
          }
          if (!Write(ws, in.a, w, r)) goto bounds;
          break;
        }
      }
      ++pc;
      continue;
    bounds:
      *fault_pc = static_cast<uint32_t>(pc);
      return TraversalStatus::kFaultBounds;
    }
  }

  void Finish(uint32_t index, TraversalStatus status, uint32_t fault_pc, uint64_t fault_addr,
              const CompletionFn& done) {
    Workspace& ws = workspaces[index];
    TraversalOutcome out;
    out.status = status;
    out.iterations = ws.iterations;
    out.fault_pc = fault_pc;
    out.fault_addr = fault_addr;
    ws.request.state.cur_ptr = ws.regs[kCurPtrSlot];
    ws.request.state.iterations += ws.iterations;
    if (ws.prog != nullptr) --ws.prog->in_use;
    ws.prog = nullptr;
    ws.busy = false;
    --active;
    free_list.push_back(index);
    TraversalRequest request = std::move(ws.request);
    done(std::move(request), out);
  }
};

Pipeline::Pipeline(const RangeTable* table, const EngineOptions& options) : impl_(new Impl) {
  impl_->table = table;
  impl_->options = options;
  impl_->workspaces.resize(options.workspaces == 0 ? 1 : options.workspaces);
  for (uint32_t i = static_cast<uint32_t>(impl_->workspaces.size()); i-- > 0;) impl_->free_list.push_back(i);
}

Pipeline::~Pipeline() = default;

bool Pipeline::HasFreeWorkspace() const { return !impl_->free_list.empty(); }
void Pipeline::OnRangeTableChanged() { impl_->last_range = nullptr; }
uint32_t Pipeline::active() const { return impl_->active; }
uint32_t Pipeline::capacity() const { return static_cast<uint32_t>(impl_->workspaces.size()); }

void Pipeline::Admit(TraversalRequest&& request) {
  Impl& im = *impl_;
  const uint32_t index = im.free_list.back();
  im.free_list.pop_back();
  Workspace& ws = im.workspaces[index];
  ws.request = std::move(request);
  ws.busy = true;
  ++im.active;
  ws.iterations = 0;
  ws.max_iterations = ws.request.max_iterations != 0 ? ws.request.max_iterations : im.options.max_iterations;
  ws.regs[kCurPtrSlot] = ws.request.state.cur_ptr;
  ws.sp = ws.request.state.scratch.data();
  ws.sp_len = ws.request.state.scratch.size();
  ws.bases[kBaseAbsolute] = 0;
  ws.bases[kBaseRegs] = reinterpret_cast<uintptr_t>(ws.regs);
  ws.bases[kBaseData] = reinterpret_cast<uintptr_t>(ws.data);
  ws.bases[kBaseSp] = reinterpret_cast<uintptr_t>(ws.sp);
  ws.pending = TraversalStatus::kDone;
  ws.pending_addr = 0;
  ws.prog = nullptr;
  if (!ws.request.program || ws.sp_len < ws.request.program->info().scratch_bytes ||
      ws.sp_len > im.options.scratch_pad_bytes) {
    ws.pending = TraversalStatus::kFaultBadRequest;
    return;
  }
  ws.prog = im.Decode(ws.request.program);
  ++ws.prog->in_use;
  if (ws.max_iterations == 0) {
    ws.pending = TraversalStatus::kContinue;
    return;
  }
  ws.pending = im.StartLoad(ws);
  if (ws.pending != TraversalStatus::kDone) ws.pending_addr = ws.regs[kCurPtrSlot];
}

uint64_t Pipeline::Run(const CompletionFn& done, uint64_t max_iterations_budget) {
  Impl& im = *impl_;
  uint64_t executed = 0;
  const uint32_t n = static_cast<uint32_t>(im.workspaces.size());
  while (im.active > 0 && executed < max_iterations_budget) {
    for (uint32_t i = 0; i < n; ++i) {
      Workspace& ws = im.workspaces[i];
      if (!ws.busy) continue;
      if (ws.pending != TraversalStatus::kDone) {
        im.Finish(i, ws.pending, 0, ws.pending_addr, done);
        continue;
      }
      bool next = false;
      uint32_t fault_pc = 0;
      uint64_t fault_addr = 0;
      const TraversalStatus st = im.Iterate(ws, &next, &fault_pc, &fault_addr);
      if (st != TraversalStatus::kDone) {
        im.Finish(i, st, fault_pc, fault_addr, done);
        continue;
      }
      ++executed;
      ++ws.iterations;
      if (!next) {
        im.Finish(i, TraversalStatus::kDone, 0, 0, done);
      } else if (ws.iterations >= ws.max_iterations) {
        im.Finish(i, TraversalStatus::kContinue, 0, 0, done);
      } else {
        const TraversalStatus load = im.StartLoad(ws);
        if (load != TraversalStatus::kDone) im.Finish(i, load, 0, ws.regs[kCurPtrSlot], done);
      }
    }
  }
  return executed;
}

}  // namespace pulse
