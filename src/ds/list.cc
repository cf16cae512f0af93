#include "pulse/ds/list.h"

#include <cstddef>

#include <fmt/format.h>

#include "ds/ds_common.h"
#include "ds/iterators/ds_nodes.h"
#include "pulse/iterators/ds_list_aggregate.h"
#include "pulse/iterators/ds_list_find.h"

namespace pulse::ds {
namespace {

using internal::ReadObject;
using Node = pulse_ds_list_node;

Result<ProgramRef> FindProgram() {
  static const Result<ProgramRef> program =
      internal::LoadProgram(iterators::ds_list_find(), "ds_list_find");
  return program;
}
Result<ProgramRef> AggregateProgram() {
  static const Result<ProgramRef> program =
      internal::LoadProgram(iterators::ds_list_aggregate(), "ds_list_aggregate");
  return program;
}

}  // namespace

Result<std::unique_ptr<List>> List::Create(Client* client, const ListOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("List: no client");
  for (auto p : {FindProgram(), AggregateProgram()}) {
    if (!p.ok()) return p.status();
  }
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
  auto addr = client_->Allocate(sizeof(Node));
  if (!addr.ok()) return addr.status();
  const Node n{head_, 0, value};
  PULSE_RETURN_IF_ERROR(Put(*addr, n));
  if (head_ != 0) {
    PULSE_RETURN_IF_ERROR(Put(head_ + offsetof(Node, prev), *addr));
  } else {
    tail_ = *addr;
  }
  head_ = *addr;
  ++size_;
  return Status::Ok();
}

Status List::PushBack(uint64_t value) {
  if (relink_needed_) PULSE_RETURN_IF_ERROR(Relink());
  auto addr = client_->Allocate(sizeof(Node));
  if (!addr.ok()) return addr.status();
  const Node n{0, tail_, value};
  PULSE_RETURN_IF_ERROR(Put(*addr, n));
  if (tail_ != 0) {
    PULSE_RETURN_IF_ERROR(Put(tail_ + offsetof(Node, next), *addr));
  } else {
    head_ = *addr;
  }
  tail_ = *addr;
  ++size_;
  return Status::Ok();
}

Result<List::Found> List::FindNode(uint64_t value) {
  if (head_ == 0) return Found{};  // init() answers an empty list
  auto program = FindProgram();
  if (!program.ok()) return program.status();
  pulse_ds_list_find_state st{value, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(internal::RunTraversal(client_, *program, head_, st, mode_, "List::Find"));
  return Found{st.found != 0, st.node, st.index};
}

Result<std::optional<uint64_t>> List::Find(uint64_t value) {
  auto f = FindNode(value);
  if (!f.ok()) return f.status();
  if (!f->found) return std::optional<uint64_t>();
  return std::optional<uint64_t>(f->index);
}

Result<bool> List::Erase(uint64_t value) {
  if (relink_needed_) PULSE_RETURN_IF_ERROR(Relink());
  auto f = FindNode(value);
  if (!f.ok()) return f.status();
  if (!f->found) return false;
  Node n;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, f->node, n));
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
  PULSE_RETURN_IF_ERROR(client_->Free(f->node));
  return true;
}

Result<Aggregate> List::AggregateRange(uint64_t lo, uint64_t hi) {
  Aggregate out;
  if (head_ == 0 || lo > hi) return out;
  auto program = AggregateProgram();
  if (!program.ok()) return program.status();
  pulse_ds_agg_state st{lo, hi, 0, out.min, 0, 0};
  PULSE_RETURN_IF_ERROR(
      internal::RunTraversal(client_, *program, head_, st, mode_, "List::AggregateRange"));
  out.sum = st.sum;
  out.min = st.min;
  out.max = st.max;
  out.count = st.count;
  return out;
}

Status List::Iterator::Load() {
  if (addr_ == 0) return Status::Ok();
  Node n;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, addr_, n));
  value_ = n.value;
  next_ = n.next;
  return Status::Ok();
}

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
  std::vector<uint64_t> out;
  out.reserve(size_);
  auto it = Begin();
  if (!it.ok()) return it.status();
  while (!it->done()) {
    out.push_back(it->value());
    PULSE_RETURN_IF_ERROR(it->Next());
  }
  return out;
}

}  // namespace pulse::ds
