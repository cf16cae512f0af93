// pulse::farmem::HostAgent: far memory as ordinary arrays (seed 003 section
// III, the host agent).  A region is a range of this process's address space
// whose pages live in far memory: the first touch of a page faults, the
// agent's fault-handling thread (userfaultfd, missing faults) fetches the
// page through a PageBackend into one LRU page buffer shared by all regions,
// and the access continues.  A page faulted by a read is installed
// write-protected, and the first write to it is a write-protect fault that
// marks it dirty; a page faulted by a write is installed dirty.  Eviction
// (least recently faulted or first written first; the pager sees no other
// accesses) starts in the background when the buffer is `evict_high` full and
// goes down to `evict_low`; a dirty page is written back before it is
// dropped, and a later access faults it in again.  Concurrent faults on one
// page produce one backend request.
//
// Regions are anonymous (zero-filled) or preloaded from a file.  Names are
// shared by the processes using the same backend (with the memserver and
// ssd backends: those of this machine): one process may write a region
// (a second writer is refused with AlreadyExists); after the writer marks it
// read-only, other processes may map it read-only (MapShared).
//
// A fault the agent cannot serve (the memory node died, a timeout) ends the
// process: the agent writes "pulse farmem: cannot serve a fault in region
// '<name>' ...: <status naming the node>" to stderr and calls _exit(70).
// Nothing waits without a deadline.
//
// Thread-safety: HostAgent is thread-safe; any thread may touch region
// memory at any time.  Map*, MarkReadOnly, Flush and Unmap may be called
// from any thread, but a region must not be touched while it is unmapped.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "pulse/farmem/options.h"
#include "pulse/farmem/page_backend.h"
#include "pulse/status.h"

namespace pulse::farmem {

// Counters since Create().  Bytes by class are those this host agent moved.
struct HostAgentStats {
  uint64_t faults = 0;            // missing-page faults that fetched a page
  uint64_t coalesced_faults = 0;  // faults on a page already being fetched (or just installed)
  uint64_t write_faults = 0;      // write-protect faults: a clean page became dirty
  uint64_t pages_fetched = 0;
  uint64_t pages_written_back = 0;
  uint64_t evictions = 0;
  uint64_t resident_pages = 0;       // in the buffer now
  uint64_t peak_resident_pages = 0;
  uint64_t bytes_on_demand = 0;   // PageClass::kOnDemand
  uint64_t bytes_prefetch = 0;    // PageClass::kPrefetch (none yet: the agent prefetches)
  uint64_t bytes_write_back = 0;  // PageClass::kWriteBack
  // Time spent in the backend (wall, summed over the fetch threads and the
  // evictor): what one fetch or write-back costs is this over its count.
  uint64_t fetch_micros = 0;       // PageBackend::ReadPages of the on-demand fetches
  uint64_t write_back_micros = 0;  // PageBackend::WritePages of the write-backs
};

// This process's resident set size in bytes (/proc/self/statm), 0 if unknown.
uint64_t ResidentBytes();

// A mapped region: its memory is [base, base + bytes).  Owned by the
// HostAgent; valid until Unmap or the agent's destruction.
struct Region {
  std::string name;
  void* base = nullptr;
  uint64_t bytes = 0;
  bool read_only = false;
};

class HostAgent {
 public:
  // Opens userfaultfd (needs root, CAP_SYS_PTRACE, or
  // /proc/sys/vm/unprivileged_userfaultfd = 1) and starts the threads.
  // With `backend` null, MakeBackend(options) picks one.  Errors:
  // InvalidArgument (page_bytes, buffer_bytes, watermarks), Unavailable
  // (userfaultfd or write-protect faults not supported: says which), the
  // backend's.
  static Result<std::unique_ptr<HostAgent>> Create(const HostAgentOptions& options,
                                                   std::unique_ptr<PageBackend> backend = nullptr);
  // Unmaps every region (dirty pages are dropped: call Flush first to keep
  // them in far memory) and stops the threads.
  ~HostAgent();
  HostAgent(const HostAgent&) = delete;
  HostAgent& operator=(const HostAgent&) = delete;

  // A zero-filled writable region of `bytes` named `name`.  Errors:
  // InvalidArgument (bytes 0), AlreadyExists (a writer holds `name`), the
  // backend's.
  Result<Region*> MapAnonymous(const std::string& name, uint64_t bytes);
  // A region holding the file at `path` (its size, at least one byte),
  // loaded into far memory when mapped; `read_only` maps it read-only from
  // the start (others may MapShared it at once).  Errors: InvalidArgument
  // (empty or unreadable file, naming it), those of MapAnonymous.
  Result<Region*> MapFile(const std::string& name, const std::string& path, bool read_only = false);
  // The first `bytes` of region `name`, which another process made
  // read-only, mapped read-only here.  Errors: NotFound (no such region),
  // FailedPrecondition (not read-only yet: its writer holds it),
  // InvalidArgument (bytes larger than the region), the backend's.
  Result<Region*> MapShared(const std::string& name, uint64_t bytes);

  // Writes the region's dirty pages back to far memory; they stay
  // resident, clean.  Errors: the backend's, naming the region.
  Status Flush(Region* region);
  // Flushes, then makes the region read-only here (a write to it is a
  // SIGSEGV) and in far memory (other processes may map it; the agent's
  // static cache may serve it).  Errors: those of Flush, the backend's.
  Status MarkReadOnly(Region* region);
  // Drops the region's pages and address range and destroys it in far
  // memory (a region mapped with MapShared only detaches).  `region` is
  // invalid afterwards.
  Status Unmap(Region* region);

  // The region whose memory holds `address` (e.g. an array's base), or
  // null if none does.
  Region* Find(const void* address) const;

  HostAgentStats stats() const;
  const HostAgentOptions& options() const;

 private:
  struct Impl;
  explicit HostAgent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pulse::farmem
