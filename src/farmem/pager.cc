#include "farmem/pager.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "common/elapsed.h"

namespace pulse::farmem {
namespace {

using namespace std::chrono_literals;

// How long an idle thread sleeps before it looks at the stop flag again
// (stopping also wakes it at once): no thread spins.
constexpr auto kIdleWait = 1s;
// A fault that finds no buffer slot for this long ends the process: every
// slot stuck in a fetch or eviction means the backend hangs past its own
// timeouts.
constexpr auto kRoomDeadline = 120s;

}  // namespace

Result<std::unique_ptr<Pager>> Pager::Start(const PagerOptions& options, PageBackend* backend) {
  PULSE_ASSIGN_OR_RETURN(Userfaultfd uffd, Userfaultfd::Open());
  const int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) return Status::IoError(fmt::format("eventfd: {}", std::strerror(errno)));
  std::unique_ptr<Pager> pager(new Pager(options, backend, std::move(uffd), stop_fd));
  pager->threads_.emplace_back([p = pager.get()] { p->FaultLoop(); });
  pager->threads_.emplace_back([p = pager.get()] { p->EvictLoop(); });
  for (uint32_t i = 0; i < options.fetch_threads; ++i) {
    pager->threads_.emplace_back([p = pager.get()] { p->FetchLoop(); });
  }
  return pager;
}

Pager::Pager(const PagerOptions& options, PageBackend* backend, Userfaultfd uffd, int stop_fd)
    : options_(options), backend_(backend), uffd_(std::move(uffd)), stop_fd_(stop_fd) {}

Pager::~Pager() {
  {
    Lock lock(mu_);
    stopping_ = true;
  }
  const uint64_t one = 1;
  // Should the write fail, the fault thread sees the flag at its next poll timeout.
  [[maybe_unused]] const ssize_t written = write(stop_fd_, &one, sizeof one);
  work_cv_.notify_all();
  evict_cv_.notify_all();
  room_cv_.notify_all();
  for (auto& t : threads_) t.join();
  for (auto& [base, range] : ranges_) munmap(range->base, range->bytes);
  close(stop_fd_);
}

Result<void*> Pager::Map(const std::string& name, uint64_t backend_id, uint64_t bytes, bool writable) {
  const uint64_t page = options_.page_bytes;
  const uint64_t pages = (bytes + page - 1) / page;
  auto range = std::make_unique<Range>();
  range->name = name;
  range->backend_id = backend_id;
  range->bytes = pages * page;
  range->writable = writable;
  range->state.assign(pages, PageState::kAbsent);
  range->lru_pos.resize(pages);
  void* base = mmap(nullptr, range->bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    return Status::IoError(fmt::format("region '{}': mmap of {} bytes: {}", name, range->bytes, std::strerror(errno)));
  }
  range->base = static_cast<char*>(base);
  // Small pages only (a huge page would be filled by the kernel, not by a
  // fault), and a child process does not inherit the range: it would see
  // neither the pager nor the pages still in far memory.
  madvise(base, range->bytes, MADV_NOHUGEPAGE);
  madvise(base, range->bytes, MADV_DONTFORK);
  if (Status st = uffd_.Register(base, range->bytes, writable); !st.ok()) {
    munmap(base, range->bytes);
    return Status::IoError(fmt::format("region '{}': {}", name, st.message()));
  }
  Lock lock(mu_);
  ranges_[reinterpret_cast<uintptr_t>(base)] = std::move(range);
  return base;
}

Pager::Range* Pager::Find(uint64_t address) {
  auto it = ranges_.upper_bound(static_cast<uintptr_t>(address));
  if (it == ranges_.begin()) return nullptr;
  --it;
  Range* r = it->second.get();
  return address < reinterpret_cast<uintptr_t>(r->base) + r->bytes ? r : nullptr;
}

Result<Pager::Range*> Pager::RangeAt(void* base) {
  auto it = ranges_.find(reinterpret_cast<uintptr_t>(base));
  if (it == ranges_.end()) return Status::NotFound("pager: no region mapped at that address");
  return it->second.get();
}

void Pager::LruRemove(Range* range, uint64_t page) { lru_.erase(range->lru_pos[page]); }

void Pager::LruPushFront(Range* range, uint64_t page) {
  lru_.push_front(PageRef{range, page});
  range->lru_pos[page] = lru_.begin();
}

void Pager::FatalFault(const Range* range, uint64_t page, const char* what, const Status& status) {
  // The faulting thread waits in the kernel for this page and cannot be told
  // of an error: ending the process with a message beats a silent hang.
  std::fprintf(stderr, "pulse farmem: cannot serve a fault in region '%s' (page %llu, %s): %s\n",
               range->name.c_str(), static_cast<unsigned long long>(page), what, status.ToString().c_str());
  std::fflush(stderr);
  _exit(70);
}

void Pager::Check(const Status& status, const Range* range, uint64_t page, const char* what) {
  if (!status.ok()) FatalFault(range, page, what, status);
}

void Pager::FaultLoop() {
  UffdFault faults[64];
  for (;;) {
    pollfd fds[2] = {{uffd_.fd(), POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    poll(fds, 2, static_cast<int>(std::chrono::milliseconds(kIdleWait).count()));
    {
      Lock lock(mu_);
      if (stopping_) return;
    }
    auto n = uffd_.ReadFaults(faults, 64);
    if (!n.ok()) {
      std::fprintf(stderr, "pulse farmem: %s\n", n.status().ToString().c_str());
      _exit(70);
    }
    for (size_t i = 0; i < *n; ++i) HandleFault(faults[i]);
  }
}

void Pager::HandleFault(const UffdFault& fault) {
  Lock lock(mu_);
  Range* r = Find(fault.address);
  if (r == nullptr) return;  // unregistered meanwhile
  const uint64_t page = (fault.address - reinterpret_cast<uintptr_t>(r->base)) / options_.page_bytes;
  char* addr = PageAddress(r, page);
  PageState& st = r->state[page];
  if (!fault.write_protect) {  // a missing page
    switch (st) {
      case PageState::kAbsent:
        st = PageState::kFetching;
        ++r->busy;
        ++stats_.faults;
        queue_.push_back(FetchJob{r, page, fault.write});
        work_cv_.notify_one();
        return;
      case PageState::kFetching:
        ++stats_.coalesced_faults;  // UFFDIO_COPY wakes this thread with the first
        return;
      case PageState::kClean:
      case PageState::kDirty:
        ++stats_.coalesced_faults;  // installed since the fault was queued
        Check(uffd_.Wake(addr, options_.page_bytes), r, page, "wake");
        return;
      case PageState::kWritingBack:
      case PageState::kEvicting:
        return;  // woken when the eviction ends
    }
  }
  switch (st) {  // a write to a write-protected page
    case PageState::kClean:
      st = PageState::kDirty;
      ++stats_.write_faults;
      LruRemove(r, page);
      LruPushFront(r, page);
      Check(uffd_.WriteProtect(addr, options_.page_bytes, false), r, page, "unprotect");
      return;
    case PageState::kWritingBack:
    case PageState::kEvicting:
      return;  // woken when the write-back or eviction ends
    case PageState::kAbsent:
    case PageState::kFetching:
    case PageState::kDirty:
      // A stale message (the page changed state since): retrying the access
      // faults again if it must.
      Check(uffd_.Wake(addr, options_.page_bytes), r, page, "wake");
      return;
  }
}

void Pager::FetchLoop() {
  void* bounce = std::aligned_alloc(4096, options_.page_bytes);
  if (bounce == nullptr) {
    std::fprintf(stderr, "pulse farmem: no memory for a %u-byte page\n", options_.page_bytes);
    _exit(70);
  }
  for (;;) {
    FetchJob job;
    {
      Lock lock(mu_);
      while (!stopping_ && queue_.empty()) work_cv_.wait_for(lock, kIdleWait);
      if (stopping_) break;
      job = queue_.front();
      queue_.pop_front();
      ReserveSlot(lock);
    }
    Fetch(job, bounce);
  }
  std::free(bounce);
}

void Pager::ReserveSlot(Lock& lock) {
  const auto deadline = std::chrono::steady_clock::now() + kRoomDeadline;
  while (stats_.resident_pages + fetching_ >= options_.buffer_pages) {
    if (EvictOne(lock)) continue;
    // Every slot is being fetched or evicted: one of them ends soon.
    if (room_cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      std::fprintf(stderr, "pulse farmem: no page buffer slot freed in %llds (backend stuck)\n",
                   static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(kRoomDeadline).count()));
      _exit(70);
    }
  }
  ++fetching_;
}

void Pager::Fetch(const FetchJob& job, void* bounce) {
  Range* r = job.range;
  const auto started = std::chrono::steady_clock::now();
  Check(backend_->ReadPages(r->backend_id, job.page, 1, options_.page_bytes, bounce, PageClass::kOnDemand), r,
        job.page, "fetch");
  const uint64_t micros = MicrosSince(started);
  const bool dirty = r->writable && job.write;
  // Installed under the mutex: a thread that sees the page (the woken one,
  // or any other) can reach Flush or eviction only after its state is set.
  // The copy of one page is short next to the fetch.
  Lock lock(mu_);
  Status copied = uffd_.Copy(PageAddress(r, job.page), bounce, options_.page_bytes, r->writable && !dirty);
  if (copied.code() != Status::Code::kAlreadyExists) Check(copied, r, job.page, "install");
  r->state[job.page] = dirty ? PageState::kDirty : PageState::kClean;
  LruPushFront(r, job.page);
  --fetching_;
  --r->busy;
  ++stats_.pages_fetched;
  stats_.fetch_micros += micros;
  stats_.bytes_on_demand += options_.page_bytes;
  if (++stats_.resident_pages > stats_.peak_resident_pages) stats_.peak_resident_pages = stats_.resident_pages;
  if (stats_.resident_pages > options_.evict_high_pages) evict_cv_.notify_one();
  room_cv_.notify_all();
}

Status Pager::WriteBack(Lock& lock, Range* r, uint64_t page) {
  r->state[page] = PageState::kWritingBack;
  ++r->busy;
  char* addr = PageAddress(r, page);
  Status st = uffd_.WriteProtect(addr, options_.page_bytes, true);
  if (st.ok()) {
    lock.unlock();
    const auto started = std::chrono::steady_clock::now();
    st = backend_->WritePages(r->backend_id, page, 1, options_.page_bytes, addr);
    const uint64_t micros = MicrosSince(started);
    lock.lock();
    stats_.write_back_micros += micros;
  }
  --r->busy;
  room_cv_.notify_all();
  if (st.ok()) {
    ++stats_.pages_written_back;
    stats_.bytes_write_back += options_.page_bytes;
  }
  return st;
}

bool Pager::EvictOne(Lock& lock) {
  if (lru_.empty()) return false;
  const PageRef victim = lru_.back();
  lru_.pop_back();
  Range* r = victim.range;
  const uint64_t page = victim.page;
  if (r->state[page] == PageState::kDirty) Check(WriteBack(lock, r, page), r, page, "write-back");
  r->state[page] = PageState::kEvicting;
  ++r->busy;
  char* addr = PageAddress(r, page);
  lock.unlock();
  const int dropped = madvise(addr, options_.page_bytes, MADV_DONTNEED);
  lock.lock();
  if (dropped != 0) {
    FatalFault(r, page, "evict", Status::IoError(fmt::format("madvise(MADV_DONTNEED): {}", std::strerror(errno))));
  }
  r->state[page] = PageState::kAbsent;
  --r->busy;
  --stats_.resident_pages;
  ++stats_.evictions;
  // Faults that arrived during the write-back or eviction retry now.
  Check(uffd_.Wake(addr, options_.page_bytes), r, page, "wake");
  room_cv_.notify_all();
  return true;
}

void Pager::EvictLoop() {
  Lock lock(mu_);
  for (;;) {
    while (!stopping_ && stats_.resident_pages <= options_.evict_high_pages) evict_cv_.wait_for(lock, kIdleWait);
    if (stopping_) return;
    while (!stopping_ && stats_.resident_pages > options_.evict_low_pages && EvictOne(lock)) {
    }
  }
}

Status Pager::Flush(void* base) {
  Lock lock(mu_);
  PULSE_ASSIGN_OR_RETURN(Range * r, RangeAt(base));
  const auto deadline = std::chrono::steady_clock::now() + kRoomDeadline;
  for (uint64_t page = 0; page < r->state.size(); ++page) {
    // A page an eviction is writing back is flushed when that write ends:
    // wait for it, so that Flush returning means the bytes are far.
    while (r->state[page] == PageState::kWritingBack) {
      if (room_cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
        return Status::Timeout(fmt::format("region '{}' page {}: a write-back did not end", r->name, page));
      }
    }
    if (r->state[page] != PageState::kDirty) continue;
    LruRemove(r, page);
    Status st = WriteBack(lock, r, page);
    char* addr = PageAddress(r, page);
    if (!st.ok()) {
      // Still dirty: writable again (this wakes writers waiting on it).
      r->state[page] = PageState::kDirty;
      LruPushFront(r, page);
      IgnoreError(uffd_.WriteProtect(addr, options_.page_bytes, false));  // best effort: the flush failed anyway
      return Status::FromCode(st.code(), fmt::format("region '{}' page {}: {}", r->name, page, st.message()));
    }
    r->state[page] = PageState::kClean;
    LruPushFront(r, page);
    Check(uffd_.Wake(addr, options_.page_bytes), r, page, "wake");
  }
  return Status::Ok();
}

Status Pager::MakeReadOnly(void* base) {
  PULSE_RETURN_IF_ERROR(Flush(base));
  Lock lock(mu_);
  PULSE_ASSIGN_OR_RETURN(Range * r, RangeAt(base));
  if (mprotect(r->base, r->bytes, PROT_READ) != 0) {
    return Status::IoError(fmt::format("region '{}': mprotect: {}", r->name, std::strerror(errno)));
  }
  r->writable = false;
  return Status::Ok();
}

Status Pager::Unmap(void* base) {
  Lock lock(mu_);
  PULSE_ASSIGN_OR_RETURN(Range * r, RangeAt(base));
  const auto deadline = std::chrono::steady_clock::now() + kRoomDeadline;
  while (r->busy > 0) {
    if (room_cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      return Status::Timeout(fmt::format("region '{}': fetches or write-backs did not end", r->name));
    }
  }
  for (uint64_t page = 0; page < r->state.size(); ++page) {
    if (r->state[page] == PageState::kClean || r->state[page] == PageState::kDirty) {
      LruRemove(r, page);
      --stats_.resident_pages;
    }
  }
  auto it = ranges_.find(reinterpret_cast<uintptr_t>(base));
  std::unique_ptr<Range> owned = std::move(it->second);
  ranges_.erase(it);
  room_cv_.notify_all();
  lock.unlock();
  Status st = uffd_.Unregister(owned->base, owned->bytes);
  munmap(owned->base, owned->bytes);
  return st;
}

HostAgentStats Pager::stats() const {
  Lock lock(mu_);
  return stats_;
}

}  // namespace pulse::farmem
