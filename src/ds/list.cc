#include "pulse/ds/list.h"

#include <cstddef>

#include <fmt/format.h>

#include "ds/ds_common.h"
#include "ds/iterators/ds_nodes.h"
#include "ds/list_walk.h"
#include "pulse/iterators/ds_list_aggregate.h"
#include "pulse/iterators/ds_list_find.h"

namespace pulse::ds {
namespace internal {

using Node = pulse_ds_list_node;

Status LoadListPrograms() {
  PULSE_ASSIGN_OR_RETURN(auto find, EmbeddedProgram<iterators::ds_list_find>("ds_list_find"));
  auto aggregate = EmbeddedProgram<iterators::ds_list_aggregate>("ds_list_aggregate");
  return aggregate.ok() ? Status::Ok() : aggregate.status();
}

Result<ListMatch> FindInList(Client* client, uint64_t head, uint64_t value,
                             std::optional<ExecutionMode> mode, std::string_view what) {
  if (head == 0) return ListMatch{};  // init() answers an empty list
  PULSE_ASSIGN_OR_RETURN(auto program, EmbeddedProgram<iterators::ds_list_find>("ds_list_find"));
  pulse_ds_list_find_state st{value, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(RunTraversal(client, program, head, st, mode, what));
  return ListMatch{st.found != 0, st.node, st.index};
}

Result<Aggregate> AggregateList(Client* client, uint64_t head, uint64_t lo, uint64_t hi,
                                std::optional<ExecutionMode> mode, std::string_view what) {
  Aggregate out;
  if (head == 0 || lo > hi) return out;
  PULSE_ASSIGN_OR_RETURN(auto program, EmbeddedProgram<iterators::ds_list_aggregate>("ds_list_aggregate"));
  pulse_ds_agg_state st{lo, hi, 0, out.min, 0, 0};
  PULSE_RETURN_IF_ERROR(RunTraversal(client, program, head, st, mode, what));
  return Aggregate{st.sum, st.min, st.max, st.count};
}

Status LoadListNode(Client* client, uint64_t addr, uint64_t* value, uint64_t* next) {
  if (addr == 0) return Status::Ok();
  Node n;
  PULSE_RETURN_IF_ERROR(ReadObject(client, addr, n));
  *value = n.value;
  *next = n.next;
  return Status::Ok();
}

}  // namespace internal

using internal::ReadObject;
using Node = pulse_ds_list_node;

Result<std::unique_ptr<List>> List::Create(Client* client, const ListOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("List: no client");
  PULSE_RETURN_IF_ERROR(internal::LoadListPrograms());
  return std::unique_ptr<List>(new List(client, options.mode));
}

template <typename T>
Status List::Put(uint64_t addr, const T& obj) {
  if (fail_write_in_ >= 0 && fail_write_in_-- == 0)
    return Status::Unavailable(fmt::format("List: injected failure of the write to {:#x}", addr));
  return internal::WriteObject(client_, addr, obj);
}

Status List::Relink() {
  uint64_t prev = 0;
  size_t count = 0;
  for (uint64_t addr = head_; addr != 0; ++count) {
    Node n;
    PULSE_RETURN_IF_ERROR(ReadObject(client_, addr, n));
    if (n.prev != prev) PULSE_RETURN_IF_ERROR(Put(addr + offsetof(Node, prev), prev));
    prev = addr;
    addr = n.next;
  }
  tail_ = prev;
  size_ = count;
  relink_needed_ = false;
  return Status::Ok();
}

Status List::PushFront(uint64_t value) {
  if (relink_needed_) PULSE_RETURN_IF_ERROR(Relink());
  PULSE_ASSIGN_OR_RETURN(auto addr, client_->Allocate(sizeof(Node)));
  const Node n{head_, 0, value};
  PULSE_RETURN_IF_ERROR(Put(addr, n));
  if (head_ != 0) {
    PULSE_RETURN_IF_ERROR(Put(head_ + offsetof(Node, prev), addr));
  } else {
    tail_ = addr;
  }
  head_ = addr;
  ++size_;
  return Status::Ok();
}

Status List::PushBack(uint64_t value) {
  if (relink_needed_) PULSE_RETURN_IF_ERROR(Relink());
  PULSE_ASSIGN_OR_RETURN(auto addr, client_->Allocate(sizeof(Node)));
  const Node n{0, tail_, value};
  PULSE_RETURN_IF_ERROR(Put(addr, n));
  if (tail_ != 0) {
    PULSE_RETURN_IF_ERROR(Put(tail_ + offsetof(Node, next), addr));
  } else {
    head_ = addr;
  }
  tail_ = addr;
  ++size_;
  return Status::Ok();
}

Result<List::Found> List::FindNode(uint64_t value) {
  PULSE_ASSIGN_OR_RETURN(auto m, internal::FindInList(client_, head_, value, mode_, "List::Find"));
  return Found{m.found, m.node, m.index};
}

Result<std::optional<uint64_t>> List::Find(uint64_t value) {
  PULSE_ASSIGN_OR_RETURN(auto f, FindNode(value));
  if (!f.found) return std::optional<uint64_t>();
  return std::optional<uint64_t>(f.index);
}

Result<bool> List::Erase(uint64_t value) {
  if (relink_needed_) PULSE_RETURN_IF_ERROR(Relink());
  PULSE_ASSIGN_OR_RETURN(auto f, FindNode(value));
  if (!f.found) return false;
  Node n;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, f.node, n));
  if (n.prev != 0) {
    PULSE_RETURN_IF_ERROR(Put(n.prev + offsetof(Node, next), n.next));
  } else {
    head_ = n.next;
  }
  if (n.next != 0) {
    Status s = Put(n.next + offsetof(Node, prev), n.prev);
    if (!s.ok()) {  // unlinked going forward only
      relink_needed_ = true;
      return s;
    }
  } else {
    tail_ = n.prev;
  }
  --size_;  // unlinked even if the free fails (the node then leaks)
  PULSE_RETURN_IF_ERROR(client_->Free(f.node));
  return true;
}

Result<Aggregate> List::AggregateRange(uint64_t lo, uint64_t hi) {
  return internal::AggregateList(client_, head_, lo, hi, mode_, "List::AggregateRange");
}

Status List::Iterator::Load() { return internal::LoadListNode(client_, addr_, &value_, &next_); }

Status List::Iterator::Next() {
  if (addr_ == 0) return Status::OutOfRange("List::Iterator::Next past the end");
  addr_ = next_;
  return Load();
}

Result<List::Iterator> List::Begin() {
  Iterator it(client_, head_);
  PULSE_RETURN_IF_ERROR(it.Load());
  return it;
}

Result<std::vector<uint64_t>> List::ToVector() {
  return internal::CollectRange(Begin(), size_, [](const Iterator& it) { return it.value(); });
}

}  // namespace pulse::ds
