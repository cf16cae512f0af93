#include "pulse/farmem/host_agent.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "farmem/pager.h"
#include "pulse/farmem/backends.h"

namespace pulse::farmem {

uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

struct HostAgent::Impl {
  HostAgentOptions options;
  std::unique_ptr<PageBackend> backend;
  std::unique_ptr<Pager> pager;  // before backend in destruction: its threads call the backend
  std::mutex mu;
  struct Mapped {
    Region region;
    uint64_t backend_id = 0;
  };
  std::map<const Region*, std::unique_ptr<Mapped>> regions;

  ~Impl() { pager.reset(); }

  Result<Region*> Map(const std::string& name, uint64_t bytes, const std::string& file, bool read_only) {
    PULSE_ASSIGN_OR_RETURN(uint64_t id, backend->CreateRegion(name, bytes, file, read_only));
    auto base = pager->Map(name, id, bytes, !read_only);
    if (!base.ok()) {
      IgnoreError(backend->DestroyRegion(id));  // best effort: the mapping failed, which is reported
      return base.status();
    }
    auto m = std::make_unique<Mapped>();
    m->region = Region{name, *base, bytes, read_only};
    m->backend_id = id;
    Region* r = &m->region;
    std::lock_guard<std::mutex> lock(mu);
    regions[r] = std::move(m);
    return r;
  }

  Result<Mapped*> Get(const Region* region) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = regions.find(region);
    if (it == regions.end()) return Status::NotFound("host agent: not a region of this agent");
    return it->second.get();
  }
};

Result<std::unique_ptr<HostAgent>> HostAgent::Create(const HostAgentOptions& options,
                                                     std::unique_ptr<PageBackend> backend) {
  if (options.page_bytes == 0 || options.page_bytes % 4096 != 0) {
    return Status::InvalidArgument(fmt::format("page_bytes {}: not a positive multiple of 4096", options.page_bytes));
  }
  const uint64_t pages = options.buffer_bytes / options.page_bytes;
  if (options.fetch_threads == 0 || pages < options.fetch_threads) {
    return Status::InvalidArgument(fmt::format("buffer_bytes {}: less than one {}-byte page per fetch thread ({})",
                                               options.buffer_bytes, options.page_bytes, options.fetch_threads));
  }
  if (!(options.evict_low > 0 && options.evict_low <= options.evict_high && options.evict_high <= 1)) {
    return Status::InvalidArgument(fmt::format("evict_low {} / evict_high {}: need 0 < low <= high <= 1",
                                               options.evict_low, options.evict_high));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (backend == nullptr) {
    PULSE_ASSIGN_OR_RETURN(backend, MakeBackend(options));
  }
  impl->backend = std::move(backend);
  PagerOptions po;
  po.page_bytes = options.page_bytes;
  po.buffer_pages = pages;
  po.evict_high_pages = static_cast<uint64_t>(options.evict_high * static_cast<double>(pages));
  po.evict_low_pages = static_cast<uint64_t>(options.evict_low * static_cast<double>(pages));
  po.fetch_threads = options.fetch_threads;
  PULSE_ASSIGN_OR_RETURN(impl->pager, Pager::Start(po, impl->backend.get()));
  return std::unique_ptr<HostAgent>(new HostAgent(std::move(impl)));
}

HostAgent::HostAgent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HostAgent::~HostAgent() = default;

Result<Region*> HostAgent::MapAnonymous(const std::string& name, uint64_t bytes) {
  if (bytes == 0) return Status::InvalidArgument(fmt::format("region '{}': bytes 0", name));
  return impl_->Map(name, bytes, "", false);
}

Result<Region*> HostAgent::MapFile(const std::string& name, const std::string& path, bool read_only) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(fmt::format("region '{}': file '{}' is not a readable regular file", name, path));
  }
  if (st.st_size == 0) return Status::InvalidArgument(fmt::format("region '{}': file '{}' is empty", name, path));
  return impl_->Map(name, static_cast<uint64_t>(st.st_size), path, read_only);
}

Result<Region*> HostAgent::MapShared(const std::string& name, uint64_t bytes) {
  if (bytes == 0) return Status::InvalidArgument(fmt::format("region '{}': bytes 0", name));
  return impl_->Map(name, bytes, "", true);
}

Status HostAgent::Flush(Region* region) {
  PULSE_ASSIGN_OR_RETURN(Impl::Mapped * m, impl_->Get(region));
  if (m->region.read_only) return Status::Ok();
  return impl_->pager->Flush(m->region.base);
}

Status HostAgent::MarkReadOnly(Region* region) {
  PULSE_ASSIGN_OR_RETURN(Impl::Mapped * m, impl_->Get(region));
  if (m->region.read_only) return Status::Ok();
  PULSE_RETURN_IF_ERROR(impl_->pager->MakeReadOnly(m->region.base));
  PULSE_RETURN_IF_ERROR(impl_->backend->MarkReadOnly(m->backend_id));
  m->region.read_only = true;
  return Status::Ok();
}

Status HostAgent::Unmap(Region* region) {
  PULSE_ASSIGN_OR_RETURN(Impl::Mapped * m, impl_->Get(region));
  PULSE_RETURN_IF_ERROR(impl_->pager->Unmap(m->region.base));
  Status destroyed = impl_->backend->DestroyRegion(m->backend_id);
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->regions.erase(region);
  return destroyed;
}

Region* HostAgent::Find(const void* address) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const auto* a = static_cast<const char*>(address);
  for (auto& [key, m] : impl_->regions) {
    const auto* base = static_cast<const char*>(m->region.base);
    if (a >= base && a < base + m->region.bytes) return &m->region;
  }
  return nullptr;
}

HostAgentStats HostAgent::stats() const { return impl_->pager->stats(); }
const HostAgentOptions& HostAgent::options() const { return impl_->options; }

}  // namespace pulse::farmem
