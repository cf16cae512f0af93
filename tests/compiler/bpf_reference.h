// A reference BPF interpreter for differential tests of the translator: it
// runs an iterator's end()/next() exactly as the BPF instructions say, on a
// struct pulse_ctx in host memory, so one iteration can be compared with the
// translated pulse program run by InterpretTraversal.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compiler/bpf_insn.h"
#include "compiler/elf_reader.h"

namespace pulse::testing {

struct FarWrite {
  uint64_t addr;
  uint64_t value;
  int bytes;
  bool operator==(const FarWrite&) const = default;
};

// What a reference run did that pulse defines differently (a fault where
// BPF goes on): see include/pulse/iterator.h.
struct BpfRunNotes {
  bool divided_by_zero = false;  // a DIV/MOD by zero (BPF: 0 / the dividend; pulse: a fault)
  // The highest ctx offset a load of the node window reached: a load below
  // the scratch pad, or one through a pointer into the window plus an index
  // (as the translator reads data[rN+off]) wherever it landed.
  uint64_t ctx_data_end = 0;
  // Frame offsets (below r10, negative) of the 8-byte stack slots that hold
  // a pointer into the context or the stack when the run ends.  Such a slot
  // holds a host address here and the translator's offset in pulse: neither
  // is a number the program can read back (the translator refuses it), so a
  // comparison of the stack leaves these bytes out.  Kept across the end()
  // and next() runs of one iteration, which share the frame.
  std::vector<int64_t> pointer_slots;
};

class BpfReference {
 public:
  // Where the scratch pad starts in the context (PULSE_CTX_SCRATCH_OFFSET).
  static constexpr uint64_t kCtxScratchOffset = 16384;

  // The value BPF ALU `op` (not kBpfEnd) leaves in the destination register
  // (32-bit ops: zero-extended); division by zero gives 0, remainder by zero
  // leaves the dividend, shift counts are taken modulo the width.  nullopt
  // for an unknown op.
  static std::optional<uint64_t> Alu(uint8_t op, bool is32, uint64_t d, uint64_t s) {
    using namespace compiler;
    if (is32) {
      d &= 0xffffffffu;
      s &= 0xffffffffu;
    }
    const unsigned shift_mask = is32 ? 31 : 63;
    uint64_t res = 0;
    switch (op) {
      case kBpfAdd: res = d + s; break;
      case kBpfSub: res = d - s; break;
      case kBpfMul: res = d * s; break;
      case kBpfDiv: res = s ? d / s : 0; break;
      case kBpfMod: res = s ? d % s : d; break;
      case kBpfOr: res = d | s; break;
      case kBpfAnd: res = d & s; break;
      case kBpfXor: res = d ^ s; break;
      case kBpfLsh: res = d << (s & shift_mask); break;
      case kBpfRsh: res = d >> (s & shift_mask); break;
      case kBpfArsh:
        res = is32 ? static_cast<uint32_t>(static_cast<int32_t>(d) >> (s & 31))
                   : static_cast<uint64_t>(static_cast<int64_t>(d) >> (s & 63));
        break;
      case kBpfNeg: res = 0 - d; break;
      case kBpfMov: res = s; break;
      default: return std::nullopt;
    }
    return is32 ? (res & 0xffffffffu) : res;
  }

  // Whether conditional jump `op` (not call/exit) is taken for registers a, b.
  // nullopt for an unknown op.
  static std::optional<bool> Jump(uint8_t op, bool is32, uint64_t a, uint64_t b) {
    using namespace compiler;
    int64_t sa = static_cast<int64_t>(a), sb = static_cast<int64_t>(b);
    if (is32) {
      a &= 0xffffffffu;
      b &= 0xffffffffu;
      sa = static_cast<int32_t>(a);
      sb = static_cast<int32_t>(b);
    }
    switch (op) {
      case kBpfJa: return true;
      case kBpfJeq: return a == b;
      case kBpfJne: return a != b;
      case kBpfJgt: return a > b;
      case kBpfJge: return a >= b;
      case kBpfJlt: return a < b;
      case kBpfJle: return a <= b;
      case kBpfJsgt: return sa > sb;
      case kBpfJsge: return sa >= sb;
      case kBpfJslt: return sa < sb;
      case kBpfJsle: return sa <= sb;
      case kBpfJset: return (a & b) != 0;
      default: return std::nullopt;
    }
  }

  // Runs the code on ctx (cur_ptr, data[256], scratch pad).  Returns r0, or
  // nullopt (with *error) on anything the tests do not expect.  Stores to
  // addresses outside ctx and the stack are recorded in *writes; `notes`, if
  // given, collects what pulse would have stopped at (BpfRunNotes).  The
  // stack starts zeroed, except that its top frame.size() bytes (those just
  // below r10, at most the stack's size) start as `frame` and are copied back
  // there when the run ends: BPF leaves stack bytes read before they are
  // written undefined, and a caller can give them the value the translated
  // program sees (the scratch pad bytes its stack area holds).
  static std::optional<uint64_t> Run(std::span<const compiler::BpfInsn> code, uint8_t* ctx,
                                     size_t ctx_bytes, std::vector<FarWrite>* writes,
                                     std::string* error, BpfRunNotes* notes = nullptr,
                                     std::span<uint8_t> frame = {}) {
    alignas(8) uint8_t stack[compiler::kBpfStackBytes] = {};
    frame = frame.first(std::min(frame.size(), sizeof(stack)));
    uint8_t* const frame_in_stack = stack + sizeof(stack) - frame.size();
    std::copy(frame.begin(), frame.end(), frame_in_stack);
    std::optional<uint64_t> r0 = RunOn(code, ctx, ctx_bytes, stack, writes, error, notes);
    std::copy(frame_in_stack, frame_in_stack + frame.size(), frame.begin());
    return r0;
  }

 private:
  // The ctx anchor of an ALU instruction's destination (see RunOn), from the
  // anchors of its destination and register source before it.
  static std::optional<int64_t> CtxAnchorAfter(const compiler::BpfInsn& in, std::optional<int64_t> dst,
                                               std::optional<int64_t> src) {
    using namespace compiler;
    if (in.cls() != kBpfAlu64) return std::nullopt;
    switch (in.op()) {
      case kBpfMov: return src;
      case kBpfAdd:
        if (!in.src_is_reg()) return dst ? std::optional<int64_t>(*dst + in.imm) : std::nullopt;
        return dst && !src ? dst : !dst ? src : std::nullopt;
      case kBpfSub:
        if (!in.src_is_reg()) return dst ? std::optional<int64_t>(*dst - in.imm) : std::nullopt;
        return src ? std::nullopt : dst;
      default: return std::nullopt;
    }
  }

  static std::optional<uint64_t> RunOn(std::span<const compiler::BpfInsn> code, uint8_t* ctx, size_t ctx_bytes,
                                       uint8_t (&stack)[compiler::kBpfStackBytes], std::vector<FarWrite>* writes,
                                       std::string* error, BpfRunNotes* notes) {
    using namespace compiler;
    uint64_t r[11] = {};
    // For registers pointing into ctx: the ctx offset of the array they index
    // (the offset before a register was added), as the translator tells the
    // window from the scratch pad by it.
    std::optional<int64_t> anchor[11];
    anchor[1] = 0;
    r[1] = reinterpret_cast<uint64_t>(ctx);
    r[10] = reinterpret_cast<uint64_t>(stack + sizeof(stack));
    auto inside = [&](uint64_t a, int n, const uint8_t* base, size_t size) {
      // Without overflow: an address near 2^64 plus n wraps past zero.
      const uint64_t b = reinterpret_cast<uint64_t>(base);
      return a >= b && a - b <= size && static_cast<uint64_t>(n) <= size - (a - b);
    };
    size_t pc = 0;
    for (int steps = 0; steps < 100000; ++steps) {
      if (pc >= code.size()) break;
      const BpfInsn& in = code[pc];
      const bool is32 = in.cls() == kBpfAlu || in.cls() == kBpfJmp32;
      const uint64_t src = in.src_is_reg() ? r[in.src] : static_cast<uint64_t>(int64_t{in.imm});
      switch (in.cls()) {
        case kBpfLd:
          r[in.dst] = static_cast<uint64_t>(in.imm64);
          anchor[in.dst].reset();
          pc += 2;
          continue;
        case kBpfLdx: {
          const int n = BpfSizeBytes(in.size());
          const uint64_t a = r[in.src] + static_cast<int64_t>(in.off);
          if (!inside(a, n, ctx, ctx_bytes) && !inside(a, n, stack, sizeof(stack))) {
            *error = "load outside ctx/stack at " + std::to_string(pc);
            return std::nullopt;
          }
          const bool window_indexed =
              anchor[in.src] && *anchor[in.src] + in.off >= 8 && *anchor[in.src] + in.off < 8 + 256;
          if (notes && inside(a, n, ctx, ctx_bytes) &&
              (window_indexed || a - reinterpret_cast<uint64_t>(ctx) < kCtxScratchOffset))
            notes->ctx_data_end = std::max(notes->ctx_data_end, a - reinterpret_cast<uint64_t>(ctx) + n);
          uint64_t v = 0;
          std::memcpy(&v, reinterpret_cast<const void*>(a), n);
          r[in.dst] = v;
          anchor[in.dst].reset();
          break;
        }
        case kBpfSt:
        case kBpfStx: {
          const int n = BpfSizeBytes(in.size());
          const uint64_t a = r[in.dst] + static_cast<int64_t>(in.off);
          const uint64_t v = in.cls() == kBpfSt ? static_cast<uint64_t>(int64_t{in.imm}) : r[in.src];
          if (inside(a, n, ctx, ctx_bytes) || inside(a, n, stack, sizeof(stack))) {
            std::memcpy(reinterpret_cast<void*>(a), &v, n);
            if (notes && inside(a, n, stack, sizeof(stack))) {
              const int64_t at = static_cast<int64_t>(a - reinterpret_cast<uint64_t>(stack + sizeof(stack)));
              std::erase_if(notes->pointer_slots, [&](int64_t p) { return p < at + n && p + 8 > at; });
              if (n == 8 && in.cls() == kBpfStx && (inside(v, 0, ctx, ctx_bytes) || inside(v, 0, stack, sizeof(stack))))
                notes->pointer_slots.push_back(at);
            }
          } else {
            writes->push_back({a, n == 8 ? v : v & ((uint64_t{1} << (8 * n)) - 1), n});
          }
          break;
        }
        case kBpfAlu:
        case kBpfAlu64: {
          uint64_t res = 0;
          if (in.op() == kBpfEnd) {
            res = in.imm == 16 ? (r[in.dst] & 0xffff) : in.imm == 32 ? (r[in.dst] & 0xffffffffu) : r[in.dst];
          } else if (auto v = Alu(in.op(), is32, r[in.dst], src)) {
            if (notes && (in.op() == kBpfDiv || in.op() == kBpfMod) && (is32 ? (src & 0xffffffffu) : src) == 0)
              notes->divided_by_zero = true;
            res = *v;
          } else {
            *error = "unsupported ALU op";
            return std::nullopt;
          }
          // A byte-order conversion (to little endian: a truncation) sets
          // all 64 bits; le64 is in the 32-bit ALU class but changes nothing.
          r[in.dst] = is32 && in.op() != kBpfEnd ? (res & 0xffffffffu) : res;
          anchor[in.dst] = CtxAnchorAfter(in, anchor[in.dst], in.src_is_reg() ? anchor[in.src] : std::nullopt);
          break;
        }
        default: {  // JMP / JMP32
          if (in.op() == kBpfExit) return r[0];
          if (in.op() == kBpfCall) {
            // PULSE_PREFETCH changes nothing; like any call it leaves r0..r5
            // undefined (poisoned here, so code relying on them shows).
            if (in.src != 0 || in.imm != compiler::kPulseHelperPrefetch) {
              *error = "call";
              return std::nullopt;
            }
            for (int k = 0; k <= 5; ++k) {
              r[k] = 0xca11ed0000000000ull | static_cast<uint64_t>(k);
              anchor[k].reset();
            }
            break;
          }
          const std::optional<bool> take = Jump(in.op(), is32, r[in.dst], src);
          if (!take) {
            *error = "unsupported jump";
            return std::nullopt;
          }
          if (*take) {
            pc = pc + 1 + in.off;
            continue;
          }
          break;
        }
      }
      ++pc;
    }
    *error = "ran off the end or too long";
    return std::nullopt;
  }
};

// The end() and next() code of an iterator in a BPF object, found as the
// translator finds it (compiler::FunctionCodeIn).
struct BpfIterator {
  std::vector<compiler::BpfInsn> end, next;

  static std::optional<BpfIterator> FromObject(std::span<const uint8_t> object, const std::string& name) {
    auto obj = compiler::ReadElfObject(object);
    if (!obj.ok()) return std::nullopt;
    BpfIterator it;
    std::string err;
    const auto* e = obj->Find("pulse/end/" + name);
    const auto* n = obj->Find("pulse/next/" + name);
    if (!e || !n) return std::nullopt;
    auto end_code = compiler::FunctionCodeIn(*obj, *e);
    auto next_code = compiler::FunctionCodeIn(*obj, *n);
    if (!end_code.ok() || !next_code.ok() || !compiler::DecodeBpf(end_code->bytes, &it.end, &err) ||
        !compiler::DecodeBpf(next_code->bytes, &it.next, &err))
      return std::nullopt;
    return it;
  }
};

}  // namespace pulse::testing
