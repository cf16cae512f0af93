#include "pulse/ds/forward_list.h"

#include <cstddef>

#include "ds/ds_common.h"
#include "ds/iterators/ds_nodes.h"
#include "pulse/iterators/ds_list_aggregate.h"
#include "pulse/iterators/ds_list_find.h"

namespace pulse::ds {
namespace {

using internal::ReadObject;
using internal::WriteObject;
using Node = pulse_ds_list_node;  // prev unused: List's iterators walk it

// List's iterators: the nodes share their layout.
Result<ProgramRef> FindProgram() {
  return internal::EmbeddedProgram<iterators::ds_list_find>("ds_list_find");
}
Result<ProgramRef> AggregateProgram() {
  return internal::EmbeddedProgram<iterators::ds_list_aggregate>("ds_list_aggregate");
}

}  // namespace

Result<std::unique_ptr<ForwardList>> ForwardList::Create(Client* client,
                                                         const ForwardListOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("ForwardList: no client");
  for (auto p : {FindProgram(), AggregateProgram()}) {
    if (!p.ok()) return p.status();
  }
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
  auto addr = client_->Allocate(sizeof(Node));
  if (!addr.ok()) return addr.status();
  const Node n{next, 0, value};
  PULSE_RETURN_IF_ERROR(WriteObject(client_, *addr, n));
  if (pos.before_begin()) {
    head_ = *addr;
  } else {  // publish after the node is written
    PULSE_RETURN_IF_ERROR(WriteObject(client_, pos.addr_ + offsetof(Node, next), *addr));
  }
  ++size_;
  Iterator it(client_, *addr, nullptr);
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
  if (head_ == 0) return Found{};  // init() answers an empty list
  auto program = FindProgram();
  if (!program.ok()) return program.status();
  pulse_ds_list_find_state st{value, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(
      internal::RunTraversal(client_, *program, head_, st, mode_, "ForwardList::Find"));
  return Found{st.found != 0, st.node, st.index};
}

Result<ForwardList::Iterator> ForwardList::At(uint64_t addr) {
  Iterator it(client_, addr, nullptr);
  PULSE_RETURN_IF_ERROR(it.Load());
  return it;
}

Result<ForwardList::Iterator> ForwardList::Find(uint64_t value) {
  auto f = FindNode(value);
  if (!f.ok()) return f.status();
  return At(f->found ? f->node : 0);
}

Result<std::optional<uint64_t>> ForwardList::IndexOf(uint64_t value) {
  auto f = FindNode(value);
  if (!f.ok()) return f.status();
  if (!f->found) return std::optional<uint64_t>();
  return std::optional<uint64_t>(f->index);
}

Result<Aggregate> ForwardList::AggregateRange(uint64_t lo, uint64_t hi) {
  Aggregate out;
  if (head_ == 0 || lo > hi) return out;
  auto program = AggregateProgram();
  if (!program.ok()) return program.status();
  pulse_ds_agg_state st{lo, hi, 0, out.min, 0, 0};
  PULSE_RETURN_IF_ERROR(
      internal::RunTraversal(client_, *program, head_, st, mode_, "ForwardList::AggregateRange"));
  return Aggregate{st.sum, st.min, st.max, st.count};
}

Status ForwardList::Iterator::Load() {
  if (addr_ == 0) return Status::Ok();
  Node n;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, addr_, n));
  value_ = n.value;
  next_ = n.next;
  return Status::Ok();
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
