// LocalFileBackend: the node-local SSD baseline of seed 003 section V.  Each
// region is a file <directory>/<name>.pages read and written with O_DIRECT
// (so the OS page cache does not help it); <name>.lock carries the name's
// claim (NameLock).  A region its writer made read-only has mode 0444.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "farmem/file_io.h"
#include "farmem/name_lock.h"
#include "farmem/region_table.h"
#include "pulse/farmem/backends.h"

namespace pulse::farmem {
namespace {

constexpr uint64_t kAlign = 4096;  // O_DIRECT: offsets, lengths and buffers
constexpr uint64_t kLoadChunk = 1 << 20;

uint64_t RoundUp(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

class LocalFileBackend final : public PageBackend {
 public:
  explicit LocalFileBackend(std::string directory) : directory_(std::move(directory)) {}
  ~LocalFileBackend() override {
    regions_.ForEach([](Region& r) { Release(r); });
  }

  Result<uint64_t> CreateRegion(const std::string& name, uint64_t bytes, const std::string& file,
                                bool read_only) override {
    if (bytes == 0) return Status::InvalidArgument(fmt::format("region '{}': bytes 0", name));
    const bool attach = read_only && file.empty();
    Region r;
    r.name = name;
    r.bytes = bytes;
    r.path = directory_ + "/" + name + ".pages";
    PULSE_ASSIGN_OR_RETURN(r.lock, NameLock::Acquire(directory_ + "/" + name + ".lock", name, !attach, !attach));
    if (attach) {
      r.fd = open(r.path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
      struct stat st {};
      if (r.fd < 0 || fstat(r.fd, &st) != 0) {
        Release(r);
        return Status::NotFound(fmt::format("region '{}': {}: {}", name, r.path, std::strerror(errno)));
      }
      if ((st.st_mode & 0222) != 0) {
        Release(r);
        return Status::FailedPrecondition(fmt::format("region '{}': its writer has not made it read-only", name));
      }
      if (bytes > static_cast<uint64_t>(st.st_size)) {
        Release(r);
        return Status::InvalidArgument(fmt::format("region '{}': {} bytes asked, it has {}", name, bytes, st.st_size));
      }
      r.read_only = true;
    } else {
      unlink(r.path.c_str());  // an earlier writer's region of this name is replaced
      r.fd = open(r.path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0644);
      if (r.fd < 0) return Status::IoError(fmt::format("region '{}': create {}: {}", name, r.path, std::strerror(errno)));
      r.owner = true;
      Status st = ftruncate(r.fd, static_cast<off_t>(RoundUp(bytes))) == 0
                      ? Status::Ok()
                      : Status::IoError(fmt::format("region '{}': ftruncate: {}", name, std::strerror(errno)));
      if (st.ok() && !file.empty()) st = Load(r, file);
      if (st.ok() && read_only) st = Publish(r);
      if (!st.ok()) {
        Release(r);
        return st;
      }
    }
    return regions_.Add(std::move(r));
  }

  Status ReadPages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes, void* dst,
                   PageClass cls) override {
    PULSE_ASSIGN_OR_RETURN(Open o, Find(id));
    const uint64_t n = uint64_t{count} * page_bytes;
    auto got = ReadFully(o.fd, dst, n, first * page_bytes);
    if (!got.ok()) return Status::IoError(fmt::format("region '{}' ({}): {}", o.name, o.path, got.status().message()));
    std::memset(static_cast<char*>(dst) + *got, 0, n - *got);  // past the end of the file
    return Status::Ok();
  }

  Status WritePages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes, const void* src) override {
    PULSE_ASSIGN_OR_RETURN(Open o, Find(id));
    if (o.read_only) return Status::FailedPrecondition(fmt::format("region '{}': read-only", o.name));
    Status st = WriteFully(o.fd, src, uint64_t{count} * page_bytes, first * page_bytes);
    if (!st.ok()) return Status::IoError(fmt::format("region '{}' ({}): {}", o.name, o.path, st.message()));
    return Status::Ok();
  }

  Status MarkReadOnly(uint64_t id) override {
    return regions_.With(id, [](Region& r) { return r.read_only ? Status::Ok() : Publish(r); });
  }

  Status DestroyRegion(uint64_t id) override {
    PULSE_ASSIGN_OR_RETURN(Region r, regions_.Take(id));
    if (r.owner) unlink(r.path.c_str());
    Release(r);
    return Status::Ok();
  }

 private:
  struct Region {
    std::string name;
    std::string path;
    uint64_t bytes = 0;
    int fd = -1;
    bool owner = false;
    bool read_only = false;
    NameLock lock;
  };
  struct Open {  // what a page request needs, copied out under the mutex
    std::string name;
    std::string path;
    int fd;
    bool read_only;
  };

  static void Release(Region& r) {
    if (r.fd >= 0) close(r.fd);
    r.fd = -1;
  }

  Result<Open> Find(uint64_t id) {
    return regions_.With(id, [](Region& r) -> Result<Open> { return Open{r.name, r.path, r.fd, r.read_only}; });
  }

  Status Load(const Region& r, const std::string& file) {
    const int in = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) return Status::InvalidArgument(fmt::format("region '{}': open {}: {}", r.name, file, std::strerror(errno)));
    void* chunk = std::aligned_alloc(kAlign, kLoadChunk);
    Status st;
    for (uint64_t off = 0; off < r.bytes && st.ok(); off += kLoadChunk) {
      const uint64_t n = std::min(kLoadChunk, r.bytes - off);
      auto got = ReadFully(in, chunk, n, off);
      if (!got.ok()) {
        st = Status::InvalidArgument(fmt::format("region '{}': {}: {}", r.name, file, got.status().message()));
        break;
      }
      std::memset(static_cast<char*>(chunk) + *got, 0, RoundUp(n) - *got);
      st = WriteFully(r.fd, chunk, RoundUp(n), off);
    }
    std::free(chunk);
    close(in);
    return st;
  }

  static Status Publish(Region& r) {
    if (fchmod(r.fd, 0444) != 0) {
      return Status::IoError(fmt::format("region '{}': chmod {}: {}", r.name, r.path, std::strerror(errno)));
    }
    PULSE_RETURN_IF_ERROR(r.lock.Downgrade());
    r.read_only = true;
    return Status::Ok();
  }

  const std::string directory_;
  RegionTable<Region> regions_;
};

}  // namespace

Result<std::unique_ptr<PageBackend>> MakeLocalFileBackend(const HostAgentOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.ssd_directory, ec);
  if (ec) return Status::IoError(fmt::format("ssd directory {}: {}", options.ssd_directory, ec.message()));
  return std::unique_ptr<PageBackend>(new LocalFileBackend(options.ssd_directory));
}

}  // namespace pulse::farmem
