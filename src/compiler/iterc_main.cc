// pulse_iterc: the build-time iterator compiler behind pulse_add_iterator()
// (cmake/PulseIterator.cmake).  Same translation as `pulse compile`, plus
// generation of the C++ source and header that embed the program.
//
//   pulse_iterc file.c -o file.pulse [--iterator NAME] [-I dir] [-D def]
//               [--cxx-name NAME --embed-cc out.cc --embed-h out.h]
//               [--depfile out.d] [--emit-asm]
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "pulse/assembler.h"
#include "pulse/compiler.h"

namespace {

bool WriteFile(const std::string& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  return static_cast<bool>(f);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pulse_iterc: compile a pulse iterator (restricted C) at build time"};
  std::string source, output, embed_cc, embed_h, cxx_name;
  pulse::CompileOptions options;
  app.add_option("source", source, "iterator source (C)")->required();
  app.add_option("-o,--output", output, "write the encoded program here");
  app.add_option("--iterator", options.iterator, "iterator name (if the file has several)");
  app.add_option("-I", options.include_dirs, "include directory for clang");
  app.add_option("-D", options.defines, "preprocessor definition for clang");
  app.add_option("--scratch-pad-bytes", options.scratch_pad_bytes, "scratch pad size");
  app.add_option("--depfile", options.depfile, "write a Make-style dependency file");
  app.add_option("--depfile-target", options.depfile_target, "the target named in the depfile");
  app.add_option("--embed-cc", embed_cc, "write C++ source embedding the program");
  app.add_option("--embed-h", embed_h, "write the matching header");
  app.add_option("--cxx-name", cxx_name, "function name in pulse::iterators (default: iterator name)");
  bool emit_asm = false;
  app.add_flag("--emit-asm", emit_asm, "print the program's assembly");
  CLI11_PARSE(app, argc, argv);

  auto it = pulse::CompileIteratorFile(source, options);
  if (!it.ok()) {
    std::cerr << it.status().message() << "\n";
    return 1;
  }
  for (const auto& w : it->warnings) std::cerr << w.ToString() << "\n";
  if (cxx_name.empty()) cxx_name = it->name;
  if (emit_asm) std::cout << pulse::Disassemble(it->program);
  if (!output.empty() && !WriteFile(output, it->encoded.data(), it->encoded.size())) {
    std::cerr << "cannot write " << output << "\n";
    return 1;
  }
  if (!embed_cc.empty()) {
    const std::string text = pulse::EmbedProgramSource(*it, cxx_name);
    if (!WriteFile(embed_cc, text.data(), text.size())) {
      std::cerr << "cannot write " << embed_cc << "\n";
      return 1;
    }
  }
  if (!embed_h.empty()) {
    const std::string text = pulse::EmbedProgramHeader(*it, cxx_name);
    if (!WriteFile(embed_h, text.data(), text.size())) {
      std::cerr << "cannot write " << embed_h << "\n";
      return 1;
    }
  }
  return 0;
}
