#include "ds/chained_hash.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include <fmt/format.h>

#include "ds/ds_common.h"
#include "ds/iterators/ds_nodes.h"
#include "pulse/iterators/ds_umap_find.h"

namespace pulse::ds::internal {
namespace {

using Node = pulse_ds_umap_node;
using InsertState = pulse_ds_chash_insert_state;

// Bytes before slot 0: the first bucket's pseudo-node starts there.
constexpr uint64_t kPseudoNodeOffset = offsetof(Node, next);
static_assert(kPseudoNodeOffset == 16, "the insert program assumes next at offset 16");

// The insert traversal (layout: pulse_ds_chash_insert_state).  Phases:
// 0 at the bucket's pseudo-node: remember the head; an empty chain links at
// once, else walk it.  1 at a chain node: a node with the key answers
// "present"; the last node goes back to the pseudo-node.  2 at the
// pseudo-node again: if the head is still the one the walk started from,
// ALLOC a region, write {key, value, head} into it and make it the head.
// ALLOC precedes every STORE of its iteration, so an "exhausted" stop
// leaves far memory untouched and the re-issued iteration starts clean.
constexpr char kInsertAssembly[] = R"(
  LOAD data
  COMPARE sp[24], 1
  JUMP_EQ walk
  COMPARE sp[24], 2
  JUMP_EQ link
  MOVE sp[32], data[16]
  COMPARE data[16], 0
  JUMP_EQ alloc
  MOVE sp[24], 1
  MOVE cur_ptr, data[16]
  NEXT_ITER
walk:
  COMPARE sp[0], data[0]
  JUMP_EQ present
  COMPARE data[16], 0
  JUMP_EQ back
  MOVE cur_ptr, data[16]
  NEXT_ITER
back:
  MOVE sp[24], 2
  MOVE cur_ptr, sp[16]
  NEXT_ITER
link:
  COMPARE sp[32], data[16]
  JUMP_EQ alloc
  COMPARE data[16], 0
  JUMP_EQ alloc
  MOVE sp[32], data[16]      ; the chain changed under the walk: walk it again
  MOVE sp[24], 1
  MOVE cur_ptr, data[16]
  NEXT_ITER
alloc:
  ALLOC r1, sp[64]
  STORE [r1+0], sp[0]
  STORE [r1+8], sp[8]
  STORE [r1+16], data[16]
  MOVE r2, cur_ptr
  STORE [r2+16], r1          ; publish after the node is written
  MOVE sp[40], 1
  MOVE sp[48], r1
  RETURN
present:
  MOVE sp[40], 2
  MOVE sp[48], cur_ptr
  MOVE sp[56], data[8]
  RETURN
)";

Result<ProgramRef> FindProgram() {
  return EmbeddedProgram<iterators::ds_umap_find>("ds_umap_find");
}
Result<ProgramRef> InsertProgram() {
  static const Result<ProgramRef> program = LoadAssembly(kInsertAssembly, "ds_chash_insert");
  return program;
}

// A 64-bit mixer (splitmix64's finalizer): consecutive keys spread evenly.
uint64_t Hash(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// Takes up to n regions from the back of pool into the request's table.
void FillTable(std::vector<uint64_t>& pool, uint32_t n, InsertState& st) {
  while (st.region_count < n && !pool.empty()) {
    st.regions[st.region_count++] = pool.back();
    pool.pop_back();
  }
}

}  // namespace

Result<std::unique_ptr<ChainedHash>> ChainedHash::Create(Client* client,
                                                         const ChainedHashOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("chained hash: no client");
  if (options.buckets == 0) return Status::InvalidArgument("chained hash: buckets must be > 0");
  if (options.regions_per_request > PULSE_DS_CHASH_MAX_REGIONS) {
    return Status::InvalidArgument(fmt::format("chained hash: regions_per_request {} exceeds {}",
                                               options.regions_per_request,
                                               PULSE_DS_CHASH_MAX_REGIONS));
  }
  if (options.region_batch == 0) {
    return Status::InvalidArgument("chained hash: region_batch must be > 0");
  }
  for (auto p : {FindProgram(), InsertProgram()}) {
    if (!p.ok()) return p.status();
  }
  std::unique_ptr<ChainedHash> h(new ChainedHash(client, options));
  PULSE_ASSIGN_OR_RETURN(auto array, h->NewBucketArray(options.buckets));
  h->bucket_array_ = array;
  h->buckets_ = options.buckets;
  return h;
}

Result<uint64_t> ChainedHash::NewBucketArray(uint64_t buckets) {
  const uint64_t bytes = kPseudoNodeOffset + buckets * 8;
  PULSE_ASSIGN_OR_RETURN(auto base, client_->Allocate(bytes));
  std::vector<uint8_t> zero(bytes, 0);
  PULSE_RETURN_IF_ERROR(client_->Write(base, zero.data(), zero.size()));
  return base + kPseudoNodeOffset;
}

uint64_t ChainedHash::SlotOf(uint64_t key) const {
  return bucket_array_ + (Hash(key) % buckets_) * 8;
}

uint32_t ChainedHash::BucketNode() const {
  return client_->NodeOf(bucket_array_).value_or(0);
}

Result<ChainedHash::Lookup> ChainedHash::Find(uint64_t key) {
  // init(): the traversal starts at the bucket's pseudo-node, whose first
  // iteration loads the chain's head near memory (no read of the slot here).
  PULSE_ASSIGN_OR_RETURN(auto program, FindProgram());
  pulse_ds_umap_find_state st{key, 0, 0, 0, 1};
  PULSE_RETURN_IF_ERROR(RunTraversal(client_, program, SlotOf(key) - kPseudoNodeOffset, st, options_.mode,
                                     "chained hash find"));
  return Lookup{st.found != 0, st.value, st.node};
}

Status ChainedHash::Replenish(uint32_t node) {
  auto& pool = regions_[node];
  const size_t want = pool.size() + options_.region_batch;
  // A policy that ignores `node` places round robin (or fills one node
  // first): bound the attempts, pooling what lands elsewhere for its node.
  const uint64_t attempts = uint64_t{options_.region_batch} * (client_->memory_nodes() + 1) + 16;
  for (uint64_t i = 0; pool.size() < want; ++i) {
    if (i == attempts) {
      return Status::ResourceExhausted(fmt::format(
          "chained hash: could not place allocation regions on memory node {}", node));
    }
    auto addr = client_->Allocate(sizeof(Node), node);
    if (!addr.ok()) return addr.status();
    ++stats_.allocated;
    regions_[client_->NodeOf(*addr).value_or(node)].push_back(*addr);
  }
  return Status::Ok();
}

Result<ChainedHash::Inserted> ChainedHash::Insert(uint64_t key, uint64_t value) {
  PULSE_ASSIGN_OR_RETURN(auto program, InsertProgram());
  const uint32_t node = BucketNode();
  auto& pool = regions_[node];
  InsertState st{};
  st.key = key;
  st.value = value;
  st.bucket = SlotOf(key) - kPseudoNodeOffset;
  FillTable(pool, options_.regions_per_request, st);
  TraverseOptions topts;
  topts.mode = options_.mode;
  uint64_t cur = st.bucket;
  Result<TraversalResult> r = Status::Internal("unset");
  // Each round either finishes or replenishes; one replenishment suffices
  // for the one node an insert allocates, so a few rounds are a hard bound.
  for (int round = 0;; ++round) {
    std::vector<uint8_t> scratch(std::max<size_t>(sizeof(st), (program)->info().scratch_bytes), 0);
    std::memcpy(scratch.data(), &st, sizeof(st));
    r = client_->Traverse(program, cur, std::move(scratch), topts);
    if (!r.ok()) return r.status();
    if (r->scratch.size() < sizeof(st)) {
      return Status::Internal("chained hash insert: short scratch pad returned");
    }
    std::memcpy(&st, r->scratch.data(), sizeof(st));
    if (r->status != TraversalStatus::kAllocExhausted || round == 3) break;
    ++stats_.exhausted;
    const uint32_t want = std::max<uint32_t>(1, options_.regions_per_request);
    if (regions_[node].size() < want) PULSE_RETURN_IF_ERROR(Replenish(node));
    FillTable(regions_[node], want, st);
    cur = r->cur_ptr;
  }
  if (r->status != TraversalStatus::kDone) {  // formatted only on a fault: once per insert otherwise
    return TraversalStatusError(r->status, fmt::format("chained hash insert of key {}", key), r->fault_addr,
                                r->fault_pc);
  }
  if (r->offloaded) ++stats_.offloaded_inserts;
  auto& back = regions_[node];  // regions the traversal did not use
  for (uint64_t i = 0; i < st.region_count && i < PULSE_DS_CHASH_MAX_REGIONS; ++i) {
    back.push_back(st.regions[i]);
  }
  if (st.result == 2) return Inserted{false, st.old_value, st.node};
  if (st.result != 1) {
    return Status::Internal(fmt::format("chained hash insert of key {}: no outcome", key));
  }
  ++size_;
  PULSE_RETURN_IF_ERROR(MaybeGrow());
  return Inserted{true, value, st.node};
}

Status ChainedHash::Assign(uint64_t node, uint64_t value) {
  return WriteObject(client_, node + offsetof(Node, value), value);
}

Result<std::optional<uint64_t>> ChainedHash::Erase(uint64_t key) {
  const uint64_t slot = SlotOf(key);
  uint64_t link = slot;  // the far word pointing at cur
  uint64_t cur = 0;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, slot, cur));
  while (cur != 0) {
    Node n;
    PULSE_RETURN_IF_ERROR(ReadObject(client_, cur, n));
    if (n.key == key) {
      PULSE_RETURN_IF_ERROR(WriteObject(client_, link, n.next));
      regions_[client_->NodeOf(cur).value_or(0)].push_back(cur);  // reused by ALLOC
      --size_;
      return std::optional<uint64_t>(n.value);
    }
    link = cur + offsetof(Node, next);
    cur = n.next;
  }
  return std::optional<uint64_t>();
}

Status ChainedHash::MaybeGrow() {
  const double f = options_.max_load_factor;
  if (!(f > 0) || std::isinf(f)) return Status::Ok();
  if (static_cast<double>(size_) <= f * static_cast<double>(buckets_)) return Status::Ok();
  uint64_t target = buckets_ * 2;
  while (static_cast<double>(size_) > f * static_cast<double>(target)) target *= 2;
  return Rehash(target);
}

Status ChainedHash::Rehash(uint64_t buckets) {
  if (buckets == 0) return Status::InvalidArgument("chained hash: rehash to 0 buckets");
  std::vector<uint64_t> old_heads(buckets_);
  PULSE_RETURN_IF_ERROR(client_->Read(bucket_array_, old_heads.data(), old_heads.size() * 8));
  PULSE_ASSIGN_OR_RETURN(auto array, NewBucketArray(buckets));
  const uint64_t old_array = bucket_array_;
  bucket_array_ = array;
  buckets_ = buckets;
  std::vector<uint64_t> heads(buckets, 0);
  for (uint64_t cur : old_heads) {
    while (cur != 0) {
      Node n;
      PULSE_RETURN_IF_ERROR(ReadObject(client_, cur, n));
      const uint64_t b = Hash(n.key) % buckets;
      PULSE_RETURN_IF_ERROR(WriteObject(client_, cur + offsetof(Node, next), heads[b]));
      heads[b] = cur;
      cur = n.next;
    }
  }
  PULSE_RETURN_IF_ERROR(client_->Write(bucket_array_, heads.data(), heads.size() * 8));
  return client_->Free(old_array - kPseudoNodeOffset);
}

}  // namespace pulse::ds::internal
