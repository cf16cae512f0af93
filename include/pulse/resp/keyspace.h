// pulse::resp::Keyspace: the keys of `pulse kv serve` in pulse far memory —
// byte-string keys to typed values (strings; sorted-set headers), with
// expiry, shared by every server on the cluster.
//
// Far layout (docs/resp.md has the picture):
//  - a directory object {magic, version, index tree header, key count, lock}
//    whose address is kept in a root file (RootFile below), so a restarted
//    server, or a second one, finds the same data;
//  - the index: a pulse::ds::BTree from a 64-bit hash of the key (XXH3; 0
//    and ~0 are remapped so cursors stay in range) to the first record of
//    that hash's chain.  A lookup is the tree's LowerBound traversal, always
//    offloaded (a traversal run at a CPU node may read only what its own
//    client allocated), then one read of the record;
//  - a record per key (RecordHeader, then the key bytes padded to 8, then
//    the value inline in at least 64 bytes of room), so a lookup's one read
//    of header + key + 64 bytes brings a small value along.  Colliding keys
//    are chained by `next` and told apart by their stored key bytes.
//  - index entries are never erased (an erase may free tree nodes another
//    server allocated, which its allocator does not know): a deleted key
//    whose record heads its chain leaves a tombstone (type 0) that the next
//    SET of a key with that hash reuses if it fits.  A value that outgrows
//    its record moves to a new record at the chain's end.  Records other
//    than chain heads are freed when deleted, if this server allocated them
//    (memory another server allocated stays allocated: see docs/resp.md).
//
// Atomicity: every command runs between Begin() and End(), which hold the
// keyspace's pulse::ds::FarLock exclusively (one lock for the whole
// keyspace; a server takes it for a batch of commands from all its
// connections).  So commands of several servers are serialised: INCR from
// two servers is exact.  Begin() re-reads the directory (another server may
// have flushed or grown the keyspace) and refreshes the index.  End(true)
// may keep the hold for the next batch while requests keep coming (the
// server calls Release() once it is idle): nobody else can write meanwhile,
// so the next Begin() needs no lock call and no directory read (it does not
// keep the records it read: every batch reads them again, so a dead memory
// node is an error reply, not an answer from a copy).  A server waiting for the lock says so in
// the directory's `wanted` word; the holder reads it at most every
// KeyspaceOptions::yield_check and then releases at the end of its batch,
// and does not take the lock back before the waiter has had it (or
// yield_grace passed).  A batch that outlives half the lease renews it; if
// the lease was lost (Renew() fails) the keyspace refuses further commands
// in the batch and drops its hold.
//
// Writes: a record write of up to 256 bytes (header, key, a small value) is
// an asynchronous one-iteration traversal (src/resp/iterators/resp_store.c),
// so a batch's writes are in flight together; the window this keyspace
// keeps of the record shows the new bytes at once, so later commands of the
// batch read their own writes.  Settle() waits for them (End() and every
// other far access to a record with a write in flight settle first); a
// write whose traversal failed is retried synchronously there, and if that
// fails too its ticket is reported (FailedStores()) so the server replaces
// the reply of the command that issued it with an error.  A new key's index
// entry is entered the same way: resp_lookup's descent with `insert` writes
// it into its leaf in one iteration.  A full leaf is split at Settle, once
// every other traversal of the batch has landed: by one more offloaded
// traversal that splits it near memory into a spare node and links that in
// the leaf's parent (src/ds/btree_offload.h), or, when the parent is full
// too (or the leaf is the root), by BTree::Insert.
//
// Deferred index entries: a fused SET of a new key whose leaf is full has
// its record written by its lookup traversal all the same; only its index
// entry (the leaf's split) is left.  When that, the key count and the read
// of `wanted` are all a batch still has in flight, End(true) returns without
// waiting for them, so the batch's replies go out first.  The next batch's
// Prefetch sends the lookups that cannot meet those splits (their hash is
// outside every splitting leaf's key range) in flight with them, takes the
// deferred keys' heads from what it wrote, then settles (a split that was
// declined or failed is done there, by BTree::Insert) and only then sends
// the lookups it held back.  Release() (and so every hand-over of the lock)
// settles first, so another server never sees the index half-entered.  The
// price: a deferred entry that fails even when redone is reported on stderr
// and in Stats::lost_after_reply, since its SET was already answered.
//
// Known leaves: while it holds the lock without a break, the keyspace keeps
// what its lookups learnt of the index's shape — each leaf reached, its
// parent and its key range — and starts later lookups of a hash in that
// range at the leaf instead of the root (the leaf and the record are still
// read, every batch).  Nobody else changes the index meanwhile; its own
// splits forget the leaves they split (after a split by BTree::Insert,
// which may split parents too, the other leaves are kept without their
// parent: a split of theirs then starts at the root), and every release of
// the lock forgets them all.  New records come
// from slabs this server allocates (one Allocate per 64 KiB), so a SET of a
// new key costs no allocation round trip.
//
// Expiry: expire_ms is a Unix time in milliseconds of the server's clock
// (servers of one keyspace are assumed to share a clock, e.g. one
// machine).  Expired records read as absent; a writing command reuses or
// removes them; nothing scans for them in the background, so DBSIZE counts
// expired keys no command has touched since (as Redis does between its
// active-expiry cycles).
//
// Thread-safety: not thread-safe: one thread, the one using the Client.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::ds {
class BTree;
class FarLock;
namespace internal {
class SpareNodes;
}  // namespace internal
}  // namespace pulse::ds

namespace pulse::resp {

// The type of a record's value.
enum class ValueType : uint32_t { kString = 1, kZSet = 2 };

struct KeyspaceOptions {
  // The largest value a record holds (a longer SET/APPEND is refused).
  uint64_t max_value_bytes = 64ull << 20;
  // How long Begin() waits for the keyspace lock, and the lock's lease.
  std::chrono::milliseconds lock_timeout{3000};
  std::chrono::milliseconds lease{5000};
  // While holding the lock across batches: how often the holder reads the
  // directory's `wanted` word, and how long after yielding to a waiter it
  // leaves the lock to it before taking it again.
  std::chrono::microseconds yield_check{1000};
  std::chrono::milliseconds yield_grace{20};
};

// A record found by Keyspace::Find.
struct Entry {
  uint64_t addr = 0;         // the record
  uint64_t prev = 0;         // the record before it in its chain; 0: it heads the chain
  uint64_t next = 0;
  int64_t expire_ms = 0;     // 0: none
  ValueType type = ValueType::kString;
  uint64_t val_len = 0;
  uint64_t val_cap = 0;
  std::string value;         // the value if it came with the first read (val_len <= what was read)
  bool value_complete = false;
  uint32_t key_len = 0;
};

// The head of a far record (the key's bytes, 8-byte padded, follow; then
// the value).  type 0 marks a tombstone: a deleted key's record that stays
// as the head of its hash's chain.
struct RecordHeader {
  uint64_t next;       // the next record with the same hash, 0: none
  int64_t expire_ms;   // Unix ms, 0: none
  uint32_t type;       // ValueType, or 0
  uint32_t key_len;
  uint64_t val_len;
  uint64_t room;       // bytes after this header: padded key + value capacity
};

// A 64-bit hash of a key as the index uses it: never 0 nor ~0.
uint64_t KeyHash(std::string_view key);

class Keyspace {
 public:
  // Opens the keyspace whose directory address `root_file` holds, or
  // creates one and writes its address there (under flock, so two servers
  // starting together agree).  A root file naming no valid directory (a
  // fresh cluster) is replaced, with a warning on stderr.  Errors: IoError
  // (root file), those of the client's Allocate/Read/Write.
  static Result<std::unique_ptr<Keyspace>> OpenOrCreate(Client* client, const std::string& root_file,
                                                        const KeyspaceOptions& options = {});
  ~Keyspace();

  // Takes the keyspace lock and re-reads the directory; if the lock is
  // still held from the last batch (End(true)), renews the lease if due and
  // returns at once.  Errors: Timeout (lock), those of Read/BTree::Open.
  Status Begin();
  // Settles the batch's writes, writes the key count back if it changed
  // (in flight with the writes; so is the read of `wanted` that decides
  // whether to keep the lock), and releases the lock, unless `keep` and no other server has asked for
  // it (then the hold lasts until the next Begin/End or Release()).  With
  // `keep`, when all that is in flight is deferred index entries and the
  // key count, it returns without waiting for them (see "Deferred index
  // entries"; the next Prefetch or Release settles them), and a `wanted`
  // word read since the last batch decides.
  // Errors: Settle()'s, FailedPrecondition if the lease had run out (see
  // FarLock::Unlock).
  Status End(bool keep = false);
  // Releases a hold kept by End(true) (nothing if none).  Errors: End's.
  Status Release();
  // Whether the lock is held (inside a batch, or kept across batches).
  bool holding() const { return holding_; }
  // Waits for every asynchronous record write in flight (see "Writes"
  // above).  A write that failed is retried synchronously; one that still
  // fails is reported by FailedStores() and makes this return its error.
  Status Settle();
  // Tickets: each asynchronous write gets the next number (stores_issued()
  // before it).  FailedStores() lists the tickets of writes lost since the
  // last ClearFailedStores().
  uint64_t stores_issued() const { return tickets_; }
  const std::vector<uint64_t>& FailedStores() const { return failed_tickets_; }
  void ClearFailedStores() { failed_tickets_.clear(); }
  // Renews the lease if half of it has passed since it was taken or last
  // renewed.  FailedPrecondition if it was lost.
  Status KeepAlive();

  // Looks up the index entries and first records of `keys` with
  // asynchronous traversals all in flight together (offloaded index
  // descents, from a known leaf where there is one, then one window read
  // per record; the last batch's deferred index entries are settled here,
  // and lookups that could meet their splits sent after), so the batch's commands
  // find them here instead of waiting for one round trip after another.
  // What it learns is valid until End(): the commands' own writes update or
  // drop it.  Failures are not errors: a key it could not prefetch is looked
  // up by Find as usual.
  //
  // `sets` (key, value) are plain SETs fused with their lookups: the
  // traversal also overwrites the key's record in place when it is the
  // chain's first record, of type string, with room for the value (keys and
  // values of at most 64 bytes; larger ones are ignored here).  The caller
  // guarantees no other command of the batch names the key and none runs
  // that reads or changes the keyspace as a whole, so running the write
  // ahead of the batch's order is invisible; it then asks TakeFusedSet()
  // whether the write was done (else it runs the SET as usual).
  using KeyValue = std::pair<std::string_view, std::string_view>;
  void Prefetch(const std::vector<std::string_view>& keys, const std::vector<KeyValue>& sets = {});
  // Whether Prefetch wrote `key`'s fused SET (answered once per key).  A
  // written record whose leaf was full gets its index entry here (an index
  // insert of this command, left to the leaf's split; see "Deferred index
  // entries").
  bool TakeFusedSet(std::string_view key);

  // The record of `key`, or nullopt if there is none or it expired at
  // now_ms.  Errors: those of the traversal and Read.
  Result<std::optional<Entry>> Find(std::string_view key, int64_t now_ms);
  // The whole value of a record from Find.
  Result<std::string> ReadValue(const Entry& e);
  // Sets key's value (creating the record if `e` is nullopt, else
  // overwriting e's record in place or moving it if the value outgrew it).
  // Errors: InvalidArgument if value is over max_value_bytes; far errors.
  Status Put(std::string_view key, const std::optional<Entry>& e, std::string_view value, ValueType type,
             int64_t expire_ms);
  // Changes only the expiry of e's record.
  Status SetExpire(const Entry& e, int64_t expire_ms);
  // Removes key's record e (found by Find) and frees it.
  Status Remove(std::string_view key, const Entry& e);

  // Keys with an index hash >= cursor, visiting about `count` hashes;
  // returns the keys (not expired at now_ms) and the next cursor (0: done).
  struct ScanPage {
    uint64_t next_cursor = 0;
    std::vector<std::string> keys;
  };
  Result<ScanPage> Scan(uint64_t cursor, uint64_t count, int64_t now_ms);
  // Keys stored (expired ones no command has removed included).
  uint64_t size() const { return count_; }
  // Removes every key: frees the records and starts a new index (the old
  // index's nodes are not reclaimed; see docs/resp.md).
  Status Flush();

  // How often the lock was taken, kept for the next batch, and given up to
  // another server that asked; asynchronous writes and index inserts issued;
  // index inserts done by BTree::Insert (a full leaf that could not be
  // split near memory, or the traversal failed); full leaves split near
  // memory at Settle; record writes redone synchronously (their traversal
  // failed).  For INFO.
  struct Stats {
    uint64_t lock_acquisitions = 0, lock_kept = 0, lock_yields = 0;
    uint64_t async_writes = 0, async_inserts = 0, cpu_inserts = 0, redone = 0;
    uint64_t near_memory_splits = 0;
    uint64_t fused_sets = 0;  // SETs written by their lookup traversal
    // Batches answered with index entries or the key count still in flight
    // (End(true) did not wait); deferred entries that failed after their
    // replies went out.
    uint64_t deferred_batches = 0, lost_after_reply = 0;
    // Lookups Prefetch held back until those entries landed (their hash in
    // the key range of a leaf being split).
    uint64_t held_lookups = 0;
    uint64_t leaf_starts = 0;  // lookups started at a known leaf
  };
  const Stats& stats() const { return stats_; }

  // The far address of the directory (for INFO).
  uint64_t directory() const { return directory_; }
  Client* client() const { return client_; }
  const KeyspaceOptions& options() const { return options_; }

 private:
  struct Directory;
  Keyspace(Client* client, uint64_t directory, const KeyspaceOptions& options);
  Status LoadDirectory();
  Status StoreDirectory();
  // The directory's first kDirectoryCore bytes as StoreDirectory writes them.
  std::vector<uint8_t> DirectoryCore() const;
  // A record of a chain as WalkChain read it.
  struct ChainRecord {
    uint64_t addr = 0;
    RecordHeader header{};
    bool matches = false;   // a live (not tombstone) record of the key walked for
    std::string prefix;     // its value's first bytes, if it matches
  };
  // The records of the chain from `head` up to and including the one of
  // `key` (all of them if there is none).
  Result<std::vector<ChainRecord>> WalkChain(uint64_t head, std::string_view key);
  // Takes chain[i] out of its chain: the head becomes a tombstone (the index
  // keeps pointing at it), any other is unlinked and released.
  Status Unlink(const std::vector<ChainRecord>& chain, size_t i);
  Status WriteRecord(uint64_t addr, std::string_view key, uint64_t next, std::string_view value, ValueType type,
                     int64_t expire_ms, uint64_t room);
  Result<uint64_t> NewRecord(std::string_view key, std::string_view value, ValueType type, int64_t expire_ms,
                             uint64_t min_value_room);
  // Gives a record of `bytes` (header included) back: to this server's free
  // list if it came from one of its slabs, else Client::Free.
  void ReleaseRecord(uint64_t addr, uint64_t bytes);
  // A record of `bytes` from a slab (or the free list), or its own
  // allocation if larger than a slab's share.
  Result<uint64_t> AllocateRecord(uint64_t bytes);
  // Settle() if a write to `addr` is in flight.
  Status SettleIf(uint64_t addr) { return in_flight_.count(addr) ? Settle() : Status::Ok(); }
  // Takes the lock, saying so in `wanted` while waiting for it.
  Status Acquire();
  // Whether another server has asked for the lock (read at most every
  // options_.yield_check): the answer of PeekWanted's traversal if one was
  // sent, else one read.
  bool OtherWants();
  // Sends an asynchronous read of the `wanted` word (resp_peek) if
  // OtherWants will read it, so it travels with the batch's writes.
  void PeekWanted();
  Status WriteWanted(uint64_t v);
  void DropCaches();
  static bool Fits(const RecordHeader& h, std::string_view key, std::string_view value);
  // Frees every record of a chain.
  Status FreeChain(uint64_t head);

  // The first `length` bytes of the record at addr: from the prefetched
  // windows if there, else one read.
  Status ReadRecordPrefix(uint64_t addr, void* dst, size_t length);
  // An asynchronous write of `image` (<= 256 bytes) at the record `addr`.
  void StoreAsync(uint64_t addr, std::vector<uint8_t> image);
  // An asynchronous index insert of hash -> record (resp_lookup with
  // `insert`); a full leaf, or a failure, is inserted in Settle (the leaf
  // split near memory, or BTree::Insert), after every other asynchronous
  // operation has completed.  `full`: this batch's prefetch found the
  // hash's leaf full, so no traversal is sent now.
  // A leaf a traversal found full, and the index's shape then (index_epoch_).
  struct FullLeaf {
    uint64_t leaf = 0;
    uint64_t parent = 0;  // its parent then (0: the root is the leaf)
    uint64_t epoch = 0;
    uint64_t lo = 0, hi = ~uint64_t{0};  // the keys it may hold, [lo, hi)
  };
  void InsertAsync(uint64_t hash, uint64_t record, FullLeaf full);
  // Sends the split of each full leaf an index insert of this batch waits
  // for, in flight with the batch's writes, when that is safe (see the
  // definition); what it leaves or declines Settle does one at a time.
  void IssueSplits();
  // An index insert left to Settle: the leaf split near memory if it can
  // be, else BTree::Insert.  `leaf`: the full leaf, if known.
  Status InsertAtSettle(uint64_t hash, uint64_t record, uint64_t leaf, bool nothing_in_flight);
  // The index entry of hash (prefetched, or a traversal).
  Result<std::optional<uint64_t>> IndexFind(uint64_t hash);
  // A leaf known to hold `hash` (see "Known leaves"), nullptr if none.
  struct KnownLeaf {
    uint64_t leaf = 0, parent = 0, lo = 0, hi = 0;
  };
  const KnownLeaf* KnownLeafOf(uint64_t hash) const;
  // Forgets the known leaf `leaf` (0: all of them).
  void ForgetLeaf(uint64_t leaf);
  // Whether everything in flight may outlive the batch's replies (End):
  // deferred index entries, the key count, nothing else.
  bool OnlyDeferrable() const;
  // Settle() if the last batch left writes in flight (End deferred them);
  // a failure is counted in stats_.lost_after_reply (its replies went out).
  void SettleDeferred();
  void Forget(uint64_t record) { windows_.erase(record); }

  Client* client_;
  uint64_t directory_;
  // What Prefetch learned for this batch: index entries by hash (nullopt:
  // absent) and record windows by address.
  std::unordered_map<uint64_t, std::optional<uint64_t>> heads_;
  std::unordered_map<uint64_t, std::vector<uint8_t>> windows_;
  std::unordered_set<uint64_t> fused_done_;  // hashes of fused SETs written
  // Fused SETs of new keys whose leaf was full: the record written, the leaf.
  std::unordered_map<uint64_t, std::pair<uint64_t, FullLeaf>> fused_unlinked_;
  bool deferred_ = false;  // End(true) returned with writes in flight
  std::map<uint64_t, KnownLeaf> known_leaves_;  // by lo
  // Hashes whose leaf this batch's prefetch found full: the leaf.
  std::unordered_map<uint64_t, FullLeaf> full_leaves_;
  // Bumped whenever the index may have changed shape (a split).
  uint64_t index_epoch_ = 0;
  bool prefetch_settled_ = false;  // every lookup of the batch answered
  std::unordered_set<uint64_t> inserts_in_flight_;  // tickets of insert traversals running
  uint64_t generation_ = 0;  // bumped whenever they are dropped
  KeyspaceOptions options_;
  uint64_t index_header_ = 0;
  std::unique_ptr<ds::BTree> index_;
  // Fresh index nodes by memory node for leaf splits near memory.
  std::unique_ptr<ds::internal::SpareNodes> spares_;
  std::unique_ptr<ds::FarLock> lock_;
  uint64_t count_ = 0;
  uint64_t stored_count_ = 0;
  std::chrono::steady_clock::time_point lease_start_;
  bool lease_lost_ = false;
  bool holding_ = false;
  // The directory has the `wanted` word (version 2; a version 1 keyspace is
  // served by releasing the lock after every batch).
  bool has_wanted_ = false;
  bool asked_ = false;  // this server wrote `wanted` while waiting
  std::chrono::steady_clock::time_point last_wanted_check_{};
  bool peek_in_flight_ = false;
  bool peek_answered_ = false;       // the peek in flight answered (peeked_ unset: it failed)
  uint64_t peek_id_ = 0;             // the peek whose answer counts
  std::optional<uint64_t> peeked_;   // its answer
  std::chrono::steady_clock::time_point yielded_at_{};
  bool yielded_ = false;
  // Asynchronous writes in flight: ticket -> (record, image); the records.
  // A write (image at addr) or an index insert (hash -> addr, image empty).
  struct PendingStore {
    uint64_t addr;
    std::vector<uint8_t> image;
    uint64_t hash = 0;
    FullLeaf full{};  // an index insert whose leaf was found full
    bool done = false;
    bool deferrable = false;  // may outlive the batch's replies (a deferred index entry, the key count)
  };
  std::unordered_map<uint64_t, PendingStore> pending_stores_;
  std::unordered_map<uint64_t, uint32_t> in_flight_;
  uint64_t tickets_ = 0;
  Stats stats_;
  std::vector<uint64_t> failed_tickets_;
  // Slabs this server carved records from: base -> end; the current one;
  // records given back, by size.
  std::map<uint64_t, uint64_t> slabs_;
  uint64_t slab_next_ = 0, slab_end_ = 0;
  std::unordered_map<uint64_t, std::vector<uint64_t>> free_records_;
};

}  // namespace pulse::resp
