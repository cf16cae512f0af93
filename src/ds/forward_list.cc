#include "pulse/ds/forward_list.h"

#include <cstddef>

#include "ds/ds_common.h"
#include "ds/iterators/ds_nodes.h"
#include "ds/list_walk.h"

namespace pulse::ds {
namespace {

using internal::ReadObject;
using internal::WriteObject;
using Node = pulse_ds_list_node;  // List's layout (prev unused): its iterators walk it

}  // namespace

Result<std::unique_ptr<ForwardList>> ForwardList::Create(Client* client,
                                                         const ForwardListOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("ForwardList: no client");
  PULSE_RETURN_IF_ERROR(internal::LoadListPrograms());
  return std::unique_ptr<ForwardList>(new ForwardList(client, options.mode));
}

Status ForwardList::PushFront(uint64_t value) {
  auto it = InsertAfter(BeforeBegin(), value);
  return it.ok() ? Status::Ok() : it.status();
}

Status ForwardList::PopFront() {
  if (head_ == 0) return Status::OutOfRange("ForwardList::PopFront on an empty list");
  auto erased = EraseAfter(BeforeBegin());
  return erased.ok() ? Status::Ok() : erased.status();
}

Result<ForwardList::Iterator> ForwardList::InsertAfter(const Iterator& pos, uint64_t value) {
  if (pos.done()) return Status::InvalidArgument("ForwardList::InsertAfter at the end position");
  uint64_t next = head_;
  if (!pos.before_begin()) {
    PULSE_RETURN_IF_ERROR(ReadObject(client_, pos.addr_ + offsetof(Node, next), next));
  }
  PULSE_ASSIGN_OR_RETURN(auto addr, client_->Allocate(sizeof(Node)));
  const Node n{next, 0, value};
  PULSE_RETURN_IF_ERROR(WriteObject(client_, addr, n));
  if (pos.before_begin()) {
    head_ = addr;
  } else {  // publish after the node is written
    PULSE_RETURN_IF_ERROR(WriteObject(client_, pos.addr_ + offsetof(Node, next), addr));
  }
  ++size_;
  Iterator it(client_, addr, nullptr);
  it.value_ = value;
  it.next_ = next;
  return it;
}

Result<bool> ForwardList::EraseAfter(const Iterator& pos) {
  if (pos.done()) return Status::InvalidArgument("ForwardList::EraseAfter at the end position");
  uint64_t victim = head_;
  if (!pos.before_begin()) {
    PULSE_RETURN_IF_ERROR(ReadObject(client_, pos.addr_ + offsetof(Node, next), victim));
  }
  if (victim == 0) return false;
  Node n;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, victim, n));
  if (pos.before_begin()) {
    head_ = n.next;
  } else {
    PULSE_RETURN_IF_ERROR(WriteObject(client_, pos.addr_ + offsetof(Node, next), n.next));
  }
  PULSE_RETURN_IF_ERROR(client_->Free(victim));
  --size_;
  return true;
}

Result<ForwardList::Found> ForwardList::FindNode(uint64_t value) {
  PULSE_ASSIGN_OR_RETURN(auto m, internal::FindInList(client_, head_, value, mode_, "ForwardList::Find"));
  return Found{m.found, m.node, m.index};
}

Result<ForwardList::Iterator> ForwardList::At(uint64_t addr) {
  Iterator it(client_, addr, nullptr);
  PULSE_RETURN_IF_ERROR(it.Load());
  return it;
}

Result<ForwardList::Iterator> ForwardList::Find(uint64_t value) {
  PULSE_ASSIGN_OR_RETURN(auto f, FindNode(value));
  return At(f.found ? f.node : 0);
}

Result<std::optional<uint64_t>> ForwardList::IndexOf(uint64_t value) {
  PULSE_ASSIGN_OR_RETURN(auto f, FindNode(value));
  if (!f.found) return std::optional<uint64_t>();
  return std::optional<uint64_t>(f.index);
}

Result<Aggregate> ForwardList::AggregateRange(uint64_t lo, uint64_t hi) {
  return internal::AggregateList(client_, head_, lo, hi, mode_, "ForwardList::AggregateRange");
}

Status ForwardList::Iterator::Load() {
  return internal::LoadListNode(client_, addr_, &value_, &next_);
}

Status ForwardList::Iterator::Next() {
  if (done()) return Status::OutOfRange("ForwardList::Iterator::Next past the end");
  addr_ = before_begin() ? *head_ : next_;
  head_ = nullptr;
  return Load();
}

Result<ForwardList::Iterator> ForwardList::Begin() { return At(head_); }

Result<std::vector<uint64_t>> ForwardList::ToVector() {
  return internal::CollectRange(Begin(), size_, [](const Iterator& it) { return it.value(); });
}

}  // namespace pulse::ds
