// The YCSB operation streams of `pulse bench ycsb` (issue 16): workloads A,
// B, C, D and F over a hash-table KV store, as keys and values of fixed
// sizes.  The generators themselves are pulse::apps::ycsb's (YCSB's
// CoreWorkload, include/pulse/apps/ycsb.h: the scrambled Zipfian, the
// latest distribution, the operation mix); this file chooses the request
// distribution, gives each client a stream of its own, and turns key numbers
// into key and value bytes.
//
//   A read 0.5 / update 0.5     B read 0.95 / update 0.05     C read 1.0
//   D read 0.95 / insert 0.05 (always the "latest" distribution)
//   F read 0.5 / read-modify-write 0.5
// E (scans) is refused: a hash table has no range queries (as in seed 004
// section 6.4).  Distributions: "zipfian" (YCSB's scrambled Zipfian, theta
// 0.99) or "uniform".
//
// Thread-safety: a YcsbStream is not thread-safe (one per client thread);
// the free functions are.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "pulse/apps/ycsb.h"
#include "pulse/status.h"

namespace pulse::bench {

struct YcsbWorkloadOptions {
  char workload = 'C';                 // A, B, C, D or F
  std::string distribution = "zipfian";  // zipfian | uniform (D: latest regardless)
  uint64_t records = 100000;           // loaded before the run (key numbers 0..records-1)
  uint32_t key_bytes = 16;             // >= 16; with value_bytes 40, 64-byte items (8 B header)
  uint32_t value_bytes = 40;           // >= 1
  uint64_t seed = 42;
};

// InvalidArgument naming the bad option, else Ok.
Status CheckYcsbWorkloadOptions(const YcsbWorkloadOptions& options);

enum class YcsbOpKind { kRead, kUpdate, kInsert, kReadModifyWrite };
const char* YcsbOpName(YcsbOpKind kind);

struct YcsbOp {
  YcsbOpKind kind = YcsbOpKind::kRead;
  uint64_t keynum = 0;  // reads and updates: < records + acknowledged inserts; insert: a new one
};

// The key of key number `keynum`: "u" and 15 hex digits of YCSB's hashed key
// (insertorder=hashed: FnvHash64(keynum)), padded with '.' to key_bytes.
std::string YcsbKey(uint64_t keynum, uint32_t key_bytes);
// The value of `keynum` in its `version`-th write (0: the load), value_bytes
// bytes, every byte derived from both (a read of a stale or foreign value is
// caught by comparing).
std::string YcsbValue(uint64_t keynum, uint64_t version, uint32_t value_bytes);

// One client's operation stream.
class YcsbStream {
 public:
  // The stream of client `client` (streams of different clients differ;
  // the same options and client give the same stream).  Errors as
  // CheckYcsbWorkloadOptions.
  static Result<std::unique_ptr<YcsbStream>> Create(const YcsbWorkloadOptions& options, uint32_t client);
  YcsbOp Next();
  // An insert's key number is readable (and "latest") once acknowledged.
  void Acknowledge(uint64_t keynum) { workload_->Acknowledge(keynum); }
  const apps::ycsb::WorkloadSpec& spec() const { return workload_->spec(); }

 private:
  explicit YcsbStream(std::unique_ptr<apps::ycsb::Workload> w) : workload_(std::move(w)) {}
  std::unique_ptr<apps::ycsb::Workload> workload_;
};

}  // namespace pulse::bench
