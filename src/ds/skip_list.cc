#include "pulse/ds/skip_list.h"

#include <cstddef>

#include "ds/ds_common.h"
#include "ds/iterators/ds_nodes.h"
#include "pulse/iterators/ds_skip_aggregate.h"
#include "pulse/iterators/ds_skip_search.h"

namespace pulse::ds {
namespace {

using internal::ReadObject;
using internal::WriteObject;
using Node = pulse_ds_skip_node;
constexpr uint32_t kMaxLevel = PULSE_DS_SKIP_MAX_LEVEL;

Result<ProgramRef> SearchProgram() {
  return internal::EmbeddedProgram<iterators::ds_skip_search>("ds_skip_search");
}
Result<ProgramRef> AggregateProgram() {
  return internal::EmbeddedProgram<iterators::ds_skip_aggregate>("ds_skip_aggregate");
}

uint64_t NextField(uint64_t node, uint32_t level) {
  return node + offsetof(Node, next) + 8 * level;
}

pulse_ds_skip_search_state SearchState(uint64_t key, bool strict, uint32_t top) {
  pulse_ds_skip_search_state st{};
  st.key = key;
  st.strict = strict ? 1 : 0;
  st.level = top - 1;
  return st;
}

}  // namespace

// The predecessor at each level of the first node with a key >= the key
// searched, the successor each predecessor had, and that first node.
struct SkipList::Path {
  uint64_t pred[kMaxLevel];
  uint64_t succ[kMaxLevel];
  bool has_first = false;
  Node first{};  // valid if has_first: the level-0 successor
};

Result<std::unique_ptr<SkipList>> SkipList::Create(Client* client, const SkipListOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("SkipList: no client");
  for (auto p : {SearchProgram(), AggregateProgram()}) {
    if (!p.ok()) return p.status();
  }
  PULSE_ASSIGN_OR_RETURN(auto head, client->Allocate(sizeof(Node)));
  const Node empty{0, 0, kMaxLevel, {}};
  PULSE_RETURN_IF_ERROR(WriteObject(client, head, empty));
  return std::unique_ptr<SkipList>(new SkipList(client, options, head));
}

SkipList::SkipList(Client* client, const SkipListOptions& options, uint64_t head)
    : client_(client), mode_(options.mode), levels_rng_(options.level_seed), head_(head) {}

uint32_t SkipList::RandomHeight() {
  uint32_t h = 1;
  while (h < kMaxLevel && (levels_rng_() & 3) == 0) ++h;
  return h;
}

Status SkipList::FindPath(uint64_t key, Path& path) {
  uint64_t x = head_;
  Node xn;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, x, xn));
  uint64_t seen = 0;  // the last node read that was not before key
  Node seen_node{};
  for (uint32_t l = kMaxLevel; l-- > 0;) {
    while (l < top_) {
      const uint64_t y = xn.next[l];
      if (y == 0) break;
      if (y != seen) {
        PULSE_RETURN_IF_ERROR(ReadObject(client_, y, seen_node));
        seen = y;
      }
      if (seen_node.key >= key) break;
      x = y;
      xn = seen_node;
    }
    path.pred[l] = x;
    path.succ[l] = xn.next[l];
  }
  path.has_first = path.succ[0] != 0;
  if (path.has_first) path.first = seen_node;  // the level-0 successor was read last
  return Status::Ok();
}

Result<bool> SkipList::Insert(uint64_t key, uint64_t value) {
  Path path;
  PULSE_RETURN_IF_ERROR(FindPath(key, path));
  if (path.has_first && path.first.key == key) return false;
  const uint32_t h = RandomHeight();
  Node n{key, value, h, {}};
  for (uint32_t l = 0; l < h; ++l) n.next[l] = path.succ[l];
  PULSE_ASSIGN_OR_RETURN(auto addr, client_->Allocate(sizeof(Node)));
  PULSE_RETURN_IF_ERROR(WriteObject(client_, addr, n));
  for (uint32_t l = 0; l < h; ++l) {  // publish bottom-up, after the node is written
    PULSE_RETURN_IF_ERROR(WriteObject(client_, NextField(path.pred[l], l), addr));
  }
  if (h > top_) top_ = h;
  ++size_;
  return true;
}

Result<bool> SkipList::Erase(uint64_t key) {
  Path path;
  PULSE_RETURN_IF_ERROR(FindPath(key, path));
  if (!path.has_first || path.first.key != key) return false;
  const uint64_t victim = path.succ[0];
  for (uint32_t l = path.first.height; l-- > 0;) {  // unlink top-down
    if (path.succ[l] == victim) {
      PULSE_RETURN_IF_ERROR(WriteObject(client_, NextField(path.pred[l], l), path.first.next[l]));
    }
  }
  PULSE_RETURN_IF_ERROR(client_->Free(victim));
  --size_;
  Node head;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, head_, head));
  while (top_ > 1 && head.next[top_ - 1] == 0) --top_;
  return true;
}

Result<SkipList::Search> SkipList::Descend(uint64_t key, bool strict) {
  if (size_ == 0) return Search{};  // init() answers an empty list
  PULSE_ASSIGN_OR_RETURN(auto program, SearchProgram());
  pulse_ds_skip_search_state st = SearchState(key, strict, top_);
  PULSE_RETURN_IF_ERROR(internal::RunTraversal(client_, program, head_, st, mode_, "SkipList search"));
  return Search{st.found != 0, st.rkey, st.rvalue, st.rnode};
}

Result<std::optional<uint64_t>> SkipList::Find(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto s, Descend(key, false));
  if (!s.found || s.key != key) return std::optional<uint64_t>();
  return std::optional<uint64_t>(s.value);
}

Result<std::optional<SkipList::Entry>> SkipList::LowerBound(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto s, Descend(key, false));
  if (!s.found) return std::optional<Entry>();
  return std::optional<Entry>(Entry{s.key, s.value});
}

Result<std::optional<SkipList::Entry>> SkipList::UpperBound(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto s, Descend(key, true));
  if (!s.found) return std::optional<Entry>();
  return std::optional<Entry>(Entry{s.key, s.value});
}

Result<Aggregate> SkipList::AggregateRange(uint64_t lo, uint64_t hi) {
  Aggregate out;
  if (size_ == 0 || lo > hi) return out;
  PULSE_ASSIGN_OR_RETURN(auto program, AggregateProgram());
  pulse_ds_skip_agg_state st{};
  st.search = SearchState(lo, false, top_);
  st.agg = pulse_ds_agg_state{lo, hi, 0, out.min, 0, 0};
  PULSE_RETURN_IF_ERROR(
      internal::RunTraversal(client_, program, head_, st, mode_, "SkipList::AggregateRange"));
  return Aggregate{st.agg.sum, st.agg.min, st.agg.max, st.agg.count};
}

Status SkipList::Iterator::Load() {
  if (addr_ == 0) return Status::Ok();
  Node n;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, addr_, n));
  key_ = n.key;
  value_ = n.value;
  next_ = n.next[0];
  return Status::Ok();
}

Status SkipList::Iterator::Next() {
  if (addr_ == 0) return Status::OutOfRange("SkipList::Iterator::Next past the end");
  addr_ = next_;
  return Load();
}

Result<SkipList::Iterator> SkipList::Begin() {
  uint64_t first = 0;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, NextField(head_, 0), first));
  Iterator it(client_, first);
  PULSE_RETURN_IF_ERROR(it.Load());
  return it;
}

Result<SkipList::Iterator> SkipList::Seek(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto s, Descend(key, false));
  Iterator it(client_, s.found ? s.node : 0);
  PULSE_RETURN_IF_ERROR(it.Load());
  return it;
}

Result<std::vector<SkipList::Entry>> SkipList::ToVector() {
  return internal::CollectRange(Begin(), size_,
                                [](const Iterator& it) { return Entry{it.key(), it.value()}; });
}

}  // namespace pulse::ds
