#include "client/one_sided.h"

#include <fmt/format.h>

#include "client/lifetimes.h"

namespace pulse {

using nlohmann::json;

namespace {
// A hex digit's value; -1 if it is none.
int Nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

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

Status OneSidedAccess::EnsureNode(MemNode& n) {
  if (n.lost || n.ep == net::kInvalidEndpoint || !connections_->worker->IsConnected(n.ep)) {
    // Keys go before the endpoint they were imported for.
    for (auto it = keys_.begin(); it != keys_.end();) it = it->second.ep == n.ep ? keys_.erase(it) : std::next(it);
  }
  return connections_->EnsureNode(n);
}

Status OneSidedAccess::AddKey(MemNode& n, const json& a) {
  if (!a.is_object() || !a.contains("base") || !a["base"].is_number_unsigned() || !a.contains("length") ||
      !a["length"].is_number_unsigned() || !a.contains("rkey") || !a["rkey"].is_string() ||
      !a.contains("remote_base") || !a["remote_base"].is_number_unsigned())
    return Status::InvalidArgument(fmt::format("memory node {} answered without an allocation's key", n.id));
  const std::string hex = a["rkey"].get<std::string>();
  std::vector<uint8_t> packed;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    const int hi = Nibble(hex[i]), lo = Nibble(hex[i + 1]);
    if (hi < 0 || hi > 15 || lo < 0 || lo > 15)
      return Status::InvalidArgument(fmt::format("memory node {} answered a key that is not hex", n.id));
    packed.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  PULSE_ASSIGN_OR_RETURN(net::RemoteKey key, connections_->worker->ImportRkey(n.ep, packed));
  AllocationKey& k = keys_[a["base"].get<uint64_t>()];
  k = AllocationKey{a["length"].get<uint64_t>(), a["remote_base"].get<uint64_t>(), n.ep, std::move(key)};
  return Status::Ok();
}

void OneSidedAccess::ForgetKeys(uint64_t base, uint64_t length) {
  for (auto it = keys_.lower_bound(base); it != keys_.end() && it->first - base < length;) it = keys_.erase(it);
}

Result<const std::pair<const uint64_t, OneSidedAccess::AllocationKey>*> OneSidedAccess::KeyFor(MemNode& n,
                                                                                               uint64_t addr) {
  auto known = [&]() -> const std::pair<const uint64_t, AllocationKey>* {
    auto it = keys_.upper_bound(addr);
    if (it == keys_.begin()) return nullptr;
    --it;
    if (addr - it->first >= it->second.length || it->second.ep != n.ep) return nullptr;
    return &*it;
  };
  if (auto* k = known()) return k;
  json request{{"op", "key"}, {"addr", addr}};
  lifetimes_->Tag(&request);
  PULSE_ASSIGN_OR_RETURN(json answer, connections_->control->Call(n.ep, std::move(request), connections_->rma_timeout()));
  PULSE_RETURN_IF_ERROR(AddKey(n, answer));
  if (auto* k = known()) return k;
  return Status::Internal(fmt::format("memory node {} answered the key of another allocation than {:#x}'s", n.id, addr));
}

Status OneSidedAccess::Rma(bool write, uint64_t addr, void* buf, size_t len) {
  MemNode* n = connections_->NodeFor(addr);
  if (n == nullptr || len > n->size - (addr - n->base))
    return Status::InvalidArgument(fmt::format("far address {:#x} (+{}) is outside every memory node", addr, len));
  PULSE_RETURN_IF_ERROR(EnsureNode(*n));
  if (write) {
    ++counters_->remote_writes;
  } else {
    ++counters_->remote_reads;
    counters_->remote_read_bytes += len;
  }
  auto* bytes = static_cast<uint8_t*>(buf);
  // One operation per allocation touched.
  while (len > 0) {
    PULSE_ASSIGN_OR_RETURN(auto* k, KeyFor(*n, addr));
    const size_t piece = std::min<uint64_t>(len, k->second.length - (addr - k->first));
    const uint64_t remote = k->second.remote_base + (addr - k->first);
    Status s = write ? connections_->worker->Put(k->second.key, remote, bytes, piece, connections_->rma_timeout())
                     : connections_->worker->Get(k->second.key, remote, bytes, piece, connections_->rma_timeout());
    if (!s.ok()) {
      // A key the node no longer honours (the allocation was reclaimed or
      // dropped): forget it, so the next access asks again.
      if (s.code() == Status::Code::kPermissionDenied) keys_.erase(k->first);
      return s;
    }
    addr += piece;
    bytes += piece;
    len -= piece;
  }
  return Status::Ok();
}

}  // namespace pulse
