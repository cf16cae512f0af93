// A redo log in far memory for updates that write several far objects and
// must take effect all together (BTree splits and merges): the new images of
// every object are written to the log and committed with one small write
// before any object is touched; a log found committed later (the writer
// failed part-way, e.g. a memory node died) is replayed in full, which is
// safe because each entry is a whole image (replaying twice writes the same
// bytes).
//
// Layout at the log's address (kBytes bytes, allocated by the owner):
//   u64 commit = (kMagic << 32) | body bytes, 0: nothing to replay
//   u64 checksum of the body (FNV-1a 64)
//   body: entries {u64 addr, u64 length, length bytes}, in apply order.
// The body is written first and the commit word after it, so a failure
// before the commit leaves nothing to replay; a torn or stale commit fails
// the checksum and counts as none.
//
// Not thread-safe; stateless (the log lives in far memory).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::ds::internal {

struct FarWrite {
  uint64_t addr = 0;
  std::vector<uint8_t> bytes;
};

// How the log writes (the owner's write path, so a test hook sees it).
using FarWriteFn = std::function<Status(uint64_t addr, const void* src, size_t length)>;

class FarRedoLog {
 public:
  static constexpr size_t kBytes = 8192;

  // Writes `writes` into the log at `log` and commits them.  Errors:
  // ResourceExhausted if they do not fit (nothing written), those of write.
  static Status Commit(const FarWriteFn& write, uint64_t log, const std::vector<FarWrite>& writes);
  // The committed entries at `log` (empty: none).  Errors: those of Read.
  static Result<std::vector<FarWrite>> Load(Client* client, uint64_t log);
  // Writes every entry in order.  Errors: the first of write.
  static Status Apply(const FarWriteFn& write, const std::vector<FarWrite>& writes);
  // Marks the log empty.  Errors: those of write.
  static Status Clear(const FarWriteFn& write, uint64_t log);
};

}  // namespace pulse::ds::internal
