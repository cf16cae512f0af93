// MemServerBackend: pages read and written one-sidedly at the memory node
// holding the region (seed 003's MemServer mode).  Client is not
// thread-safe, so each request takes one of a pool of Clients.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "farmem/name_lock.h"
#include "farmem/region_table.h"
#include "farmem/file_io.h"
#include "pulse/farmem/backends.h"

namespace pulse::farmem {
namespace {

using namespace std::chrono_literals;

// How long a request waits for a free Client: each holder is bounded by the
// Client's own timeouts, so this passing means the fabric is stuck.
constexpr auto kConnectionWait = 60s;
// Zero-filling and preloading write this much per Client::Write.
constexpr uint64_t kLoadChunk = 1 << 20;
// What the backend tracks as written or not (page sizes are multiples).
constexpr uint64_t kBlock = 4096;

// The descriptor file of a region name: where its far memory is.
struct Descriptor {
  uint64_t address = 0;
  uint64_t bytes = 0;
  bool read_only = false;
};

Status WriteDescriptor(int fd, const Descriptor& d) {
  const std::string text = fmt::format("{} {} {}\n", d.address, d.bytes, d.read_only ? 1 : 0);
  if (ftruncate(fd, 0) != 0 || pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return Status::IoError(fmt::format("region descriptor: write: {}", std::strerror(errno)));
  }
  return Status::Ok();
}

Result<Descriptor> ReadDescriptor(int fd, const std::string& region) {
  char buf[128] = {};
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  Descriptor d;
  unsigned long long address = 0, bytes = 0;
  int ro = 0;
  if (n <= 0 || std::sscanf(buf, "%llu %llu %d", &address, &bytes, &ro) != 3) {
    return Status::FailedPrecondition(fmt::format("region '{}': its writer has not finished creating it", region));
  }
  d.address = address;
  d.bytes = bytes;
  d.read_only = ro != 0;
  return d;
}

class MemServerBackend final : public PageBackend {
 public:
  MemServerBackend(std::vector<std::unique_ptr<Client>> clients, std::string directory)
      : clients_(std::move(clients)), directory_(std::move(directory)) {
    for (auto& c : clients_) idle_.push_back(c.get());
  }

  ~MemServerBackend() override {
    regions_.ForEach([&](Region& r) {
      // Best effort at shutdown; a shared region's readers keep its memory.
      if (r.owner && (!r.read_only || r.lock.TryUpgrade())) IgnoreError(clients_[0]->Free(r.address));
    });
  }

  Result<uint64_t> CreateRegion(const std::string& name, uint64_t bytes, const std::string& file,
                                bool read_only) override {
    if (bytes == 0) return Status::InvalidArgument(fmt::format("region '{}': bytes 0", name));
    const std::string path = directory_ + "/" + name + ".region";
    const bool attach = read_only && file.empty();
    PULSE_ASSIGN_OR_RETURN(NameLock lock, NameLock::Acquire(path, name, /*exclusive=*/!attach, /*create=*/!attach));
    Region r{name, 0, bytes, !attach, read_only, std::move(lock), {}};
    if (attach) {
      PULSE_ASSIGN_OR_RETURN(Descriptor d, ReadDescriptor(r.lock.fd(), name));
      if (!d.read_only) {
        return Status::FailedPrecondition(fmt::format("region '{}': its writer has not made it read-only", name));
      }
      if (bytes > d.bytes) {
        return Status::InvalidArgument(fmt::format("region '{}': {} bytes asked, it has {}", name, bytes, d.bytes));
      }
      r.address = d.address;
    } else {
      PULSE_RETURN_IF_ERROR(WriteDescriptor(r.lock.fd(), Descriptor{}));  // no region until it is complete
      PULSE_ASSIGN_OR_RETURN(r.address, Allocate(name, bytes));
      // An anonymous region is not zero-filled now (memory nodes reuse
      // freed memory): its blocks read as zeros here until written, and
      // those never written are zero-filled when it becomes read-only.
      if (file.empty()) r.unwritten.assign((bytes + kBlock - 1) / kBlock, true);
      Status loaded = file.empty() ? Status::Ok() : Load(r, file);
      if (loaded.ok() && read_only) loaded = ZeroUnwritten(r);
      if (loaded.ok() && read_only) loaded = Publish(r);
      if (!loaded.ok()) {
        IgnoreError(WithClient([&](Client& c) { return c.Free(r.address); }, /*allocator=*/true));  // best effort: failing anyway
        return loaded;
      }
    }
    return regions_.Add(std::move(r));
  }

  Status ReadPages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes, void* dst,
                   PageClass cls) override {
    PULSE_ASSIGN_OR_RETURN(Span s, Locate(id, first, count, page_bytes));
    char* out = static_cast<char*>(dst);
    std::memset(out + s.length, 0, uint64_t{count} * page_bytes - s.length);
    const bool any_written = std::find(s.unwritten.begin(), s.unwritten.end(), false) != s.unwritten.end();
    if (!s.unwritten.empty() && !any_written) {
      std::memset(out, 0, s.length);  // never written: zeros, no need to ask the memory node
      return Status::Ok();
    }
    PULSE_RETURN_IF_ERROR(Named(s, WithClient([&](Client& c) { return c.Read(s.address, dst, s.length); })));
    for (size_t b = 0; b < s.unwritten.size(); ++b) {
      if (s.unwritten[b]) std::memset(out + b * kBlock, 0, std::min(kBlock, s.length - b * kBlock));
    }
    return Status::Ok();
  }

  Status WritePages(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes, const void* src) override {
    PULSE_ASSIGN_OR_RETURN(Span s, Locate(id, first, count, page_bytes));
    if (s.read_only) return Status::FailedPrecondition(fmt::format("region '{}': read-only", s.name));
    PULSE_RETURN_IF_ERROR(Named(s, WithClient([&](Client& c) { return c.Write(s.address, src, s.length); })));
    if (s.unwritten.empty()) return Status::Ok();
    return regions_.With(id, [&](Region& r) {
      const uint64_t lo = first * page_bytes / kBlock, hi = (first * page_bytes + s.length + kBlock - 1) / kBlock;
      std::fill(r.unwritten.begin() + static_cast<ptrdiff_t>(lo), r.unwritten.begin() + static_cast<ptrdiff_t>(hi),
                false);
      return Status::Ok();
    });
  }

  Status MarkReadOnly(uint64_t id) override {
    // The zero-filling writes go outside the table's mutex (page requests
    // of other regions go on); the pager sends no requests for this region
    // meanwhile (its pages are clean and write-protected).
    PULSE_ASSIGN_OR_RETURN(Region copy, regions_.With(id, [](Region& r) -> Result<Region> {
      return Region{r.name, r.address, r.bytes, r.owner, r.read_only, NameLock(), r.unwritten};
    }));
    if (copy.read_only) return Status::Ok();
    PULSE_RETURN_IF_ERROR(ZeroUnwritten(copy));
    return regions_.With(id, [](Region& r) {
      r.unwritten.clear();
      return Publish(r);
    });
  }

  Status DestroyRegion(uint64_t id) override {
    PULSE_ASSIGN_OR_RETURN(Region r, regions_.Take(id));
    if (!r.owner) return Status::Ok();  // a reader only lets go of the name
    // Readers of a shared region keep reading its far memory: it stays
    // theirs (and this process's, unused) rather than be reused under them.
    if (r.read_only && !r.lock.TryUpgrade()) return Status::Ok();
    // The descriptor first: nobody may attach memory about to be freed.
    PULSE_RETURN_IF_ERROR(WriteDescriptor(r.lock.fd(), Descriptor{}));
    return WithClient([&](Client& c) { return c.Free(r.address); }, /*allocator=*/true);
  }

 private:
  struct Region {
    std::string name;
    uint64_t address = 0;
    uint64_t bytes = 0;
    bool owner = false;  // this process allocated it (the writer, or the creator of a read-only one)
    bool read_only = false;
    NameLock lock;
    // Per 4 KiB block of an anonymous writable region: never written to far
    // memory yet (its far bytes are whatever was there).  Empty: all written.
    std::vector<bool> unwritten;
  };
  struct Span {
    std::string name;
    uint64_t address;
    uint64_t length;  // bytes of the region in the pages asked for
    bool read_only;
    std::vector<bool> unwritten;  // the span's blocks; empty: all written
  };

  Result<uint64_t> Allocate(const std::string& name, uint64_t bytes) {
    auto a = WithClient([&](Client& c) { return c.Allocate(bytes); }, /*allocator=*/true);
    if (!a.ok()) {
      return Status::FromCode(a.status().code(),
                              fmt::format("region '{}': allocating {} bytes: {}", name, bytes, a.status().message()));
    }
    return *a;
  }

  // Copies the file into the region.
  Status Load(const Region& r, const std::string& file) {
    const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return Status::InvalidArgument(fmt::format("region '{}': open {}: {}", r.name, file, std::strerror(errno)));
    }
    std::vector<char> chunk(kLoadChunk);
    Status st;
    for (uint64_t off = 0; off < r.bytes && st.ok(); off += kLoadChunk) {
      const uint64_t n = std::min(kLoadChunk, r.bytes - off);
      auto got = ReadFully(fd, chunk.data(), n, off);
      if (!got.ok()) {
        st = Status::InvalidArgument(fmt::format("region '{}': {}: {}", r.name, file, got.status().message()));
        break;
      }
      std::memset(chunk.data() + *got, 0, n - *got);  // a file that shrank reads as zeros past its end
      st = WriteFar(r, off, chunk.data(), n);
    }
    close(fd);
    return st;
  }

  // Writes zeros over the blocks never written (runs of up to kLoadChunk).
  Status ZeroUnwritten(const Region& r) {
    const std::vector<char> zeros(kLoadChunk, 0);
    for (size_t b = 0; b < r.unwritten.size();) {
      if (!r.unwritten[b]) {
        ++b;
        continue;
      }
      size_t e = b;
      while (e < r.unwritten.size() && r.unwritten[e] && (e - b + 1) * kBlock <= kLoadChunk) ++e;
      const uint64_t off = b * kBlock, n = std::min<uint64_t>(e * kBlock, r.bytes) - off;
      PULSE_RETURN_IF_ERROR(WriteFar(r, off, zeros.data(), n));
      b = e;
    }
    return Status::Ok();
  }

  Status WriteFar(const Region& r, uint64_t offset, const void* src, uint64_t n) {
    return Named(Span{r.name, r.address + offset, n, false, {}},
                 WithClient([&](Client& c) { return c.Write(r.address + offset, src, n); }));
  }

  static Status Publish(Region& r) {
    PULSE_RETURN_IF_ERROR(WriteDescriptor(r.lock.fd(), Descriptor{r.address, r.bytes, true}));
    PULSE_RETURN_IF_ERROR(r.lock.Downgrade());
    r.read_only = true;
    return Status::Ok();
  }

  Result<Span> Locate(uint64_t id, uint64_t first, uint32_t count, uint32_t page_bytes) {
    return regions_.With(id, [&](Region& r) -> Result<Span> {
      const uint64_t offset = first * page_bytes;
      if (offset >= r.bytes) {
        return Status::OutOfRange(fmt::format("region '{}': page {} beyond its {} bytes", r.name, first, r.bytes));
      }
      const uint64_t length = std::min<uint64_t>(uint64_t{count} * page_bytes, r.bytes - offset);
      Span span{r.name, r.address + offset, length, r.read_only, {}};
      if (!r.unwritten.empty()) {
        const auto lo = r.unwritten.begin() + static_cast<ptrdiff_t>(offset / kBlock);
        span.unwritten.assign(lo, lo + static_cast<ptrdiff_t>((length + kBlock - 1) / kBlock));
      }
      return span;
    });
  }

  // The status with the region and the memory node named.
  Status Named(const Span& s, Status st) {
    if (st.ok()) return st;
    auto node = clients_[0]->NodeOf(s.address);
    return Status::FromCode(st.code(), fmt::format("region '{}' at memory node {}: {}", s.name,
                                                   node ? std::to_string(*node) : "?", st.message()));
  }

  // Runs f(Client&) on an idle Client of the pool.  Allocation and Free
  // must use the same Client (its allocator owns the range), so `allocator`
  // asks for the first one.
  template <typename F>
  auto WithClient(F f, bool allocator = false) -> decltype(f(std::declval<Client&>())) {
    Client* const wanted = allocator ? clients_[0].get() : nullptr;
    Client* c = nullptr;
    {
      std::unique_lock<std::mutex> lock(pool_mu_);
      auto pick = [&]() -> std::vector<Client*>::iterator {
        if (wanted == nullptr) return idle_.empty() ? idle_.end() : idle_.end() - 1;
        return std::find(idle_.begin(), idle_.end(), wanted);
      };
      if (!pool_cv_.wait_for(lock, kConnectionWait, [&] { return pick() != idle_.end(); })) {
        return Status::Timeout("far memory: no connection became free (the fabric is stuck)");
      }
      auto it = pick();
      c = *it;
      idle_.erase(it);
    }
    auto result = f(*c);
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      idle_.push_back(c);
    }
    pool_cv_.notify_all();
    return result;
  }

  std::vector<std::unique_ptr<Client>> clients_;
  const std::string directory_;
  std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  std::vector<Client*> idle_;
  RegionTable<Region> regions_;
};

}  // namespace

Result<std::unique_ptr<PageBackend>> MakeMemServerBackend(const HostAgentOptions& options) {
  std::string directory = options.region_directory;
  if (directory.empty()) {
    std::string cluster = options.client.switch_address;
    std::replace(cluster.begin(), cluster.end(), ':', '_');
    directory = fmt::format("/tmp/pulse-farmem/{}-t{}", cluster, options.client.tenant);
  }
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) return Status::IoError(fmt::format("region directory {}: {}", directory, ec.message()));
  std::vector<std::unique_ptr<Client>> clients;
  for (uint32_t i = 0; i < std::max<uint32_t>(options.connections, 1); ++i) {
    PULSE_ASSIGN_OR_RETURN(auto c, Client::Connect(options.client));
    clients.push_back(std::move(c));
  }
  return std::unique_ptr<PageBackend>(new MemServerBackend(std::move(clients), std::move(directory)));
}

}  // namespace pulse::farmem
