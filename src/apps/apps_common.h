// Helpers shared by the applications' sources.
#pragma once

#include <cstdint>

namespace pulse::apps::internal {

// splitmix64's finalizer: a cheap 64-bit mixer for deterministic synthetic
// contents (objects, values, keys of the cipher).
inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace pulse::apps::internal
