#include "tenant_memory.h"

#include <cstring>

#include "fuzz_check.h"

namespace pulse::fuzz {
namespace {

constexpr size_t kGuardBytes = 64;
constexpr uint8_t kGuardByte = 0xA5;

struct Layout {
  uint64_t base, length;
  uint8_t perms;
  TenantId owner;
};
// Tenant B's range starts where tenant A's first one ends.
constexpr Layout kLayout[] = {
    {0x10000, 1024, kPermReadWrite, kTenantA},
    {0x10400, 512, kPermReadWrite, kTenantB},
    {0x20000, 512, kPermRead, kTenantA},
    {0x30000, 256, kPermReadWrite, kTenantA},
    {0x40000, 128, kPermWrite, kTenantA},
    {0x50000, 256, kPermRead, kTenantB},
};

uint64_t SplitMix(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

TenantMemory::TenantMemory() {
  for (const Layout& l : kLayout) {
    Block b{l.base, l.length, l.perms, l.owner, std::vector<uint8_t>(kGuardBytes * 2 + l.length, kGuardByte)};
    blocks_.push_back(std::move(b));
  }
  uint64_t seed = 42;
  for (Block& b : blocks_) {
    std::vector<uint8_t> words(b.length);
    FillWords(SplitMix(&seed), &words);
    std::memcpy(b.bytes.data() + kGuardBytes, words.data(), b.length);
  }
}

RangeTable TenantMemory::Table() {
  RangeTable table;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    Status s = table.Add(range(i));
    PULSE_FUZZ_CHECK(s.ok(), "fixture range {}: {}", i, s.ToString());
  }
  return table;
}

Range TenantMemory::range(size_t i) {
  Block& b = blocks_[i];
  return Range{b.base, b.length, b.bytes.data() + kGuardBytes, b.perms, b.owner};
}

uint64_t TenantMemory::PickAddress(uint8_t which, uint8_t offset) const {
  const size_t i = which % (blocks_.size() + 1);
  if (i == blocks_.size()) return 0x8000 + offset * 8ull;  // below every range
  const Block& b = blocks_[i];
  // Mostly aligned addresses inside; the top offsets run past the end.
  return b.base + (offset * 8ull) % (b.length + 64);
}

void TenantMemory::FillWords(uint64_t seed, std::vector<uint8_t>* out) const {
  for (size_t at = 0; at + 8 <= out->size(); at += 8) {
    const uint64_t r = SplitMix(&seed);
    uint64_t word;
    switch (r % 4) {
      case 0:
      case 1: {  // a pointer into a range (rarely past its end)
        const Layout& l = kLayout[(r >> 8) % std::size(kLayout)];
        word = l.base + ((r >> 16) % (l.length / 8 + 1)) * 8;
        break;
      }
      case 2: word = (r >> 8) % 16; break;
      default: word = r; break;
    }
    std::memcpy(out->data() + at, &word, 8);
  }
}

void TenantMemory::ScrambleHiddenFrom(TenantId tenant, uint64_t seed) {
  for (Block& b : blocks_) {
    if (b.owner == tenant && (b.perms & kPermRead)) continue;
    std::vector<uint8_t> words(b.length);
    FillWords(SplitMix(&seed), &words);
    std::memcpy(b.bytes.data() + kGuardBytes, words.data(), b.length);
  }
}

void TenantMemory::CheckUntouched(const TenantMemory& original, TenantId tenant, const char* who) const {
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    const Block& o = original.blocks_[i];
    for (size_t g = 0; g < kGuardBytes; ++g) {
      PULSE_FUZZ_CHECK(b.bytes[g] == kGuardByte && b.bytes[kGuardBytes + b.length + g] == kGuardByte,
                       "{}: guard bytes around range {:#x} overwritten", who, b.base);
    }
    const bool writable = b.owner == tenant && (b.perms & kPermWrite);
    if (!writable)
      PULSE_FUZZ_CHECK(b.bytes == o.bytes, "{}: tenant {} changed range {:#x} (owner {}, perms {})", who,
                       tenant, b.base, b.owner, b.perms);
  }
}

void TenantMemory::CheckSame(const TenantMemory& other, const char* who) const {
  for (size_t i = 0; i < blocks_.size(); ++i)
    PULSE_FUZZ_CHECK(blocks_[i].bytes == other.blocks_[i].bytes, "{}: memory of range {:#x} differs", who,
                     blocks_[i].base);
}

void CheckedMemory::CheckAllowed(uint64_t addr, uint64_t len, uint8_t perm, const char* what) const {
  const Range* r = table_.Find(addr);
  PULSE_FUZZ_CHECK(r != nullptr, "{} of {} bytes at {:#x} allowed outside every range", what, len, addr);
  PULSE_FUZZ_CHECK(r->owner == tenant_ && (r->perms & perm) == perm && r->ContainsSpan(addr, len),
                   "{} of {} bytes at {:#x} allowed for tenant {} in range {:#x}+{} (owner {}, perms {})", what,
                   len, addr, tenant_, r->base, r->length, r->owner, r->perms);
}

TraversalStatus CheckedMemory::ReadWindow(uint64_t addr, uint32_t len, uint8_t* dst) {
  const TraversalStatus st = inner_.ReadWindow(addr, len, dst);
  if (st == TraversalStatus::kDone) CheckAllowed(addr, len, kPermRead, "read");
  return st;
}

TraversalStatus CheckedMemory::Store(uint64_t addr, const uint8_t* src, uint32_t len) {
  const TraversalStatus st = inner_.Store(addr, src, len);
  if (st == TraversalStatus::kDone) CheckAllowed(addr, len, kPermWrite, "store");
  return st;
}

}  // namespace pulse::fuzz
