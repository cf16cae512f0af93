// Options of the host agent (pulse/farmem/host_agent.h) and of the page
// backends it can page to (pulse/farmem/backends.h): one struct, so the
// factory MakeBackend picks and configures a backend from it alone.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::farmem {

// Where pages go (the comparison modes of seed 003 section V).
enum class BackendMode {
  kMemServer,  // the memory node directly, one-sided reads and writes (MemServerBackend)
  kProxy,      // through `pulse agent`, every optimisation off (AgentBackend)
  kAgent,      // through `pulse agent` with its optimisations (AgentBackend)
  kSsd,        // a file on local disk with O_DIRECT (LocalFileBackend): the SSD baseline
};
// "memserver", "proxy", "agent", "ssd".
std::string_view BackendModeName(BackendMode mode);
// The inverse of BackendModeName; InvalidArgument naming `name` otherwise.
Result<BackendMode> ParseBackendMode(std::string_view name);

struct HostAgentOptions {
  BackendMode mode = BackendMode::kMemServer;
  // Page size: a multiple of 4096.
  uint32_t page_bytes = 64 << 10;
  // The page buffer shared by every region: at least one page per fetch thread.
  uint64_t buffer_bytes = 256ull << 20;
  // Background eviction starts above evict_high * buffer and stops at
  // evict_low * buffer (0 < low <= high <= 1).
  double evict_high = 0.95;
  double evict_low = 0.90;
  // Threads fetching pages for faults (faults on different pages are served
  // concurrently up to this many).
  uint32_t fetch_threads = 4;

  // kMemServer: the cluster to connect to, and how many Clients (each one
  // request at a time) serve the fetch threads and the evictor.
  ClientOptions client;
  uint32_t connections = 4;
  // Region names (MemServerBackend: a descriptor file per name, locked by
  // the writer).  Empty: /tmp/pulse-farmem/<switch address>-t<tenant>.
  std::string region_directory;

  // kProxy, kAgent: `pulse agent`'s address (AgentBackend, faragent).
  std::string agent_address;

  // kSsd: the directory holding one file per region (on local disk).
  std::string ssd_directory = "/tmp/pulse-farmem-ssd";
};

}  // namespace pulse::farmem
