#include "farmem/region_descriptor.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "farmem/file_io.h"

namespace pulse::farmem {

Status WriteRegionDescriptor(int fd, const RegionDescriptor& d) {
  std::string text;
  if (!d.chunks.empty()) {
    text = fmt::format("{} {}", d.bytes, d.read_only ? 1 : 0);
    for (uint64_t c : d.chunks) text += fmt::format(" {}", c);
    text += "\n";
  }
  if (ftruncate(fd, 0) != 0) return Status::IoError(fmt::format("region descriptor: truncate: {}", std::strerror(errno)));
  Status st = WriteFully(fd, text.data(), text.size(), 0);
  if (!st.ok()) return Status::IoError(fmt::format("region descriptor: {}", st.message()));
  return Status::Ok();
}

Result<RegionDescriptor> ReadRegionDescriptor(int fd, const std::string& region) {
  std::string text(4096, '\0');
  for (;;) {  // the file may be longer than a guess
    auto got = ReadFully(fd, text.data(), text.size(), 0);
    if (!got.ok()) return Status::IoError(fmt::format("region '{}': descriptor: {}", region, got.status().message()));
    if (*got < text.size()) {
      text.resize(*got);
      break;
    }
    text.resize(text.size() * 2);
  }
  std::istringstream in(text);
  RegionDescriptor d;
  int ro = 0;
  uint64_t chunk = 0;
  in >> d.bytes >> ro;
  while (in >> chunk) d.chunks.push_back(chunk);
  if (d.bytes == 0 || d.chunks.empty() || text.empty() || text.back() != '\n') {
    return Status::FailedPrecondition(fmt::format("region '{}': its writer has not finished creating it", region));
  }
  d.read_only = ro != 0;
  return d;
}

}  // namespace pulse::farmem
