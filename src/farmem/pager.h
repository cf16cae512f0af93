// The host agent's pager: address ranges backed by userfaultfd, one LRU page
// buffer shared by all of them, and the threads that serve faults.
//
// Page states and who moves them (all under the pager's mutex):
//   absent -> fetching      the fault thread, on a missing fault (one per
//                           page: later faults on it are counted as coalesced)
//   fetching -> clean|dirty a fetch thread, after UFFDIO_COPY (a write fault
//                           installs the page writable and dirty; a read
//                           fault installs it write-protected and clean)
//   clean -> dirty          the fault thread, on a write-protect fault
//   dirty -> writing back   eviction or Flush: write-protected first, so the
//                           page cannot change while it is written back
//   clean|written -> evicting -> absent
//                           eviction: MADV_DONTNEED drops the page
// Faults on a page that is being written back or evicted are left waiting
// and woken when that ends; they then fault again and see the new state.
// The LRU list holds exactly the clean and dirty pages.
//
// Thread-safety: thread-safe.  A fault the backend cannot serve ends the
// process (FatalFault).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "farmem/userfaultfd.h"
#include "pulse/farmem/host_agent.h"
#include "pulse/farmem/page_backend.h"
#include "pulse/status.h"

namespace pulse::farmem {

struct PagerOptions {
  uint32_t page_bytes = 64 << 10;
  uint64_t buffer_pages = 4096;
  uint64_t evict_high_pages = 3891;  // background eviction above this many resident pages
  uint64_t evict_low_pages = 3686;   // ... down to this many
  uint32_t fetch_threads = 4;
};

class Pager {
 public:
  // Opens userfaultfd and starts the fault, fetch and eviction threads.
  // `backend` must outlive the pager.  Errors: those of Userfaultfd::Open.
  static Result<std::unique_ptr<Pager>> Start(const PagerOptions& options, PageBackend* backend);
  // Stops the threads and unmaps what is still mapped (no write-back).
  ~Pager();
  Pager(const Pager&) = delete;
  Pager& operator=(const Pager&) = delete;

  // Reserves an address range of `bytes` (rounded up to whole pages) whose
  // page i is page i of backend region `backend_id`; `name` is for messages.
  // Returns its base.  IoError if the range cannot be mapped or registered.
  Result<void*> Map(const std::string& name, uint64_t backend_id, uint64_t bytes, bool writable);
  // Writes the dirty pages of the range at `base` back; they stay resident
  // and clean.  Errors: the backend's (the pages stay dirty); NotFound for
  // an unknown base.
  Status Flush(void* base);
  // Flush, then the range becomes read-only (mprotect).
  Status MakeReadOnly(void* base);
  // Drops the range's pages (no write-back) and unmaps it.  Waits for
  // fetches and write-backs of its pages to end.  NotFound for an unknown
  // base.
  Status Unmap(void* base);

  HostAgentStats stats() const;

 private:
  enum class PageState : uint8_t { kAbsent, kFetching, kClean, kDirty, kWritingBack, kEvicting };
  struct Range;
  struct PageRef {
    Range* range;
    uint64_t page;
  };
  using Lru = std::list<PageRef>;
  struct Range {
    std::string name;
    uint64_t backend_id = 0;
    char* base = nullptr;
    uint64_t bytes = 0;  // whole pages
    bool writable = false;
    std::vector<PageState> state;
    std::vector<Lru::iterator> lru_pos;  // valid for clean and dirty pages
    uint64_t busy = 0;                   // pages queued, fetching, written back or evicted now
  };
  struct FetchJob {
    Range* range;
    uint64_t page;
    bool write;
  };
  using Lock = std::unique_lock<std::mutex>;

  Pager(const PagerOptions& options, PageBackend* backend, Userfaultfd uffd, int stop_fd);

  void FaultLoop();
  void FetchLoop();
  void EvictLoop();
  void HandleFault(const UffdFault& fault);
  void Fetch(const FetchJob& job, void* bounce);
  // Waits until a page may be added to the buffer (evicting one itself when
  // it is full) and takes its slot.
  void ReserveSlot(Lock& lock);
  // Evicts the least recently used page; false if there is none.
  bool EvictOne(Lock& lock);
  // Writes a dirty page back (state kWritingBack on return, lock held).
  Status WriteBack(Lock& lock, Range* range, uint64_t page);
  Range* Find(uint64_t address);
  char* PageAddress(const Range* range, uint64_t page) const {
    return range->base + page * options_.page_bytes;
  }
  void LruRemove(Range* range, uint64_t page);
  void LruPushFront(Range* range, uint64_t page);
  void Check(const Status& status, const Range* range, uint64_t page, const char* what);
  [[noreturn]] void FatalFault(const Range* range, uint64_t page, const char* what, const Status& status);

  const PagerOptions options_;
  PageBackend* const backend_;
  Userfaultfd uffd_;
  const int stop_fd_;  // eventfd: wakes the fault thread's poll when stopping

  mutable std::mutex mu_;
  std::condition_variable work_cv_;   // fetch queue non-empty, or stopping
  std::condition_variable room_cv_;   // a buffer slot or a page became free
  std::condition_variable evict_cv_;  // above the high watermark, or stopping
  bool stopping_ = false;
  std::map<uintptr_t, std::unique_ptr<Range>> ranges_;  // by base
  std::deque<FetchJob> queue_;
  Lru lru_;  // most recent first
  uint64_t fetching_ = 0;  // slots taken by fetches in progress
  HostAgentStats stats_;

  std::vector<std::thread> threads_;
};

}  // namespace pulse::farmem
