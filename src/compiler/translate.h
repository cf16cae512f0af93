// Translation of one BPF function (an iterator's end() or next()) into pulse
// instructions, driven by a forward abstract interpretation of the BPF
// registers (kind: number / context pointer / stack pointer, and value
// range).  Internal to the iterator compiler.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "compiler/bpf_insn.h"
#include "compiler/diagnostics.h"
#include "compiler/elf_reader.h"
#include "pulse/isa.h"

namespace pulse::compiler {

enum class Role { kEnd, kNext };

// Where a jump goes, before the two functions are laid out together.
enum class Target : uint8_t {
  kNone,
  kIndex,      // insn.a.value: an index into this function's code
  kEndReturn,  // a RETURN placed after end()'s code
  kNextStart,  // the first instruction of next()
};

struct Emitted {
  isa::Instruction insn;
  Target target = Target::kNone;
  int bpf_slot = -1;
  // sp operands whose offset is relative to the BPF frame pointer; the
  // linker adds the stack area's position.
  bool stack_a = false;
  bool stack_b = false;
  // Bytes of the window / of the (non-stack) scratch pad this instruction
  // may touch, from the range analysis (meaningful for indexed operands).
  uint32_t data_extent = 0;
  uint32_t scratch_extent = 0;
  bool scratch_unbounded = false;
  int64_t stack_low = 0;  // lowest frame offset touched (<= 0)
};

struct FunctionInput {
  FunctionRef ref;
  Role role = Role::kEnd;
  std::vector<BpfInsn> insns;           // the function's slots
  std::map<int, ElfRelocation> relocs;  // by slot (relative to the function)
};

struct TranslateOptions {
  uint32_t scratch_pad_bytes = isa::kDefaultScratchPadBytes;
};

// Translates `fn`.  Problems go to `diags`; returns false if there was an
// error (then *out is incomplete).
bool TranslateFunction(const FunctionInput& fn, const TranslateOptions& options,
                       DiagnosticSink* diags, std::vector<Emitted>* out);

}  // namespace pulse::compiler
