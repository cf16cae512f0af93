// Fuzz target: the compiler's reader of BPF ELF objects and the translation
// behind `pulse compile`, on an object in memory (no clang run).  Whatever
// the bytes, ReadElfObject, ListIterators and TranslateBpfObject return
// values; an iterator that translates passes the verifier, and its encoding
// and ProgramInfo are what the verifier says.
#include "compiler/elf_reader.h"
#include "fuzz_check.h"
#include "pulse/compiler.h"
#include "pulse/program.h"

namespace pulse::fuzz {

void FuzzElf(std::span<const uint8_t> data) {
  (void)compiler::ReadElfObject(data);
  auto names = ListIterators(data);
  if (!names.ok()) return;
  for (size_t i = 0; i < names->size() && i < 4; ++i) {
    CompileOptions options;
    options.iterator = (*names)[i];
    options.optimize = (data.size() & 1) == 0;  // both translator pipelines
    auto it = TranslateBpfObject(data, options);
    if (!it.ok()) {
      PULSE_FUZZ_CHECK(!it.status().message().empty(), "a rejection without a message");
      continue;
    }
    auto info = VerifyProgram(it->program);
    PULSE_FUZZ_CHECK(info.ok(), "iterator {} translated but does not verify: {}", it->name,
                     info.status().ToString());
    PULSE_FUZZ_CHECK(it->encoded == EncodeProgram(it->program), "iterator {}: encoding differs", it->name);
    PULSE_FUZZ_CHECK(info->window_bytes == it->info.window_bytes && info->longest_path == it->info.longest_path &&
                         info->scratch_bytes == it->info.scratch_bytes,
                     "iterator {}: reported ProgramInfo differs from the verifier's", it->name);
  }
}

}  // namespace pulse::fuzz
