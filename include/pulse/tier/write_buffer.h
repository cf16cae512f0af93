// The write buffer of a CPU node under a write lock (issue 16, seed 004
// section 5.4): small writes to other racks' memory are kept here instead of
// crossing the fabric one by one, and written out in batches.  This class is
// the buffer's bookkeeping only — what is buffered, what a read must see,
// when to flush and what a flush writes; the client (src/client/lock_tier.h)
// posts a flush's writes to far memory and waits for them.
//
// Bytes, not a log: a write merges into the buffered extents (disjoint,
// non-adjacent byte ranges, newer bytes win), so two writes of one address
// are one write when flushed and a flush's writes never overlap each other
// (the fabric keeps no order between writes in flight).  Two generations,
// as Rcmp's two buffers: `pending` takes new writes, `in_flight` is the
// batch being written out.  A flush may start only when no batch is in
// flight (the caller waits for it first), so an older batch never lands
// after a newer one.
//
// Flush rules (the caller applies them; ShouldFlush says when):
//   - when the pending bytes reach `buffer_bytes` (asynchronously: the
//     batch is posted and the writer goes on);
//   - before the write lock is released, all of it, waited for (so the next
//     holder sees every write);
//   - before a write that is not buffered touches buffered bytes, and
//     before anything else reads far memory without Overlay (an offloaded
//     traversal).
//
// Not thread-safe: owned by one client, used on its thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace pulse::tier {

struct WriteBufferOptions {
  // false: nothing is buffered.
  bool enabled = true;
  // Writes shorter than this many bytes are buffered (seed 004: 256 B).
  uint32_t threshold_bytes = 256;
  // A flush starts when this many bytes are pending (seed 004: 64 MB
  // buffers).  At least 1.
  uint64_t buffer_bytes = 64ull << 20;
};

class WriteBuffer {
 public:
  // far address of an extent's first byte -> its bytes
  using Extents = std::map<uint64_t, std::vector<uint8_t>>;

  explicit WriteBuffer(const WriteBufferOptions& options);

  const WriteBufferOptions& options() const { return options_; }
  // Whether a write of `len` bytes is one to buffer (enabled, 0 < len <
  // threshold).
  bool Buffers(size_t len) const;

  // Keeps [addr, addr + len) = src[0, len) as the newest bytes there.
  void Add(uint64_t addr, const void* src, size_t len);
  // True if some byte of [addr, addr + len) is buffered (pending or in
  // flight).
  bool Overlaps(uint64_t addr, size_t len) const;
  // True if every byte of [addr, addr + len) is buffered: a read of it
  // needs no far memory.
  bool Covers(uint64_t addr, size_t len) const;
  // Copies the buffered bytes of [addr, addr + len) over dst (which holds
  // far memory's bytes of the range): in-flight ones, then pending ones,
  // so a read sees the newest write of each byte.
  void Overlay(uint64_t addr, void* dst, size_t len) const;

  // True if pending bytes have reached buffer_bytes.
  bool ShouldFlush() const { return pending_bytes_ >= options_.buffer_bytes; }
  bool empty() const { return pending_.empty() && in_flight_ == nullptr; }
  bool has_pending() const { return !pending_.empty(); }
  bool in_flight() const { return in_flight_ != nullptr; }
  uint64_t pending_bytes() const { return pending_bytes_; }

  // Makes the pending extents the batch in flight and returns it (the
  // caller writes each extent out; the bytes stay valid while it holds the
  // pointer, even past FinishFlush or Discard).  Returns nullptr if a batch
  // is in flight already (finish it first) or nothing is pending.
  std::shared_ptr<const Extents> StartFlush();
  // The batch in flight is in far memory (or failed: the caller reports
  // that): forgets it.
  void FinishFlush() { in_flight_.reset(); }
  // Forgets everything, pending and in flight (the holder is gone).
  // Returns the bytes dropped.
  uint64_t Discard();

 private:
  // Merges [addr, addr + len) into `extents`; returns how many bytes the
  // extents grew by.
  static uint64_t Merge(Extents* extents, uint64_t addr, const uint8_t* src, size_t len);
  static void OverlayFrom(const Extents& extents, uint64_t addr, uint8_t* dst, size_t len);
  static bool AnyIn(const Extents& extents, uint64_t addr, size_t len);

  WriteBufferOptions options_;
  Extents pending_;
  uint64_t pending_bytes_ = 0;
  std::shared_ptr<const Extents> in_flight_;
};

}  // namespace pulse::tier
