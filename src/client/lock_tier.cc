#include "client/lock_tier.h"

#include <fmt/format.h>

namespace pulse {

Status CheckLockTierOptions(const LockTierOptions& o) {
  if (o.cache_page_bytes < 8 || (o.cache_page_bytes & (o.cache_page_bytes - 1)) != 0)
    return Status::InvalidArgument(
        fmt::format("lock_tier.cache_page_bytes {} is not a power of two >= 8", o.cache_page_bytes));
  if (o.cache_pages == 0) return Status::InvalidArgument("lock_tier.cache_pages must be at least 1");
  if (o.write_buffer_bytes == 0) return Status::InvalidArgument("lock_tier.write_buffer_bytes must be at least 1");
  return Status::Ok();
}

LockTier::LockTier(const LockTierOptions& options, const tier::HotnessParams& hotness, Far far,
                   ClientCounters* counters)
    : options_(options),
      far_(std::move(far)),
      counters_(counters),
      buffer_({.enabled = options.write_buffer,
               .threshold_bytes = options.write_threshold_bytes,
               .buffer_bytes = options.write_buffer_bytes}),
      heat_(hotness, &clock_) {
  if (!options.page_cache) return;
  CacheOptions c;
  c.granularity = CacheGranularity::kPage;
  c.page_bytes = options.cache_page_bytes;
  c.bytes = uint64_t{options.cache_pages} * options.cache_page_bytes;
  c.eviction = CacheEviction::kLru;
  c.write = CacheWritePolicy::kWriteThrough;  // never written: a write drops it first
  cache_ = std::make_unique<BlockCache>(c, far_.read, far_.write, &cache_counters_);
  // Read-hot blocks only (seed 004: the page cache holds "read hot" pages).
  cache_->SetAdmission([this](uint64_t block) {
    return heat_.Record(block / options_.cache_page_bytes, tier::AccessKind::kRead).read_hot;
  });
}

void LockTier::Enter(bool exclusive) {
  ++(exclusive ? exclusive_ : shared_);
  DropCache();  // other CPU nodes may have written before this hold
}

Status LockTier::Leave(bool exclusive) {
  Status s;
  // Every buffered byte goes out before any exclusive hold ends: which hold
  // covers which write is not known here, so all of them are.
  if (exclusive) s = Drain();
  int& holds = exclusive ? exclusive_ : shared_;
  if (holds > 0) --holds;
  DropCache();
  return s;
}

void LockTier::Abandon(bool exclusive) {
  int& holds = exclusive ? exclusive_ : shared_;
  if (holds > 0) --holds;
  // A holder that is gone loses what it had not written out, as a write that
  // never left it.  A batch already posted may still land.
  if (exclusive) counters_->lock_buffer_dropped_bytes += buffer_.Discard();
  in_flight_bytes_ = 0;
  DropCache();
}

void LockTier::DropCache() {
  if (cache_ != nullptr) IgnoreError(cache_->Invalidate());  // write-through: nothing to write back
}

Status LockTier::StartFlush() {
  std::shared_ptr<const tier::WriteBuffer::Extents> batch = buffer_.StartFlush();
  if (batch == nullptr) return Status::Ok();
  ++counters_->lock_buffer_flushes;
  post_error_ = Status::Ok();
  in_flight_bytes_ = 0;
  for (const auto& [addr, bytes] : *batch) {
    in_flight_bytes_ += bytes.size();
    // The batch stays alive until its last write is done.
    Status s = far_.post(addr, bytes.data(), bytes.size(), batch);
    if (!s.ok()) {
      post_error_ = s;  // reported by WaitFlush, with the batch
      break;
    }
    ++counters_->lock_buffer_flush_writes;
  }
  return Status::Ok();
}

Status LockTier::WaitFlush() {
  if (!buffer_.in_flight()) return Status::Ok();
  Status s = far_.wait();
  if (s.ok()) s = post_error_;
  post_error_ = Status::Ok();
  if (s.ok()) {
    counters_->lock_buffer_flushed_bytes += in_flight_bytes_;
  } else {
    counters_->lock_buffer_dropped_bytes += in_flight_bytes_;
  }
  in_flight_bytes_ = 0;
  buffer_.FinishFlush();
  return s;
}

Status LockTier::Drain() {
  Status first = WaitFlush();
  PULSE_RETURN_IF_ERROR(StartFlush());
  Status second = WaitFlush();
  return first.ok() ? second : first;
}

Status LockTier::Buffer(uint64_t addr, const void* src, size_t len) {
  buffer_.Add(addr, src, len);
  ++counters_->lock_buffered_writes;
  if (!buffer_.ShouldFlush()) return Status::Ok();
  // One batch in flight at a time: the older one must land first.
  Status waited = WaitFlush();
  PULSE_RETURN_IF_ERROR(StartFlush());
  return waited;
}

Status LockTier::BeforeWrite(uint64_t addr, size_t len) {
  if (cache_ != nullptr) {
    const uint64_t page = options_.cache_page_bytes;
    for (uint64_t block = addr / page; len > 0 && block <= (addr + len - 1) / page; ++block)
      heat_.Record(block, tier::AccessKind::kWrite);
    DropCache();
  }
  if (Overlaps(addr, len)) return Drain();
  return Status::Ok();
}

Status LockTier::Read(uint64_t addr, void* dst, size_t len) {
  if (!buffer_.empty()) {
    if (buffer_.Covers(addr, len)) {
      buffer_.Overlay(addr, dst, len);
      ++counters_->lock_buffer_reads;
      return Status::Ok();
    }
    PULSE_RETURN_IF_ERROR(far_.read(addr, dst, len));
    buffer_.Overlay(addr, dst, len);
    return Status::Ok();
  }
  if (cache_ != nullptr && shared_ > 0 && exclusive_ == 0) return cache_->Read(addr, dst, len);
  return far_.read(addr, dst, len);
}

}  // namespace pulse
