#include "fuzz_check.h"

#include <cstdio>
#include <cstdlib>

namespace pulse::fuzz {

void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

std::span<const Target> Targets() {
  static const Target kTargets[] = {
      {"assembler", FuzzAssembler},
      {"program", FuzzProgram},
      {"memnode_message", FuzzMemNodeMessage},
      {"switch_message", FuzzSwitchMessage},
      {"batch_envelope", FuzzBatchEnvelope},
      {"elf", FuzzElf},
      {"jit", FuzzJit},
      {"rpc_message", FuzzRpcMessage},
      {"control", FuzzControl},
      {"handshake", FuzzHandshake},
  };
  return kTargets;
}

const Target* FindTarget(std::string_view name) {
  for (const Target& t : Targets())
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace pulse::fuzz
