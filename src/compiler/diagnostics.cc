#include "compiler/diagnostics.h"

#include <fmt/format.h>

namespace pulse {

std::string CompileDiagnostic::ToString() const {
  std::string out;
  if (!file.empty() && line > 0)
    out = column > 0 ? fmt::format("{}:{}:{}: ", file, line, column)
                     : fmt::format("{}:{}: ", file, line);
  out += severity == Severity::kError ? "error: " : "warning: ";
  if (!iterator.empty()) {
    out += fmt::format("iterator '{}'", iterator);
    if (!function.empty()) out += fmt::format(" {}()", function);
    if (bpf_insn >= 0) {
      out += fmt::format(", BPF instruction {}", bpf_insn);
      if (!bpf_text.empty()) out += fmt::format(" (`{}`)", bpf_text);
    }
    out += ": ";
  }
  out += message;
  if (!source.empty()) out += fmt::format("\n    {}", source);
  return out;
}

namespace compiler {

CompileDiagnostic DiagnosticSink::Make(const FunctionRef& fn, int slot, std::string message) const {
  CompileDiagnostic d;
  d.iterator = fn.iterator;
  d.function = fn.role;
  d.symbol = fn.symbol;
  d.bpf_insn = slot;
  if (fn.insns && slot >= 0 && slot < static_cast<int>(fn.insns->size()) &&
      (*fn.insns)[slot].slots > 0)
    d.bpf_text = BpfToString((*fn.insns)[slot]);
  if (lines_) {
    if (auto line = lines_->Lookup(fn.section, slot)) {
      d.file = line->file;
      d.line = line->line;
      d.column = line->column;
      d.source = line->text;
    }
  }
  d.message = std::move(message);
  return d;
}

void DiagnosticSink::Error(const FunctionRef& fn, int slot, std::string message) {
  CompileDiagnostic d = Make(fn, slot, std::move(message));
  for (const auto& e : errors_)  // the same problem reached on several paths
    if (e.function == d.function && e.bpf_insn == d.bpf_insn && e.message == d.message) return;
  errors_.push_back(std::move(d));
}

void DiagnosticSink::Warning(const FunctionRef& fn, int slot, std::string message) {
  CompileDiagnostic d = Make(fn, slot, std::move(message));
  d.severity = CompileDiagnostic::Severity::kWarning;
  for (const auto& e : warnings_)
    if (e.function == d.function && e.bpf_insn == d.bpf_insn && e.message == d.message) return;
  warnings_.push_back(std::move(d));
}

void DiagnosticSink::Error(const std::string& iterator, std::string message) {
  CompileDiagnostic d;
  d.iterator = iterator;
  d.message = std::move(message);
  errors_.push_back(std::move(d));
}

std::string DiagnosticSink::ErrorText() const {
  std::string out;
  for (const auto& e : errors_) {
    if (!out.empty()) out += '\n';
    out += e.ToString();
  }
  return out;
}

}  // namespace compiler
}  // namespace pulse
