#include "client/one_sided.h"

#include <cstring>

#include <fmt/format.h>

#include "client/far_allocator.h"
#include "client/lifetimes.h"
#include "node/node_control.h"

namespace pulse {

using nlohmann::json;

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
  if (RackAccess(false, addr, dst, len)) {
    if (locks_ != nullptr) locks_->Overlay(addr, dst, len);
    return Status::Ok();
  }
  heat_.OnFabricAccess(addr, tier::AccessKind::kRead);
  if (locks_ != nullptr && locks_->holding()) return locks_->Read(addr, dst, len);
  return caching() ? cache_->Read(addr, dst, len) : Rma(false, addr, dst, len);
}

Status OneSidedAccess::Write(uint64_t addr, const void* src, size_t len) {
  if (locks_ != nullptr && locks_->holding()) return WriteUnderLock(addr, src, len);
  if (RackAccess(true, addr, const_cast<void*>(src), len)) return Status::Ok();
  heat_.OnFabricAccess(addr, tier::AccessKind::kWrite);
  return caching() ? cache_->Write(addr, src, len) : Rma(true, addr, const_cast<void*>(src), len);
}

// ---- under locks (src/client/lock_tier.h) -----------------------------------

void OneSidedAccess::EnableLockTier(const LockTierOptions& options, const tier::HotnessParams& hotness) {
  LockTier::Far far{
      .read = [this](uint64_t addr, void* dst, size_t len) { return Rma(false, addr, dst, len); },
      .write = [this](uint64_t addr, const void* src, size_t len) { return Rma(true, addr, const_cast<void*>(src), len); },
      .post = [this](uint64_t addr, const void* src, size_t len,
                     std::shared_ptr<const void> keep) { return PostWrite(addr, src, len, std::move(keep)); },
      .wait = [this] { return WaitPosted(); },
  };
  locks_ = std::make_unique<LockTier>(options, hotness, std::move(far), counters_);
}

Status OneSidedAccess::WriteUnderLock(uint64_t addr, const void* src, size_t len) {
  void* buf = const_cast<void*>(src);
  // A write to buffer is checked now, as the far write would be, so its
  // errors are this call's and not the flush's.
  const bool buffer = locks_->BuffersWrite(len) && Writable(addr, len);
  // Bytes already buffered stay in the buffer, so the newest write of them
  // is the one that lands; anything else first writes out the buffered
  // bytes it touches.
  if (!buffer || !locks_->Overlaps(addr, len)) {
    PULSE_RETURN_IF_ERROR(locks_->BeforeWrite(addr, len));
    if (RackAccess(true, addr, buf, len)) return Status::Ok();
  }
  heat_.OnFabricAccess(addr, tier::AccessKind::kWrite);
  if (buffer) return locks_->Buffer(addr, src, len);
  return Rma(true, addr, buf, len);
}

bool OneSidedAccess::Writable(uint64_t addr, size_t len) {
  Result<MemNode*> n = NodeSpanning(addr, len);
  return n.ok() && ForEachPiece(**n, addr, len, [](const KeyedAllocation&, uint64_t, size_t, size_t) {
                     return Status::Ok();
                   }).ok();
}

Status OneSidedAccess::PostWrite(uint64_t addr, const void* src, size_t len, std::shared_ptr<const void> keep) {
  Result<MemNode*> n = NodeSpanning(addr, len);
  // A page on the move: written now, following it.
  if (!n.ok()) return Rma(true, addr, const_cast<void*>(src), len);
  ++counters_->remote_writes;
  const auto* bytes = static_cast<const uint8_t*>(src);
  Status posting = ForEachPiece(**n, addr, len, [&](const KeyedAllocation& k, uint64_t remote, size_t done, size_t piece) {
    std::shared_ptr<Posted> posted = posted_;
    const bool paged = connections_->pages.Locate(addr + done).has_value();
    PULSE_RETURN_IF_ERROR(connections_->worker->PutAsync(
        k.second.key, remote, bytes + done, piece, [posted, keep, paged, at = addr + done, from = bytes + done, piece](const Status& s) {
          --posted->outstanding;
          // A key revoked under the write (its page began to move): the
          // write is done again by WaitPosted, following the page.
          if (paged && s.code() == Status::Code::kPermissionDenied) {
            posted->redo.push_back(Posted::Redo{at, from, piece, keep});
          } else if (!s.ok() && posted->error.ok()) {
            posted->error = s;
          }
        }));
    ++posted_->outstanding;
    posted_->endpoints.insert(k.second.ep);
    return Status::Ok();
  });
  if (posting.ok() || !connections_->pages.Locate(addr)) return posting;
  // The page began to move before every piece was posted: the whole write
  // is done now, following it (pieces posted already write the same bytes).
  return Rma(true, addr, const_cast<void*>(src), len);
}

Status OneSidedAccess::WaitPosted() {
  net::Worker& w = *connections_->worker;
  std::shared_ptr<Posted> posted = posted_;
  Status s = w.RunUntil([&posted] { return posted->outstanding == 0; }, connections_->rma_timeout());
  for (net::EndpointId ep : posted->endpoints) {
    Status flushed = w.Flush(ep, connections_->rma_timeout());
    if (s.ok() && !flushed.ok()) s = flushed;
  }
  if (s.ok()) s = posted->error;
  // Writes still out after a timeout complete into the old record.
  posted_ = std::make_shared<Posted>();
  for (const Posted::Redo& r : posted->redo) {
    Status again = Rma(true, r.addr, const_cast<uint8_t*>(r.bytes), r.length);
    if (s.ok() && !again.ok()) s = again;
  }
  return s;
}

// ---- the rack tier ---------------------------------------------------------

void OneSidedAccess::UseRackTier(const std::string& rack, const FarAllocator* owner) {
  rack_ = rack;
  owner_ = owner;
}

bool OneSidedAccess::rack_tier() const {
  if (rack_.empty()) return false;
  for (const MemNode& n : connections_->nodes)
    if (n.rack_pool && n.rack_pool->rack == rack_) return true;
  return false;
}

rack::PoolMapping* OneSidedAccess::MappingFor(MemNode& n) {
  RackMapping& m = mappings_[n.id];
  if (m.token == n.rack_pool->token) return m.mapping.get();
  // A new offer (first use, or the node restarted): this client's cached
  // blocks of the node go back first, as the tier bypasses the cache.
  if (caching() && !cache_->Invalidate().ok()) return nullptr;  // tried again on next use
  m.mapping.reset();
  m.token = n.rack_pool->token;
  Result<std::unique_ptr<rack::PoolMapping>> mapped = rack::PoolMapping::Map(*n.rack_pool);
  if (mapped.ok() && (*mapped)->bytes() == n.size) {
    m.mapping = std::move(*mapped);
    ++counters_->rack_mappings;
  }
  return m.mapping.get();
}

void OneSidedAccess::DropDeadMapping(MemNode& n) {
  ++counters_->rack_dead_mappings;
  mappings_.erase(n.id);
  n.rack_pool.reset();  // until a new hello offers it again
  n.lost = true;        // EnsureNode asks the switch and reconnects
}

bool OneSidedAccess::RackAccess(bool write, uint64_t addr, void* buf, size_t len) {
  if (rack_.empty() || owner_ == nullptr || len == 0) return false;
  std::optional<Connections::Placement> p = connections_->Place(addr);
  if (!p) return false;
  MemNode* n = p->node;
  if (n->lost || !n->rack_pool || n->rack_pool->rack != rack_ || len > p->room) return false;
  // Protection: only this client's own allocations, and only while the node
  // acknowledges the tenant's ownership (the key it handed out; after a
  // reconnection it is asked again).
  if (!owner_->Owns(addr, len)) return false;
  Result<const std::pair<const uint64_t, AllocationKey>*> key = KeyFor(*n, addr);
  if (!key.ok() || len > (*key)->second.length - (addr - (*key)->first)) return false;
  rack::PoolMapping* m = MappingFor(*n);
  if (m == nullptr) return false;
  // A page's frame is entered through its gate (rack/rack_pool.h), which
  // its node closes while the page moves: then this access goes the way
  // the directory will say.
  std::optional<uint64_t> gate;
  if (p->page) {
    const uint64_t frame = p->pool_offset / connections_->pages.push()->geometry.page_size();
    if (!m->gates().Enter(frame, rack::FrameGates::Holds(p->page->home, p->page->page))) {
      ++counters_->rack_gate_refusals;
      return false;
    }
    gate = frame;
  }
  if (!m->Alive()) {
    if (gate) m->gates().Leave(*gate);
    DropDeadMapping(*n);
    return false;
  }
  uint8_t* here = m->data() + p->pool_offset;
  if (write) {
    std::memcpy(here, buf, len);
  } else {
    std::memcpy(buf, here, len);
  }
  if (gate) m->gates().Leave(*gate);
  // The node may have died during the copy: then the bytes are not its.
  if (!m->Alive()) {
    DropDeadMapping(*n);
    return false;
  }
  if (write) {
    ++counters_->rack_writes;
    counters_->rack_write_bytes += len;
  } else {
    ++counters_->rack_reads;
    counters_->rack_read_bytes += len;
  }
  return true;
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
  Result<std::vector<uint8_t>> packed = node::HexDecode(a["rkey"].get<std::string>());
  if (!packed.ok()) return Status::InvalidArgument(fmt::format("memory node {} answered a key that is not hex", n.id));
  PULSE_ASSIGN_OR_RETURN(net::RemoteKey key, connections_->worker->ImportRkey(n.ep, *packed));
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

Result<MemNode*> OneSidedAccess::NodeSpanning(uint64_t addr, size_t len) {
  std::optional<Connections::Placement> p = connections_->Place(addr);
  if (!p || len > p->room)
    return Status::InvalidArgument(
        fmt::format("far address {:#x} (+{}) is outside every memory node{}", addr, len,
                    p && p->page ? " (or crosses the end of its page)" : ""));
  PULSE_RETURN_IF_ERROR(EnsureNode(*p->node));
  return p->node;
}

template <typename Piece>
Status OneSidedAccess::ForEachPiece(MemNode& n, uint64_t addr, size_t len, Piece&& piece) {
  for (size_t done = 0; done < len;) {
    PULSE_ASSIGN_OR_RETURN(const KeyedAllocation* k, KeyFor(n, addr + done));
    const uint64_t at = addr + done - k->first;
    const size_t bytes = std::min<uint64_t>(len - done, k->second.length - at);
    PULSE_RETURN_IF_ERROR(piece(*k, k->second.remote_base + at, done, bytes));
    done += bytes;
  }
  return Status::Ok();
}

Status OneSidedAccess::Rma(bool write, uint64_t addr, void* buf, size_t len) {
  return connections_->FollowingPages(addr, [&] {
    Status s = RmaOnce(write, addr, buf, len);
    // The node revoked the key under this access (its page began to move):
    // asking for the key again says whether it moves.
    if (s.code() == Status::Code::kPermissionDenied && connections_->pages.Locate(addr))
      s = RmaOnce(write, addr, buf, len);
    return s;
  });
}

Status OneSidedAccess::RmaOnce(bool write, uint64_t addr, void* buf, size_t len) {
  PULSE_ASSIGN_OR_RETURN(MemNode * n, NodeSpanning(addr, len));
  if (write) {
    ++counters_->remote_writes;
  } else {
    ++counters_->remote_reads;
    counters_->remote_read_bytes += len;
  }
  auto* bytes = static_cast<uint8_t*>(buf);
  // One operation per allocation touched.
  return ForEachPiece(*n, addr, len, [&](const KeyedAllocation& k, uint64_t remote, size_t done, size_t piece) {
    Status s = write ? connections_->worker->Put(k.second.key, remote, bytes + done, piece, connections_->rma_timeout())
                     : connections_->worker->Get(k.second.key, remote, bytes + done, piece, connections_->rma_timeout());
    // A key the node no longer honours (the allocation was reclaimed or
    // dropped): forget it, so the next access asks again.
    if (s.code() == Status::Code::kPermissionDenied) keys_.erase(k.first);
    return s;
  });
}

}  // namespace pulse
