// Fuzz target: the text assembler.  Any text either assembles or gets an
// error value; what assembles survives the binary encoding and, when it
// prints, Disassemble -> Assemble unchanged; the verifier accepts or rejects
// it without crashing.
#include <string_view>

#include "fuzz_check.h"
#include "pulse/assembler.h"
#include "pulse/program.h"

namespace pulse::fuzz {

void FuzzAssembler(std::span<const uint8_t> data) {
  const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  auto insns = Assemble(text);
  if (!insns.ok()) {
    PULSE_FUZZ_CHECK(!insns.status().message().empty(), "an assembler error without a message");
    return;
  }
  auto decoded = DecodeProgram(EncodeProgram(*insns));
  // The encoder takes any instruction; the decoder only valid fields, which
  // is all the assembler produces.
  PULSE_FUZZ_CHECK(decoded.ok(), "assembled program does not decode: {}", decoded.status().ToString());
  PULSE_FUZZ_CHECK(*decoded == *insns, "encode/decode changed the assembled program");
  const std::string listing = Disassemble(*insns);
  if (listing.find("<invalid") == std::string::npos) {
    auto again = Assemble(listing);
    PULSE_FUZZ_CHECK(again.ok(), "disassembly does not assemble: {}\n{}", again.status().ToString(), listing);
    PULSE_FUZZ_CHECK(*again == *insns, "disassembly assembles to a different program:\n{}", listing);
  }
  (void)VerifyProgram(*insns);
}

}  // namespace pulse::fuzz
