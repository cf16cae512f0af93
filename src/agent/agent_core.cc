#include "agent/agent_core.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "common/elapsed.h"

namespace pulse::agent {

using core_detail::Delivery;
using core_detail::QueuedRead;
using core_detail::QueuedWrite;
using farmem::AgentOp;
using Purpose = core_detail::Op::Purpose;

struct AgentCore::Region {
  uint64_t id = 0;
  std::string name;
  std::string file;
  uint64_t bytes = 0;        // as asked
  uint64_t chunk_bytes = 0;  // a multiple of entry_bytes
  uint64_t alloc_bytes = 0;  // chunks * chunk_bytes: what pages may be read
  std::vector<uint64_t> chunks;  // far address of each chunk (0: not allocated)
  bool ready = false;        // created
  bool read_only = false;
  std::map<uint64_t, uint32_t> openers;  // host -> opens
  enum class Static : uint8_t { kNone, kLoading, kReady, kFailed } st = Static::kNone;
  std::vector<uint8_t> static_data;
  uint64_t static_outstanding = 0;

  std::string Describe() const { return fmt::format("region {} ('{}')", id, name); }
};

namespace {

uint64_t RoundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

size_t ClassIndex(PageClass cls) { return static_cast<size_t>(cls); }

uint64_t ItemBytes(const QueuedRead& q) { return q.length; }
uint64_t ItemBytes(const QueuedWrite& w) { return w.data.size(); }

// The end j of the run [i, j) of `items` (sorted by region and offset) that
// one operation carries, and the run's end offset `hi`: items of one region
// that overlap or touch, within max_op_bytes and one chunk, except that
// overlapping items always stay together (writes must apply in order).
// Without merging, one item.
template <typename Item>
size_t RunEnd(const std::vector<Item>& items, size_t i, bool merge, uint64_t max_op_bytes, uint64_t chunk_bytes,
              uint64_t* hi) {
  const uint64_t lo = items[i].offset;
  *hi = lo + ItemBytes(items[i]);
  size_t j = i + 1;
  while (merge && j < items.size() && items[j].region == items[i].region && items[j].offset <= *hi) {
    const uint64_t new_hi = std::max(*hi, items[j].offset + ItemBytes(items[j]));
    const bool overlaps = items[j].offset < *hi;  // same chunk: pieces never cross one
    if (!overlaps && (new_hi - lo > max_op_bytes || (new_hi - 1) / chunk_bytes != lo / chunk_bytes)) break;
    *hi = new_hi;
    ++j;
  }
  return j;
}

Status Destroyed(uint64_t region) { return Status::NotFound(fmt::format("agent: region {} was destroyed", region)); }

}  // namespace

Status ValidateAgentOptions(const AgentOptions& o) {
  if (o.max_in_flight == 0) return Status::InvalidArgument("agent: max_in_flight must be positive");
  if (o.entry_bytes == 0) return Status::InvalidArgument("agent: entry_bytes must be positive");
  if (o.max_op_bytes == 0) return Status::InvalidArgument("agent: max_op_bytes must be positive");
  if (o.chunk_bytes == 0 || o.chunk_bytes % o.entry_bytes != 0)
    return Status::InvalidArgument(fmt::format("agent: chunk_bytes {} must be a positive multiple of entry_bytes {}",
                                               o.chunk_bytes, o.entry_bytes));
  if (o.hit_rate_threshold < 0 || o.hit_rate_threshold > 1)
    return Status::InvalidArgument(fmt::format("agent: hit_rate_threshold {} is outside [0, 1]", o.hit_rate_threshold));
  if (o.recent_pages == 0) return Status::InvalidArgument("agent: recent_pages must be positive");
  return Status::Ok();
}

AgentOptions ProxyAgentOptions(AgentOptions o) {
  o.aggregation = o.async_forwarding = o.static_cache = o.dynamic_cache = o.prefetch = o.adaptive = false;
  return o;
}

AgentCore::AgentCore(const AgentOptions& options, Forwarder* forwarder, ReplyFn reply)
    : options_(options),
      forwarder_(forwarder),
      reply_(std::move(reply)),
      cache_(options.dynamic_cache ? options.dynamic_cache_bytes / options.entry_bytes : 0, options.entry_bytes,
             options.seed),
      recent_(options.recent_pages),
      switch_(options.hit_rate_threshold, options.adaptive_window, options.adaptive) {}

AgentCore::~AgentCore() = default;

// ---- host requests ---------------------------------------------------------

void AgentCore::OnRequest(uint64_t host, AgentRequest q) {
  ++counters_.host_requests;
  switch (q.op) {
    case AgentOp::kCreateRegion: return CreateRegion(host, q);
    case AgentOp::kReadPages: return ReadPages(host, q);
    case AgentOp::kWritePages: return WritePages(host, q);
    case AgentOp::kMarkReadOnly: return MarkReadOnly(host, q);
    case AgentOp::kDestroyRegion: return DestroyRegion(host, q);
    case AgentOp::kStats: {
      const std::string text = Stats().dump();
      return Reply(host, q.request_id, Status::Ok(), 0, std::vector<uint8_t>(text.begin(), text.end()));
    }
    default:
      ++counters_.host_errors;
      return Reply(host, q.request_id,
                   Status::InvalidArgument(fmt::format("agent: op {} is not a host request", static_cast<int>(q.op))));
  }
}

void AgentCore::CreateRegion(uint64_t host, AgentRequest& q) {
  if (q.name.empty() || q.bytes == 0) {
    ++counters_.host_errors;
    return Reply(host, q.request_id,
                 Status::InvalidArgument(fmt::format("agent: region '{}' of {} bytes: a region needs a name and a size",
                                                     q.name, q.bytes)));
  }
  // Names follow PageBackend::CreateRegion: one writer; readers attach a
  // region once it is read-only.
  Status refused;
  if (auto it = names_.find(q.name); it != names_.end()) {
    Region& r = *regions_.at(it->second);
    const bool only_this_host = r.openers.empty() || (r.openers.size() == 1 && r.openers.count(host) == 1);
    if (!r.ready) {
      refused = Status::FailedPrecondition(fmt::format("agent: {} is being created", r.Describe()));
    } else if (!q.read_only && only_this_host) {  // a new region replaces this process's earlier one
      r.openers.clear();
      FreeRegion(r);
    } else if (!q.read_only) {
      refused = Status::AlreadyExists(fmt::format(
          "agent: {} is open in another process{}: one writer per region", r.Describe(),
          r.read_only ? " (read-only)" : " for writing"));
    } else if (!r.read_only) {
      refused = Status::FailedPrecondition(fmt::format(
          "agent: {} is still held by its writer: readers attach it once it is marked read-only", r.Describe()));
    } else if (q.bytes > r.bytes) {
      refused = Status::InvalidArgument(
          fmt::format("agent: {} has {} bytes, not {}", r.Describe(), r.bytes, q.bytes));
    } else {  // read-only sharing
      ++r.openers[host];
      return Reply(host, q.request_id, Status::Ok(), r.id);
    }
  } else if (q.read_only && q.file.empty()) {
    refused = Status::NotFound(fmt::format("agent: no region '{}' to attach read-only", q.name));
  }
  if (!refused.ok()) {
    ++counters_.host_errors;
    return Reply(host, q.request_id, std::move(refused));
  }
  auto owned = std::make_unique<Region>();
  Region& r = *owned;
  r.id = next_region_++;
  r.name = q.name;
  r.file = q.file;
  r.bytes = q.bytes;
  r.read_only = q.read_only;
  r.chunk_bytes = std::min(options_.chunk_bytes, RoundUp(q.bytes, options_.entry_bytes));
  r.chunks.assign((q.bytes + r.chunk_bytes - 1) / r.chunk_bytes, 0);
  r.alloc_bytes = r.chunks.size() * r.chunk_bytes;
  regions_.emplace(r.id, std::move(owned));
  names_.emplace(r.name, r.id);
  const uint64_t pending = NewPending(host, q, 0);
  pending_.at(pending).region = r.id;
  for (uint32_t c = 0; c < r.chunks.size(); ++c) {
    Op op;
    op.purpose = Purpose::kAllocate;
    op.op.kind = ForwardOp::Kind::kAllocate;
    op.op.bytes = r.chunk_bytes;
    op.region = r.id;
    op.chunk = c;
    op.acks.push_back(pending);
    ++pending_.at(pending).outstanding;
    Enqueue(std::move(op), false);
  }
  PartDone(pending, Status::Ok());
}

// The region a page request names, if it exists and holds the pages.
Result<AgentCore::Region*> AgentCore::PagesOf(const AgentRequest& q) {
  Region* r = FindRegion(q.region);
  if (r == nullptr || !r->ready) return Status::NotFound(fmt::format("agent: region {} does not exist", q.region));
  const uint64_t offset = q.first * q.page_bytes, length = uint64_t{q.count} * q.page_bytes;
  if (q.page_bytes == 0 || q.count == 0 || offset / q.page_bytes != q.first || offset + length > r->alloc_bytes)
    return Status::OutOfRange(fmt::format("agent: {}: pages [{}, +{}) of {} bytes are outside its {} bytes",
                                          r->Describe(), q.first, q.count, q.page_bytes, r->alloc_bytes));
  return r;
}

void AgentCore::ReadPages(uint64_t host, AgentRequest& q) {
  ++counters_.host_read_requests;
  Result<Region*> found = PagesOf(q);
  Region* r = found.ok() ? *found : nullptr;
  const uint64_t offset = q.first * q.page_bytes, length = uint64_t{q.count} * q.page_bytes;
  Status bad = found.status();
  if (!bad.ok()) {
    ++counters_.host_errors;
    return Reply(host, q.request_id, std::move(bad));
  }
  counters_.host_pages_read += q.count;
  const uint64_t pending = NewPending(host, q, length);
  const uint64_t entry_bytes = options_.entry_bytes;
  for (uint64_t lo = offset; lo < offset + length;) {
    const uint64_t hi = std::min(offset + length, (lo / entry_bytes + 1) * entry_bytes);
    const uint64_t dst = lo - offset;
    const uint64_t pages = std::max<uint64_t>(1, (hi - lo) / q.page_bytes);
    if (r->st == Region::Static::kReady) {
      Deliver(pending, dst, r->static_data.data() + lo, hi - lo);
      counters_.static_hits += pages;
    } else if (r->st == Region::Static::kLoading) {
      counters_.static_misses += pages;
      QueueRead(r->id, lo, hi - lo, pending, dst, q.cls);
    } else if (DynamicApplies(*r)) {
      const CacheKey key{r->id, lo / entry_bytes};
      bool hit = false;
      if (switch_.on()) {
        CacheEntry* e = cache_.Find(key);
        hit = e != nullptr;
        if (hit) {
          e->lookups += pages;
          if (!e->ready) counters_.dynamic_hits_filling += pages;
        } else if (cache_.WasEvicted(key)) {
          counters_.dynamic_misses_evicted += pages;
        }
        if (r->read_only) (hit ? counters_.dynamic_hits_read_only : counters_.dynamic_misses_read_only) += pages;
        if (e != nullptr && e->ready) {
          Deliver(pending, dst, e->data.data() + (lo - key.entry * entry_bytes), hi - lo);
        } else if (e != nullptr) {
          e->waiters.push_back({pending, dst, lo - key.entry * entry_bytes, hi - lo});
          ++pending_.at(pending).outstanding;
        } else {
          QueueRead(r->id, lo, hi - lo, pending, dst, q.cls);
        }
        (hit ? counters_.dynamic_hits : counters_.dynamic_misses) += pages;
      } else {
        hit = PredictHit(r->id, key.entry);
        counters_.dynamic_lookups_off += pages;
        QueueRead(r->id, lo, hi - lo, pending, dst, q.cls);
      }
      for (uint64_t p = 0; p < pages; ++p) {
        const bool was_on = switch_.on();
        if (switch_.Record(hit) && was_on) cache_.DropUnpinned();
        const uint64_t page_offset = lo + p * q.page_bytes;
        recent_.Push({r->id, page_offset, !hit || !was_on, ContinuesStream(r->id, page_offset)});
      }
    } else {
      QueueRead(r->id, lo, hi - lo, pending, dst, q.cls);
    }
    lo = hi;
  }
  PartDone(pending, Status::Ok());
}

void AgentCore::WritePages(uint64_t host, AgentRequest& q) {
  ++counters_.host_write_requests;
  Result<Region*> found = PagesOf(q);
  Region* r = found.ok() ? *found : nullptr;
  const uint64_t offset = q.first * q.page_bytes, length = uint64_t{q.count} * q.page_bytes;
  Status bad = found.status();
  if (bad.ok() && r->read_only) {
    bad = Status::FailedPrecondition(fmt::format("agent: {} is read-only: write-back refused", r->Describe()));
  } else if (bad.ok() && q.data.size() != length) {
    bad = Status::InvalidArgument(fmt::format("agent: {}: write of {} pages carries {} bytes, not {}", r->Describe(),
                                              q.count, q.data.size(), length));
  }
  if (!bad.ok()) {
    ++counters_.host_errors;
    return Reply(host, q.request_id, std::move(bad));
  }
  counters_.host_pages_written += q.count;
  if (options_.dynamic_cache) cache_.ApplyWrite(r->id, offset, q.data.data(), length);
  const uint64_t pending = NewPending(host, q, 0);
  // One queued write per chunk it touches (an operation never spans chunks).
  for (uint64_t lo = offset; lo < offset + length;) {
    const uint64_t hi = std::min(offset + length, (lo / r->chunk_bytes + 1) * r->chunk_bytes);
    writes_.push_back({r->id, lo,
                       std::vector<uint8_t>(q.data.begin() + (lo - offset), q.data.begin() + (hi - offset)), pending,
                       next_seq_++});
    ++pending_.at(pending).outstanding;
    lo = hi;
  }
  PartDone(pending, Status::Ok());
}

void AgentCore::MarkReadOnly(uint64_t host, AgentRequest& q) {
  Region* r = FindRegion(q.region);
  if (r == nullptr) {
    ++counters_.host_errors;
    return Reply(host, q.request_id, Status::NotFound(fmt::format("agent: region {} does not exist", q.region)));
  }
  r->read_only = true;
  if (options_.static_cache && r->st == Region::Static::kNone &&
      static_used_ + r->alloc_bytes <= options_.static_cache_bytes)
    StartStaticLoad(*r);
  Reply(host, q.request_id, Status::Ok());
}

void AgentCore::DestroyRegion(uint64_t host, AgentRequest& q) {
  Region* r = FindRegion(q.region);
  if (r == nullptr || r->openers.count(host) == 0) {
    ++counters_.host_errors;
    return Reply(host, q.request_id,
                 Status::NotFound(fmt::format("agent: region {} is not open on this connection", q.region)));
  }
  CloseRegion(host, *r);
  Reply(host, q.request_id, Status::Ok());
}

void AgentCore::CloseRegion(uint64_t host, Region& r) {
  auto it = r.openers.find(host);
  if (it != r.openers.end() && --it->second == 0) r.openers.erase(it);
  if (r.openers.empty()) FreeRegion(r);
}

// Frees the chunks, drops the region's cached data and forgets it.
void AgentCore::FreeRegion(Region& r) {
  for (uint64_t addr : r.chunks) {
    if (addr == 0) continue;
    Op op;
    op.purpose = Purpose::kFree;
    op.op.kind = ForwardOp::Kind::kFree;
    op.op.addr = addr;
    Enqueue(std::move(op), false);
  }
  if (r.st == Region::Static::kLoading || r.st == Region::Static::kReady) static_used_ -= r.alloc_bytes;
  for (uint64_t e = 0; e * options_.entry_bytes < r.alloc_bytes; ++e) {
    CacheEntry* entry = cache_.Find({r.id, e});
    if (entry != nullptr && !entry->pinned()) cache_.Erase({r.id, e});
  }
  cache_.ForgetEvicted(r.id);
  names_.erase(r.name);
  regions_.erase(r.id);  // r is gone
}

void AgentCore::OnHostGone(uint64_t host) {
  for (auto& [id, p] : pending_)
    if (p.host == host) p.host = 0;  // its replies are dropped
  std::vector<uint64_t> open;
  for (const auto& [id, r] : regions_)
    if (r->openers.count(host)) open.push_back(id);
  for (uint64_t id : open) {
    Region* r = FindRegion(id);
    r->openers.erase(host);
    if (r->openers.empty() && r->ready) FreeRegion(*r);
  }
}

// ---- pending host requests --------------------------------------------------

uint64_t AgentCore::NewPending(uint64_t host, const AgentRequest& q, uint64_t reply_bytes) {
  const uint64_t id = next_pending_++;
  Pending& p = pending_[id];
  p.host = host;
  p.request_id = q.request_id;
  p.op = q.op;
  p.region = q.region;
  p.data.assign(reply_bytes, 0);
  p.arrived = std::chrono::steady_clock::now();
  p.arrived_ns = farmem::AgentClockNanos();
  return id;
}

void AgentCore::Deliver(uint64_t pending, uint64_t dst_offset, const uint8_t* src, uint64_t length) {
  std::memcpy(pending_.at(pending).data.data() + dst_offset, src, length);
}

void AgentCore::PartDone(uint64_t pending, const Status& status) {
  auto it = pending_.find(pending);
  if (it == pending_.end()) return;
  Pending& p = it->second;
  if (!status.ok() && p.status.ok()) p.status = status;
  if (--p.outstanding == 0) Finish(pending, p.status, p.value);
}

void AgentCore::Finish(uint64_t pending, Status status, uint64_t value) {
  Pending p = std::move(pending_.at(pending));
  pending_.erase(pending);
  if (p.op == AgentOp::kReadPages) {
    counters_.read_request_micros += MicrosSince(p.arrived);
    ++counters_.read_requests_timed;
  }
  if (p.op == AgentOp::kCreateRegion) {
    Region* r = FindRegion(p.region);
    if (r != nullptr && status.ok() && p.host == 0) {  // its host left while it was made
      FreeRegion(*r);
      return;
    }
    if (r != nullptr && status.ok()) {
      r->ready = true;
      ++r->openers[p.host];
      value = r->id;
      if (r->read_only && options_.static_cache && static_used_ + r->alloc_bytes <= options_.static_cache_bytes)
        StartStaticLoad(*r);
    } else if (r != nullptr) {
      FreeRegion(*r);
    }
  }
  if (!status.ok()) ++counters_.host_errors;
  Reply(p.host, p.request_id, std::move(status), value, std::move(p.data), p.arrived_ns);
}

void AgentCore::Reply(uint64_t host, uint64_t request_id, Status status, uint64_t value, std::vector<uint8_t> data,
                      uint64_t received_ns) {
  if (host == 0) return;
  AgentReply a;
  a.request_id = request_id;
  a.stamps.received_ns = received_ns;
  a.status = std::move(status);
  a.value = value;
  if (a.status.ok()) a.data = std::move(data);
  reply_(host, std::move(a));
}

// ---- far addresses ----------------------------------------------------------

AgentCore::Region* AgentCore::FindRegion(uint64_t id) {
  auto it = regions_.find(id);
  return it == regions_.end() ? nullptr : it->second.get();
}

uint64_t AgentCore::FarAddress(const Region& r, uint64_t offset) const {
  return r.chunks[offset / r.chunk_bytes] + offset % r.chunk_bytes;
}

bool AgentCore::DynamicApplies(const Region& r) const {
  return options_.dynamic_cache && r.st != Region::Static::kLoading && r.st != Region::Static::kReady;
}

// Whether a request for the page at `offset` continues a forward scan: one
// of the last kStreamLookback pages requested is of the same region and
// less than an entry before it.  Only then does the prefetcher load the
// entries after the page's: CC's sparse rounds on an R-MAT graph read edge
// pages in random order (their frontier is in discovery order), and there
// the next entry was never asked for before it was evicted (measured on
// rmat-18: 2 fills per miss, most evicted unused).  Two scanning threads
// and the vertex-data pages between their requests fit in the lookback.
bool AgentCore::ContinuesStream(uint64_t region, uint64_t offset) const {
  constexpr uint64_t kStreamLookback = 8;
  bool stream = false;
  recent_.ForEach(
      [&](const RecentPage& p) {
        stream = stream || (p.region == region && p.offset < offset && offset - p.offset <= options_.entry_bytes);
      },
      kStreamLookback);
  return stream;
}

// While the cache is off: would `entry` have been cached?  It would if the
// cache could still hold it: the recent pages' entries, and after a page
// that continued a scan the prefetch_entries after its own (what the
// prefetcher loads), newest first, as many distinct entries as the cache
// holds.  Bounding by the capacity matters: 128 random pages touch nearly
// every entry of a region of 32, which an 8-entry cache does not hold (CC's
// sparse rounds would switch the cache back on at once).
bool AgentCore::PredictHit(uint64_t region, uint64_t entry) const {
  const CacheKey wanted{region, entry};
  std::vector<CacheKey> held;
  bool hit = false;
  recent_.ForEach([&](const RecentPage& p) {
    const uint64_t e = p.offset / options_.entry_bytes;
    const uint64_t ahead = options_.prefetch && p.stream ? options_.prefetch_entries : 0;
    for (uint64_t i = 0; i <= ahead && !hit && held.size() < cache_.capacity(); ++i) {
      const CacheKey key{p.region, e + i};
      if (std::find(held.begin(), held.end(), key) != held.end()) continue;
      held.push_back(key);
      hit = key == wanted;
    }
  });
  return hit;
}

// Entries a page among the last kInUseLookback requested lies in: eviction
// spares them while it has other candidates.  Random eviction over all
// entries threw out the entry a scan was in, or a vertex-data entry looked
// up all round long (CC on rmat-18: 41-50 of a dense round's 55-72 misses,
// docs/evaluation.md); the victim is still drawn at random, from the rest.
bool AgentCore::InUse(const CacheKey& key) const {
  constexpr uint64_t kInUseLookback = 32;
  bool used = false;
  recent_.ForEach(
      [&](const RecentPage& p) { used = used || (p.region == key.region && p.offset / options_.entry_bytes == key.entry); },
      kInUseLookback);
  return used;
}

size_t AgentCore::window() const { return options_.async_forwarding ? options_.max_in_flight : 1; }

// ---- operations -------------------------------------------------------------

void AgentCore::QueueRead(uint64_t region, uint64_t offset, uint64_t length, uint64_t pending, uint64_t dst_offset,
                          PageClass cls) {
  reads_.push_back({region, offset, length, pending, dst_offset, cls});
  ++pending_.at(pending).outstanding;
}

void AgentCore::Enqueue(Op op, bool background) { (background ? background_ : queue_).push_back(std::move(op)); }

bool AgentCore::has_work() const {
  const bool queued = !reads_.empty() || !writes_.empty() || !queue_.empty() || !background_.empty();
  // Pages pushed on the recent list by hits alone leave nothing queued, yet
  // the prefetcher must read them (the entry after a scanned one is loaded
  // while the scan is still in this one).
  const bool prefetchable = options_.dynamic_cache && options_.prefetch && recent_.unread() > 0 &&
                            prefetch_in_flight_ < PrefetchLimit();
  return (queued && in_flight_ < window()) || prefetchable;
}

// Fills in flight are pinned entries: more than a quarter of a small cache
// evicts entries filled a moment ago before their pages are asked for
// (measured: a 2-entry cache with 8 fills in flight hit 28% and fetched 6x
// the bytes the host read).
uint64_t AgentCore::PrefetchLimit() const {
  return std::min<uint64_t>(options_.max_prefetch_in_flight, std::max<uint64_t>(1, cache_.capacity() / 4));
}

void AgentCore::Flush() {
  if (queue_.empty()) BuildBatch();
  Prefetch();
  Issue();
}

// The queued reads and writes become operations: merged when aggregation is
// on.  Writes go first so that a read in the same batch sees them.
void AgentCore::BuildBatch() {
  if (reads_.empty() && writes_.empty()) return;
  ++counters_.batches;
  const bool merge = options_.aggregation;
  std::vector<QueuedWrite> writes = std::move(writes_);
  writes_.clear();
  // Without aggregation: arrival order.  With it: by address, overlapping
  // writes always in one operation (applied in arrival order), adjacent ones
  // while the operation stays within max_op_bytes and its chunk.
  std::sort(writes.begin(), writes.end(), [merge](const QueuedWrite& a, const QueuedWrite& b) {
    if (!merge) return a.seq < b.seq;
    return std::tie(a.region, a.offset, a.seq) < std::tie(b.region, b.offset, b.seq);
  });
  for (size_t i = 0; i < writes.size();) {
    const Region* r = FindRegion(writes[i].region);
    if (r == nullptr) {  // destroyed meanwhile
      PartDone(writes[i].pending, Destroyed(writes[i].region));
      ++i;
      continue;
    }
    uint64_t hi = 0;
    const size_t j = RunEnd(writes, i, merge, options_.max_op_bytes, r->chunk_bytes, &hi);
    const uint64_t lo = writes[i].offset;
    Op op;
    op.purpose = Purpose::kHostWrite;
    op.op.kind = ForwardOp::Kind::kWrite;
    op.op.cls = PageClass::kWriteBack;
    op.op.addr = FarAddress(*r, lo);
    op.region = r->id;
    op.offset = lo;
    op.op.data.assign(hi - lo, 0);
    std::vector<const QueuedWrite*> group;
    for (size_t k = i; k < j; ++k) group.push_back(&writes[k]);
    std::sort(group.begin(), group.end(), [](const QueuedWrite* a, const QueuedWrite* b) { return a->seq < b->seq; });
    for (const QueuedWrite* w : group) {
      std::memcpy(op.op.data.data() + (w->offset - lo), w->data.data(), w->data.size());
      op.acks.push_back(w->pending);
    }
    op.parts = j - i;
    Enqueue(std::move(op), false);
    i = j;
  }
  std::vector<QueuedRead> reads = std::move(reads_);
  reads_.clear();
  if (merge) {  // without aggregation: arrival order, one operation each
    std::stable_sort(reads.begin(), reads.end(), [](const QueuedRead& a, const QueuedRead& b) {
      return std::tie(a.region, a.offset) < std::tie(b.region, b.offset);
    });
  }
  for (size_t i = 0; i < reads.size();) {
    const Region* r = FindRegion(reads[i].region);
    if (r == nullptr) {
      PartDone(reads[i].pending, Destroyed(reads[i].region));
      ++i;
      continue;
    }
    uint64_t hi = 0;
    const size_t j = RunEnd(reads, i, merge, options_.max_op_bytes, r->chunk_bytes, &hi);
    const uint64_t lo = reads[i].offset;
    Op op;
    op.purpose = Purpose::kHostRead;
    op.op.kind = ForwardOp::Kind::kRead;
    // The host's class (its own prefetch) unless a part was on demand.
    op.op.cls = PageClass::kPrefetch;
    for (size_t k = i; k < j; ++k)
      if (reads[k].cls != PageClass::kPrefetch) op.op.cls = PageClass::kOnDemand;
    op.op.addr = FarAddress(*r, lo);
    op.op.bytes = hi - lo;
    op.region = r->id;
    op.offset = lo;
    for (size_t k = i; k < j; ++k)
      op.deliveries.push_back({reads[k].pending, reads[k].dst_offset, reads[k].offset - lo, reads[k].length});
    op.parts = j - i;
    Enqueue(std::move(op), false);
    i = j;
  }
}

void AgentCore::Issue() {
  std::vector<ForwardOp> out;
  while (in_flight_ < window() && (!queue_.empty() || !background_.empty())) {
    std::deque<Op>& from = !queue_.empty() ? queue_ : background_;
    Op op = std::move(from.front());
    from.pop_front();
    op.op.tag = next_tag_++;
    if (op.op.kind == ForwardOp::Kind::kRead || op.op.kind == ForwardOp::Kind::kWrite) {
      const uint64_t bytes = op.op.kind == ForwardOp::Kind::kRead ? op.op.bytes : op.op.data.size();
      ++counters_.memory_ops;
      ++counters_.memory_ops_by_class[ClassIndex(op.op.cls)];
      counters_.memory_bytes_by_class[ClassIndex(op.op.cls)] += bytes;
      counters_.forwarded_requests += op.parts;
      op.issued = std::chrono::steady_clock::now();
    }
    ForwardOp wire = op.op;
    if (op.op.kind == ForwardOp::Kind::kWrite) op.op.data.clear();  // the forwarder's copy is enough
    ops_.emplace(wire.tag, std::move(op));
    out.push_back(std::move(wire));
    ++in_flight_;
  }
  counters_.max_in_flight_seen = std::max<uint64_t>(counters_.max_in_flight_seen, in_flight_);
  if (!out.empty()) forwarder_->Submit(std::move(out));
}

// Background loads from the recent list, within max_prefetch_in_flight.
void AgentCore::Prefetch() {
  if (!options_.dynamic_cache || !options_.prefetch) return;
  const uint64_t limit = PrefetchLimit();
  while (prefetch_in_flight_ < limit) {
    std::optional<RecentPage> page = recent_.Next();
    if (!page) return;
    if (!switch_.on()) continue;
    Region* r = FindRegion(page->region);
    if (r == nullptr || !r->ready || !DynamicApplies(*r)) continue;
    const uint64_t e0 = page->offset / options_.entry_bytes;
    const uint64_t last = page->stream ? e0 + options_.prefetch_entries : e0;
    for (uint64_t e = page->missed ? e0 : e0 + 1; e <= last; ++e) {
      if (e * options_.entry_bytes >= r->alloc_bytes) break;
      const CacheKey key{r->id, e};
      if (cache_.Find(key) != nullptr) continue;
      if (cache_.Insert(key, [this](const CacheKey& k) { return InUse(k); }) == nullptr) {
        ++counters_.prefetch_skipped;
        continue;
      }
      PatchWithQueuedWrites(r->id, e);
      Op op;
      op.purpose = Purpose::kFill;
      op.op.kind = ForwardOp::Kind::kRead;
      op.op.cls = PageClass::kPrefetch;
      op.op.addr = FarAddress(*r, e * options_.entry_bytes);
      op.op.bytes = options_.entry_bytes;
      op.region = r->id;
      op.offset = e * options_.entry_bytes;
      ++counters_.prefetches;
      ++prefetch_in_flight_;
      Enqueue(std::move(op), true);
    }
  }
}

// A fill may reach far memory before write-backs that arrived earlier but
// are still queued here: they become patches of the new entry (in arrival
// order), so it never holds data older than them.
void AgentCore::PatchWithQueuedWrites(uint64_t region, uint64_t entry) {
  const uint64_t lo = entry * options_.entry_bytes, hi = lo + options_.entry_bytes;
  auto patch = [&](uint64_t offset, const std::vector<uint8_t>& data) {
    if (offset < hi && offset + data.size() > lo) cache_.ApplyWrite(region, offset, data.data(), data.size());
  };
  for (const Op& op : queue_)
    if (op.purpose == Purpose::kHostWrite && op.region == region) patch(op.offset, op.op.data);
  for (const QueuedWrite& w : writes_)
    if (w.region == region) patch(w.offset, w.data);
}

void AgentCore::StartStaticLoad(Region& r) {
  r.st = Region::Static::kLoading;
  r.static_data.assign(r.alloc_bytes, 0);
  static_used_ += r.alloc_bytes;
  for (uint64_t lo = 0; lo < r.alloc_bytes;) {
    const uint64_t hi = std::min({r.alloc_bytes, lo + options_.max_op_bytes, (lo / r.chunk_bytes + 1) * r.chunk_bytes});
    Op op;
    op.purpose = Purpose::kStaticLoad;
    op.op.kind = ForwardOp::Kind::kRead;
    op.op.cls = PageClass::kStaticLoad;
    op.op.addr = FarAddress(r, lo);
    op.op.bytes = hi - lo;
    op.region = r.id;
    op.offset = lo;
    ++r.static_outstanding;
    Enqueue(std::move(op), true);
    lo = hi;
  }
}

void AgentCore::OnResult(ForwardResult result) {
  auto node = ops_.extract(result.tag);
  if (node.empty()) return;
  Op& op = node.mapped();
  --in_flight_;
  if (op.op.kind == ForwardOp::Kind::kRead || op.op.kind == ForwardOp::Kind::kWrite) {
    counters_.memory_op_micros_by_class[ClassIndex(op.op.cls)] += MicrosSince(op.issued);
    using std::chrono::microseconds;
    const auto unset = std::chrono::steady_clock::time_point{};
    if (result.taken != unset && result.completed != unset) {
      const auto micros = [](auto d) { return static_cast<uint64_t>(std::chrono::duration_cast<microseconds>(d).count()); };
      ++counters_.forward_timed;
      counters_.forward_handoff_micros += micros(result.taken - op.issued);
      counters_.forward_node_micros += micros(result.completed - result.taken);
      counters_.forward_return_micros += MicrosSince(result.completed);
    }
  }
  Region* r = FindRegion(op.region);
  switch (op.purpose) {
    case Purpose::kHostRead:
      for (const Delivery& d : op.deliveries) {
        if (result.status.ok() && result.data.size() >= d.src_offset + d.length) {
          Deliver(d.pending, d.dst_offset, result.data.data() + d.src_offset, d.length);
          PartDone(d.pending, Status::Ok());
        } else {
          PartDone(d.pending, result.status.ok()
                                  ? Status::Internal(fmt::format("agent: region {}: short read ({} bytes)", op.region,
                                                                 result.data.size()))
                                  : Status::FromCode(result.status.code(),
                                                     fmt::format("agent: region {}: {}", op.region,
                                                                 result.status.message())));
        }
      }
      break;
    case Purpose::kHostWrite:
      for (uint64_t p : op.acks)
        PartDone(p, result.status.ok() ? Status::Ok()
                                       : Status::FromCode(result.status.code(),
                                                          fmt::format("agent: region {}: write-back: {}", op.region,
                                                                      result.status.message())));
      break;
    case Purpose::kFill: {
      --prefetch_in_flight_;
      const CacheKey key{op.region, op.offset / options_.entry_bytes};
      CacheEntry* e = cache_.Find(key);
      if (e == nullptr) break;
      std::vector<CacheWaiter> waiters = std::move(e->waiters);
      e->waiters.clear();
      if (result.status.ok() && r != nullptr && result.data.size() == options_.entry_bytes) {
        cache_.Filled(e, std::move(result.data));
        for (const CacheWaiter& w : waiters) {
          Deliver(w.pending, w.dst_offset, e->data.data() + w.entry_offset, w.length);
          PartDone(w.pending, Status::Ok());
        }
      } else {  // the waiters read on demand instead
        ++counters_.fill_failures;
        cache_.Erase(key);
        for (const CacheWaiter& w : waiters) {
          if (r == nullptr) {
            PartDone(w.pending, Destroyed(op.region));
            continue;
          }
          reads_.push_back({op.region, op.offset + w.entry_offset, w.length, w.pending, w.dst_offset,
                            PageClass::kOnDemand});
        }
      }
      break;
    }
    case Purpose::kStaticLoad:
      if (r == nullptr || r->st != Region::Static::kLoading) break;
      if (!result.status.ok() || result.data.size() != op.op.bytes) {
        r->st = Region::Static::kFailed;  // served from far memory from now on
        static_used_ -= r->alloc_bytes;
        r->static_data = {};
        break;
      }
      std::memcpy(r->static_data.data() + op.offset, result.data.data(), result.data.size());
      if (--r->static_outstanding == 0) {
        r->st = Region::Static::kReady;
        ++counters_.static_regions;
        counters_.static_bytes += r->alloc_bytes;
      }
      break;
    case Purpose::kAllocate:
      if (!result.status.ok() || r == nullptr) {
        for (uint64_t p : op.acks)
          PartDone(p, r == nullptr ? Destroyed(op.region)
                                   : Status::FromCode(result.status.code(),
                                                      fmt::format("agent: {}: reserving {} bytes: {}", r->Describe(),
                                                                  r->chunk_bytes, result.status.message())));
        break;
      }
      r->chunks[op.chunk] = result.value;
      {
        Op fill;
        fill.purpose = Purpose::kPreload;
        fill.op.kind = ForwardOp::Kind::kPreload;
        fill.op.addr = result.value;
        fill.op.bytes = r->chunk_bytes;
        fill.op.file = r->file;
        fill.op.file_offset = uint64_t{op.chunk} * r->chunk_bytes;
        fill.region = r->id;
        fill.chunk = op.chunk;
        fill.acks = op.acks;
        Enqueue(std::move(fill), false);
      }
      break;
    case Purpose::kPreload:
      for (uint64_t p : op.acks)
        PartDone(p, result.status.ok() || r == nullptr
                        ? Status::Ok()
                        : Status::FromCode(result.status.code(),
                                           fmt::format("agent: {}: preloading chunk {}: {}", r->Describe(), op.chunk,
                                                       result.status.message())));
      break;
    case Purpose::kFree:
      break;
  }
}

nlohmann::json AgentCore::Stats() const {
  const AgentCounters& c = counters_;
  nlohmann::json by_class_ops, by_class_bytes, by_class_micros;
  for (size_t i = 0; i < 4; ++i) {
    const char* name = farmem::PageClassName(static_cast<PageClass>(i));
    by_class_ops[name] = c.memory_ops_by_class[i];
    by_class_bytes[name] = c.memory_bytes_by_class[i];
    by_class_micros[name] = c.memory_op_micros_by_class[i];
  }
  const uint64_t lookups = c.dynamic_hits + c.dynamic_misses;
  return {
      {"options",
       {{"aggregation", options_.aggregation},
        {"async_forwarding", options_.async_forwarding},
        {"static_cache", options_.static_cache},
        {"dynamic_cache", options_.dynamic_cache},
        {"prefetch", options_.prefetch},
        {"adaptive", options_.adaptive},
        {"hit_rate_threshold", options_.hit_rate_threshold}}},
      {"host_requests", c.host_requests},
      {"host_read_requests", c.host_read_requests},
      {"host_write_requests", c.host_write_requests},
      {"host_pages_read", c.host_pages_read},
      {"host_pages_written", c.host_pages_written},
      {"host_errors", c.host_errors},
      {"batches", c.batches},
      {"forwarded_requests", c.forwarded_requests},
      {"memory_ops", c.memory_ops},
      {"memory_ops_by_class", by_class_ops},
      {"memory_bytes_by_class", by_class_bytes},
      {"memory_op_micros_by_class", by_class_micros},
      {"read_request_micros", c.read_request_micros},
      {"forward_timed", c.forward_timed},
      {"forward_handoff_micros", c.forward_handoff_micros},
      {"forward_node_micros", c.forward_node_micros},
      {"forward_return_micros", c.forward_return_micros},
      {"read_requests_timed", c.read_requests_timed},
      {"max_in_flight_seen", c.max_in_flight_seen},
      {"static_hits", c.static_hits},
      {"static_misses", c.static_misses},
      {"static_regions", c.static_regions},
      {"static_bytes", c.static_bytes},
      {"dynamic_hits", c.dynamic_hits},
      {"dynamic_misses", c.dynamic_misses},
      {"dynamic_hit_rate", lookups == 0 ? 0.0 : static_cast<double>(c.dynamic_hits) / lookups},
      {"dynamic_lookups_off", c.dynamic_lookups_off},
      {"dynamic_hits_filling", c.dynamic_hits_filling},
      {"dynamic_misses_evicted", c.dynamic_misses_evicted},
      {"dynamic_hits_read_only", c.dynamic_hits_read_only},
      {"dynamic_misses_read_only", c.dynamic_misses_read_only},
      {"dynamic_evicted_unused", cache_.evicted_unused()},
      {"dynamic_on", switch_.on()},
      {"dynamic_turned_off", switch_.turned_off()},
      {"dynamic_turned_on", switch_.turned_on()},
      {"dynamic_entries", cache_.size()},
      {"dynamic_evictions", cache_.evictions()},
      {"prefetches", c.prefetches},
      {"prefetch_skipped", c.prefetch_skipped},
      {"recent_lost", recent_.lost()},
      {"fill_failures", c.fill_failures},
      {"regions", regions_.size()},
  };
}

}  // namespace pulse::agent
