// pulse::ds::List: a far-memory doubly linked list of uint64 elements, like
// std::list<uint64_t>.
//
// Nodes {next, prev, value} live in far memory (placed by the client's
// AllocationPolicy); the head, tail and size are kept in this object at the
// CPU node.  Find() and AggregateRange() are pulse iterators compiled from C
// (src/ds/iterators/ds_list_*.c) that walk the list from the head, offloaded
// to the memory nodes or executed here over one-sided reads as the client's
// dispatch policy (or the list's execution mode) decides.  Updates run at
// the CPU node with Client::Read/Write.  Range iteration (Begin()/Iterator)
// reads one node per step at the CPU node.
//
// Thread-safety: not thread-safe: a handle belongs to one thread, like its
// Client.  There is no Open(), so no other CPU node reaches the list and its
// writers need no lock; the structure CPU nodes share is BTree (btree.h),
// under a pulse::ds::FarLock (lock.h).  Destroying the list does not free its
// far memory.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "pulse/client.h"
#include "pulse/ds/aggregate.h"
#include "pulse/status.h"

namespace pulse::ds {

namespace internal {
struct TestingHooks;
}  // namespace internal

struct ListOptions {
  // Where Find() and AggregateRange() run; unset: the client's dispatch policy.
  std::optional<ExecutionMode> mode;
};

class List {
 public:
  // A position in the list.  Reads its node when created or advanced.
  class Iterator {
   public:
    bool done() const { return addr_ == 0; }
    uint64_t value() const { return value_; }  // valid while !done()
    // Moves to the next element (one remote read).
    Status Next();

   private:
    friend class List;
    Iterator(Client* client, uint64_t addr) : client_(client), addr_(addr) {}
    Status Load();
    Client* client_;
    uint64_t addr_;
    uint64_t value_ = 0;
    uint64_t next_ = 0;
  };

  // `client` must outlive the list.
  static Result<std::unique_ptr<List>> Create(Client* client, const ListOptions& options = {});

  Status PushFront(uint64_t value);
  Status PushBack(uint64_t value);
  // Removes the first element equal to value (found by Find's traversal);
  // true if there was one.  Frees its node.  If a write fails part-way (a
  // memory node died) the forward links are right and the backward ones may
  // be stale: the next update first relinks them from the forward chain.
  Result<bool> Erase(uint64_t value);
  // The position (0-based) of the first element equal to value, or nullopt.
  Result<std::optional<uint64_t>> Find(uint64_t value);
  // sum/min/max/count of the elements v with lo <= v <= hi, offloaded.
  Result<Aggregate> AggregateRange(uint64_t lo = 0,
                                   uint64_t hi = std::numeric_limits<uint64_t>::max());

  // Range iteration from the first element.
  Result<Iterator> Begin();
  // Every element, front to back (Begin() .. done()).
  Result<std::vector<uint64_t>> ToVector();

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint64_t head() const { return head_; }  // far address of the first node (0: empty)
  void set_mode(std::optional<ExecutionMode> mode) { mode_ = mode; }

 private:
  friend struct internal::TestingHooks;  // src/ds/testing_hooks.h
  struct Found {
    bool found = false;
    uint64_t node = 0;
    uint64_t index = 0;
  };
  List(Client* client, std::optional<ExecutionMode> mode) : client_(client), mode_(mode) {}
  Result<Found> FindNode(uint64_t value);
  // Rewrites every stale prev link, the tail and the size from the forward
  // chain (after an Erase that failed part-way).
  Status Relink();
  // Every far write of the list (the test hook counts them here).
  template <typename T>
  Status Put(uint64_t addr, const T& obj);

  Client* client_;
  std::optional<ExecutionMode> mode_;
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
  size_t size_ = 0;
  bool relink_needed_ = false;
  int64_t fail_write_in_ = -1;  // the write that fails (tests only; -1: none)
};

}  // namespace pulse::ds
