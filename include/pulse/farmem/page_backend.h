// PageBackend: where a far-memory region's pages come from and go to (the
// seam between the host agent's pager and the memory it pages to).
//
// The host agent (pulse/farmem/host_agent.h) maps regions into the address
// space and resolves their page faults; it moves whole pages through a
// PageBackend and never talks to the fabric itself.  Implementations:
//   MemServerBackend  one-sided Client::Read/Write to the memory node holding
//                     the region (pulse/farmem/memserver_backend.h);
//   LocalFileBackend  a file on local disk opened with O_DIRECT, the SSD
//                     baseline (pulse/farmem/local_file_backend.h);
//   AgentBackend      through the offload agent, `pulse agent`
//                     (pulse/farmem/agent_backend.h).
//
// Thread-safety: implementations are thread-safe.  The pager calls them from
// its fault-handling and eviction threads concurrently.
#pragma once

#include <cstdint>
#include <string>

#include "pulse/status.h"

namespace pulse::farmem {

// Traffic classes, counted by every layer that moves pages.  The numbers
// travel on the agent's wire: never renumber, only append.
enum class PageClass : uint8_t {
  kOnDemand = 0,    // a page fault is waiting for it
  kPrefetch = 1,    // fetched ahead of a fault
  kWriteBack = 2,   // a dirty page written back on eviction
  kStaticLoad = 3,  // a read-only region loaded once into the agent's static cache
};

// Where a region's pages come from and go to.  Region ids are chosen by the
// backend and are meaningful only to the backend that returned them.
class PageBackend {
 public:
  virtual ~PageBackend() = default;

  // Reserves `bytes` of far memory for region `name` (zero-filled), or, when
  // `file` is non-empty, a region preloaded from that file (its length is
  // `bytes`; the rest of the last page is zero).  Returns the region id.
  // Region names are shared by the processes using the same far memory:
  //   read_only false: this process becomes the region's one writer (a new
  //     region replaces any earlier one of that name); AlreadyExists if
  //     another process writes or reads region `name` now;
  //   read_only true, `file` non-empty: a new region, read-only from the
  //     start, that other processes may attach;
  //   read_only true, `file` empty: attaches the existing region `name` that
  //     its writer marked read-only (MarkReadOnly); `bytes` may be less than
  //     its size.  NotFound if there is none, FailedPrecondition while a
  //     writer still holds it, InvalidArgument if `bytes` exceeds it.
  // Other errors: InvalidArgument (bytes 0, file unreadable: naming it),
  // ResourceExhausted (no far memory), the fabric's (Unavailable, Timeout)
  // naming the node.
  virtual Result<uint64_t> CreateRegion(const std::string& name, uint64_t bytes, const std::string& file,
                                        bool read_only) = 0;

  // Fetches `count` consecutive pages starting at page `first` of region
  // `id` into `dst` (count * page_bytes bytes, owned by the caller; aligned
  // to 4096).  Blocks until done or a timeout; the Status of a failure names
  // the region and the node.  `cls` is what the read is for (counted).
  virtual Status ReadPages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes, void* dst,
                           PageClass cls) = 0;

  // Writes `count` pages starting at page `first` back from `src` (dirty
  // eviction; counted as kWriteBack).  Same contract as ReadPages.
  virtual Status WritePages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes,
                            const void* src) = 0;

  // Marks region `id` read-only from now on (the agent's static cache may
  // load and serve it; other processes may attach it).  The caller wrote its
  // dirty pages back first.  NotFound for an unknown id.
  virtual Status MarkReadOnly(uint64_t id) = 0;

  // Releases region `id`: a writer's far memory and claim on the name, an
  // attached reader's hold.  NotFound for an unknown id.
  virtual Status DestroyRegion(uint64_t id) = 0;
};

}  // namespace pulse::farmem
