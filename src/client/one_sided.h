// One-sided access to far memory from the CPU node: reads and writes of a
// memory node's registered memory (net::Worker::Get/Put, re-sent by the
// transport), through the CPU-node cache when one is configured
// (CacheOptions).  A lost memory-node connection is re-established on use
// (Connections::EnsureNode).
//
// Keys: a memory node registers each allocation on its own and hands its
// remote key only to the allocation's tenant: in the alloc answer, or asked
// for ("key") the first time this client touches an allocation it did not
// make (another client's of the same tenant, a durable root).  An access
// that spans allocations is split at their bounds; one that touches memory
// of another tenant, or no allocation, fails with the node's
// PermissionDenied / NotFound and moves no bytes.
//
// The rack tier (docs/racks.md): once UseRackTier is called, a memory node
// that offered this client its rack pool (MemNode::rack_pool, same rack as
// the client's) is mapped, and an access that lies within one allocation
// this client made (FarAllocator::Owns, the check the CPU node's own
// traversals apply) and whose key the node has handed out is served by
// memcpy through the mapping: no message, no cache; an address of a page
// is served where the directory puts it, through its frame's gate
// (rack::FrameGates), and not while the page moves.  The mapping's
// liveness (rack::PoolMapping::Alive) is checked before and after each
// copy; a dead one is dropped, the node marked lost, and the access goes the
// normal way (a read's copy is discarded, a write is done again).
//
// Under FarLock holds (Client::EnterLock), reads and writes that cross the
// fabric go through the lock tier (src/client/lock_tier.h): small writes
// under an exclusive hold into its write buffer, reads under shared holds
// through its page cache; a read served by the rack tier still sees the
// write buffer.
//
// Thread-safety: none; it belongs to its Client's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/cache.h"
#include "client/connections.h"
#include "client/lock_tier.h"
#include "client/page_heat.h"

namespace pulse {

class ClientLifetimes;
class FarAllocator;

class OneSidedAccess {
 public:
  // `connections`, `counters` and `lifetimes` must outlive this.
  OneSidedAccess(Connections* connections, ClientCounters* counters, const ClientLifetimes* lifetimes)
      : connections_(connections), counters_(counters), lifetimes_(lifetimes), heat_(connections, counters) {}

  // Sets up the cache.  InvalidArgument naming the bad size.
  Status EnableCache(const CacheOptions& options);

  // Through the cache if any.  Errors: InvalidArgument (outside every
  // node), NotFound (in no allocation), PermissionDenied (another tenant's
  // memory), Unavailable, Timeout.
  Status Read(uint64_t addr, void* dst, size_t len);
  Status Write(uint64_t addr, const void* src, size_t len);
  // Straight to far memory.  An access to a page that is moving waits
  // for the directory that says where it went and is done there (bounded
  // by the client's one-sided deadline; docs/tier.md).
  Status Rma(bool write, uint64_t addr, void* buf, size_t len);
  // Posts a write of [addr, addr + len) without waiting for it (one
  // Worker::PutAsync per allocation touched); `keep` holds src alive until
  // it is done.  Errors: those of Rma before any byte moves (the pieces
  // posted before an error still land).
  Status PostWrite(uint64_t addr, const void* src, size_t len, std::shared_ptr<const void> keep);
  // Waits until every posted write is done and visible at its node
  // (Worker::Flush of each endpoint written).  Errors: the first failed
  // write, Timeout after the client's one-sided deadline.
  Status WaitPosted();

  // Sets up the lock tier (Client::Connect, with no cache).
  void EnableLockTier(const LockTierOptions& options, const tier::HotnessParams& hotness);
  LockTier* lock_tier() { return locks_.get(); }  // null if off

  // Connects memory node `n` if its connection was lost (its keys, bound
  // to the old connection, are dropped first).
  Status EnsureNode(MemNode& n);
  // Keeps the key of an allocation answer ("base", "length", "rkey",
  // "remote_base") of node `n`.  Errors: InvalidArgument (a malformed
  // answer), those of Worker::ImportRkey.
  Status AddKey(MemNode& n, const nlohmann::json& answer);
  // Forgets every key of allocations in [base, base + length) (they were
  // dropped on the node).
  void ForgetKeys(uint64_t base, uint64_t length);

  // Turns the rack tier on for `rack` (empty: stays off); `owner` tells
  // this client's allocations and must outlive this.
  void UseRackTier(const std::string& rack, const FarAllocator* owner);
  // True if some memory node's rack pool is offered to this client's rack.
  bool rack_tier() const;
  // Reads (write false) or writes [addr, addr + len) through the rack pool
  // if the rack tier may serve it (see above); false if it did not (nothing
  // was read, or a write must be done the normal way).
  bool RackAccess(bool write, uint64_t addr, void* buf, size_t len);

  // A traversal offloaded from `cur_ptr` (its first window outside the
  // rack): one access of that page for the hot-page count, a write if the
  // program stores.
  void OnOffload(uint64_t cur_ptr, bool stores) {
    heat_.OnFabricAccess(cur_ptr, stores ? tier::AccessKind::kWrite : tier::AccessKind::kRead);
  }

  bool caching() const { return cache_ != nullptr; }
  BlockCache* cache() { return cache_.get(); }  // null without a cache

 private:
  struct AllocationKey {
    uint64_t length = 0;
    uint64_t remote_base = 0;
    net::EndpointId ep = net::kInvalidEndpoint;
    net::RemoteKey key;
  };
  // One attempt of Rma (Rma follows a moving page: Connections::FollowingPages).
  Status RmaOnce(bool write, uint64_t addr, void* buf, size_t len);
  // A write under a lock (locks_->holding()).
  Status WriteUnderLock(uint64_t addr, const void* src, size_t len);
  // True if every byte of [addr, addr + len) lies in an allocation whose key
  // this client has or gets: a write of it could be done.
  bool Writable(uint64_t addr, size_t len);
  // The key of the allocation holding addr, asked for if unknown.
  Result<const std::pair<const uint64_t, AllocationKey>*> KeyFor(MemNode& n, uint64_t addr);
  using KeyedAllocation = std::pair<const uint64_t, AllocationKey>;
  // The memory node holding all of [addr, addr + len), connected.  Errors:
  // InvalidArgument (outside every node), those of EnsureNode.
  Result<MemNode*> NodeSpanning(uint64_t addr, size_t len);
  // Calls piece(k, remote, done, bytes) for each allocation of `n` that
  // [addr, addr + len) touches, in address order: k its key, remote the
  // remote address of the piece, done the bytes before it.  Errors: those
  // of KeyFor, or the first error `piece` returns (later pieces are not
  // visited).
  template <typename Piece>
  Status ForEachPiece(MemNode& n, uint64_t addr, size_t len, Piece&& piece);

  // The mapping of node n's offered pool, made on first use; nullptr if
  // mapping failed (not retried until the node offers another pool).
  rack::PoolMapping* MappingFor(MemNode& n);
  // n's mapping is dead: dropped, and n goes through reconnection.
  void DropDeadMapping(MemNode& n);
  struct RackMapping {
    uint64_t token = 0;  // of the offer it was made for
    std::unique_ptr<rack::PoolMapping> mapping;
  };

  Connections* connections_;
  ClientCounters* counters_;
  std::string rack_;                        // empty: rack tier off
  const FarAllocator* owner_ = nullptr;
  std::map<uint32_t, RackMapping> mappings_;  // by node id
  const ClientLifetimes* lifetimes_;
  PageHeatCounter heat_;  // hot pages of other racks (docs/tier.md)
  std::unique_ptr<BlockCache> cache_;
  std::unique_ptr<LockTier> locks_;
  // Writes posted and not yet waited for; shared with their completions,
  // which may run after this object is gone (the worker outlives it).
  struct Posted {
    uint64_t outstanding = 0;
    Status error;
    std::set<net::EndpointId> endpoints;
    // Writes whose key the node revoked (their page began to move): done
    // again by WaitPosted.
    struct Redo {
      uint64_t addr = 0;
      const uint8_t* bytes = nullptr;
      size_t length = 0;
      std::shared_ptr<const void> keep;
    };
    std::vector<Redo> redo;
  };
  std::shared_ptr<Posted> posted_ = std::make_shared<Posted>();
  std::map<uint64_t, AllocationKey> keys_;  // by allocation base (far address)
};

}  // namespace pulse
