// The WebService application (UPC, seed 000 section 6, seed 001 section 7):
// a pulse::ds::UnorderedMap from user id to the far address of the user's
// 8 KB object.  A read looks the id up (the map's offloaded chain walk),
// fetches the object (one-sided read), then, at the CPU node, compresses it
// with zstd and encrypts the result with AES-256-GCM (OpenSSL EVP): the
// response a web service would send.  (Compression comes first because
// ciphertext does not compress; the CPU work per request is the same kind.)
// An update looks the id up and writes a new version of the object.  Keys
// and operations come from YCSB workloads A, B or C (pulse/apps/ycsb.h).
// The high-load-factor variant uses users / chain_length buckets, so chains
// hold about chain_length nodes (CHASE Table 2: about 100).
//
// Thread-safety: not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "pulse/apps/app_system.h"
#include "pulse/apps/ycsb.h"
#include "pulse/ds/unordered_map.h"
#include "pulse/status.h"

namespace pulse::apps {

struct WebServiceOptions {
  uint64_t users = 10000;
  uint32_t object_bytes = 8192;
  char workload = 'C';  // 'A', 'B' or 'C'
  ycsb::Distribution distribution = ycsb::Distribution::kZipfian;  // or kUniform
  uint32_t chain_length = 0;  // 0: one bucket per user; else users / chain_length buckets
  uint64_t operations = 100000;  // YCSB operationcount
  uint64_t seed = 42;
  // Writes that add a user (seed 000 C.2, Fig. 3(b)): this fraction of the
  // operations become YCSB inserts of new users (a new object, then the
  // map's insert traversal, which allocates the chain node); the workload's
  // own mix fills the rest.  0: workload A, B or C unchanged.
  double insert_fraction = 0;
  // Pre-allocated regions each insert request carries (offloaded
  // allocation); 0: none, so every new node costs a return to the CPU node,
  // which allocates and re-issues (ds::UnorderedMapOptions).
  uint32_t regions_per_request = 1;
};

// The bytes of version `version` of user `key`'s object: text-like and
// compressible, different for every key and version.
std::vector<uint8_t> WebObject(uint64_t key, uint64_t version, uint32_t bytes);

// A response: 12-byte IV | AES-256-GCM ciphertext of zstd(object) | 16-byte tag.
struct WebResponse {
  bool found = false;
  std::vector<uint8_t> payload;
};

class WebService {
 public:
  // Creates the map and one object per user (keys FnvHash64(0..users-1))
  // through system->client().  InvalidArgument for a workload other than
  // A/B/C, a distribution other than zipfian/uniform, 0 users or an
  // insert_fraction outside [0, 1).
  static Result<std::unique_ptr<WebService>> Load(AppSystem* system, const WebServiceOptions& options);
  ~WebService();

  ycsb::Operation NextOperation() { return workload_->Next(); }
  // A read (lookup, fetch, compress, encrypt), an update (lookup, write
  // the next version) or an insert (new object, map insert).  Other
  // operations: InvalidArgument.
  Result<WebResponse> Serve(const ycsb::Operation& op);
  // Decrypts and decompresses a response: the object it carried.  Errors:
  // InvalidArgument if the tag does not verify or the frame is malformed.
  Result<std::vector<uint8_t>> Open(const WebResponse& response) const;
  // The object the service should hold for `key` (the reference).
  std::vector<uint8_t> Expected(uint64_t key) const;

  ds::UnorderedMap& map() { return *map_; }

 private:
  WebService() = default;
  Status AddUser(const ycsb::Operation& op);  // a YCSB insert: object, then map insert
  struct Crypto;
  AppSystem* system_ = nullptr;
  WebServiceOptions options_;
  std::unique_ptr<ds::UnorderedMap> map_;
  std::unique_ptr<ycsb::Workload> workload_;
  std::unique_ptr<Crypto> crypto_;
  std::unordered_map<uint64_t, uint64_t> versions_;  // key -> current version
  std::vector<uint8_t> buffer_;
  uint64_t nonce_ = 0;
};

}  // namespace pulse::apps
