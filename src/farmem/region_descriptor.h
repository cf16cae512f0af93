// The descriptor file of a region name (MemServerBackend): where the
// region's far memory is, so that other processes can attach it.  One line
// of text: "<bytes> <read_only 0|1> <chunk address>...".  An empty file
// means no region (being created, or destroyed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pulse/status.h"

namespace pulse::farmem {

struct RegionDescriptor {
  uint64_t bytes = 0;
  bool read_only = false;
  std::vector<uint64_t> chunks;  // far addresses of the region's consecutive chunks
};

// Replaces the content of the open file `fd`.  IoError with errno's text.
Status WriteRegionDescriptor(int fd, const RegionDescriptor& d);
// Reads it back.  FailedPrecondition naming `region` when the file holds no
// complete descriptor (its writer has not finished creating it).
Result<RegionDescriptor> ReadRegionDescriptor(int fd, const std::string& region);

}  // namespace pulse::farmem
