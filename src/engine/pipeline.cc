// The interleaving engine.  Hot path notes:
//  - a workspace's per-iteration state is one Frame (engine/frame.h): a list
//    walk touches two of its lines, its scratch pad and its window; requests
//    (cold) live apart, and the scheduler prefetches the next workspace's
//    frame while it runs the current one, so the footprint of 128
//    workspaces costs no more than that of 16;
//  - programs are decoded once per pipeline into DecodedInsn (static operands
//    are byte offsets from one of four bases) and, with EngineKind::kJit,
//    compiled to native code (engine/jit.h); the interpreted Iterate below is
//    the fallback where no code could be generated;
//  - after NEXT_ITER the new cur_ptr is translated and its window prefetched,
//    and the scheduler moves to the next workspace: by the time it returns,
//    the window is (usually) in cache;
//  - the round-robin runs only the active set (at most K workspaces, slots
//    below); admitted traversals beyond K wait in a FIFO ready queue.  One
//    round's footprint (K iterations x ~4 lines) then stays well inside L1D,
//    so the window prefetched a round earlier has not been evicted when its
//    iteration reads it, however many workspaces are configured;
//  - a program that neither STOREs nor writes data[] reads its window in
//    place (the translated, protection-checked node) instead of a copy.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "engine/access.h"
#include "engine/alu.h"
#include "engine/frame.h"
#include "engine/jit.h"
#include "pulse/engine.h"

namespace pulse {

namespace engine {

using isa::Opcode;
using isa::OperandKind;

// Every operand that needs no run-time check is "static": its bytes live at
// bases[base] + offset, where the bases are per iteration (registers, data
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

struct DecodedOperand {
  Mode mode = kModeNone;
  Base base = kBaseAbsolute;
  uint8_t slot = 0;          // the index register's slot in Frame::regs
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
  std::unique_ptr<JitProgram> jit;  // null: interpreted
  uint32_t window = 0;
  bool in_place = false;  // reads the window where it lies (no STORE, no data[] write)
  uint32_t in_use = 0;    // workspaces running it
};

namespace {

void DecodeOperand(const isa::Operand& op, unsigned width, DecodedOperand* d) {
  d->slot = static_cast<uint8_t>(RegSlot(op.reg));
  d->value = op.value;
  d->mode = kModeStatic;
  switch (op.kind) {
    case OperandKind::kNone: d->mode = kModeNone; break;
    case OperandKind::kImm:
      d->imm = alu::Truncate(static_cast<uint64_t>(op.value), width);
      d->base = kBaseAbsolute;
      d->value = static_cast<int64_t>(reinterpret_cast<uintptr_t>(&d->imm));
      break;
    case OperandKind::kReg: d->base = kBaseRegs; d->value = RegSlot(op.reg) * 8; d->is_register = true; break;
    case OperandKind::kCurPtr: d->base = kBaseRegs; d->value = kCurPtrSlot * 8; d->is_register = true; break;
    case OperandKind::kSp: d->base = kBaseSp; break;
    case OperandKind::kData: d->base = kBaseData; break;
    case OperandKind::kSpIdx: d->mode = kModeSpIdx; break;
    case OperandKind::kDataIdx: d->mode = kModeDataIdx; break;
    case OperandKind::kMem: d->mode = kModeMem; break;
  }
}

// True if no instruction writes far memory or the data window: the window
// may then be read where it lies instead of being snapshotted.
bool ReadsWindowInPlace(const std::vector<isa::Instruction>& insns) {
  for (size_t i = 1; i < insns.size(); ++i) {
    const isa::Instruction& in = insns[i];
    if (in.op == Opcode::kStore) return false;
    const bool writes_a = isa::IsAlu(in.op) || in.op == Opcode::kMove;
    if (writes_a && (in.a.kind == OperandKind::kData || in.a.kind == OperandKind::kDataIdx)) return false;
  }
  return true;
}

struct Workspace {
  Frame f;
  alignas(64) uint8_t data[isa::kMaxWindowBytes];  // the window's snapshot
};

}  // namespace
}  // namespace engine

using engine::DecodedInsn;
using engine::DecodedOperand;
using engine::DecodedProgram;
using engine::Frame;
using engine::kCurPtrSlot;
using engine::Workspace;
using isa::Opcode;

EngineKind DefaultEngineKind() { return engine::JitAvailable() ? EngineKind::kJit : EngineKind::kInterpreter; }

std::string_view EngineKindName(EngineKind kind) { return kind == EngineKind::kJit ? "jit" : "interp"; }

std::optional<EngineKind> EngineKindFromName(std::string_view name) {
  if (name == "jit") return EngineKind::kJit;
  if (name == "interp") return EngineKind::kInterpreter;
  return std::nullopt;
}

uint32_t ActiveWorkspacesFor(const EngineOptions& options) {
  const uint32_t n = options.workspaces == 0 ? 1 : options.workspaces;
  if (options.active_workspaces != kAutoActiveWorkspaces) return std::min(n, options.active_workspaces);
  // The engine that will run (a JIT request on a host without a backend interprets).
  const bool jit = options.engine == EngineKind::kJit && engine::JitAvailable();
  return jit ? std::min(n, kJitActiveWorkspaces) : n;  // measured: docs/engine.md, "The active set"
}

struct Pipeline::Impl {
  const RangeTable* table;
  EngineOptions options;
  bool jit = false;                      // options.engine, where a backend exists
  std::vector<Workspace> workspaces;
  std::vector<TraversalRequest> requests;  // one per workspace, cold
  std::vector<uint32_t> free_list;
  uint32_t active = 0;                   // admitted, not completed: slots + ready
  uint32_t turn = 1;                     // options.turn_rounds, at least 1
  uint32_t since_rotation = 0;           // rounds since the active set last rotated
  std::vector<uint32_t> slots;           // the active set: workspace indices, K entries
  uint32_t slot_count = 0;               // slots in use: [0, slot_count)
  uint32_t limit = 1;                    // K
  uint32_t hole = UINT32_MAX;            // a slot vacated while its completion runs
  std::vector<uint32_t> ready;           // FIFO ring of waiting workspaces, capacity W
  std::vector<uint32_t> failed;          // failed admissions without a slot (complete first)
  uint32_t ready_head = 0, ready_count = 0;
  uint64_t rounds = 0;
  const Range* last_range = nullptr;  // one-entry translation cache
  std::unordered_map<const VerifiedProgram*, std::unique_ptr<DecodedProgram>> decoded;
  // Decode()'s last answer: admissions in a row mostly run one program, and
  // the map's lookup was a visible part of the per-request cost.
  DecodedProgram* last_decoded = nullptr;
  uint64_t jit_programs = 0, jit_nanos = 0;
  uint64_t prefetches_issued = 0, prefetches_ignored = 0;

  const Range* Find(uint64_t addr) {
    if (last_range != nullptr && last_range->Contains(addr)) return last_range;
    const Range* r = table->Find(addr);
    if (r != nullptr) last_range = r;
    return r;
  }

  // The JIT's STORE and ALLOC: the interpreted path's code, behind a call.
  static uint32_t JitStore(Frame* f, uint64_t addr, uint64_t value, uint32_t width) {
    Impl* im = static_cast<Impl*>(f->engine);
    const Range* range = im->Find(addr);
    const TraversalStatus st = CheckAccess(range, f->tenant, kPermWrite, addr, width,
                                           TraversalStatus::kFaultInvalidPointer);
    if (st != TraversalStatus::kDone) {
      f->fault_addr = addr;
      return static_cast<uint32_t>(st);
    }
    alu::StoreBytes(range->Translate(addr), value, width);
    return 0;
  }

  static void JitPrefetch(Frame* f, uint64_t addr) { static_cast<Impl*>(f->engine)->PrefetchHint(*f, addr); }

  // PREFETCH [addr] (isa.h): start bringing the window a later iteration
  // would LOAD there, if the traversal's tenant may read it at this node;
  // anything else is ignored (a hint never faults).
  void PrefetchHint(const Frame& f, uint64_t addr) {
    const uint32_t window = f.prog->window;
    const Range* range = Find(addr);
    if (CheckAccess(range, f.tenant, kPermRead, addr, window, TraversalStatus::kNotLocal) !=
        TraversalStatus::kDone) {
      ++prefetches_ignored;
      return;
    }
    ++prefetches_issued;
    PrefetchWindow(range->Translate(addr), window);
  }

  static uint32_t JitAlloc(Frame* f, uint64_t table_off, uint32_t dst_reg) {
    return static_cast<uint32_t>(Alloc(*f, table_off, dst_reg));
  }

  // ALLOC rN, sp[table_off] (isa.h): pop the last pre-allocated region.
  static TraversalStatus Alloc(Frame& f, uint64_t table_off, unsigned dst_reg) {
    const uint64_t count = alu::LoadBytes(f.sp + table_off, 8);
    if (count == 0) return TraversalStatus::kAllocExhausted;
    const uint64_t slot = table_off + 8 + 8 * (count - 1);
    if (count > f.sp_len || slot + 8 > f.sp_len) return TraversalStatus::kFaultBounds;
    f.regs[engine::RegSlot(static_cast<int>(dst_reg))] = alu::LoadBytes(f.sp + slot, 8);
    alu::StoreBytes(f.sp + table_off, count - 1, 8);
    return TraversalStatus::kDone;
  }

  DecodedProgram* Decode(const ProgramRef& program) {
    // The entry holds a reference to its program: a pointer that matches is
    // that program, never a new one at a reused address.
    if (last_decoded != nullptr && last_decoded->program.get() == program.get()) return last_decoded;
    auto it = decoded.find(program.get());
    if (it != decoded.end()) return last_decoded = it->second.get();
    if (decoded.size() >= 1024) {  // bound the cache: drop programs not running
      last_decoded = nullptr;
      for (auto i = decoded.begin(); i != decoded.end();)
        i = i->second->in_use == 0 ? decoded.erase(i) : std::next(i);
    }
    auto d = std::make_unique<DecodedProgram>();
    d->program = program;
    d->window = program->info().window_bytes;
    const auto& insns = program->instructions();
    d->in_place = engine::ReadsWindowInPlace(insns);
    d->insns.resize(insns.size());
    for (size_t i = 0; i < insns.size(); ++i) {
      DecodedInsn& di = d->insns[i];
      di.op = insns[i].op;
      di.width = insns[i].width;
      engine::DecodeOperand(insns[i].a, insns[i].width, &di.a);
      engine::DecodeOperand(insns[i].b, insns[i].width, &di.b);
      if (isa::IsJump(di.op)) di.a.value = insns[i].a.value;  // a jump's target is an index
    }
    if (jit) {  // at admission, once per program: failure leaves it interpreted
      const auto t0 = std::chrono::steady_clock::now();
      auto code = engine::JitProgram::Compile(*program, engine::JitHooks{&JitStore, &JitAlloc, &JitPrefetch});
      jit_nanos += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - t0).count());
      if (code.ok()) {
        d->jit = std::move(*code);
        ++jit_programs;
      }
    }
    DecodedProgram* raw = d.get();
    decoded.emplace(program.get(), std::move(d));
    return last_decoded = raw;
  }

  // Memory pipeline: translate and check cur_ptr, then prefetch its window
  // (not for a traversal going to the ready queue: Enter prefetches it when
  // it takes a slot, and a prefetch now would be cold by then).
  TraversalStatus StartLoad(Frame& f, bool prefetch = true) {
    const uint64_t cur = f.regs[kCurPtrSlot];
    const uint32_t window = f.prog->window;
    const Range* range = Find(cur);
    const TraversalStatus st = CheckAccess(range, f.tenant, kPermRead, cur, window, TraversalStatus::kNotLocal);
    if (st != TraversalStatus::kDone) return st;
    const uint8_t* host = range->Translate(cur);
    f.window_src = host;
    if (prefetch) PrefetchWindow(host, window);
    return TraversalStatus::kDone;
  }

  static inline void PrefetchWindow(const uint8_t* host, uint32_t window) {
    const uintptr_t end = reinterpret_cast<uintptr_t>(host) + window;
    for (uintptr_t line = reinterpret_cast<uintptr_t>(host) & ~uintptr_t{63}; line < end; line += 64)
      __builtin_prefetch(reinterpret_cast<const void*>(line));
  }

  // Address of an operand's bytes, or nullptr if an indexed operand is out
  // of bounds.
  static inline uint8_t* Locate(Frame& f, const uintptr_t* bases, const DecodedOperand& o, unsigned w) {
    if (__builtin_expect(o.mode == engine::kModeStatic, 1))
      return reinterpret_cast<uint8_t*>(bases[o.base] + static_cast<uintptr_t>(o.value));
    const uint64_t off = f.regs[o.slot] + static_cast<uint64_t>(o.value);
    if (o.mode == engine::kModeSpIdx) {
      if (off > f.sp_len || w > f.sp_len - off) return nullptr;
      return f.sp + off;
    }
    if (off > f.prog->window || w > f.prog->window - off) return nullptr;
    return const_cast<uint8_t*>(f.data) + off;
  }

  static inline bool Read(Frame& f, const uintptr_t* bases, const DecodedOperand& o, unsigned w, uint64_t* v) {
    const uint8_t* p = Locate(f, bases, o, w);
    if (p == nullptr) return false;
    *v = w == 8 ? alu::LoadBytes(p, 8) : alu::LoadBytes(p, w);
    return true;
  }

  static inline bool Write(Frame& f, const uintptr_t* bases, const DecodedOperand& o, unsigned w, uint64_t v) {
    if (o.is_register) {  // registers and cur_ptr take the zero-extended value
      f.regs[o.value / 8] = v;
      return true;
    }
    uint8_t* p = Locate(f, bases, o, w);
    if (p == nullptr) return false;
    alu::StoreBytes(p, v, w);
    return true;
  }

  // The LOAD: snapshot the prefetched window into the workspace, a word at a
  // time (windows are small; a memcpy call costs more than the copy), or
  // point at it where it lies.
  static inline void LoadWindow(Workspace& ws) {
    const DecodedProgram& prog = *ws.f.prog;
    const uint8_t* src = ws.f.window_src;
    if (prog.in_place) {
      ws.f.data = src;
      return;
    }
    const uint32_t window = prog.window;
    uint32_t i = 0;
    for (; i + 8 <= window; i += 8) std::memcpy(ws.data + i, src + i, 8);
    for (; i < window; ++i) ws.data[i] = src[i];
  }

  // Logic pipeline, interpreted: runs one iteration on the loaded window.
  // Returns kDone with *next == true for NEXT_ITER, kDone with *next ==
  // false for RETURN, or the fault.
  TraversalStatus Iterate(Frame& f, bool* next, uint32_t* fault_pc, uint64_t* fault_addr) {
    const DecodedProgram& prog = *f.prog;
    const uintptr_t bases[engine::kNumBases] = {0, reinterpret_cast<uintptr_t>(f.regs),
                                                reinterpret_cast<uintptr_t>(f.data),
                                                reinterpret_cast<uintptr_t>(f.sp)};
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
          if (alu::JumpTaken(in.op, f.cmp_lhs, f.cmp_rhs, f.cmp_width)) {
            pc = static_cast<size_t>(in.a.value);
            continue;
          }
          break;
        case Opcode::kCompare:
          if (!Read(f, bases, in.a, w, &a) || !Read(f, bases, in.b, w, &b)) goto bounds;
          f.cmp_lhs = a;
          f.cmp_rhs = b;
          f.cmp_width = w;
          break;
        case Opcode::kMove:
          if (!Read(f, bases, in.b, w, &b) || !Write(f, bases, in.a, w, b)) goto bounds;
          break;
        case Opcode::kStore: {
          if (!Read(f, bases, in.b, w, &b)) goto bounds;
          const uint64_t addr = f.regs[in.a.slot] + static_cast<uint64_t>(in.a.value);
          const Range* range = Find(addr);
          const TraversalStatus st = CheckAccess(range, f.tenant, kPermWrite, addr, w,
                                                 TraversalStatus::kFaultInvalidPointer);
          if (st != TraversalStatus::kDone) {
            *fault_pc = static_cast<uint32_t>(pc);
            *fault_addr = addr;
            return st;
          }
          alu::StoreBytes(range->Translate(addr), b, w);
          break;
        }
        case Opcode::kPrefetch:
          PrefetchHint(f, f.regs[in.a.slot] + static_cast<uint64_t>(in.a.value));
          break;
        case Opcode::kAlloc: {
          const TraversalStatus st =
              Alloc(f, static_cast<uint64_t>(in.b.value), static_cast<unsigned>(in.a.slot - 1));
          if (st != TraversalStatus::kDone) {
            *fault_pc = static_cast<uint32_t>(pc);
            return st;
          }
          break;
        }
        default: {  // ALU: dst op= src
          if (!Read(f, bases, in.a, w, &a)) goto bounds;
          if (in.b.mode != engine::kModeNone && !Read(f, bases, in.b, w, &b)) goto bounds;
          uint64_t r;
          if (!alu::Compute(in.op, w, a, b, &r)) {
            *fault_pc = static_cast<uint32_t>(pc);
            return TraversalStatus::kFaultDivZero;
          }
          if (!Write(f, bases, in.a, w, r)) goto bounds;
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

  // One iteration of workspace ws, by the program's generated code when it
  // has some.
  TraversalStatus Step(Workspace& ws, bool* next, uint32_t* fault_pc, uint64_t* fault_addr) {
    LoadWindow(ws);
    const engine::JitProgram* code = ws.f.prog->jit.get();
    if (code == nullptr) return Iterate(ws.f, next, fault_pc, fault_addr);
    const engine::JitExit exit = code->Run(&ws.f);
    if (__builtin_expect(exit.code() <= engine::JitExit::kReturn, 1)) {
      *next = exit.code() == engine::JitExit::kNext;
      return TraversalStatus::kDone;
    }
    *fault_pc = exit.pc();
    *fault_addr = ws.f.fault_addr;  // nonzero only after a STORE fault
    return exit.status();
  }

  void PushReady(uint32_t index) {
    ready[(ready_head + ready_count) % ready.size()] = index;
    ++ready_count;
  }

  uint32_t PopReady() {
    const uint32_t index = ready[ready_head];
    ready_head = ready_head + 1 == ready.size() ? 0 : ready_head + 1;
    --ready_count;
    return index;
  }

  // Puts workspace `index` into slot s.  Its window was prefetched when it
  // last left a NEXT_ITER (or at admission), maybe long ago: prefetch it
  // again, a round before it runs.
  void Enter(uint32_t s, uint32_t index) {
    slots[s] = index;
    const Frame& f = workspaces[index].f;
    if (f.window_src != nullptr && f.prog != nullptr) PrefetchWindow(f.window_src, f.prog->window);
  }

  bool HasFreeSlot() const { return hole != UINT32_MAX || slot_count < limit; }

  // A new traversal in workspace `index`: the slot its predecessor just left
  // (it then runs a round after its window's prefetch, as before the active
  // set), else a free slot, else the back of the ready queue -- or, for a
  // failed admission without a slot, the failed list.
  void Activate(uint32_t index) {
    if (hole != UINT32_MAX) {
      slots[hole] = index;
      hole = UINT32_MAX;
    } else if (slot_count < limit) {
      slots[slot_count++] = index;
    } else if (workspaces[index].f.pending != TraversalStatus::kDone) {
      failed.push_back(index);
    } else {
      PushReady(index);
    }
  }

  // Every `turn` rounds while traversals wait, the first min(K, waiting)
  // slots go to the longest-waiting workspaces and their workspaces to the
  // back of the queue: the queue advances K places per turn, so nothing
  // waits longer than ceil(waiting / K) turns.
  void RotateIfDue() {
    if (ready_count == 0) {
      since_rotation = 0;
      return;
    }
    if (++since_rotation < turn) return;
    since_rotation = 0;
    const uint32_t n = std::min(slot_count, ready_count);
    for (uint32_t s = 0; s < n; ++s) {
      const uint32_t out = slots[s];
      Enter(s, PopReady());
      PushReady(out);
    }
  }

  // Slot s's traversal ended.
  void Finish(uint32_t s, TraversalStatus status, uint32_t fault_pc, uint64_t fault_addr,
              const CompletionFn& done) {
    const uint32_t index = slots[s];
    // The slot goes to the longest-waiting workspace; with none waiting it
    // is held for an admission from `done`, and closed if none comes.
    if (ready_count > 0) {
      Enter(s, PopReady());
    } else {
      hole = s;
    }
    Complete(index, status, fault_pc, fault_addr, done);
    if (hole != UINT32_MAX) {  // no admission: the last slot moves in (it waits a round)
      slots[hole] = slots[--slot_count];
      hole = UINT32_MAX;
    }
  }

  // Admissions that failed while the active set was full: they complete at
  // once, not after a wait in the ready queue.
  void CompleteFailedAdmissions(const CompletionFn& done) {
    while (!failed.empty()) {
      const uint32_t index = failed.back();
      failed.pop_back();
      const Frame& f = workspaces[index].f;
      Complete(index, f.pending, 0, f.pending_addr, done);
    }
  }

  // Frees workspace `index` and hands its request to `done`.
  void Complete(uint32_t index, TraversalStatus status, uint32_t fault_pc, uint64_t fault_addr,
                const CompletionFn& done) {
    Frame& f = workspaces[index].f;
    TraversalRequest& req = requests[index];
    TraversalOutcome out;
    out.status = status;
    out.iterations = f.iterations;
    out.fault_pc = fault_pc;
    out.fault_addr = fault_addr;
    req.state.cur_ptr = f.regs[kCurPtrSlot];
    req.state.iterations += f.iterations;
    if (f.prog != nullptr) --f.prog->in_use;
    f.prog = nullptr;
    --active;
    free_list.push_back(index);
    TraversalRequest request = std::move(req);
    done(std::move(request), out);
  }
};

Pipeline::Pipeline(const RangeTable* table, const EngineOptions& options) : impl_(new Impl) {
  impl_->table = table;
  impl_->options = options;
  impl_->jit = options.engine == EngineKind::kJit && engine::JitAvailable();
  const uint32_t n = options.workspaces == 0 ? 1 : options.workspaces;
  impl_->workspaces.resize(n);
  impl_->requests.resize(n);
  for (uint32_t i = n; i-- > 0;) impl_->free_list.push_back(i);
  impl_->limit = ActiveWorkspacesFor(options);
  impl_->turn = std::max<uint32_t>(options.turn_rounds, 1);
  impl_->slots.resize(impl_->limit);
  impl_->ready.resize(n);
  impl_->failed.reserve(n);
}

Pipeline::~Pipeline() = default;

bool Pipeline::HasFreeWorkspace() const { return !impl_->free_list.empty(); }
void Pipeline::OnRangeTableChanged() { impl_->last_range = nullptr; }
uint32_t Pipeline::active() const { return impl_->active; }
uint32_t Pipeline::capacity() const { return static_cast<uint32_t>(impl_->workspaces.size()); }
uint32_t Pipeline::active_limit() const { return impl_->limit; }
uint64_t Pipeline::rounds() const { return impl_->rounds; }
EngineKind Pipeline::engine() const { return impl_->jit ? EngineKind::kJit : EngineKind::kInterpreter; }
uint64_t Pipeline::jit_compiled_programs() const { return impl_->jit_programs; }
uint64_t Pipeline::jit_compile_nanos() const { return impl_->jit_nanos; }
uint64_t Pipeline::prefetches_issued() const { return impl_->prefetches_issued; }
uint64_t Pipeline::prefetches_ignored() const { return impl_->prefetches_ignored; }

void Pipeline::Admit(TraversalRequest&& request) {
  Impl& im = *impl_;
  const uint32_t index = im.free_list.back();
  im.free_list.pop_back();
  Workspace& ws = im.workspaces[index];
  TraversalRequest& req = im.requests[index];
  req = std::move(request);
  Frame& f = ws.f;
  ++im.active;
  const bool slotted = im.HasFreeSlot();
  f.iterations = 0;
  f.max_iterations = req.max_iterations != 0 ? req.max_iterations : im.options.max_iterations;
  f.regs[kCurPtrSlot] = req.state.cur_ptr;
  f.sp = req.state.scratch.data();
  f.sp_len = req.state.scratch.size();
  f.data = ws.data;
  f.cmp_lhs = f.cmp_rhs = f.cmp_slhs = f.cmp_srhs = 0;  // as the interpreter starts
  f.cmp_width = 8;
  f.fault_addr = 0;
  f.engine = &im;
  f.tenant = req.tenant;
  f.pending = TraversalStatus::kDone;
  f.pending_addr = 0;
  f.prog = nullptr;
  f.window_src = nullptr;
  if (!req.program || f.sp_len < req.program->info().scratch_bytes || f.sp_len > im.options.scratch_pad_bytes) {
    f.pending = TraversalStatus::kFaultBadRequest;
  } else {
    f.prog = im.Decode(req.program);
    ++f.prog->in_use;
    if (f.max_iterations == 0) {
      f.pending = TraversalStatus::kContinue;
    } else {
      f.pending = im.StartLoad(f, slotted);
      if (f.pending != TraversalStatus::kDone) f.pending_addr = f.regs[kCurPtrSlot];
    }
  }
  im.Activate(index);
}

uint64_t Pipeline::Run(const CompletionFn& done, uint64_t max_iterations_budget) {
  Impl& im = *impl_;
  uint64_t executed = 0;
  Workspace* const wss = im.workspaces.data();
  const uint32_t* const slots = im.slots.data();
  while (im.active > 0 && executed < max_iterations_budget) {
    ++im.rounds;
    im.CompleteFailedAdmissions(done);
    // One round over the active set.  A finished traversal's slot goes to a
    // waiting or newly admitted workspace (which runs next round), or the
    // last slot moves into it: the set changes only behind the cursor, and
    // only in Finish (`count` is re-read after it).
    uint32_t count = im.slot_count;
    auto finish = [&](uint32_t s, TraversalStatus status, uint32_t fault_pc, uint64_t fault_addr) {
      im.Finish(s, status, fault_pc, fault_addr, done);
      count = im.slot_count;
    };
    for (uint32_t s = 0; s < count; ++s) {
      // The next slot's frame (lines 0 and 3) and scratch pad: in cache by
      // the time this one's iteration is done.
      const Workspace& ahead = wss[slots[s + 1 < count ? s + 1 : 0]];
      __builtin_prefetch(&ahead.f);
      __builtin_prefetch(&ahead.f.cmp_srhs);
      __builtin_prefetch(ahead.f.sp);
      Workspace& ws = wss[slots[s]];
      Frame& f = ws.f;
      if (f.pending != TraversalStatus::kDone) {
        finish(s, f.pending, 0, f.pending_addr);
        continue;
      }
      bool next = false;
      uint32_t fault_pc = 0;
      uint64_t fault_addr = 0;
      const TraversalStatus st = im.Step(ws, &next, &fault_pc, &fault_addr);
      if (st != TraversalStatus::kDone) {
        finish(s, st, fault_pc, fault_addr);
        continue;
      }
      ++executed;
      ++f.iterations;
      if (!next) {
        finish(s, TraversalStatus::kDone, 0, 0);
      } else if (f.iterations >= f.max_iterations) {
        finish(s, TraversalStatus::kContinue, 0, 0);
      } else {
        const TraversalStatus load = im.StartLoad(f);
        if (load != TraversalStatus::kDone) finish(s, load, 0, f.regs[kCurPtrSlot]);
      }
    }
    im.RotateIfDue();
  }
  return executed;
}

}  // namespace pulse
