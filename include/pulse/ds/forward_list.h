// pulse::ds::ForwardList: a far-memory singly linked list of uint64
// elements, like std::forward_list<uint64_t>.
//
// Nodes live in far memory (placed by the client's AllocationPolicy) with the
// layout of List's nodes {next, prev, value}, prev unused, so that Find() and
// AggregateRange() run List's iterators (src/ds/iterators/ds_list_find.c and
// ds_list_aggregate.c) unchanged: walks from the head, offloaded to the
// memory nodes or executed here over one-sided reads as the client's
// dispatch policy (or the list's execution mode) decides.  Updates run at the
// CPU node with Client::Read/Write.  Range iteration (Begin()/Iterator) reads
// one node per step at the CPU node.  The head and size are kept in this
// object.
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

struct ForwardListOptions {
  // Where Find() and AggregateRange() run; unset: the client's dispatch policy.
  std::optional<ExecutionMode> mode;
};

class ForwardList {
 public:
  // A position: before the first element (BeforeBegin()), an element, or the
  // end.  Reads its node when created or advanced.  Positions stay valid
  // until their element is erased (or the list destroyed).
  class Iterator {
   public:
    bool done() const { return addr_ == 0 && head_ == nullptr; }
    bool before_begin() const { return head_ != nullptr; }
    uint64_t value() const { return value_; }  // valid at an element
    // Moves to the next position (one remote read).  OutOfRange at the end.
    Status Next();

   private:
    friend class ForwardList;
    // head: the list's head pointer for the before-begin position, else null.
    Iterator(Client* client, uint64_t addr, const uint64_t* head)
        : client_(client), addr_(addr), head_(head) {}
    Status Load();
    Client* client_;
    uint64_t addr_;
    const uint64_t* head_;
    uint64_t value_ = 0;
    uint64_t next_ = 0;
  };

  // `client` must outlive the list.  Errors: InvalidArgument (no client).
  static Result<std::unique_ptr<ForwardList>> Create(Client* client,
                                                     const ForwardListOptions& options = {});

  Status PushFront(uint64_t value);
  // Removes the first element.  OutOfRange if the list is empty.
  Status PopFront();
  // Inserts value after pos (BeforeBegin() or an element) and returns the
  // new element's position.  InvalidArgument at the end position.
  Result<Iterator> InsertAfter(const Iterator& pos, uint64_t value);
  // Removes the element after pos; false if there is none.  Frees its node.
  // InvalidArgument at the end position.
  Result<bool> EraseAfter(const Iterator& pos);

  // The first element equal to value (the end position if none): an
  // offloaded traversal.
  Result<Iterator> Find(uint64_t value);
  // The 0-based index of the first element equal to value, or nullopt (the
  // same traversal).
  Result<std::optional<uint64_t>> IndexOf(uint64_t value);
  // sum/min/max/count of the elements v with lo <= v <= hi, offloaded.
  Result<Aggregate> AggregateRange(uint64_t lo = 0,
                                   uint64_t hi = std::numeric_limits<uint64_t>::max());

  // Range iteration: the position before the first element, and the first.
  Iterator BeforeBegin() const { return Iterator(client_, 0, &head_); }
  Result<Iterator> Begin();
  // Every element, front to back.
  Result<std::vector<uint64_t>> ToVector();

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void set_mode(std::optional<ExecutionMode> mode) { mode_ = mode; }

 private:
  struct Found {
    bool found = false;
    uint64_t node = 0;
    uint64_t index = 0;
  };
  ForwardList(Client* client, std::optional<ExecutionMode> mode) : client_(client), mode_(mode) {}
  Result<Found> FindNode(uint64_t value);
  Result<Iterator> At(uint64_t addr);

  Client* client_;
  std::optional<ExecutionMode> mode_;
  uint64_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace pulse::ds
