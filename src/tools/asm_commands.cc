// pulse asm | disasm | verify: the command-line face of the assembler, the
// disassembler and the verifier.
//
// Every command reads a whole file, does one thing and prints one result.
// Failures go to stderr and leave through CLI::RuntimeError(1), which
// CLI11_PARSE in main.cc turns into the exit code.

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/bounded_file.h"
#include "pulse/assembler.h"
#include "pulse/program.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"

namespace pulse::tools {
namespace {

// Prints "pulse <command>: <message>" on stderr and fails the command.
[[noreturn]] void Fail(const std::string& command, const std::string& message) {
  std::cerr << "pulse " << command << ": " << message << "\n";
  throw CLI::RuntimeError(1);
}

// A program file: regular, at most kMaxProgramFileBytes.
Result<std::vector<uint8_t>> ReadFile(const std::string& path) {
  auto text = ReadInputFile(path, kMaxProgramFileBytes, "program file");
  if (!text.ok()) return text.status();
  return std::vector<uint8_t>(text->begin(), text->end());
}

Status WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IoError("cannot create '" + path + "': " + std::strerror(errno));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Status::IoError("cannot write '" + path + "'");
  return Status::Ok();
}

bool HasProgramMagic(const std::vector<uint8_t>& bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), "PULS", 4) == 0;
}

// Assembly is plain text; a binary without the magic (corrupt, or not a
// pulse file at all) should get the decoder's "bad magic", not a confusing
// assembler error about line 1.
bool LooksLikeText(const std::vector<uint8_t>& bytes) {
  for (uint8_t c : bytes) {
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != '\v') return false;
  }
  return true;
}

// Decodes a .pulse binary or assembles a .s file, whichever bytes holds.
Result<std::vector<isa::Instruction>> LoadProgram(const std::vector<uint8_t>& bytes) {
  if (!HasProgramMagic(bytes) && LooksLikeText(bytes)) {
    return Assemble(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  return DecodeProgram(bytes);
}

std::string YesNo(bool b) { return b ? "yes" : "no"; }

// The summary line shared by asm and verify.
std::string InfoText(const ProgramInfo& info) {
  return fmt::format("window={} scratch={} longest_path={} store={}", info.window_bytes,
                     info.scratch_bytes, info.longest_path, YesNo(info.has_store));
}

void AddVerifierOptions(CLI::App* cmd, VerifierOptions* options) {
  cmd->add_option("--scratch-pad", options->scratch_pad_bytes,
                  "Scratch pad size in bytes; every static sp[] access must fit")
      ->capture_default_str()
      ->check(Within(0, 1 << 24));
  cmd->add_option("--max-instructions", options->max_instructions,
                  "Longest program the verifier accepts")
      ->capture_default_str()
      ->check(Within(1, 1 << 24));
}

// ---------------------------------------------------------------------------
// pulse asm

struct AsmArgs {
  std::string input;
  std::string output;
  bool no_verify = false;
  VerifierOptions options;
};

// FILE.s -> FILE.pulse, next to the input.
std::string DefaultOutput(const std::string& input) {
  return std::filesystem::path(input).replace_extension(".pulse").string();
}

void RunAsm(const AsmArgs& args) {
  Result<std::vector<uint8_t>> text = ReadFile(args.input);
  if (!text.ok()) Fail("asm", text.status().message());
  Result<std::vector<isa::Instruction>> insns = Assemble(
      std::string_view(reinterpret_cast<const char*>(text->data()), text->size()));
  if (!insns.ok()) Fail("asm", args.input + ": " + insns.status().message());

  std::string summary = "not verified";
  if (!args.no_verify) {
    Result<ProgramInfo> info = VerifyProgram(*insns, args.options);
    if (!info.ok()) Fail("asm", args.input + ": rejected: " + info.status().message());
    summary = InfoText(*info);
  }

  const std::string output = args.output.empty() ? DefaultOutput(args.input) : args.output;
  if (output == args.input) Fail("asm", "output would overwrite the input; name it with -o");
  const std::vector<uint8_t> bytes = EncodeProgram(*insns);
  Status written = WriteFile(output, bytes);
  if (!written.ok()) Fail("asm", written.message());
  std::cout << fmt::format("wrote {} ({} instructions, {} bytes): {}\n", output, insns->size(),
                           bytes.size(), summary);
}

void AddAsm(CLI::App& app) {
  auto args = std::make_shared<AsmArgs>();
  CLI::App* cmd = app.add_subcommand("asm", "Assemble a .s file into a .pulse binary");
  cmd->add_option("file", args->input, "Assembly source (syntax: include/pulse/assembler.h)")
      ->required();
  cmd->add_option("-o,--output", args->output,
                  "Binary to write (default: the input with extension .pulse)");
  cmd->add_flag("--no-verify", args->no_verify,
                "Write the program even if the verifier would reject it");
  AddVerifierOptions(cmd, &args->options);
  cmd->footer(
      "The program is verified before it is written (unless --no-verify) and the\n"
      "verifier's findings are printed: window=<bytes LOADed per iteration>\n"
      "scratch=<scratch pad bytes used> longest_path=<instructions per iteration>\n"
      "store=<writes far memory>.\n\n"
      "Example: pulse asm find.s -o find.pulse\n");
  cmd->callback([args] { RunAsm(*args); });
}

// ---------------------------------------------------------------------------
// pulse disasm

void RunDisasm(const std::string& input) {
  Result<std::vector<uint8_t>> bytes = ReadFile(input);
  if (!bytes.ok()) Fail("disasm", bytes.status().message());
  Result<std::vector<isa::Instruction>> insns = LoadProgram(*bytes);
  if (!insns.ok()) Fail("disasm", input + ": " + insns.status().message());
  std::cout << Disassemble(*insns);
}

void AddDisasm(CLI::App& app) {
  auto input = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("disasm", "Print a .pulse binary as assembly text");
  cmd->add_option("file", *input, "Program: a .pulse binary (or .s text, printed canonically)")
      ->required();
  cmd->footer(
      "Prints canonical text: upper-case mnemonics, width suffixes only when not 8,\n"
      "labels L<index> on jump targets.  `pulse asm` of the output reproduces the\n"
      "binary exactly.  Malformed binaries are reported with the offending field.\n\n"
      "Example: pulse disasm find.pulse\n");
  cmd->callback([input] { RunDisasm(*input); });
}

// ---------------------------------------------------------------------------
// pulse verify

struct VerifyArgs {
  std::string input;
  bool json = false;
  VerifierOptions options;
};

void PrintVerdict(const VerifyArgs& args, size_t count, const Result<ProgramInfo>& info) {
  if (args.json) {
    nlohmann::json j = {{"file", args.input}, {"ok", info.ok()}};
    if (info.ok()) {
      j["instructions"] = count;
      j["window_bytes"] = info->window_bytes;
      j["scratch_bytes"] = info->scratch_bytes;
      j["longest_path"] = info->longest_path;
      j["has_store"] = info->has_store;
      j["has_alloc"] = info->has_alloc;
      j["has_indexed"] = info->has_indexed;
    } else {
      j["error"] = info.status().message();
    }
    std::cout << j.dump() << "\n";
  } else if (info.ok()) {
    std::cout << "ok: " << InfoText(*info) << "\n";
  } else {
    std::cout << "rejected: " << info.status().message() << "\n";
  }
}

void RunVerify(const VerifyArgs& args) {
  Result<std::vector<uint8_t>> bytes = ReadFile(args.input);
  if (!bytes.ok()) Fail("verify", bytes.status().message());
  // A program that does not decode or assemble is rejected like one the
  // verifier turns down: the verdict is about the file.
  Result<std::vector<isa::Instruction>> insns = LoadProgram(*bytes);
  const Result<ProgramInfo> info =
      insns.ok() ? VerifyProgram(*insns, args.options) : Result<ProgramInfo>(insns.status());
  PrintVerdict(args, insns.ok() ? insns->size() : 0, info);
  if (!info.ok()) throw CLI::RuntimeError(1);
}

void AddVerify(CLI::App& app) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd = app.add_subcommand("verify", "Check a program with the verifier");
  cmd->add_option("file", args->input,
                  "Program: a .pulse binary or .s assembly (told apart by the PULS magic)")
      ->required();
  cmd->add_flag("--json", args->json, "Print the verdict as one JSON object");
  AddVerifierOptions(cmd, &args->options);
  cmd->footer(
      "Prints \"ok: window=.. scratch=.. longest_path=.. store=yes|no\" and exits 0,\n"
      "or \"rejected: <reason>\" and exits 1.  Files that do not decode or assemble\n"
      "are rejected too.  With --json: {\"ok\":..., \"window_bytes\":..., ...} or\n"
      "{\"ok\":false, \"error\":...}.\n\n"
      "Example: pulse verify --scratch-pad 64 find.s\n");
  cmd->callback([args] { RunVerify(*args); });
}

}  // namespace

void AddAsmCommands(CLI::App& app) {
  AddAsm(app);
  AddDisasm(app);
  AddVerify(app);
}

}  // namespace pulse::tools
