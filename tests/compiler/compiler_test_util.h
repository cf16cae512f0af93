// Helpers for the iterator-compiler tests: compiling the test iterators,
// far memory backed by a RangeTable, and running a compiled iterator with
// the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "pulse/compiler.h"
#include "pulse/memory.h"
#include "pulse/program.h"
#include "pulse/traversal.h"

namespace pulse::testing {

inline std::string IteratorPath(const std::string& file) {
  return std::string(PULSE_TEST_ITERATOR_DIR) + "/" + file;
}

// Compiles tests/compiler/iterators/<file>.  Check with ASSERT_TRUE(r.ok()).
inline Result<CompiledIterator> CompileTestIterator(const std::string& file,
                                                    CompileOptions options = {}) {
  return CompileIteratorFile(IteratorPath(file), options);
}

// One far-memory range over host memory, with a bump allocator.
class FarMemory {
 public:
  static constexpr TenantId kTenant = 7;

  explicit FarMemory(size_t bytes, uint64_t base = 0x5a0000000000ull) : base_(base), mem_(bytes) {
    Status st = table_.Add(Range{base_, mem_.size(), mem_.data(), kPermReadWrite, kTenant});
    EXPECT_TRUE(st.ok()) << st.ToString();
  }

  uint64_t Alloc(size_t bytes) {
    const uint64_t at = used_;
    used_ += (bytes + 15) & ~size_t{15};
    if (used_ > mem_.size()) std::abort();  // tests size their memory
    return base_ + at;
  }
  template <typename T>
  T* At(uint64_t far) {
    return reinterpret_cast<T*>(mem_.data() + (far - base_));
  }
  // Allocates a T, copies v there, returns its far address.
  template <typename T>
  uint64_t New(const T& v) {
    const uint64_t a = Alloc(sizeof(T));
    std::memcpy(At<T>(a), &v, sizeof(T));
    return a;
  }
  const RangeTable& table() const { return table_; }

 private:
  uint64_t base_;
  std::vector<uint8_t> mem_;
  RangeTable table_;
  size_t used_ = 0;
};

// Runs `program` from cur_ptr = start with the given scratch pad (resized to
// the program's needs or `scratch_bytes`, whichever is larger).
inline TraversalOutcome RunIterator(const VerifiedProgram& program, const FarMemory& mem,
                                    uint64_t start, std::vector<uint8_t>* scratch,
                                    uint32_t max_iterations = 100000) {
  if (scratch->size() < program.info().scratch_bytes) scratch->resize(program.info().scratch_bytes);
  TraversalState state;
  state.cur_ptr = start;
  state.scratch = *scratch;
  TraversalOutcome out = InterpretTraversal(program, mem.table(), FarMemory::kTenant,
                                            max_iterations, &state);
  *scratch = state.scratch;
  return out;
}

template <typename T>
void PutScratch(std::vector<uint8_t>* scratch, size_t off, const T& v) {
  if (scratch->size() < off + sizeof(T)) scratch->resize(off + sizeof(T));
  std::memcpy(scratch->data() + off, &v, sizeof(T));
}
template <typename T>
T GetScratch(const std::vector<uint8_t>& scratch, size_t off) {
  T v{};
  std::memcpy(&v, scratch.data() + off, sizeof(T));
  return v;
}

inline std::shared_ptr<const VerifiedProgram> Verified(const CompiledIterator& it) {
  auto p = VerifiedProgram::FromBytes(it.encoded);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : nullptr;
}

}  // namespace pulse::testing
