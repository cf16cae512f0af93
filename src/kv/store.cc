// The MICA-style KV store (include/pulse/kv/store.h, docs/kv.md): the
// client's half.  It hashes keys to (partition, bucket, tag), builds each
// request's state, runs the offloaded programs in batches and keeps the
// allocation state (free items, spare overflow buckets) the PUT program
// takes from.
#include "pulse/kv/store.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "kv/iterators/kv_layout.h"
#include "pulse/iterators/kv_delete.h"
#include "pulse/iterators/kv_get.h"
#include "pulse/iterators/kv_put.h"
#include "pulse/traversal.h"
#include "pulse/typed_traversal.h"

namespace pulse::kv {
namespace {

using State = pulse_kv_state;
constexpr uint64_t kWindowBytes = PULSE_KV_WINDOW_WORDS * 8;
constexpr uint64_t kBucketBytes = kWindowBytes;  // a bucket is one window
constexpr uint32_t kMaxItemBytes = kWindowBytes;
constexpr uint32_t kMaxKeyBytes = PULSE_KV_MAX_KEY_WORDS * 8;
constexpr int kGet = 0, kPut = 1, kDelete = 2;
constexpr int kMaxRounds = 4;  // a PUT needs at most a region and a bucket added

uint64_t HashKey(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then splitmix64's finalizer
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

uint32_t Words(uint32_t bytes) { return (bytes + 7) / 8; }

Result<ProgramRef> ProgramFor(int kind) {
  switch (kind) {
    case kGet: return EmbeddedProgram<iterators::kv_get>("kv_get");
    case kPut: return EmbeddedProgram<iterators::kv_put>("kv_put");
    default: return EmbeddedProgram<iterators::kv_delete>("kv_delete");
  }
}

const char* KindName(int kind) { return kind == kGet ? "get" : kind == kPut ? "put" : "delete"; }

}  // namespace

struct Store::Partition {
  uint32_t node = 0;
  uint64_t buckets_base = 0;
  uint64_t buckets = 0;
  std::vector<uint64_t> free_items;
  std::vector<uint64_t> spare_buckets;  // zeroed, unlinked
};

struct Store::Op {
  int kind = kGet;
  size_t partition = 0;
  std::string key;
  State state{};
  int rounds = 0;
  // A PUT's new item and spare bucket are written by the node that runs the
  // insert, so they are taken on the node holding the key's bucket now
  // (pages move between nodes: docs/tier.md); when the insert ran on
  // another node (a chain across pages) the PUT is re-issued with them on
  // the next node (relocations).
  uint32_t insert_node = 0;
  int relocations = 0;
  bool done = false;
  Status status;
  std::optional<std::string> value;  // GET's answer
  bool hit = false;                  // DELETE's answer
  std::chrono::steady_clock::time_point issued{};
  double latency_us = 0;             // last issue to its answer
};

Store::Store(Client* client, const StoreOptions& options) : client_(client), options_(options) {}
Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::Create(Client* client, const StoreOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("kv store: no client");
  if (options.key_bytes == 0 || options.key_bytes > kMaxKeyBytes) {
    return Status::InvalidArgument(fmt::format("kv store: key_bytes {} is not in 1..{}", options.key_bytes, kMaxKeyBytes));
  }
  const uint32_t item_bytes = 8 * (1 + Words(options.key_bytes) + Words(options.value_bytes));
  if (item_bytes > kMaxItemBytes) {
    return Status::InvalidArgument(fmt::format("kv store: an item of 8 + key_bytes {} + value_bytes {} exceeds {} bytes",
                                               options.key_bytes, options.value_bytes, kMaxItemBytes));
  }
  if (options.slab_items == 0) return Status::InvalidArgument("kv store: slab_items must be > 0");
  if (options.max_in_flight == 0) return Status::InvalidArgument("kv store: max_in_flight must be > 0");
  if (options.buckets == 0 && options.expected_items == 0) {
    return Status::InvalidArgument("kv store: buckets and expected_items are both 0");
  }
  for (int kind : {kGet, kPut, kDelete}) PULSE_RETURN_IF_ERROR(ProgramFor(kind).status());
  std::unique_ptr<Store> s(new Store(client, options));
  PULSE_RETURN_IF_ERROR(s->Init());
  return s;
}

Status Store::Init() {
  key_words_ = Words(options_.key_bytes);
  value_words_ = Words(options_.value_bytes);
  const uint32_t nodes = client_->memory_nodes();
  if (nodes == 0) return Status::Unavailable("kv store: the cluster has no memory node");
  const uint32_t parts = options_.partitions == 0 ? nodes : options_.partitions;
  uint64_t buckets = options_.buckets;
  if (buckets == 0) {
    // 75% of the slots used at expected_items.
    buckets = std::max<uint64_t>(1, (options_.expected_items * 4 / 3 / PULSE_KV_SLOTS + parts - 1) / parts);
  }
  partitions_.resize(parts);
  for (uint32_t i = 0; i < parts; ++i) {
    Partition& p = partitions_[i];
    p.node = i % nodes;
    p.buckets = buckets;
    PULSE_ASSIGN_OR_RETURN(p.buckets_base, client_->Allocate(buckets * kBucketBytes, p.node));
    std::vector<uint8_t> zero(std::min<uint64_t>(buckets * kBucketBytes, 1 << 16), 0);
    for (uint64_t off = 0; off < buckets * kBucketBytes; off += zero.size()) {
      const uint64_t n = std::min<uint64_t>(zero.size(), buckets * kBucketBytes - off);
      PULSE_RETURN_IF_ERROR(client_->Write(p.buckets_base + off, zero.data(), n));
    }
  }
  return Status::Ok();
}

Status Store::AddSlab(Partition& p, uint32_t node) {
  const uint64_t item_bytes = 8 * (1 + key_words_ + value_words_);
  uint64_t n = options_.slab_items;
  if (options_.max_items != 0) {
    if (stats_.item_capacity >= options_.max_items) {
      return Status::ResourceExhausted(
          fmt::format("kv store: full ({} items, max_items {})", stats_.items, options_.max_items));
    }
    n = std::min<uint64_t>(n, options_.max_items - stats_.item_capacity);
  }
  // The padding: every window read is 128 bytes, also at the last item.
  Result<uint64_t> base = client_->Allocate(n * item_bytes + kWindowBytes, node);
  if (!base.ok()) {
    return Status::FromCode(base.status().code(), fmt::format("kv store: no far memory for {} more items on memory node {} "
                                                    "({} items stored): {}", n, node, stats_.items,
                                                    base.status().message()));
  }
  for (uint64_t i = n; i-- > 0;) p.free_items.push_back(*base + i * item_bytes);
  stats_.item_capacity += n;
  return Status::Ok();
}

std::optional<uint64_t> Store::TakeFrom(std::vector<uint64_t>& list, uint32_t node) const {
  // From the back: the newest are the likeliest to be on `node`.
  for (size_t i = list.size(); i-- > 0;) {
    const std::optional<uint32_t> now = client_->NodeOf(list[i]);
    if (now && *now != node) continue;
    const uint64_t addr = list[i];
    list[i] = list.back();
    list.pop_back();
    return addr;
  }
  return std::nullopt;
}

Result<uint64_t> Store::TakeItem(Partition& p, uint32_t node) {
  if (std::optional<uint64_t> item = TakeFrom(p.free_items, node)) return *item;
  PULSE_RETURN_IF_ERROR(AddSlab(p, node));
  const uint64_t item = p.free_items.back();
  p.free_items.pop_back();
  return item;
}

Result<uint64_t> Store::TakeSpareBucket(Partition& p, uint32_t node) {
  if (std::optional<uint64_t> b = TakeFrom(p.spare_buckets, node)) return *b;
  PULSE_ASSIGN_OR_RETURN(uint64_t b, client_->Allocate(kBucketBytes, node));
  const std::vector<uint8_t> zero(kBucketBytes, 0);
  PULSE_RETURN_IF_ERROR(client_->Write(b, zero.data(), zero.size()));
  return b;
}

bool Store::Relocate(Op& op, uint64_t fault_addr) {
  if (op.kind != kPut || fault_addr == 0) return false;
  State& st = op.state;
  const uint64_t item_bytes = 8 * uint64_t{st.item_words};
  bool ours = st.spare_bucket != 0 && fault_addr - st.spare_bucket < kBucketBytes;
  for (uint64_t i = 0; i < st.region_count && i < PULSE_KV_MAX_REGIONS; ++i)
    ours = ours || fault_addr - st.regions[i] < item_bytes;
  // Not the op's own new memory, or every node tried: a real fault.
  if (!ours || op.relocations + 1 >= static_cast<int>(client_->memory_nodes())) return false;
  ++op.relocations;
  ++stats_.relocations;
  // The insert ran on a node other than the one holding its new memory:
  // try the next node with memory taken there.
  const uint32_t nodes = client_->memory_nodes();
  const uint32_t there = client_->NodeOf(fault_addr).value_or(op.insert_node);
  op.insert_node = (there + 1) % nodes;
  Partition& p = partitions_[op.partition];
  const bool had_spare = st.spare_bucket != 0;
  for (uint64_t i = 0; i < st.region_count && i < PULSE_KV_MAX_REGIONS; ++i) p.free_items.push_back(st.regions[i]);
  st.region_count = 0;
  if (had_spare) p.spare_buckets.push_back(st.spare_bucket);
  st.spare_bucket = 0;
  Result<uint64_t> item = TakeItem(p, op.insert_node);
  Result<uint64_t> spare = had_spare ? TakeSpareBucket(p, op.insert_node) : Result<uint64_t>(uint64_t{0});
  if (!item.ok() || !spare.ok()) {
    op.status = !item.ok() ? item.status() : spare.status();
    op.done = true;
    return true;
  }
  st.regions[st.region_count++] = *item;
  st.spare_bucket = *spare;
  ++stats_.reissues;
  Restart(st);
  return true;
}

Status Store::Prepare(Op& op, int kind, std::string_view key, std::string_view value) const {
  op.kind = kind;
  if (key.size() > options_.key_bytes) {
    return Status::InvalidArgument(fmt::format("kv store {}: key of {} bytes exceeds key_bytes {}", KindName(kind),
                                               key.size(), options_.key_bytes));
  }
  if (value.size() > options_.value_bytes) {
    return Status::InvalidArgument(fmt::format("kv store put: value of {} bytes exceeds value_bytes {}", value.size(),
                                               options_.value_bytes));
  }
  op.key = std::string(key);
  const uint64_t h = HashKey(key);
  op.partition = h % partitions_.size();
  const Partition& p = partitions_[op.partition];
  State& st = op.state;
  st = State{};
  st.head = p.buckets_base + ((h >> 8) % p.buckets) * kBucketBytes;
  st.bucket = st.head;
  st.tag = (h >> 48) == 0 ? 1 : (h >> 48);
  st.key_words = key_words_;
  st.item_words = 1 + key_words_ + value_words_;
  st.data[0] = key.size() | (uint64_t{value.size()} << 16);
  // An empty key or value may have no data pointer, and memcpy's may not be null.
  if (!key.empty()) std::memcpy(reinterpret_cast<uint8_t*>(&st.data[1]), key.data(), key.size());
  if (!value.empty()) std::memcpy(reinterpret_cast<uint8_t*>(&st.data[1 + key_words_]), value.data(), value.size());
  return Status::Ok();
}

// Issues every op not done, max_in_flight at a time, until each is done:
// a PUT that stopped for a region or a bucket gets one and runs again.
// Writes of the same key run in batch order: op i waits for the earlier
// writes of its key (waves).
void Store::RunOps(std::vector<Op>& ops) {
  std::vector<size_t> wave(ops.size(), 0);
  std::map<std::string, size_t> writes_of;
  size_t waves = 1;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].done || ops[i].kind == kGet) continue;
    wave[i] = writes_of[ops[i].key]++;
    waves = std::max(waves, wave[i] + 1);
  }
  TraverseOptions topts;
  topts.mode = ExecutionMode::kOffload;  // the programs' writes are serialized by the memory node's engine
  for (size_t w = 0; w < waves; ++w) {
    for (;;) {
      std::vector<size_t> todo;
      for (size_t i = 0; i < ops.size(); ++i)
        if (!ops[i].done && wave[i] == w) todo.push_back(i);
      if (todo.empty()) break;
      for (size_t start = 0; start < todo.size(); start += options_.max_in_flight) {
        const size_t end = std::min(todo.size(), start + size_t{options_.max_in_flight});
        // A chunk's requests still pending when its wait gives up may be
        // answered in a later wait of the client: their callbacks then find
        // the chunk closed and touch nothing (the op, the store may be gone).
        struct Chunk {
          bool open = true;
          size_t answered = 0;
        };
        auto chunk = std::make_shared<Chunk>();
        size_t issued = 0;
        // An answer: the final state, or what ended the op.  `fault_addr`:
        // where a fault was (0: none).
        auto answer = [this, chunk](Op& op, Result<std::vector<uint8_t>> final_state, uint64_t fault_addr = 0) {
          if (!chunk->open) return;
          ++chunk->answered;
          op.latency_us =
              std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - op.issued).count();
          if (!final_state.ok() && Relocate(op, fault_addr)) return;
          if (!final_state.ok()) {
            op.status = final_state.status();
            op.done = true;
            return;
          }
          if (final_state->size() < sizeof(State)) {
            op.status = Status::Internal("kv store: short scratch pad returned");
            op.done = true;
            return;
          }
          std::memcpy(&op.state, final_state->data(), sizeof(State));
          Finish(op);
        };
        for (size_t t = start; t < end; ++t) {
          Op& op = ops[todo[t]];
          if (runner_.issue) {
            ++op.rounds;
            ++issued;
            op.issued = std::chrono::steady_clock::now();
            const OpKind kind = op.kind == kGet ? OpKind::kGet : op.kind == kPut ? OpKind::kPut : OpKind::kDelete;
            runner_.issue(kind, op.state.head,
                          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&op.state), sizeof(State)),
                          [answer, &op](Result<std::vector<uint8_t>> r) { answer(op, std::move(r)); });
            continue;
          }
          Result<ProgramRef> program = ProgramFor(op.kind);
          if (!program.ok()) {
            op.status = program.status();
            op.done = true;
            continue;
          }
          std::vector<uint8_t> scratch(std::max<size_t>(sizeof(State), (*program)->info().scratch_bytes), 0);
          std::memcpy(scratch.data(), &op.state, sizeof(State));
          ++op.rounds;
          ++issued;
          op.issued = std::chrono::steady_clock::now();
          client_->TraverseAsync(*program, op.state.head, std::move(scratch), topts,
                                 [answer, &op](Result<TraversalResult> r) {
                                   if (!r.ok()) return answer(op, r.status());
                                   if (r->status != TraversalStatus::kDone) {
                                     const uint64_t fault =
                                         r->status == TraversalStatus::kFaultInvalidPointer ? r->fault_addr : 0;
                                     return answer(op,
                                                   TraversalStatusError(
                                                       r->status, fmt::format("kv store {} of a key", KindName(op.kind)),
                                                       r->fault_addr, r->fault_pc),
                                                   fault);
                                   }
                                   answer(op, std::move(r->scratch));
                                 });
        }
        Status waited = runner_.wait_all ? runner_.wait_all(options_.timeout) : client_->WaitAll(options_.timeout);
        chunk->open = false;
        if (!waited.ok() && chunk->answered < issued) {
          for (size_t t = start; t < end; ++t) {
            Op& op = ops[todo[t]];
            if (op.done) continue;
            op.status = waited;
            op.done = true;
          }
        }
      }
    }
  }
}

// Takes an answered op's outcome: its result and accounting, or what it
// needs to run again.
void Store::Finish(Op& op) {
  State& st = op.state;
  Partition& p = partitions_[op.partition];
  const uint64_t accesses = st.loads + st.writes;
  auto give_back = [&] {
    for (uint64_t i = 0; i < st.region_count && i < PULSE_KV_MAX_REGIONS; ++i) p.free_items.push_back(st.regions[i]);
    st.region_count = 0;
    if (st.spare_bucket != 0) p.spare_buckets.push_back(st.spare_bucket);
    st.spare_bucket = 0;
  };
  switch (op.kind) {
    case kGet: {
      ++stats_.gets;
      stats_.get_accesses += accesses;
      op.done = true;
      if (st.outcome != PULSE_KV_HIT) return;
      ++stats_.get_hits;
      Result<std::optional<std::string>> value = ValueOf(st);
      if (!value.ok()) {
        op.status = value.status();
        return;
      }
      op.value = std::move(value).value();
      return;
    }
    case kDelete: {
      ++stats_.deletes;
      stats_.delete_accesses += accesses;
      op.done = true;
      op.hit = st.outcome == PULSE_KV_HIT;
      if (op.hit) {
        p.free_items.push_back(st.item);
        --stats_.items;
      }
      return;
    }
    default: break;
  }
  stats_.put_accesses += accesses;
  switch (st.outcome) {
    case PULSE_KV_INSERTED:
    case PULSE_KV_INSERTED_OVERFLOW:
      if (st.outcome == PULSE_KV_INSERTED_OVERFLOW) {
        ++stats_.overflow_buckets;
        st.spare_bucket = 0;  // linked: no longer spare
      }
      ++stats_.inserts;
      ++stats_.items;
      ++stats_.puts;
      give_back();
      op.done = true;
      return;
    case PULSE_KV_UPDATED:
      ++stats_.updates;
      ++stats_.puts;
      give_back();
      op.done = true;
      return;
    default: break;
  }
  // Nothing was written: add what it lacked and issue it again from the
  // start (the chain may have changed meanwhile).
  Status added = Status::Ok();
  if (op.rounds >= kMaxRounds + op.relocations) {
    added = Status::Internal(fmt::format("kv store put: no outcome after {} rounds", op.rounds));
  } else if (st.outcome == PULSE_KV_NEED_REGION) {
    Result<uint64_t> item = TakeItem(p, op.insert_node);
    if (item.ok()) {
      st.regions[st.region_count++] = *item;
    } else {
      added = item.status();
    }
  } else if (st.outcome == PULSE_KV_NEED_BUCKET) {
    Result<uint64_t> bucket = TakeSpareBucket(p, op.insert_node);
    if (bucket.ok()) {
      st.spare_bucket = *bucket;
    } else {
      added = bucket.status();
    }
  } else {
    added = Status::Internal(fmt::format("kv store put: unknown outcome {}", st.outcome));
  }
  if (!added.ok()) {
    ++stats_.puts;
    give_back();
    op.status = added;
    op.done = true;
    return;
  }
  // Back to the start of the walk, keeping the item image, the region and
  // the spare bucket.
  ++stats_.reissues;
  Restart(st);
}

void Store::Restart(State& st) {
  st.bucket = st.head;
  st.slot = 0;
  st.phase = 0;
  st.next = 0;
  st.outcome = 0;
  st.item = 0;
  st.loads = 0;
  st.writes = 0;
  st.free_bucket = 0;
  st.free_slot = 0;
}

namespace {
// An op refused before it was issued.
template <typename Op>
void FailOp(Op& op, int kind, const Status& s) {
  op = Op{};
  op.kind = kind;
  op.done = true;
  op.status = s;
}

template <typename Ops>
void CopyLatencies(const Ops& ops, std::vector<double>* latencies_us) {
  if (latencies_us == nullptr) return;
  latencies_us->clear();
  for (const auto& op : ops) latencies_us->push_back(op.latency_us);
}
}  // namespace

std::vector<Result<std::optional<std::string>>> Store::GetBatch(std::span<const std::string> keys,
                                                                std::vector<double>* latencies_us) {
  std::vector<Op> ops(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    Status s = Prepare(ops[i], kGet, keys[i], {});
    if (!s.ok()) FailOp(ops[i], kGet, s);
  }
  RunOps(ops);
  CopyLatencies(ops, latencies_us);
  std::vector<Result<std::optional<std::string>>> out;
  out.reserve(ops.size());
  for (Op& op : ops) {
    if (!op.status.ok()) {
      out.emplace_back(op.status);
    } else {
      out.emplace_back(std::move(op.value));
    }
  }
  return out;
}

std::vector<Status> Store::PutBatch(std::span<const std::pair<std::string, std::string>> items,
                                    std::vector<double>* latencies_us) {
  std::vector<Op> ops(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    Status s = Prepare(ops[i], kPut, items[i].first, items[i].second);
    if (!s.ok()) {
      FailOp(ops[i], kPut, s);
      continue;
    }
    // One region up front, where the key's bucket is: a new key needs no
    // second round.
    ops[i].insert_node = client_->NodeOf(ops[i].state.head).value_or(partitions_[ops[i].partition].node);
    Result<uint64_t> item = TakeItem(partitions_[ops[i].partition], ops[i].insert_node);
    if (item.ok()) ops[i].state.regions[ops[i].state.region_count++] = *item;
  }
  RunOps(ops);
  CopyLatencies(ops, latencies_us);
  std::vector<Status> out;
  out.reserve(ops.size());
  for (Op& op : ops) out.push_back(op.status);
  return out;
}

std::vector<Result<bool>> Store::DeleteBatch(std::span<const std::string> keys) {
  std::vector<Op> ops(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    Status s = Prepare(ops[i], kDelete, keys[i], {});
    if (!s.ok()) FailOp(ops[i], kDelete, s);
  }
  RunOps(ops);
  std::vector<Result<bool>> out;
  out.reserve(ops.size());
  for (Op& op : ops) {
    if (!op.status.ok()) {
      out.emplace_back(op.status);
    } else {
      out.emplace_back(op.hit);
    }
  }
  return out;
}

Result<std::optional<std::string>> Store::Get(std::string_view key) {
  const std::string k(key);
  return std::move(GetBatch(std::span<const std::string>(&k, 1))[0]);
}

Status Store::Put(std::string_view key, std::string_view value) {
  const std::pair<std::string, std::string> kv{std::string(key), std::string(value)};
  return PutBatch(std::span<const std::pair<std::string, std::string>>(&kv, 1))[0];
}

Result<bool> Store::Delete(std::string_view key) {
  const std::string k(key);
  return std::move(DeleteBatch(std::span<const std::string>(&k, 1))[0]);
}

Result<std::optional<std::string>> Store::ValueOf(const pulse_kv_state& st) const {
  if (st.outcome != PULSE_KV_HIT) return std::optional<std::string>();
  const uint64_t len = (st.data[0] >> 16) & 0xffff;
  if (len > options_.value_bytes) {
    return Status::InvalidArgument(fmt::format("kv store get: item at {:#x} claims a {}-byte value", st.item, len));
  }
  return std::optional<std::string>(std::string(reinterpret_cast<const char*>(&st.data[1 + key_words_]), len));
}

Result<Store::GetRequest> Store::MakeGetRequest(std::string_view key) const {
  Op op;
  PULSE_RETURN_IF_ERROR(Prepare(op, kGet, key, {}));
  GetRequest r;
  r.start = op.state.head;
  r.state.resize(sizeof(State));
  std::memcpy(r.state.data(), &op.state, sizeof(State));
  return r;
}

Result<std::optional<std::string>> Store::GetAnswer(std::span<const uint8_t> state) const {
  if (state.size() < sizeof(State)) {
    return Status::InvalidArgument(fmt::format("kv store: a GET state of {} bytes (want {})", state.size(), sizeof(State)));
  }
  State st;
  std::memcpy(&st, state.data(), sizeof(State));
  return ValueOf(st);
}

void Store::ResetStats() {
  const uint64_t items = stats_.items, capacity = stats_.item_capacity;
  stats_ = StoreStats{};
  stats_.items = items;
  stats_.item_capacity = capacity;
}

}  // namespace pulse::kv
