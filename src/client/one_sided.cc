#include "client/one_sided.h"

#include <fmt/format.h>

namespace pulse {

Status OneSidedAccess::EnableCache(const CacheOptions& c) {
  const uint32_t block = c.granularity == CacheGranularity::kPage ? c.page_bytes : c.object_bytes;
  if (block < 8 || (block & (block - 1)) != 0)
    return Status::InvalidArgument(fmt::format("cache: block size {} is not a power of two >= 8", block));
  if (c.bytes < block)
    return Status::InvalidArgument(fmt::format("cache: bytes {} is less than one block of {}", c.bytes, block));
  cache_ = std::make_unique<BlockCache>(
      c, [this](uint64_t addr, void* dst, size_t len) { return Rma(false, addr, dst, len); },
      [this](uint64_t addr, const void* src, size_t len) { return Rma(true, addr, const_cast<void*>(src), len); },
      counters_);
  return Status::Ok();
}

Status OneSidedAccess::Read(uint64_t addr, void* dst, size_t len) {
  return caching() ? cache_->Read(addr, dst, len) : Rma(false, addr, dst, len);
}

Status OneSidedAccess::Write(uint64_t addr, const void* src, size_t len) {
  return caching() ? cache_->Write(addr, src, len) : Rma(true, addr, const_cast<void*>(src), len);
}

Status OneSidedAccess::Rma(bool write, uint64_t addr, void* buf, size_t len) {
  MemNode* n = connections_->NodeFor(addr);
  if (n == nullptr || len > n->size - (addr - n->base))
    return Status::InvalidArgument(fmt::format("far address {:#x} (+{}) is outside every memory node", addr, len));
  PULSE_RETURN_IF_ERROR(connections_->EnsureNode(*n));
  const uint64_t remote = n->remote_base + (addr - n->base);
  if (write) {
    ++counters_->remote_writes;
    return connections_->worker->Put(n->rkey, remote, buf, len, connections_->rma_timeout());
  }
  ++counters_->remote_reads;
  counters_->remote_read_bytes += len;
  return connections_->worker->Get(n->rkey, remote, buf, len, connections_->rma_timeout());
}

}  // namespace pulse
