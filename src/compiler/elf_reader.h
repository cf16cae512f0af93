// Reading the ELF object clang writes for `-target bpf` (libelf): sections,
// symbols and relocations.  Internal to the iterator compiler.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pulse/status.h"

namespace pulse::compiler {

struct ElfSymbol {
  std::string name;
  uint64_t value = 0;   // offset in its section (relocatable object)
  uint64_t size = 0;
  int section = 0;      // section index (0: undefined)
  uint8_t type = 0;     // STT_*
  uint8_t bind = 0;     // STB_*
};

struct ElfRelocation {
  uint64_t offset = 0;     // byte offset in the relocated section
  uint32_t type = 0;       // R_BPF_*
  std::string symbol;      // symbol name ("" if none)
  std::string target;      // what the symbol lives in: its section's name, or "undefined"
};

struct ElfSection {
  int index = 0;
  std::string name;
  uint32_t type = 0;    // SHT_*
  uint64_t flags = 0;   // SHF_*
  std::vector<uint8_t> data;
  std::vector<ElfRelocation> relocations;  // from .rel<name> / .rela<name>
};

struct ElfObject {
  std::vector<ElfSection> sections;
  std::vector<ElfSymbol> symbols;

  const ElfSection* Find(std::string_view name) const;
  // The function symbols defined in a section, by increasing offset.
  std::vector<const ElfSymbol*> FunctionsIn(int section) const;
};

// The code of the function in an iterator's section: the bytes of the
// section's first function symbol (by offset), or of the whole section if it
// has none.  The translator and the tests' BPF reference both find an
// iterator's code this way.
struct FunctionCode {
  std::string symbol;  // "" if the section has no function symbol
  uint64_t start = 0;  // byte offset in the section
  std::span<const uint8_t> bytes;  // into section.data
};
// InvalidArgument naming the section if it is not whole 8-byte BPF
// instructions or the symbol lies outside it.
Result<FunctionCode> FunctionCodeIn(const ElfObject& obj, const ElfSection& section);

// Parses a relocatable ELF64 BPF object.  InvalidArgument names what is wrong
// (not ELF, wrong machine, unreadable section).
Result<ElfObject> ReadElfObject(std::span<const uint8_t> bytes);

}  // namespace pulse::compiler
