// pulse::ds::SkipList: a far-memory ordered map of uint64 keys to uint64
// values, a skip list (the ordered companion of the hash structures).
//
// Nodes {key, value, height, next[16]} (152 bytes, one iteration's window)
// and a head sentinel live in far memory, placed by the client's
// AllocationPolicy.  A node's height comes from a generator with a fixed seed
// (p = 1/4 per extra level, at most 16), so a run is reproducible.  Find(),
// LowerBound(), UpperBound() and Seek() are one offloaded descent
// (src/ds/iterators/ds_skip_search.c: the predecessor's tower and the level
// live in the scratch pad); AggregateRange() descends to lo and walks level 0
// (ds_skip_aggregate.c).  They run on the memory nodes or here over one-sided
// reads as the client's dispatch policy (or the list's execution mode)
// decides.  Insert() and Erase() run at the CPU node with Client::Read/Write.
// Range iteration (Begin()/Seek()/Iterator) reads one node per step at the
// CPU node.
//
// Thread-safety: not thread-safe: a handle belongs to one thread, like its
// Client.  There is no Open(), so no other CPU node reaches the list and its
// writers need no lock; the structure CPU nodes share is BTree (btree.h),
// under a pulse::ds::FarLock (lock.h).  Destroying the list does not free its
// far memory.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "pulse/client.h"
#include "pulse/ds/aggregate.h"
#include "pulse/status.h"

namespace pulse::ds {

struct SkipListOptions {
  // Where the searches and AggregateRange() run; unset: the dispatch policy.
  std::optional<ExecutionMode> mode;
  uint64_t level_seed = 0x5eed;  // the height generator's seed
};

class SkipList {
 public:
  using Entry = std::pair<uint64_t, uint64_t>;  // key, value

  // A position in key order.  Reads its node when created or advanced.
  class Iterator {
   public:
    bool done() const { return addr_ == 0; }
    uint64_t key() const { return key_; }      // valid while !done()
    uint64_t value() const { return value_; }  // valid while !done()
    // Moves to the next key (one remote read).  OutOfRange at the end.
    Status Next();

   private:
    friend class SkipList;
    Iterator(Client* client, uint64_t addr) : client_(client), addr_(addr) {}
    Status Load();
    Client* client_;
    uint64_t addr_;
    uint64_t key_ = 0;
    uint64_t value_ = 0;
    uint64_t next_ = 0;
  };

  // Allocates the head.  `client` must outlive the list.  Errors:
  // InvalidArgument (no client), those of Allocate/Write.
  static Result<std::unique_ptr<SkipList>> Create(Client* client,
                                                  const SkipListOptions& options = {});

  // Inserts key -> value if key is absent (true); false and unchanged if
  // present, like std::map::insert.
  Result<bool> Insert(uint64_t key, uint64_t value);
  // Removes key; true if it was present.  Frees its node.
  Result<bool> Erase(uint64_t key);
  // The value of key, or nullopt.  Offloaded.
  Result<std::optional<uint64_t>> Find(uint64_t key);
  // The first entry with a key >= key / > key, or nullopt.  Offloaded.
  Result<std::optional<Entry>> LowerBound(uint64_t key);
  Result<std::optional<Entry>> UpperBound(uint64_t key);
  // sum/min/max/count of the values whose keys are in [lo, hi].  Offloaded.
  Result<Aggregate> AggregateRange(uint64_t lo = 0,
                                   uint64_t hi = std::numeric_limits<uint64_t>::max());

  // Range iteration: from the smallest key, or from the first key >= key
  // (found by the offloaded descent).
  Result<Iterator> Begin();
  Result<Iterator> Seek(uint64_t key);
  // Every entry in key order.
  Result<std::vector<Entry>> ToVector();

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Levels in use (1 when empty).
  uint32_t levels() const { return top_; }
  void set_mode(std::optional<ExecutionMode> mode) { mode_ = mode; }

 private:
  struct Search {
    bool found = false;
    uint64_t key = 0;
    uint64_t value = 0;
    uint64_t node = 0;
  };
  struct Path;  // the CPU-node descent's predecessors
  SkipList(Client* client, const SkipListOptions& options, uint64_t head);
  Result<Search> Descend(uint64_t key, bool strict);  // offloaded
  Status FindPath(uint64_t key, Path& path);          // CPU node
  uint32_t RandomHeight();

  Client* client_;
  std::optional<ExecutionMode> mode_;
  std::mt19937_64 levels_rng_;
  uint64_t head_;
  uint32_t top_ = 1;
  size_t size_ = 0;
};

}  // namespace pulse::ds
