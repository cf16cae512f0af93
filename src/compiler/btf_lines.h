// Source lines of BPF instructions from the .BTF / .BTF.ext sections clang
// emits with -g (best effort: an object without them just has no lines).
// Internal to the iterator compiler.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "compiler/elf_reader.h"

namespace pulse::compiler {

struct SourceLine {
  std::string file;
  int line = 0;
  int column = 0;
  std::string text;  // the source line itself, as clang recorded it
};

class LineTable {
 public:
  // Reads the line info of every section; malformed or absent info gives an
  // empty table.
  static LineTable Read(const ElfObject& obj);

  // The line of the instruction at `slot` (8-byte units) of `section`: the
  // last record at or before it.
  std::optional<SourceLine> Lookup(const std::string& section, int slot) const;

  bool empty() const { return lines_.empty(); }

 private:
  std::map<std::string, std::map<uint32_t, SourceLine>> lines_;  // section -> byte offset -> line
};

}  // namespace pulse::compiler
