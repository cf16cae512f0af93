// RDMA-optimised RPC (RRPC; seed 004 section 5.5) for kv::Store items that
// name an object: the GET is one RPC to the memory node owning the key's
// bucket (handler kRpcKvGetObject), which walks the bucket chain and looks
// at the object the item names.  A payload of at most `inline_threshold`
// bytes comes back inline in the reply; a larger one does not: the reply
// carries the object's address and length, and the caller reads header and
// payload in one one-sided read straight into its buffer.  The address is
// then cached per key, so the next GET of that key is that one read alone,
// no RPC.
//
// Objects (written by whoever fills the store; RrpcObjectImage):
//   [RrpcObjectHeader: fingerprint of the key, payload length][payload]
// and the key's value in the kv::Store is the object's far address
// (RrpcObjectRef: 8 bytes, so StoreOptions::value_bytes >= 8).
//
// A cached address is never trusted blindly: every read checks the header
// against the key's fingerprint and the cached length; a mismatch (the
// object was retired, moved, or the memory reused) or a failed read (a
// fault, a node down) drops the entry and the GET is asked again by RPC, so
// a stale address costs one wasted read and never returns other bytes.
// The writer's side of that contract: before an object is freed or moved
// (or its key's value is pointed elsewhere), RrpcRetireObject clears its
// fingerprint.  Overwriting a payload in place at the same length keeps the
// address valid.  InvalidateAll() drops every entry (e.g. when the caller
// learns that the directory changed).  Concurrent writers of one object are
// not handled: a read racing an in-place overwrite may see a torn payload,
// as a one-sided read of any object may.
//
// Items (RrpcOptions::values_are_objects = false): for a store whose values
// are in its items (at most 128 bytes, always below the threshold), the GET
// is kRpcKvGet, whose reply carries the item inline with its address; the
// address is cached, and the next GET of the key is one one-sided read of
// exactly the item's bytes, refused unless its header and key are the key's
// (an item kv::Store overwrote in place stays valid; one reused for another
// key does not).  kv::Store's Delete leaves the item's bytes: whoever
// deletes a key must Invalidate(key) in every RrpcKv that may cache it
// (YCSB never deletes).
//
// Not built: the server writing a payload of known size zero-copy into the
// caller's buffer (the fabric has no memory the CPU node exposes); the
// cached path reads into the caller's buffer instead.
//
// Thread-safety: not thread-safe; shares its RpcClient's (and Client's)
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pulse/client.h"
#include "pulse/kv/store.h"
#include "pulse/rpc.h"
#include "pulse/status.h"

namespace pulse {

// An object's first 16 bytes in far memory.
struct RrpcObjectHeader {
  uint64_t fingerprint = 0;  // RrpcKeyFingerprint of the key it belongs to; 0: retired
  uint64_t length = 0;       // payload bytes that follow
};

// The key's fingerprint (FNV-1a of its bytes; never 0).
uint64_t RrpcKeyFingerprint(std::string_view key);
// Header and payload of `key`'s object, ready to Client::Write at its address.
std::vector<uint8_t> RrpcObjectImage(std::string_view key, std::string_view payload);
// The kv::Store value naming the object at `object` (8 bytes, little-endian).
std::string RrpcObjectRef(uint64_t object);
// Clears the fingerprint of the object at `object`, so that no cached
// address of it is used again.  Errors: Client::Write's.
Status RrpcRetireObject(Client* client, uint64_t object);

struct RrpcOptions {
  uint32_t inline_threshold = 512;  // payloads up to this many bytes travel in the reply
  bool cache_addresses = true;      // remember each key's object address after first use
  size_t max_cached = 1 << 20;      // entries; beyond it the cache is cleared and refills
  bool values_are_objects = true;   // false: the store's own items (see above)
};

struct RrpcCounters {
  uint64_t gets = 0;
  uint64_t rpcs = 0;             // kRpcKvGetObject calls (re-asks included)
  uint64_t inline_replies = 0;   // payload in the reply
  uint64_t address_replies = 0;  // address in the reply, payload read one-sidedly
  uint64_t cached_reads = 0;     // GETs served by a cached address alone (one read, no RPC)
  uint64_t stale_refused = 0;    // cached reads whose header did not match: dropped, asked again
  uint64_t read_errors = 0;      // cached reads that failed: dropped, asked again
};

// GETs of a kv::Store whose values are RrpcObjectRefs.
class RrpcKv {
 public:
  // `rpc` and `store` must outlive the RrpcKv; the store only builds
  // requests (MakeGetRequest).  Errors: InvalidArgument (null rpc or store).
  static Result<std::unique_ptr<RrpcKv>> Create(RpcClient* rpc, const kv::Store* store, const RrpcOptions& options = {});

  // The payload of `key`'s object, nullopt if the key is absent.  Errors:
  // the RPC's (Timeout, Unavailable, a fault's code via
  // TraversalStatusError), Internal if the object holds another key's
  // fingerprint or a length other than the reply's, Aborted if the object
  // was retired between the reply and the read three times in a row,
  // one-sided read errors on the address path.
  Result<std::optional<std::string>> Get(std::string_view key);

  void Invalidate(std::string_view key);
  void InvalidateAll();
  size_t cached() const { return cache_.size(); }
  const RrpcCounters& counters() const { return counters_; }

 private:
  struct Entry {
    uint64_t object = 0;
    uint64_t length = 0;
  };
  RrpcKv(RpcClient* rpc, const kv::Store* store, const RrpcOptions& options);
  // One read of header and payload: the payload, nullopt if the header is
  // not `key`'s at `length` (refused), or the read's error.
  Result<std::optional<std::string>> ReadObject(std::string_view key, const Entry& e);
  // Items: one read of the item; its value, nullopt if it is not `key`'s.
  Result<std::optional<std::string>> ReadItem(std::string_view key, const Entry& e);
  Result<std::optional<std::string>> AskItem(std::string_view key);
  // The GET by RPC (and the one-sided read if the reply has the address).
  Result<std::optional<std::string>> Ask(std::string_view key);
  void Remember(std::string_view key, const Entry& e);

  RpcClient* rpc_;
  const kv::Store* store_;
  RrpcOptions options_;
  RrpcCounters counters_;
  std::unordered_map<std::string, Entry> cache_;
};

}  // namespace pulse
