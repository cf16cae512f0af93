// Fuzz target: the compiler's reader of BPF ELF objects and the translation
// behind `pulse compile`, on an object in memory (no clang run).  Whatever
// the bytes, ReadElfObject, ListIterators and TranslateBpfObject return
// values; an iterator that translates passes the verifier, and its encoding
// and ProgramInfo are what the verifier says.  And it means what the BPF
// code means: one iteration of the translated program (the reference
// interpreter over TenantMemory, as tenant A) against the BPF instructions
// run by the reference BPF interpreter (tests/compiler/bpf_reference.h) on
// the same node window and scratch pad must end the same way (return or go
// on to the same next node), leave the same scratch pad (BPF stack bytes read
// before they are written get pulse's meaning: the scratch pad bytes where
// the translator put the stack; at the iteration's end the stack slots are
// zero where the compiler clears them) and make the same
// far-memory STOREs; where pulse defines a fault instead of BPF's behaviour
// (include/pulse/iterator.h: division by zero, a read beyond the window, a
// STORE the tenant may not make) the BPF run must have done that thing.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "compiler/bpf_reference.h"
#include "compiler/elf_reader.h"
#include "fuzz_check.h"
#include "pulse/compiler.h"
#include "pulse/program.h"
#include "pulse/traversal.h"
#include "tenant_memory.h"

namespace pulse::fuzz {
namespace {

using testing::BpfIterator;
using testing::BpfReference;
using testing::BpfRunNotes;
using testing::FarWrite;

uint64_t Fnv1a(std::span<const uint8_t> data) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : data) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

// A node for the iteration: a far address whose window (window_bytes from
// it) tenant A may read, chosen by `seed`; nullopt if the few tries all land
// elsewhere.
std::optional<uint64_t> PickNode(const TenantMemory& memory, const RangeTable& table, uint64_t seed,
                                 uint32_t window_bytes) {
  for (int attempt = 0; attempt < 8; ++attempt, seed = seed * 0x9e3779b97f4a7c15ull + 1) {
    const uint64_t cur = memory.PickAddress(static_cast<uint8_t>(seed >> 8), static_cast<uint8_t>(seed >> 16));
    const Range* r = table.Find(cur);
    if (r && r->owner == kTenantA && (r->perms & kPermRead) && r->ContainsSpan(cur, window_bytes)) return cur;
  }
  return std::nullopt;
}

// Applies the BPF run's far STOREs to `table`'s memory in order.  False at
// the first one tenant A may not make (pulse faults there).
bool ApplyFarWrites(const std::vector<FarWrite>& writes, const RangeTable& table) {
  for (const FarWrite& w : writes) {
    const Range* r = table.Find(w.addr);
    if (!r || r->owner != kTenantA || !(r->perms & kPermWrite) || !r->ContainsSpan(w.addr, w.bytes)) return false;
    std::memcpy(r->Translate(w.addr), &w.value, w.bytes);  // little-endian: the low bytes
  }
  return true;
}

void CompareWithBpf(std::span<const uint8_t> object, const CompiledIterator& it, const CompileOptions& options,
                    uint64_t seed) {
  // The reference finds the code as the translator does (FunctionCodeIn),
  // so whatever translated must decode there too.
  auto bpf = BpfIterator::FromObject(object, it.name);
  PULSE_FUZZ_CHECK(bpf.has_value(), "iterator {} translated but its BPF sections do not decode", it.name);
  auto program = VerifiedProgram::FromBytes(it.encoded);
  PULSE_FUZZ_CHECK(program.ok(), "iterator {}: {}", it.name, program.status().ToString());

  const TenantMemory original;
  TenantMemory pulse_memory = original, bpf_memory = original;
  const RangeTable pulse_table = pulse_memory.Table(), bpf_table = bpf_memory.Table();
  const std::optional<uint64_t> cur = PickNode(original, bpf_table, seed, it.info.window_bytes);
  if (!cur) return;

  // The BPF context: cur_ptr, the node window (as much of the 256 bytes as
  // the range holds), the scratch pad.
  const size_t sp_bytes = options.scratch_pad_bytes;
  std::vector<uint8_t> scratch(sp_bytes);
  original.FillWords(seed ^ 0x5c7a7c4, &scratch);
  constexpr size_t kScratchAt = BpfReference::kCtxScratchOffset;
  std::vector<uint8_t> ctx(kScratchAt + sp_bytes);
  const Range* node_range = bpf_table.Find(*cur);
  const size_t window = std::min<uint64_t>(256, node_range->base + node_range->length - *cur);
  std::memcpy(ctx.data(), &*cur, 8);
  std::memcpy(ctx.data() + 8, node_range->Translate(*cur), window);
  std::memcpy(ctx.data() + kScratchAt, scratch.data(), sp_bytes);

  // BPF: end(), then next() if end() said "go on".  Stack bytes read before
  // they are written are undefined in BPF; pulse keeps the stack in the
  // scratch pad (stack_offset), so they are what the scratch pad holds there,
  // and next() sees what end() left.  The reference's frame starts as those
  // bytes and goes on from end() to next() the same way.
  std::vector<uint8_t> frame(scratch.begin() + it.stack_offset,
                             scratch.begin() + it.stack_offset + it.stack_bytes);
  std::vector<FarWrite> writes;
  std::string error;
  BpfRunNotes notes;
  std::optional<uint64_t> done =
      BpfReference::Run(bpf->end, ctx.data(), ctx.size(), &writes, &error, &notes, frame);
  std::optional<uint64_t> next;
  if (done && (*done & 0xffffffffu) == 0) {
    std::memcpy(ctx.data(), &*cur, 8);
    next = BpfReference::Run(bpf->next, ctx.data(), ctx.size(), &writes, &error, &notes, frame);
    if (!next) done.reset();
  }
  std::copy(frame.begin(), frame.end(), ctx.begin() + kScratchAt + it.stack_offset);
  // An iteration that ends (RETURN or NEXT_ITER) leaves its dead stack slots
  // zeroed, where the compiler says it clears them (CompiledIterator).
  if (it.stack_cleared)
    std::fill_n(ctx.begin() + kScratchAt + it.stack_offset, it.stack_bytes, 0);
  const bool writes_allowed = ApplyFarWrites(writes, bpf_table);

  // pulse: one iteration.
  TraversalState state;
  state.cur_ptr = *cur;
  state.scratch = scratch;
  const TraversalOutcome out = InterpretTraversal(**program, pulse_table, kTenantA, 1, &state);
  const std::string what = fmt::format("iterator {} at {:#x} (seed {:#x}): pulse {}", it.name, *cur, seed,
                                       TraversalStatusName(out.status));

  if (IsFault(out.status)) {
    // Only where the BPF run did what pulse defines as a fault.
    const bool beyond_window = notes.ctx_data_end > 8 + it.info.window_bytes;
    const bool load_outside = !done && error.rfind("load outside", 0) == 0;  // an index left the scratch pad
    const bool explained = (out.status == TraversalStatus::kFaultDivZero && notes.divided_by_zero) ||
                           (out.status == TraversalStatus::kFaultBounds && (beyond_window || load_outside)) ||
                           !writes_allowed;
    PULSE_FUZZ_CHECK(explained, "{}, but the BPF run {}", what,
                     done ? "went through without division by zero, reads beyond the window or bad STOREs"
                          : "failed: " + error);
    return;
  }
  PULSE_FUZZ_CHECK(done.has_value(), "{}, but the BPF reference failed: {}", what, error);
  PULSE_FUZZ_CHECK(writes_allowed, "{}, but the BPF run made a STORE tenant A may not make", what);
  PULSE_FUZZ_CHECK(!notes.divided_by_zero, "{}, but the BPF run divided by zero", what);
  const bool bpf_returned = !next.has_value();
  PULSE_FUZZ_CHECK(bpf_returned == (out.status == TraversalStatus::kDone) &&
                       (bpf_returned || out.status == TraversalStatus::kContinue),
                   "{}, BPF {}", what, bpf_returned ? "returned" : "went on");
  if (!bpf_returned)
    PULSE_FUZZ_CHECK(state.cur_ptr == *next, "{}: next node {:#x}, BPF {:#x}", what, state.cur_ptr, *next);
  // The whole scratch pad, the stack area (the reference's frame) included,
  // but for slots left holding a pointer (an address in BPF, an offset in
  // pulse: BpfRunNotes::pointer_slots).
  for (int64_t slot : notes.pointer_slots) {
    if (slot < -static_cast<int64_t>(frame.size())) continue;  // below the frame: not in the scratch pad
    const size_t at = it.stack_offset + it.stack_bytes + slot;     // the frame is the stack area's top
    std::fill_n(state.scratch.begin() + at, 8, 0);
    std::fill_n(ctx.begin() + kScratchAt + at, 8, 0);
  }
  PULSE_FUZZ_CHECK(std::memcmp(state.scratch.data(), ctx.data() + kScratchAt, sp_bytes) == 0,
                   "{}: scratch pads differ", what);
  pulse_memory.CheckSame(bpf_memory, "far memory after pulse's and BPF's STOREs");
}

}  // namespace

void FuzzElf(std::span<const uint8_t> data) {
  (void)compiler::ReadElfObject(data);
  auto names = ListIterators(data);
  if (!names.ok()) return;
  const uint64_t seed = Fnv1a(data);
  for (size_t i = 0; i < names->size() && i < 4; ++i) {
    CompileOptions options;
    options.iterator = (*names)[i];
    options.optimize = (data.size() & 1) == 0;  // both translator pipelines
    auto it = TranslateBpfObject(data, options);
    if (!it.ok()) {
      PULSE_FUZZ_CHECK(!it.status().message().empty(), "a rejection without a message");
      continue;
    }
    auto info = VerifyProgram(it->program);
    PULSE_FUZZ_CHECK(info.ok(), "iterator {} translated but does not verify: {}", it->name,
                     info.status().ToString());
    PULSE_FUZZ_CHECK(it->encoded == EncodeProgram(it->program), "iterator {}: encoding differs", it->name);
    PULSE_FUZZ_CHECK(info->window_bytes == it->info.window_bytes && info->longest_path == it->info.longest_path &&
                         info->scratch_bytes == it->info.scratch_bytes,
                     "iterator {}: reported ProgramInfo differs from the verifier's", it->name);
    // Several nodes and scratch pads per object: the translation is the
    // expensive part.
    for (uint64_t k = 0; k < 4; ++k) CompareWithBpf(data, *it, options, seed + k * 0x9e3779b97f4a7c15ull);
  }
}

}  // namespace pulse::fuzz
