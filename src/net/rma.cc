// One-sided access: memory registration, remote keys, Get/Put/Flush.
#include <cstring>
#include <string>

#include "net/internal.h"

namespace pulse::net {
namespace {

// Packed rkeys travel inside an envelope so that ImportRkey can reject bytes
// that are not one (UCX itself trusts its input) and so that the importer
// knows the region (for bounds checks and RmaPath::kMessages):
//   "PRK2" | u32 UCX rkey length | u64 region id | u64 base | u64 size | UCX rkey
constexpr uint8_t kRkeyMagic[4] = {'P', 'R', 'K', '2'};
constexpr size_t kRkeyEnvelope = 32;

void OpDone(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<Op*>(user_data);
  Worker::Impl* m = op->impl;
  FinishRequest(m, request);
  m->CompleteOp(op, FromUcs(status, op->kind == Op::kFlush ? "flush" : "one-sided operation"));
}

Op* NewOp(Worker::Impl* m, Op::Kind kind, Endpoint* e, bool blocking, CompletionFn done) {
  auto* op = new Op();
  op->kind = kind;
  op->impl = m;
  op->ep = e->id;
  op->blocking = blocking;
  op->done = std::move(done);
  return op;
}

Op* NewRmaOp(Worker::Impl* m, Endpoint* e, bool is_get, void* local, size_t length, bool blocking,
             CompletionFn done) {
  Op* op = NewOp(m, Op::kRma, e, blocking, std::move(done));
  op->is_get = is_get;
  op->local = local;
  op->length = length;
  return op;
}

ucp_request_param_t OpParam(Op* op, bool no_immediate) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  if (no_immediate) p.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.send = OpDone;
  p.user_data = op;
  return p;
}

Status CheckRkey(Worker::Impl& m, const RemoteKey& rkey, uint64_t addr, size_t length,
                 Endpoint** out) {
  if (!rkey.valid()) return Status::InvalidArgument("invalid remote key");
  if (addr < rkey.base() || length > rkey.size() || addr - rkey.base() > rkey.size() - length) {
    return Status::OutOfRange("remote range [" + std::to_string(addr) + ", +" +
                              std::to_string(length) + ") is outside the key's region");
  }
  Endpoint* e = m.Find(rkey.endpoint());
  if (e == nullptr) return Status::NotFound("endpoint " + std::to_string(rkey.endpoint()));
  if (e->state != EpState::kReady || e->ep == nullptr) {
    return Status::Unavailable("endpoint " + std::to_string(e->id) + " to " + e->peer +
                               " has failed: " + e->failure.ToString());
  }
  *out = e;
  return Status::Ok();
}

}  // namespace

// ---- MemoryRegion / RemoteKey ----------------------------------------------

MemoryRegion::MemoryRegion(MemoryRegion&& o) noexcept { *this = std::move(o); }

void MemoryRegion::Release() {
  if (registry_ != nullptr) registry_->regions.erase(id_);
  if (memh_ != nullptr) ucp_mem_unmap(context_, memh_);
  registry_.reset();
  memh_ = nullptr;
}

MemoryRegion& MemoryRegion::operator=(MemoryRegion&& o) noexcept {
  if (this != &o) {
    Release();
    registry_ = std::move(o.registry_);
    id_ = o.id_;
    context_ = o.context_;
    memh_ = o.memh_;
    addr_ = o.addr_;
    length_ = o.length_;
    rkey_ = std::move(o.rkey_);
    o.registry_.reset();
    o.context_ = nullptr;
    o.memh_ = nullptr;
    o.addr_ = nullptr;
    o.length_ = 0;
  }
  return *this;
}

MemoryRegion::~MemoryRegion() { Release(); }

RemoteKey::RemoteKey(RemoteKey&& o) noexcept { *this = std::move(o); }

RemoteKey& RemoteKey::operator=(RemoteKey&& o) noexcept {
  if (this != &o) {
    if (rkey_ != nullptr) ucp_rkey_destroy(rkey_);
    rkey_ = o.rkey_;
    mapped_ = o.mapped_;
    ep_ = o.ep_;
    region_id_ = o.region_id_;
    base_ = o.base_;
    size_ = o.size_;
    o.rkey_ = nullptr;
    o.mapped_ = nullptr;
    o.ep_ = kInvalidEndpoint;
  }
  return *this;
}

RemoteKey::~RemoteKey() {
  if (rkey_ != nullptr) ucp_rkey_destroy(rkey_);
}

Result<MemoryRegion> Worker::RegisterMemory(void* addr, size_t length) {
  if (addr == nullptr || length == 0) {
    return Status::InvalidArgument("RegisterMemory: null address or zero length");
  }
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = addr;
  params.length = length;
  MemoryRegion region;
  ucs_status_t st = ucp_mem_map(impl_->context, &params, &region.memh_);
  if (st != UCS_OK) return FromUcs(st, "ucp_mem_map");
  return impl_->FinishRegion(std::move(region), addr, length);
}

Result<MemoryRegion> Worker::AllocateMemory(size_t length) {
  if (length == 0) return Status::InvalidArgument("AllocateMemory: zero length");
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  params.address = nullptr;
  params.length = length;
  params.flags = UCP_MEM_MAP_ALLOCATE;
  MemoryRegion region;
  ucs_status_t st = ucp_mem_map(impl_->context, &params, &region.memh_);
  if (st != UCS_OK) return FromUcs(st, "ucp_mem_map(UCP_MEM_MAP_ALLOCATE)");
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
  st = ucp_mem_query(region.memh_, &attr);
  if (st != UCS_OK) {
    ucp_mem_unmap(impl_->context, region.memh_);
    return FromUcs(st, "ucp_mem_query");
  }
  // UCX does not promise zeroed memory; callers (rings) rely on it.
  std::memset(attr.address, 0, length);
  region.context_ = impl_->context;  // unmapped (and freed) by Release even if the rest fails
  return impl_->FinishRegion(std::move(region), attr.address, length);
}

Result<MemoryRegion> Worker::Impl::FinishRegion(MemoryRegion region, void* addr, size_t length) {
  Impl& m = *this;
  region.context_ = m.context;
  region.addr_ = addr;
  region.length_ = length;
  // A random id, not a count: on the message path the id is what a peer
  // must name to reach the region, and pulse hands a region's key (and so
  // its id) only to whoever may use it, so ids must not be guessable.
  std::random_device entropy;
  do {
    region.id_ = (uint64_t{entropy()} << 32) | entropy();
  } while (region.id_ == 0 || m.regions->regions.count(region.id_) != 0);
  region.registry_ = m.regions;
  m.regions->regions[region.id_] = RegionInfo{static_cast<uint8_t*>(addr), length};
  void* packed = nullptr;
  size_t packed_size = 0;
  ucs_status_t st = ucp_rkey_pack(m.context, region.memh_, &packed, &packed_size);
  if (st != UCS_OK) return FromUcs(st, "ucp_rkey_pack");
  region.rkey_.resize(kRkeyEnvelope + packed_size);
  uint8_t* out = region.rkey_.data();
  uint32_t size32 = static_cast<uint32_t>(packed_size);
  uint64_t base = reinterpret_cast<uint64_t>(addr);
  uint64_t size64 = length;
  std::memcpy(out, kRkeyMagic, 4);
  std::memcpy(out + 4, &size32, 4);
  std::memcpy(out + 8, &region.id_, 8);
  std::memcpy(out + 16, &base, 8);
  std::memcpy(out + 24, &size64, 8);
  std::memcpy(out + kRkeyEnvelope, packed, packed_size);
  ucp_rkey_buffer_release(packed);
  return region;
}

Result<RemoteKey> Worker::ImportRkey(EndpointId id, std::span<const uint8_t> packed) {
  Impl& m = *impl_;
  uint32_t size32 = 0;
  if (packed.size() < kRkeyEnvelope || std::memcmp(packed.data(), kRkeyMagic, 4) != 0 ||
      (std::memcpy(&size32, packed.data() + 4, 4), size32 != packed.size() - kRkeyEnvelope) ||
      size32 == 0) {
    return Status::InvalidArgument("ImportRkey: bytes are not a packed pulse rkey");
  }
  Endpoint* e = m.Find(id);
  if (e == nullptr) return Status::NotFound("endpoint " + std::to_string(id));
  if (e->state != EpState::kReady || e->ep == nullptr) {
    return Status::Unavailable("endpoint " + std::to_string(id) + " has failed");
  }
  RemoteKey key;
  std::memcpy(&key.region_id_, packed.data() + 8, 8);
  std::memcpy(&key.base_, packed.data() + 16, 8);
  std::memcpy(&key.size_, packed.data() + 24, 8);
  if (m.UseUcxRma(e)) {
    std::vector<uint8_t> copy(packed.begin() + kRkeyEnvelope, packed.end());  // aligned
    ucs_status_t st = ucp_ep_rkey_unpack(e->ep, copy.data(), &key.rkey_);
    if (st != UCS_OK) return FromUcs(st, "ucp_ep_rkey_unpack");
  } else if (m.options.rma_path == RmaPath::kAuto && !m.FaultsOneSided()) {
    // No offloaded RMA lane for ordinary memory (shared memory on one
    // host), but memory the peer allocated with Worker::AllocateMemory is a
    // shared-memory segment UCX maps here: when ucp_rkey_ptr reaches it,
    // UCX's puts and gets are plain stores and loads, no CPU at the peer.
    std::vector<uint8_t> copy(packed.begin() + kRkeyEnvelope, packed.end());  // aligned
    ucp_rkey_h rkey = nullptr;
    void* mapped = nullptr;
    if (ucp_ep_rkey_unpack(e->ep, copy.data(), &rkey) == UCS_OK) {
      if (ucp_rkey_ptr(rkey, key.base_, &mapped) == UCS_OK) {
        key.rkey_ = rkey;
        key.mapped_ = static_cast<uint8_t*>(mapped);
      } else {
        ucp_rkey_destroy(rkey);
      }
    }
  }
  key.ep_ = id;
  return key;
}

// ---- completion bookkeeping ------------------------------------------------

void Worker::Impl::CompleteOp(Op* op, Status status) {
  if (op->blocking) {
    if (op->abandoned) {
      delete op;
    } else {
      op->finished = true;
      op->status = std::move(status);
    }
    return;
  }
  CompletionFn done = std::move(op->done);
  delete op;
  if (done) {
    ++callback_depth;
    done(status);
    --callback_depth;
  }
}

void Worker::Impl::ReleaseOps(std::initializer_list<Op*> ops, Duration grace) {
  if (grace > Duration::zero()) {
    (void)RunUntil(
        [&ops] {
          for (Op* op : ops) {
            if (op != nullptr && !op->finished) return false;
          }
          return true;
        },
        DeadlineAfter(grace));
  }
  for (Op* op : ops) {
    if (op == nullptr) continue;
    if (op->finished) {
      delete op;
    } else {
      op->abandoned = true;
    }
  }
}

Op* Worker::Impl::StartFlush(Endpoint* e, Status* immediate) {
  Op* op = NewOp(this, Op::kFlush, e, /*blocking=*/true, nullptr);
  ucp_request_param_t p = OpParam(op, false);
  ++inflight;
  void* req = ucp_ep_flush_nbx(e->ep, &p);
  if (UCS_PTR_IS_PTR(req)) return op;
  --inflight;
  delete op;
  *immediate = UCS_PTR_IS_ERR(req) ? FromUcs(UCS_PTR_STATUS(req), "flush to " + e->peer)
                                   : Status::Ok();
  return nullptr;
}

// ---- Get / Put ------------------------------------------------------------

Status Worker::Impl::IssueRma(Endpoint* e, const RemoteKey& rkey, uint64_t remote_addr, Op* op,
                              bool no_immediate, bool* pending) {
  *pending = true;
  // UCX may run the completion callback inside ucp_put_nbx/ucp_get_nbx even
  // with NO_IMM_CMPL (the shared-memory rkey_ptr path completes in place and
  // still returns a request), and the callback deletes `op`: read it first.
  const size_t length = op->length;
  if (!rkey.uses_ucx_rma()) {
    PULSE_RETURN_IF_ERROR(StartSwRma(e, rkey, remote_addr, op));
  } else {
    ucp_request_param_t p = OpParam(op, no_immediate);
    ++inflight;
    void* req = op->is_get
                    ? ucp_get_nbx(e->ep, op->local, op->length, remote_addr, rkey.rkey_, &p)
                    : ucp_put_nbx(e->ep, op->local, op->length, remote_addr, rkey.rkey_, &p);
    if (!UCS_PTR_IS_PTR(req)) {
      --inflight;
      if (UCS_PTR_IS_ERR(req)) return FromUcs(UCS_PTR_STATUS(req), op->is_get ? "get" : "put");
      *pending = false;  // completed at once
    }
  }
  ++counters.rma_ops;
  counters.rma_bytes += length;
  NoteActivity();
  return Status::Ok();
}

Status Worker::StartRma(bool is_get, const RemoteKey& rkey, uint64_t remote_addr, void* local,
                        size_t length, CompletionFn done) {
  Impl& m = *impl_;
  if (local == nullptr && length != 0) return Status::InvalidArgument("null local buffer");
  Endpoint* e = nullptr;
  PULSE_RETURN_IF_ERROR(CheckRkey(m, rkey, remote_addr, length, &e));
  Op* op = NewRmaOp(&m, e, is_get, local, length, /*blocking=*/false, std::move(done));
  bool pending = false;
  Status s = m.IssueRma(e, rkey, remote_addr, op, /*no_immediate=*/true, &pending);
  if (!s.ok()) {
    delete op;
    return s;
  }
  if (!pending) {  // completed despite NO_IMM_CMPL: complete later
    m.deferred_completions.emplace_back(std::move(op->done), Status::Ok());
    delete op;
  }
  return Status::Ok();
}

Status Worker::GetAsync(const RemoteKey& rkey, uint64_t remote_addr, void* local, size_t length,
                        CompletionFn done) {
  return StartRma(true, rkey, remote_addr, local, length, std::move(done));
}

Status Worker::PutAsync(const RemoteKey& rkey, uint64_t remote_addr, const void* local,
                        size_t length, CompletionFn done) {
  return StartRma(false, rkey, remote_addr, const_cast<void*>(local), length, std::move(done));
}

Status Worker::WaitForRma(bool is_get, const RemoteKey& rkey, uint64_t remote_addr,
                          void* local, size_t length, Duration timeout) {
  Impl& m = *impl_;
  const char* what = is_get ? "Get" : "Put";
  PULSE_RETURN_IF_ERROR(m.CheckBlockingAllowed(what));
  if (local == nullptr && length != 0) return Status::InvalidArgument("null local buffer");
  Endpoint* e = nullptr;
  PULSE_RETURN_IF_ERROR(CheckRkey(m, rkey, remote_addr, length, &e));
  Clock::time_point deadline = DeadlineAfter(timeout);

  Op* op = NewRmaOp(&m, e, is_get, local, length, /*blocking=*/true, nullptr);
  const bool ucx = rkey.uses_ucx_rma();
  bool pending = false;
  Status issued = m.IssueRma(e, rkey, remote_addr, op, /*no_immediate=*/false, &pending);
  if (!issued.ok() || !pending) {
    delete op;
    op = nullptr;
    PULSE_RETURN_IF_ERROR(issued);
  }
  // A UCX put is done when the peer has the data: flush.  (A kMessages
  // write completes when the peer acknowledged it.)
  Op* flush = nullptr;
  if (!is_get && ucx) {
    Status immediate;
    flush = m.StartFlush(e, &immediate);
    if (flush == nullptr && !immediate.ok()) {
      m.ReleaseOps({op}, std::chrono::seconds(1));
      return immediate;
    }
  }
  if (op == nullptr && flush == nullptr) return Status::Ok();

  EndpointId id = e->id;
  std::string peer = e->peer;
  (void)m.RunUntil(
      [op, flush] { return (op == nullptr || op->finished) && (flush == nullptr || flush->finished); },
      deadline);
  bool finished = (op == nullptr || op->finished) && (flush == nullptr || flush->finished);
  if (finished) {
    Status s = op != nullptr ? op->status : Status::Ok();
    if (s.ok() && flush != nullptr) s = flush->status;
    m.ReleaseOps({op, flush}, Duration::zero());
    return s;
  }
  // The peer does not answer.  Fail the endpoint so that UCX cancels the
  // operation and nothing touches `local` after we return.
  Status why = Status::Timeout(std::string(what) + " from " + peer + ": no completion within " +
                               MicrosText(timeout));
  if (Endpoint* live = m.Find(id); live != nullptr) m.FailNow(live, why);
  m.ReleaseOps({op, flush}, std::chrono::seconds(1));
  return why;
}

Status Worker::Get(const RemoteKey& rkey, uint64_t remote_addr, void* local, size_t length,
                   Duration timeout) {
  return WaitForRma(true, rkey, remote_addr, local, length, timeout);
}

Status Worker::Put(const RemoteKey& rkey, uint64_t remote_addr, const void* local,
                   size_t length, Duration timeout) {
  return WaitForRma(false, rkey, remote_addr, const_cast<void*>(local), length, timeout);
}

Status Worker::Flush(EndpointId id, Duration timeout) {
  Impl& m = *impl_;
  PULSE_RETURN_IF_ERROR(m.CheckBlockingAllowed("Flush"));
  Endpoint* e = m.Find(id);
  if (e == nullptr) return Status::NotFound("endpoint " + std::to_string(id));
  if (e->state != EpState::kReady || e->ep == nullptr) {
    return Status::Unavailable("endpoint " + std::to_string(id) + " has failed");
  }
  Status immediate;
  Op* op = m.StartFlush(e, &immediate);
  if (op == nullptr) {
    if (!immediate.ok()) return immediate;
    op = NewOp(&m, Op::kFlush, e, /*blocking=*/true, nullptr);  // already complete
    op->finished = true;
  }
  std::string peer = e->peer;
  auto sw_idle = [&m, id] {
    Endpoint* live = m.Find(id);
    return live == nullptr || live->state != EpState::kReady || live->sw_pending == 0;
  };
  (void)m.RunUntil([op, &sw_idle] { return op->finished && sw_idle(); }, DeadlineAfter(timeout));
  if (!op->finished || !sw_idle()) {
    m.ReleaseOps({op}, Duration::zero());
    return Status::Timeout("flush to " + peer + ": not complete within " + MicrosText(timeout));
  }
  Status s = op->status;
  delete op;
  Endpoint* live = m.Find(id);
  if (s.ok() && (live == nullptr || live->state != EpState::kReady)) {
    return Status::Unavailable("flush to " + peer + ": the endpoint failed");
  }
  return s;
}

}  // namespace pulse::net
