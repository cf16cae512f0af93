// pulse::ds::UnorderedMap: a far-memory hash map of uint64 keys to uint64
// values with chained hashing, like boost::unordered_map.
//
// The bucket array and the chain nodes {key, value, next} live in far memory
// (placed by the client's AllocationPolicy).  Find() is a pulse iterator
// compiled from C (src/ds/iterators/ds_umap_find.c): init() at the CPU node
// reads the bucket's head, then the chain walk runs offloaded on the memory
// nodes or here over one-sided reads, as the client's dispatch policy (or
// the map's execution mode) decides.  Insert() and Erase() run at the CPU
// node with Client::Read/Write.  The bucket count is fixed at creation (no
// rehashing yet).
//
// Thread-safety: not thread-safe; writers must hold the library's lock
// (later).  The map uses its Client, which is itself single-threaded.
// Destroying the map does not free its far memory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::ds {

struct UnorderedMapOptions {
  uint64_t buckets = 1024;
  // Where Find() runs; unset: the client's dispatch policy decides.
  std::optional<ExecutionMode> mode;
};

class UnorderedMap {
 public:
  // Allocates and zeroes the bucket array.  `client` must outlive the map.
  // Errors: InvalidArgument (no buckets), those of Allocate/Write.
  static Result<std::unique_ptr<UnorderedMap>> Create(Client* client,
                                                      const UnorderedMapOptions& options = {});

  // Inserts key -> value if key is absent (true); leaves the map unchanged
  // if it is present (false), like std::unordered_map::insert.
  Result<bool> Insert(uint64_t key, uint64_t value);
  // Inserts or overwrites; true if the key was inserted.
  Result<bool> InsertOrAssign(uint64_t key, uint64_t value);
  // Removes key; true if it was present.  Frees its node.
  Result<bool> Erase(uint64_t key);
  // The value of key, or nullopt.  An offloaded traversal (see above).
  Result<std::optional<uint64_t>> Find(uint64_t key);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint64_t bucket_count() const { return buckets_; }
  // The far address of key's bucket slot (the word holding its chain's
  // first node): where other executors of Find start (include/pulse/rpc_ds.h).
  uint64_t BucketAddress(uint64_t key) const { return SlotOf(key); }

  void set_mode(std::optional<ExecutionMode> mode) { mode_ = mode; }
  std::optional<ExecutionMode> mode() const { return mode_; }

 private:
  struct Lookup {
    bool found = false;
    uint64_t value = 0;
    uint64_t node = 0;
  };
  UnorderedMap(Client* client, uint64_t bucket_array, uint64_t buckets,
               std::optional<ExecutionMode> mode);
  uint64_t SlotOf(uint64_t key) const;
  Result<Lookup> FindNode(uint64_t key);

  Client* client_;
  uint64_t bucket_array_;
  uint64_t buckets_;
  std::optional<ExecutionMode> mode_;
  size_t size_ = 0;
};

}  // namespace pulse::ds
