// What the fuzz targets share: the list of targets, and the check that turns
// a broken invariant into a crash libFuzzer records.  The same functions run
// under libFuzzer (fuzz/fuzzer_main.cc) and in the normal test suite, which
// replays the seed corpora and every input a fuzzer ever crashed on
// (tests/fuzz/replay_test.cc).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace pulse::fuzz {

// Prints "fuzz check failed: <what>" to stderr and aborts.
[[noreturn]] void Fail(const std::string& what);

// One fuzz target: a function of untrusted bytes that returns normally for
// every input unless the product misbehaves (then it fails a check or a
// sanitizer reports).  Thread-compatible.
struct Target {
  std::string_view name;  // also the folder name under fuzz/corpus/ and fuzz/regressions/
  void (*run)(std::span<const uint8_t> data);
};

// The text assembler: Assemble, and Disassemble/Assemble round trips.
void FuzzAssembler(std::span<const uint8_t> data);
// Program decoder + verifier + engine: see program_fuzz.cc for the input layout.
void FuzzProgram(std::span<const uint8_t> data);
// A wire message as the memory node handles it (decode, verify, run, reply).
void FuzzMemNodeMessage(std::span<const uint8_t> data);
// A wire message as the switch handles it (decode, route, re-encode).
void FuzzSwitchMessage(std::span<const uint8_t> data);
// A batch envelope as a receiver unpacks it (decode, each inner message).
void FuzzBatchEnvelope(std::span<const uint8_t> data);
// A BPF ELF object as `pulse compile` reads and translates it.
void FuzzElf(std::span<const uint8_t> data);
// Verified programs built from the input on the JIT, the interpreted engine
// and the reference interpreter: see jit_fuzz.cc.
void FuzzJit(std::span<const uint8_t> data);
// An RPC request through the memory node's RPC service: see rpc_message_fuzz.cc.
void FuzzRpcMessage(std::span<const uint8_t> data);
// Control requests to a switch and a memory node running in this process:
// see control_fuzz.cc.
void FuzzControl(std::span<const uint8_t> data);
// The connection handshake's framing and decoders (src/net/handshake.h).
void FuzzHandshake(std::span<const uint8_t> data);

// All targets, by name.
std::span<const Target> Targets();
// The target called `name`, or nullptr.
const Target* FindTarget(std::string_view name);

}  // namespace pulse::fuzz

// Fails (aborts) with a formatted message unless `cond` holds.
#define PULSE_FUZZ_CHECK(cond, ...)                                                     \
  do {                                                                                  \
    if (!(cond)) ::pulse::fuzz::Fail(std::string(#cond ": ") + fmt::format(__VA_ARGS__)); \
  } while (0)
