// The iterator compiler: end() and next() written in restricted C against
// pulse/iterator.h -> `clang -O2 -target bpf` -> BPF ELF object -> pulse ISA
// -> a verified program (seed 000/001 section 4.1).
//
//   auto it = pulse::CompileIteratorFile("umap_find.c", {});
//   if (!it.ok()) { std::cerr << it.status().message(); ... }
//   auto program = pulse::VerifiedProgram::FromBytes(it->encoded);
//
// What the translator does:
//  - finds the iterator's functions by ELF section ("pulse/end/<name>",
//    "pulse/next/<name>", as PULSE_END/PULSE_NEXT place them);
//  - translates BPF ALU64/ALU32 to 8/4-byte pulse ALU ops, JMP/JMP32 to
//    COMPARE + forward JUMP_xx, loads and stores relative to the context to
//    cur_ptr / data[off] / sp[off] (register-indexed data[rN+off] / sp[rN+off]
//    when a computed index is added to a context pointer: the pulse register
//    then holds the context offset), and stores through any other pointer to
//    far-memory STORE [rN+off];
//  - infers, by a range analysis of every register, the bytes of the node
//    window end() and next() can read and emits one `LOAD data, N` (N <= 256)
//    at the start of the iteration;
//  - lays the iteration out as LOAD; end() (nonzero -> RETURN); next()
//    (its return value -> MOVE cur_ptr; NEXT_ITER), then threads jumps,
//    propagates copies and removes dead code;
//  - verifies the result (VerifyProgram) and reports ProgramInfo, whose
//    longest_path is N in the offload rule t_c = t_i * N.
// BPF registers r0-r9 are pulse r0-r9; pulse r10-r15 are reserved for the
// translator.  BPF stack slots (r10-relative; clang uses them for spills and
// local arrays) live in the scratch pad at [stack_offset, stack_offset +
// stack_bytes): by default just past the highest scratch byte the iterator
// itself accesses.  A stack byte read before the function writes it (BPF
// leaves it undefined; clang may read struct padding so) is what the scratch
// pad holds there: next() sees what end() left.  The slots are zeroed before
// every NEXT_ITER and RETURN (they are dead then), so they never ride in a
// message (messages carry the pad without its zero tail), unless that would
// make the iteration longer than the verifier's limit (stack_cleared says).
//
// Rejected, with a diagnostic naming the iterator, the function (end/next),
// the BPF instruction index and text, and with -g the source line: backward
// jumps (loops clang could not unroll), calls (helpers, functions that were
// not inlined, recursion), global data, reads through pointers other than
// the context, accesses outside the context (a node window beyond 256 bytes,
// the scratch pad beyond its size, writes to cur_ptr or to the window),
// a pointer into the context or the stack used as a number (stored anywhere
// but a whole stack slot, or such a slot's bytes read back other than whole
// into a register: the translated pointer is an offset, not an address),
// instructions with no pulse equivalent (byte swaps, atomics, packet loads),
// and damaged objects (a code section that is not whole 8-byte
// instructions, a function symbol outside its section).
//
// All functions are thread-safe (each call uses its own temporary files).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pulse/isa.h"
#include "pulse/program.h"
#include "pulse/status.h"

namespace pulse {

struct CompileOptions {
  // The iterator to compile (NAME in PULSE_END(NAME, ...)); empty: the file
  // must define exactly one.
  std::string iterator;
  // clang: the executable (empty: $PULSE_CLANG, else the first of clang,
  // clang-14 .. clang-19 on PATH), -I directories (pulse's own include
  // directory is always added), -D definitions (NAME or NAME=VALUE), and
  // anything else to pass.
  std::string clang;
  std::vector<std::string> include_dirs;
  std::vector<std::string> defines;
  std::vector<std::string> extra_clang_args;
  bool debug_info = true;   // -g: source lines in diagnostics (.BTF.ext)
  std::string depfile;      // if set, clang writes a Make-style depfile here,
  std::string depfile_target;  // naming this rule target (default: the object)
  // The scratch pad the program runs with (static sp accesses must fit).
  uint32_t scratch_pad_bytes = isa::kDefaultScratchPadBytes;
  // Where BPF stack slots go in the scratch pad; nullopt: right after the
  // iterator's own scratch bytes (rounded up to 8).
  std::optional<uint32_t> stack_offset;
  // Jump threading, copy propagation and dead-code elimination.
  bool optimize = true;
};

struct CompileDiagnostic {
  enum class Severity : uint8_t { kError, kWarning };
  Severity severity = Severity::kError;
  std::string iterator;   // the iterator's name
  std::string function;   // "end" or "next"; empty for whole-object problems
  std::string symbol;     // the ELF symbol of the function
  int bpf_insn = -1;      // BPF instruction (8-byte slot) index in the function
  std::string bpf_text;   // that instruction, llvm-objdump style
  std::string file;       // source position (with debug info)
  int line = 0;
  int column = 0;
  std::string source;     // the source line's text
  std::string message;

  // "file:line:col: error: iterator 'x' end(), BPF instruction 5
  //  (`r2 = *(u64 *)(r3 + 0)`): message" plus the source line.
  std::string ToString() const;
};

struct CompiledIterator {
  std::string name;
  std::vector<isa::Instruction> program;  // passes VerifyProgram
  std::vector<uint8_t> encoded;           // EncodeProgram(program): a .pulse file
  ProgramInfo info;                       // from VerifyProgram
  uint32_t end_bpf_insns = 0;             // BPF instructions in end() / next()
  uint32_t next_bpf_insns = 0;
  uint32_t stack_offset = 0;              // scratch pad bytes holding BPF stack
  uint32_t stack_bytes = 0;               // slots (0: no stack use)
  bool stack_cleared = false;             // slots zeroed before every terminal (left
                                          // out where it would exceed the length limit)
  std::vector<CompileDiagnostic> warnings;
};

// The clang executable CompileIteratorFile would run.  NotFound with a
// message saying what was tried if there is none.
Result<std::string> FindClang(const CompileOptions& options = {});

// Runs `clang -O2 -target bpf -mcpu=v3 -c` on a C file and returns the ELF
// object.  InvalidArgument carries clang's messages.
Result<std::vector<uint8_t>> CompileCToBpfObject(const std::string& c_path,
                                                 const CompileOptions& options = {});

// The names of the iterators an object defines (sections pulse/end/<name>).
Result<std::vector<std::string>> ListIterators(std::span<const uint8_t> object);

// Translates one iterator of a BPF object.  On rejection InvalidArgument whose
// message has one line per diagnostic (CompileDiagnostic::ToString).
Result<CompiledIterator> TranslateBpfObject(std::span<const uint8_t> object,
                                            const CompileOptions& options = {});

// CompileCToBpfObject + TranslateBpfObject.
Result<CompiledIterator> CompileIteratorFile(const std::string& c_path,
                                             const CompileOptions& options = {});
// The same for C source text (written to a temporary file first).
Result<CompiledIterator> CompileIteratorSource(std::string_view c_source,
                                               const CompileOptions& options = {});

// C++ source that embeds a compiled program, for pulse_add_iterator():
//   namespace pulse::iterators { std::span<const std::uint8_t> <name>(); }
// plus a comment with the disassembly-free summary (window, longest path).
std::string EmbedProgramSource(const CompiledIterator& it, std::string_view cxx_name);
// The matching header.
std::string EmbedProgramHeader(const CompiledIterator& it, std::string_view cxx_name);

}  // namespace pulse
