// The seam between the host agent (the userfaultfd pager, "farhost") and
// where a region's pages live.  This copy follows the shared plan of issue 17
// (farmem_api.md) word for word in its declarations; the integrator keeps one.
#pragma once

#include <cstdint>
#include <string>

#include "pulse/status.h"

namespace pulse::farmem {

// Traffic classes, counted by every layer that moves pages.
enum class PageClass : uint8_t { kOnDemand = 0, kPrefetch = 1, kWriteBack = 2, kStaticLoad = 3 };

// Where a region's pages come from and go to.  Implementations:
// MemServerBackend (one-sided Client::Read/Write to the memory node holding
// the region), LocalFileBackend (a file on local disk with O_DIRECT: the SSD
// baseline), AgentBackend (through `pulse agent`, agent_backend.h).
// Thread-safe: the pager calls it from its fault-handling threads.
class PageBackend {
 public:
  virtual ~PageBackend() = default;
  // Reserves `bytes` of far memory for region `name` (zero-filled), or, when
  // `file` is non-empty, a region preloaded from that file at the memory
  // node.  Returns the region id.
  virtual Result<uint64_t> CreateRegion(const std::string& name, uint64_t bytes, const std::string& file,
                                        bool read_only) = 0;
  // Fetches `count` consecutive pages starting at page `first` of region
  // `id` into `dst` (count * page_bytes).  Blocks until done or fails with a
  // Status naming region and node.
  virtual Status ReadPages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes, void* dst,
                           PageClass cls) = 0;
  // Writes pages back (dirty eviction).  Same contract.
  virtual Status WritePages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes,
                            const void* src) = 0;
  // Marks a region read-only from now on (the agent's static cache may load
  // and serve it).
  virtual Status MarkReadOnly(uint64_t id) = 0;
  virtual Status DestroyRegion(uint64_t id) = 0;
};

}  // namespace pulse::farmem
