// The durable redo log of one replica (docs/tx.md "Durability"): an
// append-only file of framed records, made durable by group commit: Append
// only writes (the page cache), Sync() makes everything appended so far
// durable with one fdatasync.  A replica syncs once per pass of its
// memory node's loop, before any acknowledgement or forward that pass
// produced leaves, so nothing is acknowledged before it is durable.
//
// Frame: u32 payload bytes, u32 checksum (FNV-1a 32 of the payload),
// payload.  A torn last frame (a crash mid-append) fails its length or
// checksum and ends the replay there; it is cut off before new appends.
//
// Truncation (Compact): the replica decides which records are no longer
// needed (docs/tx.md "Log truncation"); the kept frames are written to a
// new file, made durable, and renamed over the log (then the directory is
// synced), so a crash at any point leaves either the old or the new log
// whole.
//
// Not thread-safe (the memory node's network thread owns it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "pulse/status.h"

namespace pulse::tx {

struct TxLogCounters {
  uint64_t appends = 0;
  uint64_t bytes = 0;
  uint64_t syncs = 0;
  uint64_t sync_ns = 0;  // time spent in fdatasync
  uint64_t compactions = 0;
  uint64_t dropped = 0;   // records removed by compactions
};

class TxLog {
 public:
  // Opens (creating) the log at `path`.  With `keep` false it is emptied
  // first (a fresh pool: the records' addresses mean nothing now); else
  // `replay` gets every whole record in order.  Errors: IoError naming the
  // path.
  static Result<std::unique_ptr<TxLog>> Open(const std::string& path, bool keep,
                                             const std::function<void(std::span<const uint8_t>)>& replay);
  ~TxLog();
  TxLog(const TxLog&) = delete;
  TxLog& operator=(const TxLog&) = delete;

  // Appends one record (not yet durable).  Errors: IoError.
  Status Append(std::span<const uint8_t> record);
  // Makes every append so far durable (one fdatasync; nothing if none
  // since the last).  Errors: IoError.
  Status Sync();
  // Rewrites the log with only the records `keep` says yes to (in order),
  // durably (see above); `keep` sees every whole record.  Errors: IoError
  // naming the path (the old log is then still in place and appended to).
  Status Compact(const std::function<bool(std::span<const uint8_t>)>& keep);
  bool dirty() const { return dirty_; }
  // The log file's bytes (whole frames).
  uint64_t size() const { return size_; }
  const TxLogCounters& counters() const { return counters_; }
  const std::string& path() const { return path_; }

 private:
  TxLog() = default;
  std::string path_;
  int fd_ = -1;
  bool dirty_ = false;
  uint64_t size_ = 0;
  TxLogCounters counters_;
};

}  // namespace pulse::tx
