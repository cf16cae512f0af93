#include "pulse/ds/btree.h"

#include <algorithm>
#include <cstring>

#include "ds/ds_common.h"
#include "ds/iterators/ds_nodes.h"
#include "pulse/iterators/ds_btree_aggregate.h"
#include "pulse/iterators/ds_btree_lower_bound.h"

namespace pulse::ds {
namespace {

using internal::ReadObject;
using internal::WriteObject;
using Node = pulse_ds_btree_node;
constexpr uint32_t kMaxKeys = PULSE_DS_BTREE_MAX_KEYS;
constexpr uint32_t kNext = PULSE_DS_BTREE_NEXT;
static_assert(sizeof(Node) == 256, "a B+tree node is one 256-byte window");

Result<ProgramRef> LowerBoundProgram() {
  static const Result<ProgramRef> program =
      internal::LoadProgram(iterators::ds_btree_lower_bound(), "ds_btree_lower_bound");
  return program;
}
Result<ProgramRef> AggregateProgram() {
  static const Result<ProgramRef> program =
      internal::LoadProgram(iterators::ds_btree_aggregate(), "ds_btree_aggregate");
  return program;
}

// The child of an inner node that may hold key: the number of keys <= key.
uint32_t ChildIndex(const Node& n, uint64_t key) {
  return static_cast<uint32_t>(std::upper_bound(n.keys, n.keys + n.count, key) - n.keys);
}

// A node being edited at the CPU node: keys and slots (children or values)
// in vectors that may exceed a node by one before a split.
struct Wide {
  bool leaf;
  uint64_t next = 0;  // leaves
  std::vector<uint64_t> keys, slots;
  explicit Wide(const Node& n) : leaf(n.leaf != 0) {
    keys.assign(n.keys, n.keys + n.count);
    slots.assign(n.slot, n.slot + (leaf ? n.count : n.count + 1));
    if (leaf) next = n.slot[kNext];
  }
  Node Pack(size_t k0, size_t k1, size_t s0, size_t s1) const {
    Node n;
    std::memset(&n, 0, sizeof(n));
    n.count = static_cast<uint32_t>(k1 - k0);
    n.leaf = leaf ? 1 : 0;
    std::copy(keys.begin() + k0, keys.begin() + k1, n.keys);
    std::copy(slots.begin() + s0, slots.begin() + s1, n.slot);
    if (leaf) n.slot[kNext] = next;
    return n;
  }
};

Node EmptyLeaf() {
  Node n;
  std::memset(&n, 0, sizeof(n));
  n.leaf = 1;
  return n;
}

}  // namespace

// A node split in two: the separator and the new right sibling.
struct BTree::Split {
  uint64_t key;
  uint64_t right;
};

Result<std::unique_ptr<BTree>> BTree::Create(Client* client, const BTreeOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("BTree: no client");
  for (auto p : {LowerBoundProgram(), AggregateProgram()}) {
    if (!p.ok()) return p.status();
  }
  auto root = client->Allocate(sizeof(Node));
  if (!root.ok()) return root.status();
  PULSE_RETURN_IF_ERROR(WriteObject(client, *root, EmptyLeaf()));
  return std::unique_ptr<BTree>(new BTree(client, *root, options.mode));
}

Result<std::optional<BTree::Split>> BTree::InsertAt(uint64_t addr, uint64_t key, uint64_t value,
                                                    bool* inserted) {
  Node n;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, addr, n));
  if (n.count > kMaxKeys) return Status::Internal("BTree: corrupt node (count > 15)");
  Wide w(n);
  if (w.leaf) {
    const size_t i = std::lower_bound(w.keys.begin(), w.keys.end(), key) - w.keys.begin();
    if (i < w.keys.size() && w.keys[i] == key) {
      *inserted = false;
      return std::optional<Split>();
    }
    *inserted = true;
    w.keys.insert(w.keys.begin() + i, key);
    w.slots.insert(w.slots.begin() + i, value);
  } else {
    const uint32_t c = ChildIndex(n, key);
    auto split = InsertAt(n.slot[c], key, value, inserted);
    if (!split.ok() || !split->has_value()) return split;
    w.keys.insert(w.keys.begin() + c, (*split)->key);
    w.slots.insert(w.slots.begin() + c + 1, (*split)->right);
  }
  if (w.keys.size() <= kMaxKeys) {
    PULSE_RETURN_IF_ERROR(WriteObject(client_, addr, w.Pack(0, w.keys.size(), 0, w.slots.size())));
    return std::optional<Split>();
  }
  // 16 keys: split.  A leaf keeps 8 and moves 8 (the separator is the right
  // leaf's first key); an inner node keeps 8, moves 7 and pushes keys[8] up.
  auto right = client_->Allocate(sizeof(Node));
  if (!right.ok()) return right.status();
  const size_t half = w.keys.size() / 2;
  Node l, r;
  uint64_t sep;
  if (w.leaf) {
    r = w.Pack(half, w.keys.size(), half, w.slots.size());
    Wide left = w;
    left.next = *right;
    l = left.Pack(0, half, 0, half);
    sep = w.keys[half];
  } else {
    r = w.Pack(half + 1, w.keys.size(), half + 1, w.slots.size());
    l = w.Pack(0, half, 0, half + 1);
    sep = w.keys[half];
  }
  PULSE_RETURN_IF_ERROR(WriteObject(client_, *right, r));  // the new node first
  PULSE_RETURN_IF_ERROR(WriteObject(client_, addr, l));
  return std::optional<Split>(Split{sep, *right});
}

Result<bool> BTree::Insert(uint64_t key, uint64_t value) {
  bool inserted = false;
  auto split = InsertAt(root_, key, value, &inserted);
  if (!split.ok()) return split.status();
  if (split->has_value()) {
    auto root = client_->Allocate(sizeof(Node));
    if (!root.ok()) return root.status();
    Node n;
    std::memset(&n, 0, sizeof(n));
    n.count = 1;
    n.leaf = 0;
    n.keys[0] = (*split)->key;
    n.slot[0] = root_;
    n.slot[1] = (*split)->right;
    PULSE_RETURN_IF_ERROR(WriteObject(client_, *root, n));
    root_ = *root;
    ++height_;
  }
  if (inserted) ++size_;
  return inserted;
}

Result<bool> BTree::Erase(uint64_t key) {
  Node n;
  uint64_t addr = root_;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, addr, n));
  while (!n.leaf) {
    addr = n.slot[ChildIndex(n, key)];
    PULSE_RETURN_IF_ERROR(ReadObject(client_, addr, n));
  }
  if (n.count > kMaxKeys) return Status::Internal("BTree: corrupt node (count > 15)");
  const uint32_t i = static_cast<uint32_t>(std::lower_bound(n.keys, n.keys + n.count, key) - n.keys);
  if (i == n.count || n.keys[i] != key) return false;
  std::copy(n.keys + i + 1, n.keys + n.count, n.keys + i);
  std::copy(n.slot + i + 1, n.slot + n.count, n.slot + i);
  --n.count;
  n.keys[n.count] = 0;
  n.slot[n.count] = 0;
  PULSE_RETURN_IF_ERROR(WriteObject(client_, addr, n));
  --size_;
  return true;
}

Result<std::optional<BTree::Entry>> BTree::LowerBound(uint64_t key) {
  auto program = LowerBoundProgram();
  if (!program.ok()) return program.status();
  pulse_ds_btree_lb_state st{key, 0, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(
      internal::RunTraversal(client_, *program, root_, st, mode_, "BTree::LowerBound"));
  if (st.found == 0) return std::optional<Entry>();
  return std::optional<Entry>(Entry{st.rkey, st.rvalue});
}

Result<std::optional<uint64_t>> BTree::Find(uint64_t key) {
  auto lb = LowerBound(key);
  if (!lb.ok()) return lb.status();
  if (!lb->has_value() || (*lb)->first != key) return std::optional<uint64_t>();
  return std::optional<uint64_t>((*lb)->second);
}

Result<Aggregate> BTree::AggregateRange(uint64_t lo, uint64_t hi) {
  Aggregate out;
  if (lo > hi || size_ == 0) return out;
  auto program = AggregateProgram();
  if (!program.ok()) return program.status();
  pulse_ds_btree_agg_state st{lo, hi, 0, out.min, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(
      internal::RunTraversal(client_, *program, root_, st, mode_, "BTree::AggregateRange"));
  out.sum = st.sum;
  out.min = st.min;
  out.max = st.max;
  out.count = st.count;
  return out;
}

Result<std::vector<BTree::Entry>> BTree::Scan(uint64_t lo, uint64_t hi, size_t limit) {
  std::vector<Entry> out;
  if (lo > hi || limit == 0) return out;
  Node n;
  uint64_t addr = root_;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, addr, n));
  while (!n.leaf) {
    addr = n.slot[ChildIndex(n, lo)];
    PULSE_RETURN_IF_ERROR(ReadObject(client_, addr, n));
  }
  for (;;) {
    for (uint32_t i = 0; i < n.count && i < kMaxKeys; ++i) {
      if (n.keys[i] > hi) return out;
      if (n.keys[i] >= lo) {
        out.emplace_back(n.keys[i], n.slot[i]);
        if (out.size() == limit) return out;
      }
    }
    if (n.slot[kNext] == 0) return out;
    PULSE_RETURN_IF_ERROR(ReadObject(client_, n.slot[kNext], n));
  }
}

}  // namespace pulse::ds
