// The public entry points of the iterator compiler (pulse/compiler.h).
#include "pulse/compiler.h"

#include <algorithm>
#include <fstream>
#include <set>

#include <gelf.h>

#include <fmt/format.h>

#include "compiler/btf_lines.h"
#include "compiler/clang_driver.h"
#include "compiler/diagnostics.h"
#include "compiler/elf_reader.h"
#include "compiler/link.h"
#include "compiler/translate.h"

namespace pulse {
namespace {

using compiler::DiagnosticSink;
using compiler::ElfObject;

constexpr std::string_view kEndPrefix = "pulse/end/";
constexpr std::string_view kNextPrefix = "pulse/next/";

std::vector<std::string> IteratorNames(const ElfObject& obj) {
  std::set<std::string> names;
  for (const auto& s : obj.sections) {
    if (s.name.starts_with(kEndPrefix)) names.insert(s.name.substr(kEndPrefix.size()));
    if (s.name.starts_with(kNextPrefix)) names.insert(s.name.substr(kNextPrefix.size()));
  }
  return {names.begin(), names.end()};
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

// Builds the translator's input for the function in `section`.
bool LoadFunction(const ElfObject& obj, const compiler::ElfSection& section,
                  const std::string& iterator, compiler::Role role, DiagnosticSink* diags,
                  compiler::FunctionInput* fn) {
  fn->role = role;
  fn->ref.iterator = iterator;
  fn->ref.role = role == compiler::Role::kEnd ? "end" : "next";
  fn->ref.section = section.name;
  auto code = compiler::FunctionCodeIn(obj, section);
  if (!code.ok()) {
    diags->Error(iterator, code.status().message());
    return false;
  }
  fn->ref.symbol = code->symbol;
  const uint64_t start = code->start, size = code->bytes.size();
  std::string error;
  if (!compiler::DecodeBpf(code->bytes, &fn->insns, &error)) {
    diags->Error(iterator, fmt::format("section {}: {}", section.name, error));
    return false;
  }
  for (const auto& r : section.relocations) {
    if (r.offset < start || r.offset >= start + size) continue;
    const int slot = static_cast<int>((r.offset - start) / 8);
    compiler::ElfRelocation named = r;
    // A section symbol plus an offset (static data): name the variable.
    if (slot < static_cast<int>(fn->insns.size()) && r.symbol == r.target) {
      const uint64_t off = static_cast<uint32_t>(fn->insns[slot].imm);
      for (const auto& sym : obj.symbols) {
        const auto* sec = obj.Find(r.target);
        if (sec && sym.section == sec->index && sym.type == STT_OBJECT && !sym.name.empty() &&
            off >= sym.value && off < sym.value + std::max<uint64_t>(sym.size, 1)) {
          named.symbol = sym.name;
          break;
        }
      }
    }
    fn->relocs[slot] = named;
  }
  return true;
}

}  // namespace

Result<std::string> FindClang(const CompileOptions& options) {
  return compiler::FindClangExecutable(options.clang);
}

Result<std::vector<uint8_t>> CompileCToBpfObject(const std::string& c_path,
                                                 const CompileOptions& options) {
  auto clang = FindClang(options);
  if (!clang.ok()) return clang.status();
  auto dir = compiler::TempDir::Create();
  if (!dir.ok()) return dir.status();
  const std::string obj_path = dir->path() + "/iterator.o";
  std::vector<std::string> argv = {*clang, "-O2", "-target", "bpf", "-mcpu=v3", "-std=gnu11",
                                   "-Wall", "-fno-stack-protector"};
  if (options.debug_info) argv.push_back("-g");
  if (const std::string inc = compiler::PulseIncludeDir(); !inc.empty()) argv.push_back("-I" + inc);
  for (const auto& d : options.include_dirs) argv.push_back("-I" + d);
  for (const auto& d : options.defines) argv.push_back("-D" + d);
  if (options.scratch_pad_bytes != isa::kDefaultScratchPadBytes)
    argv.push_back(fmt::format("-DPULSE_SCRATCH_PAD_BYTES={}", options.scratch_pad_bytes));
  for (const auto& a : options.extra_clang_args) argv.push_back(a);
  if (!options.depfile.empty()) {
    argv.insert(argv.end(), {"-MD", "-MF", options.depfile});
    argv.insert(argv.end(), {"-MT", options.depfile_target.empty() ? obj_path : options.depfile_target});
  }
  argv.insert(argv.end(), {"-c", c_path, "-o", obj_path});
  auto run = compiler::RunProcess(argv);
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) {
    std::string cmd;
    for (const auto& a : argv) {
      if (!cmd.empty()) cmd += ' ';
      cmd += a;
    }
    return Status::InvalidArgument(fmt::format("clang failed on {} (exit status {}):\n{}\ncommand: {}",
                                               c_path, run->exit_code, run->output, cmd));
  }
  std::ifstream f(obj_path, std::ios::binary);
  if (!f) return Status::IoError(fmt::format("clang wrote no object file {}", obj_path));
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

Result<std::vector<std::string>> ListIterators(std::span<const uint8_t> object) {
  auto obj = compiler::ReadElfObject(object);
  if (!obj.ok()) return obj.status();
  return IteratorNames(*obj);
}

Result<CompiledIterator> TranslateBpfObject(std::span<const uint8_t> object,
                                            const CompileOptions& options) {
  auto obj = compiler::ReadElfObject(object);
  if (!obj.ok()) return obj.status();
  const compiler::LineTable lines = compiler::LineTable::Read(*obj);
  DiagnosticSink diags(&lines);

  const auto names = IteratorNames(*obj);
  std::string name = options.iterator;
  if (name.empty()) {
    if (names.empty())
      return Status::InvalidArgument(
          "the object defines no iterator (no section pulse/end/<name>): declare end() and "
          "next() with PULSE_END(name, type) and PULSE_NEXT(name, type) from pulse/iterator.h");
    if (names.size() > 1)
      return Status::InvalidArgument(fmt::format(
          "the object defines several iterators ({}): choose one (--iterator NAME)", JoinNames(names)));
    name = names.front();
  } else if (std::find(names.begin(), names.end(), name) == names.end()) {
    return Status::NotFound(fmt::format("iterator '{}' not found; the object defines: {}", name,
                                        names.empty() ? "none" : JoinNames(names)));
  }
  const auto* end_sec = obj->Find(std::string(kEndPrefix) + name);
  const auto* next_sec = obj->Find(std::string(kNextPrefix) + name);
  if (!end_sec || !next_sec)
    return Status::InvalidArgument(fmt::format(
        "iterator '{}' has no {}() (section {}{}): declare it with {}(name, type)", name,
        end_sec ? "next" : "end", end_sec ? kNextPrefix : kEndPrefix, name,
        end_sec ? "PULSE_NEXT" : "PULSE_END"));

  compiler::FunctionInput end_fn, next_fn;
  if (!LoadFunction(*obj, *end_sec, name, compiler::Role::kEnd, &diags, &end_fn) ||
      !LoadFunction(*obj, *next_sec, name, compiler::Role::kNext, &diags, &next_fn))
    return Status::InvalidArgument(diags.ErrorText());
  end_fn.ref.insns = &end_fn.insns;
  next_fn.ref.insns = &next_fn.insns;

  compiler::TranslateOptions topts;
  topts.scratch_pad_bytes = options.scratch_pad_bytes;
  std::vector<compiler::Emitted> end_code, next_code;
  const bool end_ok = compiler::TranslateFunction(end_fn, topts, &diags, &end_code);
  const bool next_ok = compiler::TranslateFunction(next_fn, topts, &diags, &next_code);
  if (!end_ok || !next_ok || diags.has_errors()) return Status::InvalidArgument(diags.ErrorText());

  VerifierOptions vopts;
  vopts.scratch_pad_bytes = options.scratch_pad_bytes;
  compiler::LinkOptions lopts;
  lopts.scratch_pad_bytes = options.scratch_pad_bytes;
  lopts.stack_offset = options.stack_offset;
  lopts.optimize = options.optimize;
  lopts.max_instructions = vopts.max_instructions;
  compiler::LinkedProgram linked;
  if (!compiler::LinkIteration(name, std::move(end_code), std::move(next_code), lopts, &diags,
                               &linked))
    return Status::InvalidArgument(diags.ErrorText());

  CompiledIterator out;
  out.name = name;
  for (const auto& l : linked.code) out.program.push_back(l.insn);
  if (out.program.size() > vopts.max_instructions)
    return Status::InvalidArgument(fmt::format(
        "iterator '{}': one iteration translates to {} instructions; the limit is {} (do less "
        "per node, e.g. unroll fewer keys)",
        name, out.program.size(), vopts.max_instructions));
  auto info = VerifyProgram(out.program, vopts);
  if (!info.ok())
    return Status::Internal(fmt::format(
        "iterator '{}': the translated program does not verify (a bug in the translator): {}",
        name, info.status().message()));
  out.info = *info;
  out.encoded = EncodeProgram(out.program);
  out.end_bpf_insns = static_cast<uint32_t>(
      std::count_if(end_fn.insns.begin(), end_fn.insns.end(), [](const auto& i) { return i.slots > 0; }));
  out.next_bpf_insns = static_cast<uint32_t>(
      std::count_if(next_fn.insns.begin(), next_fn.insns.end(), [](const auto& i) { return i.slots > 0; }));
  out.stack_offset = linked.stack_offset;
  out.stack_bytes = linked.stack_bytes;
  out.stack_cleared = linked.stack_cleared;
  out.warnings = diags.warnings();
  return out;
}

Result<CompiledIterator> CompileIteratorFile(const std::string& c_path,
                                             const CompileOptions& options) {
  auto object = CompileCToBpfObject(c_path, options);
  if (!object.ok()) return object.status();
  return TranslateBpfObject(*object, options);
}

Result<CompiledIterator> CompileIteratorSource(std::string_view c_source,
                                               const CompileOptions& options) {
  auto dir = compiler::TempDir::Create();
  if (!dir.ok()) return dir.status();
  const std::string path = dir->path() + "/iterator.c";
  {
    std::ofstream f(path, std::ios::binary);
    f << c_source;
    if (!f) return Status::IoError(fmt::format("cannot write {}", path));
  }
  return CompileIteratorFile(path, options);
}

}  // namespace pulse
