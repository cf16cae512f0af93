// pulse compile: iterator C source -> verified pulse program (pulse/compiler.h).
//
//   pulse compile file.c [-o file.pulse] [--emit-asm] [--iterator NAME]
//                 [-I dir] [-D NAME[=VALUE]] [--scratch-pad-bytes N]
//                 [--stack-offset N] [--no-optimize] [--list]
//
// Writes the encoded program (default: the source's name with .pulse, unless
// only --emit-asm or --list is asked for) and prints a one-line summary:
// instructions, window bytes and the longest path (N in t_c = t_i * N).
// Rejections print every diagnostic on stderr and exit with status 1.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/bounded_file.h"
#include "pulse/assembler.h"
#include "pulse/compiler.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"

namespace pulse::tools {
namespace {

[[noreturn]] void CompileFail(const std::string& message) {
  std::cerr << "pulse compile: " << message << "\n";
  throw CLI::RuntimeError(1);
}

struct CompileArgs {
  std::string source;
  std::string output;
  bool emit_asm = false;
  bool list = false;
  bool no_optimize = false;
  bool quiet = false;
  uint32_t stack_offset = 0;
  CompileOptions options;
};

void RunCompile(CompileArgs& args, const CLI::App& cmd) {
  // clang would read a device or a FIFO without end; a directory gets a
  // confusing "no object file".
  if (auto checked = CheckInputFile(args.source, kMaxProgramFileBytes, "iterator source"); !checked.ok())
    CompileFail(checked.status().message());
  if (args.list) {
    auto object = CompileCToBpfObject(args.source, args.options);
    if (!object.ok()) CompileFail(object.status().message());
    auto names = ListIterators(*object);
    if (!names.ok()) CompileFail(names.status().message());
    for (const auto& n : *names) std::cout << n << "\n";
    return;
  }
  if (cmd.count("--stack-offset")) args.options.stack_offset = args.stack_offset;
  args.options.optimize = !args.no_optimize;
  auto it = CompileIteratorFile(args.source, args.options);
  if (!it.ok()) CompileFail(it.status().message());
  for (const auto& w : it->warnings) std::cerr << w.ToString() << "\n";

  std::string output = args.output;
  if (output.empty() && !args.emit_asm)
    output = std::filesystem::path(args.source).filename().replace_extension(".pulse").string();
  if (!output.empty()) {
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(it->encoded.data()),
              static_cast<std::streamsize>(it->encoded.size()));
    out.close();
    if (!out) CompileFail(fmt::format("cannot write '{}': {}", output, std::strerror(errno)));
  }
  if (args.emit_asm) {
    std::cout << fmt::format("; iterator '{}' from {}\n", it->name, args.source);
    std::cout << Disassemble(it->program);
  }
  if (!args.quiet) {
    std::ostream& os = args.emit_asm ? std::cerr : std::cout;
    os << fmt::format(
        "iterator '{}': {} instructions, window {} bytes, longest path {} instructions, "
        "scratch pad >= {} bytes{}{}\n",
        it->name, it->program.size(), it->info.window_bytes, it->info.longest_path,
        it->info.scratch_bytes,
        it->stack_bytes ? fmt::format(", stack at sp[{}..{})", it->stack_offset,
                                      it->stack_offset + it->stack_bytes)
                        : "",
        output.empty() ? "" : fmt::format(" -> {}", output));
  }
}

}  // namespace

void AddCompileCommand(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compile", "Compile an iterator's end()/next() (restricted C) into a verified pulse program");
  cmd->add_option("source", args->source, "iterator source file (C, using pulse/iterator.h)")
      ->required();
  cmd->add_option("-o,--output", args->output, "where to write the encoded program");
  cmd->add_flag("--emit-asm", args->emit_asm, "print the program's assembly");
  cmd->add_option("--iterator", args->options.iterator,
                  "the iterator to compile when the file defines several");
  cmd->add_option("-I", args->options.include_dirs, "include directory for clang");
  cmd->add_option("-D", args->options.defines, "preprocessor definition for clang");
  cmd->add_option("--scratch-pad-bytes", args->options.scratch_pad_bytes,
                  "scratch pad size the program runs with (default 4096)")
      ->check(Within(8, 1 << 24));
  cmd->add_option("--stack-offset", args->stack_offset,
                  "scratch pad offset for clang's stack slots (default: after the iterator's own "
                  "scratch bytes)")
      ->check(Within(0, 1 << 24));
  cmd->add_option("--clang", args->options.clang, "clang executable (default: clang on PATH)");
  cmd->add_flag("--no-optimize", args->no_optimize,
                "skip jump threading, copy propagation and dead-code elimination");
  cmd->add_flag("--list", args->list, "list the iterators the file defines");
  cmd->add_flag("-q,--quiet", args->quiet, "no summary line");
  cmd->callback([args, cmd] { RunCompile(*args, *cmd); });
}

}  // namespace pulse::tools
