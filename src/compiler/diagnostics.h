// Collecting compiler diagnostics with their source positions.  Internal.
#pragma once

#include <string>
#include <vector>

#include "compiler/bpf_insn.h"
#include "compiler/btf_lines.h"
#include "pulse/compiler.h"

namespace pulse::compiler {

// What a diagnostic points at: one function of one iterator.
struct FunctionRef {
  std::string iterator;
  std::string role;     // "end" or "next"
  std::string symbol;   // ELF symbol
  std::string section;  // ELF section
  const std::vector<BpfInsn>* insns = nullptr;
};

class DiagnosticSink {
 public:
  explicit DiagnosticSink(const LineTable* lines) : lines_(lines) {}

  void Error(const FunctionRef& fn, int slot, std::string message);
  void Warning(const FunctionRef& fn, int slot, std::string message);
  // A problem with the object or the iterator as a whole.
  void Error(const std::string& iterator, std::string message);

  bool has_errors() const { return !errors_.empty(); }
  const std::vector<CompileDiagnostic>& errors() const { return errors_; }
  const std::vector<CompileDiagnostic>& warnings() const { return warnings_; }
  // All errors, one CompileDiagnostic::ToString() per line.
  std::string ErrorText() const;

 private:
  CompileDiagnostic Make(const FunctionRef& fn, int slot, std::string message) const;
  const LineTable* lines_;
  std::vector<CompileDiagnostic> errors_;
  std::vector<CompileDiagnostic> warnings_;
};

}  // namespace pulse::compiler
