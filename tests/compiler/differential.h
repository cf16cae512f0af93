// Differential testing of the translator: one iteration of the BPF code
// (BpfReference) against the translated program (InterpretTraversal) on
// random node windows and scratch pads.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <span>
#include <string>
#include <vector>

#include "compiler/bpf_reference.h"
#include "compiler/compiler_test_util.h"

namespace pulse::testing {

// Words that make comparisons interesting (equal keys, small counts, edges).
inline uint64_t InterestingWord(std::mt19937_64& rng) {
  static const uint64_t kPool[] = {0, 1, 2, 3, 5, 7, 14, 15, 16, 100, 101, 1000,
                                   0x7fffffffffffffffull, 0x8000000000000000ull,
                                   0xffffffffull, 0xffffffffffffffffull};
  switch (rng() % 4) {
    case 0: return rng();
    case 1: return rng() % 32;
    default: return kPool[rng() % (sizeof(kPool) / sizeof(kPool[0]))];
  }
}

// Compares `trials` random iterations of iterator `name` in a BPF object
// (`file` names it in failures); returns the number of mismatches (each
// reported with ADD_FAILURE, at most a few).
inline int CompareObjectWithBpf(std::span<const uint8_t> object, const std::string& file, const std::string& name,
                                int trials, uint64_t seed, CompileOptions options = {}) {
  options.iterator = name;
  auto it = TranslateBpfObject(object, options);
  if (!it.ok()) {
    ADD_FAILURE() << it.status().message();
    return 1;
  }
  auto bpf = BpfIterator::FromObject(object, name);
  auto program = Verified(*it);
  if (!bpf || !program) {
    ADD_FAILURE() << "cannot load " << file;
    return 1;
  }
  std::mt19937_64 rng(seed);
  int mismatches = 0;
  const size_t sp_bytes = options.scratch_pad_bytes;
  for (int t = 0; t < trials && mismatches < 5; ++t) {
    std::vector<uint8_t> window(256), scratch(sp_bytes);
    for (size_t i = 0; i < window.size(); i += 8) {
      const uint64_t w = InterestingWord(rng);
      std::memcpy(&window[i], &w, 8);
    }
    for (size_t i = 0; i < 256 && i < scratch.size(); i += 8) {
      const uint64_t w = InterestingWord(rng);
      std::memcpy(&scratch[i], &w, 8);
    }
    // BPF: end(), then next() if end() said "go on".
    FarMemory mem(4096);
    const uint64_t cur = mem.Alloc(256);
    std::memcpy(mem.At<uint8_t>(cur), window.data(), 256);
    constexpr size_t kScratchAt = BpfReference::kCtxScratchOffset;
    std::vector<uint8_t> ctx(kScratchAt + sp_bytes);
    std::memcpy(ctx.data(), &cur, 8);
    std::memcpy(ctx.data() + 8, window.data(), 256);
    std::memcpy(ctx.data() + kScratchAt, scratch.data(), sp_bytes);
    std::vector<FarWrite> writes;
    std::string error;
    auto done = BpfReference::Run(bpf->end, ctx.data(), ctx.size(), &writes, &error);
    std::optional<uint64_t> next;
    if (done && (*done & 0xffffffffu) == 0) {
      std::memcpy(ctx.data(), &cur, 8);
      next = BpfReference::Run(bpf->next, ctx.data(), ctx.size(), &writes, &error);
      if (!next) done.reset();
    }
    if (!done) {
      ADD_FAILURE() << "BPF reference: " << error;
      return mismatches + 1;
    }
    // pulse: one iteration.
    std::vector<uint8_t> pscratch = scratch;
    TraversalState state;
    state.cur_ptr = cur;
    state.scratch = pscratch;
    TraversalOutcome out = InterpretTraversal(*program, mem.table(), FarMemory::kTenant, 1, &state);
    const bool bpf_return = !next.has_value();
    std::string why;
    if (bpf_return && out.status != TraversalStatus::kDone)
      why = "BPF returned, pulse: " + std::string(TraversalStatusName(out.status));
    else if (!bpf_return && out.status != TraversalStatus::kContinue)
      why = "BPF went on, pulse: " + std::string(TraversalStatusName(out.status));
    else if (!bpf_return && state.cur_ptr != *next)
      why = "next cur_ptr differs";
    else if (std::memcmp(state.scratch.data(), ctx.data() + kScratchAt, it->stack_bytes ? it->stack_offset : sp_bytes) != 0)
      why = "scratch pads differ";
    if (!why.empty()) {
      ++mismatches;
      std::string dump;
      for (size_t i = 0; i < 64 && i < sp_bytes; i += 8) {
        uint64_t a, b;
        std::memcpy(&a, state.scratch.data() + i, 8);
        std::memcpy(&b, ctx.data() + kScratchAt + i, 8);
        dump += "\n  sp[" + std::to_string(i) + "] pulse " + std::to_string(a) + " bpf " + std::to_string(b);
      }
      ADD_FAILURE() << file << " trial " << t << ": " << why << dump;
    }
  }
  return mismatches;
}

// The same for tests/compiler/iterators/<file>, compiled by clang.
inline int CompareWithBpf(const std::string& file, const std::string& name, int trials,
                          uint64_t seed, CompileOptions options = {}) {
  auto object = CompileCToBpfObject(IteratorPath(file), options);
  if (!object.ok()) {
    ADD_FAILURE() << object.status().message();
    return 1;
  }
  return CompareObjectWithBpf(*object, file, name, trials, seed, options);
}

}  // namespace pulse::testing
