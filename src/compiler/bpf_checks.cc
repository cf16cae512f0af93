#include "compiler/bpf_checks.h"

#include <fmt/format.h>

#include "compiler/opcode_map.h"

namespace pulse::compiler {
namespace {

void CheckCall(const FunctionInput& fn, DiagnosticSink* diags, int slot, const BpfInsn& in,
               const ElfRelocation* reloc) {
  auto error = [&](std::string msg) { diags->Error(fn.ref, slot, std::move(msg)); };
  const std::string recursion = fmt::format(
      "recursion: {}() calls itself; iterator functions cannot recurse (express the recursion "
      "as iterations)",
      fn.ref.symbol);
  if (reloc) {
    if (reloc->symbol == fn.ref.symbol) {
      error(recursion);
    } else {
      error(fmt::format("calls function '{}', which clang did not inline: iterator code cannot "
                        "make calls; make it `static inline __attribute__((always_inline))` "
                        "(PULSE_INLINE) and avoid recursion",
                        reloc->symbol));
    }
  } else if (in.src == 1) {  // BPF_PSEUDO_CALL, pc-relative
    const int target = slot + 1 + in.imm;
    if (target == 0) {
      error(recursion);
    } else {
      error(fmt::format("calls a local function at instruction {} that clang did not inline: "
                        "iterator code cannot make calls",
                        target));
    }
  } else if (in.src == 2) {
    error(fmt::format("calls kernel function #{}: not available near memory", in.imm));
  } else {
    error(fmt::format("calls BPF helper #{}: helpers are not available near memory", in.imm));
  }
}

}  // namespace

bool CheckInstructions(const FunctionInput& fn, DiagnosticSink* diags, bool* jumps_ok) {
  const int n = static_cast<int>(fn.insns.size());
  *jumps_ok = true;
  bool ok = true;
  auto bad = [&](int slot, std::string msg) {
    ok = false;
    diags->Error(fn.ref, slot, std::move(msg));
  };
  if (n == 0) {
    *jumps_ok = false;
    bad(-1, "the function has no instructions");
    return false;
  }
  for (int slot = 0; slot < n; ++slot) {
    const BpfInsn& in = fn.insns[slot];
    if (in.slots == 0) continue;
    if (in.dst >= kBpfNumRegisters || in.src >= kBpfNumRegisters) {
      *jumps_ok = false;  // not clang output: do not look further
      bad(slot, "invalid register number");
      continue;
    }
    const bool writes_dst = in.cls() == kBpfLd || in.cls() == kBpfLdx || in.cls() == kBpfAlu || in.cls() == kBpfAlu64;
    if (writes_dst && in.dst == kBpfFramePointer) {
      bad(slot, "writes the frame pointer r10 (read-only in BPF)");
      continue;
    }
    auto reloc = fn.relocs.find(slot);
    switch (in.cls()) {
      case kBpfLd:
        if (!in.is_ld_imm64()) {
          bad(slot, "legacy packet load (BPF_ABS/BPF_IND) is not supported");
        } else if (reloc != fn.relocs.end()) {
          bad(slot, fmt::format(
                        "uses global data '{}' (in section {}): iterators cannot use global or "
                        "static variables, constant tables or string literals; keep such data "
                        "in the node or the scratch pad",
                        reloc->second.symbol, reloc->second.target));
        } else if (in.src != 0) {
          bad(slot, fmt::format("loads a map or BTF object (ld_imm64 pseudo source {})", in.src));
        }
        break;
      case kBpfLdx:
        if (in.mode() == kBpfMemsx)
          bad(slot, "sign-extending loads (BPF cpu v4) are not supported");
        else if (in.mode() != kBpfMem)
          bad(slot, fmt::format("load mode {:#04x} is not supported", in.mode()));
        break;
      case kBpfSt:
      case kBpfStx:
        if (in.mode() == kBpfAtomic)
          bad(slot, "atomic memory operations are not supported");
        else if (in.mode() != kBpfMem)
          bad(slot, fmt::format("store mode {:#04x} is not supported", in.mode()));
        break;
      case kBpfAlu:
      case kBpfAlu64:
        if (in.op() == kBpfEnd) {
          if (in.src_is_reg() || in.cls() == kBpfAlu64)
            bad(slot, "byte swaps (bswap/htons/be64toh) are not supported");
          else if (in.imm != 16 && in.imm != 32 && in.imm != 64)
            bad(slot, fmt::format("byte-order conversion to {} bits: BPF defines 16, 32 and 64", in.imm));
        } else if (!PulseAluOp(in.op())) {
          bad(slot, fmt::format("ALU operation {:#04x} is not supported", in.op()));
        } else if (in.off != 0) {
          bad(slot, "signed division and sign-extending moves (BPF cpu v4) are not supported");
        }
        break;
      case kBpfJmp:
      case kBpfJmp32:
        if (in.op() == kBpfCall) {
          const bool prefetch = in.cls() == kBpfJmp && in.src == 0 && in.imm == kPulseHelperPrefetch &&
                                reloc == fn.relocs.end();
          if (!prefetch) {
            CheckCall(fn, diags, slot, in, reloc == fn.relocs.end() ? nullptr : &reloc->second);
            ok = false;
          }
        } else if (in.op() == kBpfExit) {
          if (in.cls() == kBpfJmp32) bad(slot, "invalid instruction (JMP32 exit)");
        } else if (in.cls() == kBpfJmp32 && in.op() == kBpfJa) {
          bad(slot, "long jumps (BPF cpu v4 gotol) are not supported");
        } else if (in.op() != kBpfJa && !PulseJumpOp(in.op())) {
          bad(slot, fmt::format("jump operation {:#04x} is not supported", in.op()));
        }
        // Every branch's target, also of unsupported ones: the control-flow
        // graph is built from all of them.
        if (in.is_branch()) {
          const int target = slot + 1 + in.off;
          if (target < 0) {
            *jumps_ok = false;
            bad(slot, fmt::format("jump to instruction {} outside the function", target));
          } else if (target > n || (target < n && fn.insns[target].slots == 0)) {
            *jumps_ok = false;
            bad(slot, fmt::format("jump to instruction {} outside the function", target));
          }
        }
        break;
      default:
        bad(slot, fmt::format("unknown instruction class (code {:#04x})", in.code));
    }
  }
  return ok;
}

}  // namespace pulse::compiler
