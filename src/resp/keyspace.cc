// The far keyspace of `pulse kv serve` (include/pulse/resp/keyspace.h).
#include "pulse/resp/keyspace.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "ds/btree_offload.h"
#include "pulse/ds/btree.h"
#include "pulse/ds/lock.h"
#include "pulse/iterators/resp_lookup.h"
#include "pulse/typed_traversal.h"
#include "pulse/iterators/resp_peek.h"
#include "pulse/iterators/resp_store.h"
#include "resp/iterators/resp_lookup.h"
#include "resp/iterators/resp_peek.h"
#include "resp/iterators/resp_store.h"

namespace pulse::resp {
namespace {

constexpr uint64_t kMagic = 0x5045535032534b53ull;  // "SKS2PSEP": a pulse RESP keyspace
// Version 2 adds the `wanted` word; version 1 keyspaces are still served.
constexpr uint64_t kVersion = 2;
// The least value room of a record: what the first read of a lookup
// fetches past the key, so a small value comes with it.
constexpr uint64_t kInlineValue = 64;
// A record write of at most this many bytes is asynchronous (resp_store).
constexpr size_t kStoreBytes = 8 * PULSE_RESP_STORE_WORDS;
// New records are carved from slabs of this size; a larger record is its own
// allocation.
constexpr uint64_t kSlabBytes = 64 << 10;
constexpr uint64_t kMaxSlabRecord = 4 << 10;

static_assert(sizeof(RecordHeader) == 40);

uint64_t Pad8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }
uint64_t ValueOffset(uint64_t key_len) { return sizeof(RecordHeader) + Pad8(key_len); }

// The index's lookups always run on the memory nodes: a traversal run at
// this CPU node may only read memory this client allocated, and the index
// holds nodes other servers allocated.
ds::BTreeOptions IndexOptions() {
  ds::BTreeOptions options;
  options.mode = ExecutionMode::kOffload;
  return options;
}

}  // namespace

struct Keyspace::Directory {
  uint64_t magic;
  uint64_t version;
  uint64_t index_header;
  uint64_t count;
  uint64_t lock;
  uint64_t wanted;  // version 2: the holder id of a server waiting for the lock, 0: none
};
// The part of the directory both versions have (what StoreDirectory writes).
constexpr size_t kDirectoryCore = 5 * sizeof(uint64_t);

uint64_t KeyHash(std::string_view key) {
  uint64_t h = XXH3_64bits(key.data(), key.size());
  if (h == 0) h = 1;
  if (h == ~uint64_t{0}) h = ~uint64_t{0} - 1;
  return h;
}

Keyspace::Keyspace(Client* client, uint64_t directory, const KeyspaceOptions& options)
    : client_(client), directory_(directory), options_(options) {}
Keyspace::~Keyspace() = default;

Result<std::unique_ptr<Keyspace>> Keyspace::OpenOrCreate(Client* client, const std::string& root_file,
                                                         const KeyspaceOptions& options) {
  int fd = ::open(root_file.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0) return Status::IoError(fmt::format("root file {}: {}", root_file, std::strerror(errno)));
  // Two servers starting together: the second waits for the first to write.
  ::flock(fd, LOCK_EX);
  struct Closer {
    int fd;
    ~Closer() { ::flock(fd, LOCK_UN); ::close(fd); }
  } closer{fd};
  std::string text(64, '\0');
  ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  uint64_t addr = 0;
  if (!text.empty()) addr = std::strtoull(text.c_str(), nullptr, 10);
  // The keyspace is a durable root of the tenant (Client::PublishRoot): it
  // outlives the servers that made it, and what a server adds to it after
  // opening the root is durable too.
  const std::string root = fmt::format("resp:{:016x}", XXH64(root_file.data(), root_file.size(), 0));
  if (addr != 0) {
    Directory d{};
    Status s = client->Read(addr, &d, kDirectoryCore);
    if (s.ok() && d.magic == kMagic && (d.version == 1 || d.version == kVersion)) {
      Result<uint64_t> published = client->OpenRoot(root);
      if (published.ok() && *published != addr)
        return Status::FailedPrecondition(fmt::format("root file {} names {:#x}, but root '{}' is at {:#x}",
                                                      root_file, addr, root, *published));
      if (!published.ok() && published.status().code() != Status::Code::kNotFound) return published.status();
      if (!published.ok()) PULSE_RETURN_IF_ERROR(client->PublishRoot(root, addr));
      std::unique_ptr<Keyspace> ks(new Keyspace(client, addr, options));
      ks->lock_ = ds::FarLock::Attach(client, d.lock, {.lease = options.lease});
      PULSE_RETURN_IF_ERROR(ks->LoadDirectory());
      return ks;
    }
    std::cerr << fmt::format("[kv] root file {} names {:#x}, which holds no keyspace ({}); creating a new one\n",
                             root_file, addr, s.ok() ? "bad magic" : s.ToString());
  }
  PULSE_ASSIGN_OR_RETURN(uint64_t dir, client->Allocate(sizeof(Directory)));
  PULSE_ASSIGN_OR_RETURN(auto lock, ds::FarLock::Create(client, {.lease = options.lease}));
  PULSE_ASSIGN_OR_RETURN(auto index, ds::BTree::Create(client, IndexOptions()));
  Directory d{kMagic, kVersion, index->header_address(), 0, lock->address(), 0};
  PULSE_RETURN_IF_ERROR(client->Write(dir, &d, sizeof d));
  if (Status s = client->PublishRoot(root, dir); s.code() == Status::Code::kAlreadyExists) {
    // A keyspace of an earlier root file with the same name: replaced.
    PULSE_RETURN_IF_ERROR(client->DropRoot(root));
    PULSE_RETURN_IF_ERROR(client->PublishRoot(root, dir));
  } else if (!s.ok()) {
    return s;
  }
  const std::string line = fmt::format("{}\n", dir);
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size()) ||
      ::fsync(fd) != 0)
    return Status::IoError(fmt::format("root file {}: {}", root_file, std::strerror(errno)));
  std::unique_ptr<Keyspace> ks(new Keyspace(client, dir, options));
  ks->lock_ = std::move(lock);
  ks->index_ = std::move(index);
  ks->index_header_ = d.index_header;
  ks->has_wanted_ = true;
  return ks;
}

Status Keyspace::LoadDirectory() {
  Directory d{};
  PULSE_RETURN_IF_ERROR(client_->Read(directory_, &d, kDirectoryCore));
  if (d.magic != kMagic) return Status::Internal(fmt::format("keyspace directory {:#x}: bad magic", directory_));
  has_wanted_ = d.version >= 2;
  count_ = stored_count_ = d.count;
  if (index_ == nullptr || d.index_header != index_header_) {
    PULSE_ASSIGN_OR_RETURN(index_, ds::BTree::Open(client_, d.index_header, IndexOptions()));
    index_header_ = d.index_header;
  } else {
    PULSE_RETURN_IF_ERROR(index_->Refresh());
  }
  return Status::Ok();
}

std::vector<uint8_t> Keyspace::DirectoryCore() const {
  const Directory d{kMagic, has_wanted_ ? kVersion : 1, index_header_, count_, lock_->address(), 0};
  const auto* bytes = reinterpret_cast<const uint8_t*>(&d);
  return std::vector<uint8_t>(bytes, bytes + kDirectoryCore);
}

Status Keyspace::StoreDirectory() {
  const std::vector<uint8_t> core = DirectoryCore();
  PULSE_RETURN_IF_ERROR(client_->Write(directory_, core.data(), core.size()));
  stored_count_ = count_;
  return Status::Ok();
}

bool Keyspace::TakeFusedSet(std::string_view key) {
  const uint64_t h = KeyHash(key);
  if (fused_done_.erase(h) == 0) return false;
  if (auto it = fused_unlinked_.find(h); it != fused_unlinked_.end()) {
    // The record is written; its index entry is this command's insert,
    // which the batch's replies need not wait for (End).
    const auto [record, full] = it->second;
    fused_unlinked_.erase(it);
    heads_[h] = record;
    ++count_;
    const uint64_t ticket = tickets_;
    InsertAsync(h, record, full);
    pending_stores_.at(ticket).deferrable = true;
  }
  return true;
}

void Keyspace::DropCaches() {
  fused_done_.clear();
  fused_unlinked_.clear();
  full_leaves_.clear();
  heads_.clear();
  windows_.clear();
  ++generation_;
}

Status Keyspace::WriteWanted(uint64_t v) {
  return client_->Write(directory_ + offsetof(Directory, wanted), &v, sizeof v);
}

void Keyspace::PeekWanted() {
  if (!has_wanted_ || peek_in_flight_) return;
  if (std::chrono::steady_clock::now() - last_wanted_check_ < options_.yield_check) return;
  auto peek = EmbeddedProgram<iterators::resp_peek>("resp_peek");
  if (!peek.ok()) return;  // OtherWants reads it
  pulse_resp_peek_state st{};
  std::vector<uint8_t> scratch(std::max<size_t>(sizeof st, (*peek)->info().scratch_bytes), 0);
  std::memcpy(scratch.data(), &st, sizeof st);
  const uint64_t id = ++peek_id_;
  peeked_.reset();
  peek_in_flight_ = true;
  peek_answered_ = false;
  TraverseOptions offload;
  offload.mode = ExecutionMode::kOffload;
  client_->TraverseAsync(*peek, directory_, std::move(scratch), offload, [this, id](Result<TraversalResult> r) {
    if (id != peek_id_) return;
    peek_answered_ = true;
    if (!r.ok() || r->status != TraversalStatus::kDone) return;
    pulse_resp_peek_state out{};
    if (r->scratch.size() < sizeof out) return;
    std::memcpy(&out, r->scratch.data(), sizeof out);
    if (out.read == 1) peeked_ = out.wanted;
  });
}

bool Keyspace::OtherWants() {
  if (!has_wanted_) return true;  // a version 1 keyspace: release after every batch
  if (peek_in_flight_) {
    // Normally answered during Settle's wait; a failed peek: read it below.
    peek_in_flight_ = false;
    if (!peeked_) (void)client_->WaitAll(options_.lock_timeout);
    if (peeked_) {
      last_wanted_check_ = std::chrono::steady_clock::now();
      const uint64_t wanted = *peeked_;
      peeked_.reset();
      return wanted != 0 && wanted != lock_->holder();
    }
    ++peek_id_;  // a late answer is dropped
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - last_wanted_check_ < options_.yield_check) return false;
  last_wanted_check_ = now;
  uint64_t wanted = 0;
  // A failed read: release, as if asked (the next Begin finds out more).
  if (!client_->Read(directory_ + offsetof(Directory, wanted), &wanted, sizeof wanted).ok()) return true;
  return wanted != 0 && wanted != lock_->holder();
}

Status Keyspace::Acquire() {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + options_.lock_timeout;
  if (yielded_ && has_wanted_) {
    // Just released to a waiter: leave it the lock until it says it has it
    // (it clears `wanted`) or yield_grace passes.
    yielded_ = false;
    const auto grace = std::min(yielded_at_ + options_.yield_grace, deadline);
    for (;;) {
      uint64_t wanted = 0;
      PULSE_RETURN_IF_ERROR(client_->Read(directory_ + offsetof(Directory, wanted), &wanted, sizeof wanted));
      if (wanted == 0 || std::chrono::steady_clock::now() >= grace) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  for (;;) {
    // One attempt first; then attempts for 2 ms at a time (FarLock's
    // backoff), each round saying again that this server waits (a third
    // server's holder may have cleared it).
    const auto now = std::chrono::steady_clock::now();
    const auto slice = asked_ ? std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(2),
                                                                              deadline - now)
                              : std::chrono::steady_clock::duration::zero();
    Status s = lock_->LockExclusive(std::chrono::duration_cast<std::chrono::milliseconds>(slice));
    if (s.ok()) break;
    if (s.code() != Status::Code::kTimeout) return s;
    if (std::chrono::steady_clock::now() >= deadline) {
      if (asked_) (void)WriteWanted(0);
      asked_ = false;
      return Status::Timeout(fmt::format("keyspace lock {:#x}: no exclusive hold within {} ms", lock_->address(),
                                         options_.lock_timeout.count()));
    }
    if (has_wanted_) {
      PULSE_RETURN_IF_ERROR(WriteWanted(lock_->holder()));
      asked_ = true;
    } else {
      asked_ = true;  // only the pacing: a version 1 keyspace has no word to ask in
    }
  }
  if (asked_ && has_wanted_) {
    Status s = WriteWanted(0);
    if (!s.ok()) {
      (void)lock_->Unlock();
      return s;
    }
  }
  asked_ = false;
  holding_ = true;
  ForgetLeaf(0);  // another server may have changed the index
  ++stats_.lock_acquisitions;
  lease_start_ = std::chrono::steady_clock::now();
  lease_lost_ = false;
  return Status::Ok();
}

Status Keyspace::Begin() {
  // What the last batch learnt is not kept: every batch reads its records
  // from far memory (a server is no copy of the data; a dead memory node is
  // an error, not an answer from memory).
  DropCaches();
  if (holding_) {
    // Writes the last batch left in flight (End) stay in flight: Prefetch
    // sends what cannot meet them alongside.
    if (KeepAlive().ok()) return Status::Ok();
    // The lease ran out between batches: start over.
    SettleDeferred();
    (void)lock_->Unlock();
    holding_ = false;
  }
  PULSE_RETURN_IF_ERROR(Acquire());
  Status s = LoadDirectory();
  if (!s.ok()) {
    (void)lock_->Unlock();
    holding_ = false;
  }
  return s;
}

Status Keyspace::End(bool keep) {
  // Callbacks of this batch's prefetch that come late are dropped.
  ++generation_;
  // In flight with the batch's other writes: the key count (written again
  // synchronously by Settle if its traversal fails), and whether another
  // server asks for the lock.
  const uint64_t count = count_;
  const bool count_changed = count != stored_count_ && !lease_lost_;
  if (count_changed) {
    const uint64_t ticket = tickets_;
    StoreAsync(directory_, DirectoryCore());
    pending_stores_.at(ticket).deferrable = true;
  }
  // Whether another server asked: from a peek answered since it was sent
  // (nullopt: none answered; then the next batch's End looks again).
  std::optional<bool> asked;
  auto answered_peek = [&] {
    if (!peek_in_flight_ || !peek_answered_) return;
    peek_in_flight_ = false;
    if (!peeked_) return;  // it failed: the next peek asks again
    last_wanted_check_ = std::chrono::steady_clock::now();
    asked = *peeked_ != 0 && *peeked_ != lock_->holder();
    peeked_.reset();
  };
  if (keep && !lease_lost_ && has_wanted_ && OnlyDeferrable()) {
    // The replies need none of what is in flight: they go out now, and the
    // next batch (or Release) waits for it (see "Deferred index entries").
    answered_peek();
    if (asked != true) {
      IssueSplits();
      PeekWanted();
      if (count_changed) stored_count_ = count;  // Settle rewrites it if the store is lost
      deferred_ = !pending_stores_.empty();
      if (deferred_) ++stats_.deferred_batches;
      // Not sent yet: an offloaded request leaves when the client's event
      // loop next runs, so these go out with the next batch's lookups (one
      // message per memory node; a Poll() here, sending them on their own,
      // measured slower), or when Release() settles them.
      ++stats_.lock_kept;
      return Status::Ok();
    }
  } else if (keep && !lease_lost_) {
    PeekWanted();
  }
  Status s = Settle();
  if (s.ok() && count_changed) stored_count_ = count;
  if (!asked) answered_peek();
  if (s.ok() && keep && !lease_lost_ && !(asked ? *asked : OtherWants())) {
    ++stats_.lock_kept;
    return Status::Ok();
  }
  if (keep && s.ok() && !lease_lost_ && has_wanted_) {
    ++stats_.lock_yields;
    yielded_ = true;
    yielded_at_ = std::chrono::steady_clock::now();
  }
  Status r = Release();
  return s.ok() ? r : s;
}

const Keyspace::KnownLeaf* Keyspace::KnownLeafOf(uint64_t hash) const {
  auto it = known_leaves_.upper_bound(hash);
  if (it == known_leaves_.begin()) return nullptr;
  --it;
  return hash < it->second.hi ? &it->second : nullptr;
}

void Keyspace::ForgetLeaf(uint64_t leaf) {
  if (leaf == 0) return known_leaves_.clear();
  std::erase_if(known_leaves_, [leaf](const auto& e) { return e.second.leaf == leaf; });
}

bool Keyspace::OnlyDeferrable() const {
  if (!prefetch_settled_ || !inserts_in_flight_.empty()) return false;
  for (const auto& [ticket, p] : pending_stores_)
    if (!p.done && !p.deferrable) return false;
  return true;
}

void Keyspace::SettleDeferred() {
  if (!deferred_) return;
  const size_t failed_before = failed_tickets_.size();
  Status s = Settle();
  if (s.ok()) return;
  // The SETs these writes belong to were answered already (End).
  stats_.lost_after_reply += failed_tickets_.size() - failed_before;
  failed_tickets_.resize(failed_before);
  std::cerr << fmt::format("[kv] an index entry or key count written after its batch's replies was lost: {}\n",
                           s.ToString());
}

Status Keyspace::Release() {
  if (!holding_) return Status::Ok();
  Status s = Settle();
  if (s.ok() && count_ != stored_count_ && !lease_lost_) s = StoreDirectory();
  DropCaches();
  ForgetLeaf(0);
  // A peek sent for a kept hold (End) says nothing about the next one.
  peek_in_flight_ = false;
  ++peek_id_;
  holding_ = false;
  Status u = lock_->Unlock();
  return s.ok() ? u : s;
}

Status Keyspace::KeepAlive() {
  if (lease_lost_) return Status::FailedPrecondition("keyspace lock lease lost in this batch");
  auto now = std::chrono::steady_clock::now();
  if (now - lease_start_ < options_.lease / 2) return Status::Ok();
  Status s = lock_->Renew();
  if (!s.ok()) {
    lease_lost_ = true;
    return Status::FailedPrecondition("keyspace lock lease lost: " + s.ToString());
  }
  lease_start_ = now;
  return Status::Ok();
}

void Keyspace::StoreAsync(uint64_t addr, std::vector<uint8_t> image) {
  auto store = EmbeddedProgram<iterators::resp_store>("resp_store");
  if (!store.ok()) {
    // No program: the write is done at Settle, synchronously.
    const uint64_t ticket = tickets_++;
    pending_stores_.emplace(ticket, PendingStore{addr, std::move(image)});
    ++in_flight_[addr];
    return;
  }
  pulse_resp_store_state st{};
  st.words = (image.size() + 7) / 8;
  std::memcpy(st.image, image.data(), image.size());
  std::vector<uint8_t> scratch(std::max<size_t>(sizeof st, (*store)->info().scratch_bytes), 0);
  std::memcpy(scratch.data(), &st, sizeof st);
  const uint64_t ticket = tickets_++;
  ++stats_.async_writes;
  pending_stores_.emplace(ticket, PendingStore{addr, std::move(image)});
  ++in_flight_[addr];
  TraverseOptions offload;
  offload.mode = ExecutionMode::kOffload;
  client_->TraverseAsync(*store, addr, std::move(scratch), offload, [this, ticket](Result<TraversalResult> r) {
    auto it = pending_stores_.find(ticket);
    if (it == pending_stores_.end()) return;
    if (!r.ok()) return;  // done stays false: Settle writes it again
    const TraversalResult& t = *r;
    pulse_resp_store_state out{};
    if (t.status == TraversalStatus::kDone && t.scratch.size() >= sizeof out) {
      std::memcpy(&out, t.scratch.data(), sizeof out);
      it->second.done = out.written == 1;
    }
  });
}

void Keyspace::InsertAsync(uint64_t hash, uint64_t record, FullLeaf full) {
  SettleDeferred();  // (Prefetch did; only if this batch had none)
  const uint64_t ticket = tickets_++;
  ++stats_.async_inserts;
  pending_stores_.emplace(ticket, PendingStore{record, {}, hash, full});
  if (full.leaf != 0) return;  // the traversal would find it full again: Settle splits it
  auto lookup = EmbeddedProgram<iterators::resp_lookup>("resp_lookup");
  if (!lookup.ok()) return;  // Settle inserts it
  pulse_resp_lookup_state st{};
  st.hash = hash;
  st.insert = record;
  std::vector<uint8_t> scratch(std::max<size_t>(sizeof st, (*lookup)->info().scratch_bytes), 0);
  std::memcpy(scratch.data(), &st, sizeof st);
  TraverseOptions offload;
  offload.mode = ExecutionMode::kOffload;
  inserts_in_flight_.insert(ticket);
  client_->TraverseAsync(*lookup, index_->root(), std::move(scratch), offload,
                         [this, ticket](Result<TraversalResult> r) {
                           inserts_in_flight_.erase(ticket);
                           auto it = pending_stores_.find(ticket);
                           if (it == pending_stores_.end() || !r.ok()) return;
                           const TraversalResult& t = *r;
                           pulse_resp_lookup_state out{};
                           if (t.status != TraversalStatus::kDone || t.scratch.size() < sizeof out) return;
                           std::memcpy(&out, t.scratch.data(), sizeof out);
                           it->second.done = out.inserted == PULSE_RESP_INSERTED;
                           if (out.inserted == PULSE_RESP_LEAF_FULL)
                             it->second.full = FullLeaf{out.leaf, out.parent, index_epoch_};
                         });
}

void Keyspace::IssueSplits() {
  // Only when no traversal that may change the index is running (this
  // batch's lookups and insert traversals have all answered), and only for
  // leaves found full since the index last changed shape, one per leaf: two
  // splits in flight then never meet at a leaf, and at a shared parent each
  // links its node in its own iteration (src/ds/btree_offload.h).
  if (!prefetch_settled_ || !inserts_in_flight_.empty() || index_ == nullptr) return;
  auto program = ds::internal::BTreeInsertProgram();
  if (!program.ok()) return;
  if (spares_ == nullptr) spares_ = std::make_unique<ds::internal::SpareNodes>(client_);
  std::unordered_set<uint64_t> leaves;
  TraverseOptions offload;
  offload.mode = ExecutionMode::kOffload;
  for (auto& [ticket, p] : pending_stores_) {
    if (!p.image.empty() || p.done || p.full.leaf == 0 || p.full.epoch != index_epoch_) continue;
    if (!leaves.insert(p.full.leaf).second) continue;
    const std::optional<uint32_t> node = client_->NodeOf(p.full.leaf);
    auto spare = node ? spares_->Take(*node) : Result<uint64_t>(uint64_t{0});
    if (!spare.ok() || *spare == 0) continue;
    p.full.epoch = ~uint64_t{0};  // sent: not again
    ForgetLeaf(p.full.leaf);
    // From the leaf itself (still the key's leaf, under the same parent:
    // the index kept its shape), which saves the descent from the root.
    const bool at_leaf = p.full.parent != 0;
    client_->TraverseAsync(*program, at_leaf ? p.full.leaf : index_->root(),
                           ds::internal::BTreeInsertScratch(*program, p.hash, p.addr, *spare, p.full.parent),
                           offload,
                           [this, ticket = ticket, spare = *spare](Result<TraversalResult> r) {
                             auto it = pending_stores_.find(ticket);
                             if (!r.ok() || it == pending_stores_.end()) return;
                             auto st = ds::internal::BTreeInsertState(*r);
                             if (!st.ok()) {
                               // A spare on another node than the leaf: nothing written.
                               if (r->status == TraversalStatus::kFaultInvalidPointer && r->fault_addr == spare)
                                 spares_->Give(spare);
                               return;
                             }
                             if (st->result == PULSE_DS_BTREE_INS_DECLINED) {
                               if (st->phase != PULSE_DS_BTREE_INS_LINKING) spares_->Give(spare);
                               return;  // Settle inserts it
                             }
                             if (st->result == PULSE_DS_BTREE_INS_SPLIT) ++stats_.near_memory_splits;
                             it->second.done = true;
                           });
  }
  if (!leaves.empty()) ++index_epoch_;  // the shape may change
}

Status Keyspace::Settle() {
  deferred_ = false;
  if (pending_stores_.empty()) return Status::Ok();
  IssueSplits();
  Status waited = client_->WaitAll(options_.lock_timeout);
  Status first = Status::Ok();
  // A write whose traversal failed (or did not answer in time) is written
  // again synchronously: the image is whole, so writing it twice is harmless.
  std::vector<std::pair<uint64_t, PendingStore>> redo;
  for (auto& [ticket, p] : pending_stores_)
    if (!p.done) redo.emplace_back(ticket, std::move(p));
  pending_stores_.clear();
  in_flight_.clear();
  inserts_in_flight_.clear();
  std::sort(redo.begin(), redo.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Record writes first, then the index inserts that were not done in place
  // (full leaves, split now that no insert is in flight), one at a time.
  std::stable_partition(redo.begin(), redo.end(), [](const auto& r) { return !r.second.image.empty(); });
  for (auto& [ticket, p] : redo) {
    Status s;
    if (!p.image.empty()) {
      ++stats_.redone;
      s = client_->Write(p.addr, p.image.data(), p.image.size());
    } else {
      s = InsertAtSettle(p.hash, p.addr, p.full.leaf, waited.ok());
    }
    if (!s.ok()) {
      failed_tickets_.push_back(ticket);
      if (first.ok()) first = waited.ok() ? s : waited;
      if (p.addr == directory_ && !p.image.empty()) stored_count_ = ~uint64_t{0};  // End writes it again
    }
  }
  // What this server believed of a lost write's record or index entry is
  // not so: forget it all.
  if (!first.ok()) {
    DropCaches();
    ForgetLeaf(0);
  }
  return first;
}

Status Keyspace::InsertAtSettle(uint64_t hash, uint64_t record, uint64_t leaf, bool nothing_in_flight) {
  ++index_epoch_;  // leaves found full before may have split
  // The hash's leaf may split, and so may its parents (BTree::Insert only
  // splits: every other leaf keeps its range, but maybe not its parent).
  if (leaf != 0) ForgetLeaf(leaf);
  if (const KnownLeaf* known = KnownLeafOf(hash)) known_leaves_.erase(known->lo);
  for (auto& [lo, known] : known_leaves_) known.parent = 0;
  // The split near memory needs the tree to itself: no traversal of this
  // batch may still be running (WaitAll gave up on one: BTree::Insert, as
  // before).  A false result: the hash was entered after all (an answer
  // that came too late).
  if (!nothing_in_flight) {
    ++stats_.cpu_inserts;
    return index_->Insert(hash, record).status();
  }
  if (spares_ == nullptr) spares_ = std::make_unique<ds::internal::SpareNodes>(client_);
  ds::internal::OffloadInsertStats tally;
  Status s = ds::internal::InsertNearMemory(client_, *index_, *spares_, hash, record, leaf, &tally).status();
  stats_.near_memory_splits += tally.splits;
  stats_.cpu_inserts += tally.at_cpu;
  return s;
}

Result<std::vector<Keyspace::ChainRecord>> Keyspace::WalkChain(uint64_t head, std::string_view key) {
  std::vector<ChainRecord> chain;
  std::vector<uint8_t> buf;
  for (uint64_t addr = head; addr != 0;) {
    // Header, key and the first kInlineValue bytes of the value in one read
    // (within the record when its key is as long as this key: every record
    // has that much room).  A shorter record may end sooner: on failure,
    // read its header alone.
    buf.resize(ValueOffset(key.size()) + kInlineValue);
    ChainRecord rec;
    rec.addr = addr;
    Status s = ReadRecordPrefix(addr, buf.data(), buf.size());
    if (!s.ok()) {
      PULSE_RETURN_IF_ERROR(SettleIf(addr));
      PULSE_RETURN_IF_ERROR(client_->Read(addr, &rec.header, sizeof rec.header));
      if (rec.header.key_len == key.size()) return s;  // the read should have fit: a real failure
    } else {
      std::memcpy(&rec.header, buf.data(), sizeof rec.header);
      rec.matches = rec.header.type != 0 && rec.header.key_len == key.size() &&
                    std::memcmp(buf.data() + sizeof rec.header, key.data(), key.size()) == 0;
      if (rec.matches) {
        const uint64_t have = std::min<uint64_t>(rec.header.val_len, kInlineValue);
        rec.prefix.assign(reinterpret_cast<const char*>(buf.data()) + ValueOffset(key.size()), have);
      }
    }
    addr = rec.header.next;
    chain.push_back(std::move(rec));
    if (chain.back().matches) break;
  }
  return chain;
}

Result<std::optional<uint64_t>> Keyspace::IndexFind(uint64_t hash) {
  if (auto it = heads_.find(hash); it != heads_.end()) return it->second;
  SettleDeferred();  // (Prefetch did; only if this batch had none)
  return index_->Find(hash);
}

Status Keyspace::ReadRecordPrefix(uint64_t addr, void* dst, size_t length) {
  if (auto it = windows_.find(addr); it != windows_.end() && it->second.size() >= length) {
    std::memcpy(dst, it->second.data(), length);
    return Status::Ok();
  }
  PULSE_RETURN_IF_ERROR(SettleIf(addr));
  return client_->Read(addr, dst, length);
}

void Keyspace::Prefetch(const std::vector<std::string_view>& keys, const std::vector<KeyValue>& sets) {
  auto lookup = EmbeddedProgram<iterators::resp_lookup>("resp_lookup");
  if (!lookup.ok() || index_ == nullptr) return SettleDeferred();
  TraverseOptions offload;
  offload.mode = ExecutionMode::kOffload;
  // The last batch's deferred index entries (End): their heads are the
  // records written for them, and a lookup whose hash a leaf split in
  // flight may move waits until they have landed.
  std::vector<std::pair<uint64_t, uint64_t>> splitting;  // [lo, hi) of leaves with a split in flight or due
  if (deferred_) {
    for (const auto& [ticket, p] : pending_stores_) {
      if (!p.image.empty()) continue;  // the key count
      heads_[p.hash] = p.addr;
      if (!p.done) splitting.emplace_back(p.full.lo, p.full.hi);
    }
  }
  auto meets_split = [&](uint64_t h) {
    return std::any_of(splitting.begin(), splitting.end(),
                       [h](const auto& r) { return h >= r.first && h < r.second; });
  };
  std::vector<uint64_t> hashes, held;
  std::unordered_set<uint64_t> seen;  // a key twice in the batch is looked up once
  for (std::string_view k : keys) {
    const uint64_t h = KeyHash(k);
    if (heads_.count(h) || !seen.insert(h).second) continue;
    (meets_split(h) ? held : hashes).push_back(h);
  }
  std::unordered_map<uint64_t, KeyValue> fused;
  constexpr size_t kFusedBytes = 8 * PULSE_RESP_SET_WORDS;
  for (const KeyValue& kv : sets)
    if (kv.first.size() <= kFusedBytes && kv.second.size() <= kFusedBytes) fused.emplace(KeyHash(kv.first), kv);
  // One traversal per distinct hash, all in flight together: the index
  // descent and the first record's window (src/resp/iterators/resp_lookup.c).
  auto send = [&](uint64_t h) {
    pulse_resp_lookup_state st{};
    st.hash = h;
    st.hi = ~uint64_t{0};
    uint64_t start = index_->root();
    if (const KnownLeaf* known = KnownLeafOf(h)) {
      start = known->leaf;
      st.parent = known->parent;
      st.lo = known->lo;
      st.hi = known->hi;
      ++stats_.leaf_starts;
    }
    uint64_t fresh = 0, fresh_bytes = 0;
    if (auto f = fused.find(h); f != fused.end()) {
      st.set = 1;
      // A record for the key if it turns out new (NewRecord's layout for a
      // value of at most kInlineValue bytes).
      fresh_bytes = sizeof(RecordHeader) + Pad8(f->second.first.size()) + kInlineValue;
      if (auto r = AllocateRecord(fresh_bytes); r.ok()) fresh = st.insert = *r;
      st.key_len = f->second.first.size();
      st.val_len = f->second.second.size();
      std::memcpy(st.key, f->second.first.data(), f->second.first.size());
      std::memcpy(st.value, f->second.second.data(), f->second.second.size());
    }
    std::vector<uint8_t> scratch(std::max<size_t>(sizeof st, (*lookup)->info().scratch_bytes), 0);
    std::memcpy(scratch.data(), &st, sizeof st);
    client_->TraverseAsync(
        *lookup, start, std::move(scratch), offload,
        [this, h, fresh, fresh_bytes, gen = generation_, epoch = index_epoch_](Result<TraversalResult> r) {
          // Answered after its batch (WaitAll timed out), failed, or a
          // record whose window crosses its range's end: Find looks it up.
          // (An unused fresh record is then not reused: it may be written.)
          if (gen != generation_ || !r.ok()) return;
          const TraversalResult& t = *r;
          if (t.status != TraversalStatus::kDone || t.scratch.size() < sizeof(pulse_resp_lookup_state)) return;
          pulse_resp_lookup_state out;
          std::memcpy(&out, t.scratch.data(), sizeof out);
          // The leaf and its range, for later lookups (the index kept its
          // shape while this one ran: splits in flight were of other leaves).
          if (epoch == index_epoch_ && out.leaf != 0) known_leaves_[out.lo] = KnownLeaf{out.leaf, out.parent, out.lo, out.hi};
          if (out.set_done == 2 && out.inserted == PULSE_RESP_LEAF_FULL) {
            // A new key whose record the traversal wrote, but whose leaf is
            // full: TakeFusedSet enters it (a deferred index entry).
            fused_unlinked_[h] = {fresh, FullLeaf{out.leaf, out.parent, index_epoch_, out.lo, out.hi}};
            fused_done_.insert(h);
            ++stats_.fused_sets;
            return;
          }
          if (out.set_done == 2) {
            // A new key, entered and written by the traversal.
            heads_[h] = fresh;
            fused_done_.insert(h);
            ++count_;
            ++stats_.fused_sets;
            return;
          }
          if (fresh != 0 && out.inserted != PULSE_RESP_INSERTED) ReleaseRecord(fresh, fresh_bytes);
          // The SET runs as usual; its index insert waits for Settle.
          if (out.inserted == PULSE_RESP_LEAF_FULL)
            full_leaves_[h] = FullLeaf{out.leaf, out.parent, index_epoch_, out.lo, out.hi};
          if (out.found == 0) {
            heads_[h] = std::nullopt;
            return;
          }
          heads_[h] = out.record;
          if (out.set_done == 1) {
            // Written: the window read before the write is stale, and no
            // other command of the batch needs it.
            fused_done_.insert(h);
            ++stats_.fused_sets;
            return;
          }
          const auto* bytes = reinterpret_cast<const uint8_t*>(out.window);
          windows_[out.record].assign(bytes, bytes + sizeof out.window);
        });
  };
  for (uint64_t h : hashes) send(h);
  // A lookup still running (it may insert) keeps this batch's leaf splits
  // out of flight with other traversals (IssueSplits).
  prefetch_settled_ = client_->WaitAll(options_.lock_timeout).ok();
  // The deferred entries have landed (or are redone now); then the held
  // lookups.
  SettleDeferred();
  if (held.empty()) return;
  stats_.held_lookups += held.size();
  for (uint64_t h : held) send(h);
  prefetch_settled_ = client_->WaitAll(options_.lock_timeout).ok() && prefetch_settled_;
}

Result<std::optional<Entry>> Keyspace::Find(std::string_view key, int64_t now_ms) {
  PULSE_ASSIGN_OR_RETURN(auto head, IndexFind(KeyHash(key)));
  if (!head) return std::optional<Entry>();
  PULSE_ASSIGN_OR_RETURN(auto chain, WalkChain(*head, key));
  if (chain.empty() || !chain.back().matches) return std::optional<Entry>();
  const ChainRecord& rec = chain.back();
  const RecordHeader& h = rec.header;
  // Expired: absent to readers; Put() reuses the record.
  if (h.expire_ms != 0 && h.expire_ms <= now_ms) return std::optional<Entry>();
  Entry e;
  e.addr = rec.addr;
  e.prev = chain.size() > 1 ? chain[chain.size() - 2].addr : 0;
  e.next = h.next;
  e.expire_ms = h.expire_ms;
  e.type = static_cast<ValueType>(h.type);
  e.val_len = h.val_len;
  e.val_cap = h.room - Pad8(key.size());
  e.value = rec.prefix;
  e.value_complete = rec.prefix.size() == h.val_len;
  e.key_len = static_cast<uint32_t>(key.size());
  return std::optional<Entry>(std::move(e));
}

Result<std::string> Keyspace::ReadValue(const Entry& e) {
  if (e.value_complete) return e.value;
  PULSE_RETURN_IF_ERROR(SettleIf(e.addr));
  std::string v(e.val_len, '\0');
  PULSE_RETURN_IF_ERROR(client_->Read(e.addr + ValueOffset(e.key_len), v.data(), v.size()));
  return v;
}

Status Keyspace::WriteRecord(uint64_t addr, std::string_view key, uint64_t next, std::string_view value,
                             ValueType type, int64_t expire_ms, uint64_t room) {
  RecordHeader h{next, expire_ms, static_cast<uint32_t>(type), static_cast<uint32_t>(key.size()), value.size(),
                 room};
  // Only the used part is written; the room after the value is never read
  // before it is written.
  std::vector<uint8_t> rec(ValueOffset(key.size()) + value.size(), 0);
  std::memcpy(rec.data(), &h, sizeof h);
  std::memcpy(rec.data() + sizeof h, key.data(), key.size());
  std::memcpy(rec.data() + ValueOffset(key.size()), value.data(), value.size());
  // One write in flight per record, so they land in order.
  PULSE_RETURN_IF_ERROR(SettleIf(addr));
  if (rec.size() > kStoreBytes) {
    Forget(addr);
    return client_->Write(addr, rec.data(), rec.size());
  }
  // The window shows the new bytes at once (later commands read their own
  // writes); past the value it is zeros, which nothing reads as data.
  std::vector<uint8_t>& window = windows_[addr];
  window = rec;
  window.resize(std::min<uint64_t>(8 * PULSE_RESP_WINDOW_WORDS, sizeof(RecordHeader) + room), 0);
  StoreAsync(addr, std::move(rec));
  return Status::Ok();
}

Result<uint64_t> Keyspace::NewRecord(std::string_view key, std::string_view value, ValueType type, int64_t expire_ms,
                                     uint64_t min_value_room) {
  const uint64_t room = Pad8(key.size()) + std::max({min_value_room, kInlineValue, Pad8(value.size())});
  PULSE_ASSIGN_OR_RETURN(uint64_t addr, AllocateRecord(sizeof(RecordHeader) + room));
  Status s = WriteRecord(addr, key, 0, value, type, expire_ms, room);
  if (!s.ok()) {
    ReleaseRecord(addr, sizeof(RecordHeader) + room);
    return s;
  }
  return addr;
}

Result<uint64_t> Keyspace::AllocateRecord(uint64_t bytes) {
  bytes = Pad8(bytes);
  if (bytes > kMaxSlabRecord) return client_->Allocate(bytes);
  if (auto it = free_records_.find(bytes); it != free_records_.end() && !it->second.empty()) {
    const uint64_t addr = it->second.back();
    it->second.pop_back();
    return addr;
  }
  if (slab_end_ - slab_next_ < bytes) {
    // The rest of the old slab stays unused (at most kMaxSlabRecord bytes).
    PULSE_ASSIGN_OR_RETURN(uint64_t slab, client_->Allocate(kSlabBytes));
    slabs_[slab] = slab + kSlabBytes;
    slab_next_ = slab;
    slab_end_ = slab + kSlabBytes;
  }
  const uint64_t addr = slab_next_;
  slab_next_ += bytes;
  return addr;
}

void Keyspace::ReleaseRecord(uint64_t addr, uint64_t bytes) {
  (void)SettleIf(addr);
  Forget(addr);
  // A record of one of this server's slabs goes to its free list (never to
  // Client::Free, which would free the whole slab at its base).
  if (auto it = slabs_.upper_bound(addr); it != slabs_.begin() && addr < std::prev(it)->second) {
    free_records_[Pad8(bytes)].push_back(addr);
    return;
  }
  // Memory another server allocated is not in this client's allocator
  // (Free says InvalidArgument): it stays allocated, unreachable.
  (void)client_->Free(addr);
}

bool Keyspace::Fits(const RecordHeader& h, std::string_view key, std::string_view value) {
  return Pad8(key.size()) + std::max(kInlineValue, Pad8(value.size())) <= h.room;
}

Status Keyspace::Put(std::string_view key, const std::optional<Entry>& e, std::string_view value, ValueType type,
                     int64_t expire_ms) {
  if (value.size() > options_.max_value_bytes)
    return Status::InvalidArgument(
        fmt::format("value of {} bytes is over the limit of {} bytes", value.size(), options_.max_value_bytes));
  if (e && value.size() <= e->val_cap)  // in place
    return WriteRecord(e->addr, key, e->next, value, type, expire_ms, e->val_cap + Pad8(key.size()));
  const uint64_t hash = KeyHash(key);
  PULSE_ASSIGN_OR_RETURN(auto head, IndexFind(hash));
  if (!head) {
    PULSE_ASSIGN_OR_RETURN(uint64_t addr, NewRecord(key, value, type, expire_ms, 0));
    FullLeaf full{};
    if (auto it = full_leaves_.find(hash); it != full_leaves_.end()) {
      full = it->second;
      full_leaves_.erase(it);
    }
    InsertAsync(hash, addr, full);
    heads_[hash] = addr;
    ++count_;
    return Status::Ok();
  }
  // The chain of this hash: the key's record (live or expired), or a
  // tombstone with room, is rewritten in place; otherwise a new record goes
  // at the end, and an outgrown record of the key becomes a tombstone.
  PULSE_ASSIGN_OR_RETURN(auto chain, WalkChain(*head, key));
  if (!chain.empty() && chain.back().matches) {
    const ChainRecord& rec = chain.back();
    if (Fits(rec.header, key, value))
      return WriteRecord(rec.addr, key, rec.header.next, value, type, expire_ms, rec.header.room);
    PULSE_RETURN_IF_ERROR(Unlink(chain, chain.size() - 1));
    --count_;
    PULSE_ASSIGN_OR_RETURN(chain, WalkChain(*head, key));
  }
  for (const ChainRecord& rec : chain) {
    if (rec.header.type == 0 && Fits(rec.header, key, value)) {
      PULSE_RETURN_IF_ERROR(WriteRecord(rec.addr, key, rec.header.next, value, type, expire_ms, rec.header.room));
      ++count_;
      return Status::Ok();
    }
  }
  const uint64_t grown = e ? 2 * e->val_cap : 0;
  PULSE_ASSIGN_OR_RETURN(uint64_t addr, NewRecord(key, value, type, expire_ms, grown));
  const uint64_t tail = chain.back().addr;
  PULSE_RETURN_IF_ERROR(SettleIf(tail));
  Forget(tail);
  PULSE_RETURN_IF_ERROR(client_->Write(tail + offsetof(RecordHeader, next), &addr, sizeof addr));
  ++count_;
  return Status::Ok();
}

Status Keyspace::Unlink(const std::vector<ChainRecord>& chain, size_t i) {
  PULSE_RETURN_IF_ERROR(SettleIf(chain[i].addr));
  if (i > 0) PULSE_RETURN_IF_ERROR(SettleIf(chain[i - 1].addr));
  Forget(chain[i].addr);
  if (i > 0) Forget(chain[i - 1].addr);
  if (i == 0) {
    // The head stays (the index keeps pointing at it): a tombstone.
    const uint32_t tombstone = 0;
    return client_->Write(chain[0].addr + offsetof(RecordHeader, type), &tombstone, sizeof tombstone);
  }
  const uint64_t next = chain[i].header.next;
  PULSE_RETURN_IF_ERROR(client_->Write(chain[i - 1].addr + offsetof(RecordHeader, next), &next, sizeof next));
  ReleaseRecord(chain[i].addr, sizeof(RecordHeader) + chain[i].header.room);
  return Status::Ok();
}

Status Keyspace::SetExpire(const Entry& e, int64_t expire_ms) {
  PULSE_RETURN_IF_ERROR(SettleIf(e.addr));
  Forget(e.addr);
  return client_->Write(e.addr + offsetof(RecordHeader, expire_ms), &expire_ms, sizeof expire_ms);
}

Status Keyspace::Remove(std::string_view key, const Entry& e) {
  PULSE_RETURN_IF_ERROR(SettleIf(e.addr));
  if (e.prev != 0) PULSE_RETURN_IF_ERROR(SettleIf(e.prev));
  Forget(e.addr);
  if (e.prev != 0) Forget(e.prev);
  if (e.prev == 0) {
    const uint32_t tombstone = 0;
    PULSE_RETURN_IF_ERROR(client_->Write(e.addr + offsetof(RecordHeader, type), &tombstone, sizeof tombstone));
  } else {
    PULSE_RETURN_IF_ERROR(client_->Write(e.prev + offsetof(RecordHeader, next), &e.next, sizeof e.next));
    ReleaseRecord(e.addr, sizeof(RecordHeader) + Pad8(e.key_len) + e.val_cap);
  }
  (void)key;
  if (count_ > 0) --count_;
  return Status::Ok();
}

Result<Keyspace::ScanPage> Keyspace::Scan(uint64_t cursor, uint64_t count, int64_t now_ms) {
  ScanPage page;
  PULSE_RETURN_IF_ERROR(Settle());
  count = std::max<uint64_t>(count, 1);
  PULSE_ASSIGN_OR_RETURN(auto entries, index_->Scan(cursor, ~uint64_t{0}, count));
  for (const auto& [hash, head] : entries) {
    for (uint64_t addr = head; addr != 0;) {
      RecordHeader h{};
      PULSE_RETURN_IF_ERROR(client_->Read(addr, &h, sizeof h));
      if (h.type != 0 && (h.expire_ms == 0 || h.expire_ms > now_ms)) {
        std::string key(h.key_len, '\0');
        PULSE_RETURN_IF_ERROR(client_->Read(addr + sizeof h, key.data(), key.size()));
        page.keys.push_back(std::move(key));
      }
      addr = h.next;
    }
  }
  page.next_cursor = entries.size() < count ? 0 : entries.back().first + 1;
  return page;
}

Status Keyspace::FreeChain(uint64_t head) {
  for (uint64_t addr = head; addr != 0;) {
    RecordHeader h{};
    PULSE_RETURN_IF_ERROR(client_->Read(addr, &h, sizeof h));
    ReleaseRecord(addr, sizeof(RecordHeader) + h.room);
    addr = h.next;
  }
  return Status::Ok();
}

Status Keyspace::Flush() {
  PULSE_RETURN_IF_ERROR(Settle());
  PULSE_ASSIGN_OR_RETURN(auto entries, index_->Scan(0, ~uint64_t{0}));
  heads_.clear();
  windows_.clear();
  full_leaves_.clear();  // leaves of the old index
  ForgetLeaf(0);
  ++index_epoch_;
  ++generation_;
  PULSE_ASSIGN_OR_RETURN(auto fresh, ds::BTree::Create(client_, IndexOptions()));
  index_header_ = fresh->header_address();
  index_ = std::move(fresh);
  count_ = 0;
  PULSE_RETURN_IF_ERROR(StoreDirectory());
  for (const auto& [hash, head] : entries) PULSE_RETURN_IF_ERROR(FreeChain(head));
  return Status::Ok();
}

}  // namespace pulse::resp
