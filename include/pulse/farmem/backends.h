// The page backends of the host side and the factory that picks one by
// HostAgentOptions::mode.  Each returned backend is thread-safe (see
// PageBackend) and owned by the caller.
#pragma once

#include <memory>

#include "pulse/farmem/options.h"
#include "pulse/farmem/page_backend.h"
#include "pulse/status.h"

namespace pulse::farmem {

// The backend for options.mode: MakeMemServerBackend, MakeLocalFileBackend,
// or (kProxy, kAgent) the offload agent's AgentBackend.  Errors: those of
// the backend's constructor.
Result<std::unique_ptr<PageBackend>> MakeBackend(const HostAgentOptions& options);

// One-sided Client::Read/Write to the memory node holding each region (one
// Client::Allocate per region).  Opens options.connections Clients to
// options.client's cluster; a page request takes a free one, so that many
// requests run at once.  Region names: one descriptor file per name in
// options.region_directory, flock()ed by its writer (exclusive) and readers
// (shared), so the names are shared by the processes of this machine and a
// writer that dies releases its name.  Errors: those of Client::Connect;
// IoError if the directory cannot be made.
Result<std::unique_ptr<PageBackend>> MakeMemServerBackend(const HostAgentOptions& options);

// The SSD baseline: region `name` is the file options.ssd_directory/<name>
// opened with O_DIRECT (page I/O bypasses the OS page cache; pages are
// aligned).  Writers and readers flock() the file as above.  IoError if the
// directory cannot be made.
Result<std::unique_ptr<PageBackend>> MakeLocalFileBackend(const HostAgentOptions& options);

}  // namespace pulse::farmem
