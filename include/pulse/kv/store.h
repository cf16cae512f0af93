// pulse::kv::Store: a MICA-style key-value store in far memory (issue 15,
// seed 002 RAMBDA IV-A; docs/kv.md), whose GET, PUT and DELETE each run as
// one offloaded pulse program at the memory node.
//
// Layout: the store is partitioned over the memory nodes (one partition per
// node by default, a key's partition chosen by its hash).  A partition is a
// set-associative bucket array on its node: 128-byte buckets of 8 slots,
// each slot a 16-bit tag and the far address of an item; a full bucket
// links an overflow bucket by pointer.  Items (a header word, the key, the
// value; 64 bytes by default) live in slabs on the same node, carved by this
// object.  GET walks bucket -> item (2 memory reads without a tag
// collision); PUT of a new key reads the bucket and writes the item and the
// slot, PUT of a present key reads bucket and item and rewrites the item;
// the programs count their memory accesses and stats() reports them.
//
// Every call travels the client's request path: the ring path when the
// client uses it (ClientOptions::request_path, $PULSE_REQUEST_PATH=ring),
// else active messages.  Far memory is allocated by the client, so it is
// the client's tenant's: another tenant reaches none of it.
//
// Ownership and sharing: one Store object owns its far memory (freed with
// the client's session) and its allocation state (free items, spare
// buckets); it is the only writer of its structure.  Batch calls run many
// requests at once; two writes of the same key in one batch take effect in
// batch order.
//
// Thread-safety: none; use it from the thread of its Client.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pulse/client.h"
#include "pulse/status.h"

struct pulse_kv_state;  // src/kv/iterators/kv_layout.h

namespace pulse::kv {

struct StoreOptions {
  // Key and value capacity in bytes.  Each is rounded up to 8; an item is
  // 8 + key_bytes + value_bytes <= 128 bytes, key_bytes <= 32.  The defaults
  // make 64-byte items.
  uint32_t key_bytes = 16;
  uint32_t value_bytes = 40;
  // Buckets per partition (8 slots each).  0: sized for expected_items at
  // about 75% slot occupancy.
  uint64_t buckets = 0;
  uint64_t expected_items = 100000;
  // Partitions (each on one memory node); 0: one per memory node.
  uint32_t partitions = 0;
  // Items per slab allocation.
  uint32_t slab_items = 1024;
  // At most this many items in the store (live and free); 0: as many as far
  // memory holds.  A PUT of a new key beyond it fails with ResourceExhausted.
  uint64_t max_items = 0;
  // Requests a batch call keeps in flight at once.  Over this host's shared
  // memory transport, where the ring's puts are messages, a thousand in
  // flight made requests time out (`pulse bench kv` finds each path's best
  // level between 4 and 64).
  uint32_t max_in_flight = 64;
  // How long a batch waits for its requests.
  std::chrono::milliseconds timeout{30000};
};

// Memory accesses and outcomes since Create (or ResetStats).  An access is
// one window read at the memory node (a bucket or an item) or one object
// written (an item, a bucket's slot).
struct StoreStats {
  uint64_t gets = 0, get_accesses = 0, get_hits = 0;
  uint64_t puts = 0, put_accesses = 0, inserts = 0, updates = 0;
  uint64_t deletes = 0, delete_accesses = 0;
  uint64_t overflow_buckets = 0;  // linked so far
  uint64_t reissues = 0;          // PUTs issued again after a region or bucket was added
  uint64_t relocations = 0;       // PUTs issued again with new memory on another node (pages moved)
  uint64_t items = 0;             // live items
  uint64_t item_capacity = 0;     // items allocated (live and free)
  double accesses_per_get() const { return gets == 0 ? 0 : static_cast<double>(get_accesses) / gets; }
  double accesses_per_put() const { return puts == 0 ? 0 : static_cast<double>(put_accesses) / puts; }
};

class Store {
 public:
  // Builds an empty store with `client` (which must outlive it).  Errors:
  // InvalidArgument naming the bad option, ResourceExhausted (no far memory
  // for the buckets), or the client's errors.
  static Result<std::unique_ptr<Store>> Create(Client* client, const StoreOptions& options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The value of `key`, or nullopt if absent.  Errors: InvalidArgument (key
  // longer than key_bytes), the traversal's errors (Timeout, Unavailable,
  // a fault's code).
  Result<std::optional<std::string>> Get(std::string_view key);
  // Sets `key` to `value`.  Errors: InvalidArgument (key or value too long),
  // ResourceExhausted (a new key and no item can be allocated: max_items
  // reached or far memory full; the store is unchanged), the traversal's
  // (after Timeout or OutcomeUnknown the PUT may or may not have taken
  // effect: read the key to know).
  Status Put(std::string_view key, std::string_view value);
  // Removes `key`: true if it was present.  Errors as Get's.
  Result<bool> Delete(std::string_view key);

  // Batches: the same per element, all in flight together (max_in_flight
  // at a time); one result per element in order.  An element's error does
  // not stop the others.  `latencies_us`, if given, receives per element
  // the microseconds from its (last) issue to its answer.
  std::vector<Result<std::optional<std::string>>> GetBatch(std::span<const std::string> keys,
                                                           std::vector<double>* latencies_us = nullptr);
  std::vector<Status> PutBatch(std::span<const std::pair<std::string, std::string>> items,
                               std::vector<double>* latencies_us = nullptr);
  std::vector<Result<bool>> DeleteBatch(std::span<const std::string> keys);

  // For a baseline that runs GET elsewhere (the rpc system's native
  // handler kRpcKvGet, `pulse bench kv --system rpc`): where a GET of `key`
  // starts (its bucket) and its state (the pulse_kv_state of
  // src/kv/iterators/kv_layout.h), and the value a final state holds
  // (nullopt: a miss).  Errors: InvalidArgument (key too long, a state of
  // the wrong size or claiming a value longer than value_bytes).
  struct GetRequest {
    uint64_t start = 0;
    std::vector<uint8_t> state;
  };
  Result<GetRequest> MakeGetRequest(std::string_view key) const;
  Result<std::optional<std::string>> GetAnswer(std::span<const uint8_t> state) const;

  // Where the store's requests run.  By default: pulse's offloaded programs
  // (Client::TraverseAsync).  A baseline that runs the same operations
  // elsewhere (the rpc system's native handlers kRpcKvGet, kRpcKvPut,
  // kRpcKvDelete: `pulse bench kv --system rpc`) sets a Runner: `issue`
  // starts one request (the operation, its start bucket and its state, the
  // pulse_kv_state of src/kv/iterators/kv_layout.h) and calls `done`
  // exactly once, from inside a later `wait_all`, with the final state or
  // an error; `wait_all` waits for every request issued, at most `timeout`
  // (errors: Timeout, or the runner's).  Every call of the store then goes
  // through it, PUT's retries (a region or a bucket added) included.  A
  // runner whose requests write must not run one twice.
  enum class OpKind { kGet, kPut, kDelete };
  struct Runner {
    std::function<void(OpKind kind, uint64_t start, std::span<const uint8_t> state,
                       std::function<void(Result<std::vector<uint8_t>> final_state)> done)>
        issue;
    std::function<Status(std::chrono::milliseconds timeout)> wait_all;
  };
  // Installs `runner` (both functions set) for every later call, or, with
  // an empty Runner, goes back to pulse's programs.
  void SetRunner(Runner runner) { runner_ = std::move(runner); }

  const StoreStats& stats() const { return stats_; }
  void ResetStats();
  const StoreOptions& options() const { return options_; }
  // Live items (as far as this object knows: PUTs and DELETEs it saw end).
  uint64_t size() const { return stats_.items; }

 private:
  struct Partition;
  struct Op;
  Store(Client* client, const StoreOptions& options);
  Status Init();
  // On memory node `node` (where the page directory puts them now).
  Status AddSlab(Partition& p, uint32_t node);
  Result<uint64_t> TakeItem(Partition& p, uint32_t node);
  Result<uint64_t> TakeSpareBucket(Partition& p, uint32_t node);
  std::optional<uint64_t> TakeFrom(std::vector<uint64_t>& list, uint32_t node) const;
  // A PUT that faulted at its own new item or spare bucket (the insert ran
  // on another node than theirs): takes new ones on the next node and
  // re-issues it; false if the fault is another one (or every node was
  // tried).
  bool Relocate(Op& op, uint64_t fault_addr);
  static void Restart(struct ::pulse_kv_state& st);
  Status Prepare(Op& op, int kind, std::string_view key, std::string_view value) const;
  void RunOps(std::vector<Op>& ops);
  Result<std::optional<std::string>> ValueOf(const struct ::pulse_kv_state& state) const;
  void Finish(Op& op);

  Client* client_;
  StoreOptions options_;
  uint32_t key_words_ = 0, value_words_ = 0;
  std::vector<Partition> partitions_;
  StoreStats stats_;
  Runner runner_;
};

}  // namespace pulse::kv
