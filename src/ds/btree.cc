#include "pulse/ds/btree.h"

#include <algorithm>
#include <cstring>
#include <string>

#include <fmt/format.h>

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

constexpr uint32_t kMinKeys = kMaxKeys / 2;  // 7: every node but the root
constexpr uint64_t kHeaderMagic = 0x65657274622d7370;  // "ps-btree"

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

// The far header: what another CPU node needs to use the tree.
struct BTree::Header {
  uint64_t magic;
  uint64_t root;
  uint64_t height;
  uint64_t size;
};

std::optional<uint32_t> BTree::PlaceFor(uint64_t min_key) const {
  if (!partition_) return std::nullopt;
  return min_key < partition_->split_key ? partition_->low_node : partition_->high_node;
}

Result<uint64_t> BTree::AllocateNode(uint64_t min_key) { return client_->Allocate(sizeof(Node), PlaceFor(min_key)); }

Status BTree::WriteHeader() {
  const Header h{kHeaderMagic, root_, height_, size_};
  return WriteObject(client_, header_, h);
}

Result<std::unique_ptr<BTree>> BTree::Create(Client* client, const BTreeOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("BTree: no client");
  for (auto p : {LowerBoundProgram(), AggregateProgram()}) {
    if (!p.ok()) return p.status();
  }
  if (options.partition) {
    const BTreePartition& part = *options.partition;
    for (uint32_t node : {part.low_node, part.high_node}) {
      if (node >= client->memory_nodes())
        return Status::InvalidArgument(fmt::format("BTree: partition node {} does not exist ({} memory nodes)",
                                                   node, client->memory_nodes()));
    }
  }
  const std::optional<uint32_t> first =
      options.partition ? std::optional<uint32_t>(options.partition->low_node) : std::nullopt;
  auto header = client->Allocate(sizeof(Header), first);
  if (!header.ok()) return header.status();
  std::unique_ptr<BTree> tree(new BTree(client, *header, options));
  auto root = client->Allocate(sizeof(Node), first);
  if (!root.ok()) return root.status();
  PULSE_RETURN_IF_ERROR(WriteObject(client, *root, EmptyLeaf()));
  tree->root_ = *root;
  PULSE_RETURN_IF_ERROR(tree->WriteHeader());
  return tree;
}

Result<std::unique_ptr<BTree>> BTree::Open(Client* client, uint64_t header, const BTreeOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("BTree: no client");
  for (auto p : {LowerBoundProgram(), AggregateProgram()}) {
    if (!p.ok()) return p.status();
  }
  std::unique_ptr<BTree> tree(new BTree(client, header, options));
  PULSE_RETURN_IF_ERROR(tree->Refresh());
  return tree;
}

Status BTree::Refresh() {
  Header h;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, header_, h));
  if (h.magic != kHeaderMagic || h.height == 0 || h.root == 0)
    return Status::InvalidArgument(fmt::format("BTree: no tree header at {:#x}", header_));
  root_ = h.root;
  height_ = static_cast<uint32_t>(h.height);
  size_ = h.size;
  return Status::Ok();
}

Result<std::optional<BTree::Split>> BTree::InsertAt(uint64_t addr, uint64_t key, uint64_t value,
                                                    bool* inserted) {
  Node n;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, addr, n));
  if (n.count > kMaxKeys) return Status::Internal(fmt::format("BTree: corrupt node {:#x} (count > 15)", addr));
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
  const size_t half = w.keys.size() / 2;
  const uint64_t sep = w.keys[half];
  auto right = AllocateNode(sep);  // sep <= every key of the right node
  if (!right.ok()) return right.status();
  Node l, r;
  if (w.leaf) {
    r = w.Pack(half, w.keys.size(), half, w.slots.size());
    Wide left = w;
    left.next = *right;
    l = left.Pack(0, half, 0, half);
  } else {
    r = w.Pack(half + 1, w.keys.size(), half + 1, w.slots.size());
    l = w.Pack(0, half, 0, half + 1);
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
    auto root = client_->Allocate(sizeof(Node), partition_ ? std::optional<uint32_t>(partition_->low_node)
                                                            : std::nullopt);
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
  if (inserted) {
    ++size_;
    PULSE_RETURN_IF_ERROR(WriteHeader());
  }
  return inserted;
}

// Child `child` of the inner node at parent_addr has fewer than kMinKeys
// keys: borrow from a sibling (redistribute the pair evenly) or merge the
// pair into the left node and free the right one.
Status BTree::Rebalance(uint64_t parent_addr, uint32_t child) {
  Node parent;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, parent_addr, parent));
  const uint32_t li = child > 0 ? child - 1 : child;  // the pair (li, li + 1)
  if (li + 1 > parent.count) return Status::Ok();     // an only child: the root shrinks later
  const uint64_t laddr = parent.slot[li], raddr = parent.slot[li + 1];
  Node ln, rn;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, laddr, ln));
  PULSE_RETURN_IF_ERROR(ReadObject(client_, raddr, rn));
  Wide all(ln);
  Wide right(rn);
  if (!all.leaf) all.keys.push_back(parent.keys[li]);  // the separator comes down
  all.keys.insert(all.keys.end(), right.keys.begin(), right.keys.end());
  all.slots.insert(all.slots.end(), right.slots.begin(), right.slots.end());
  all.next = right.next;
  Wide p(parent);
  const size_t k = all.keys.size();
  if (k <= kMaxKeys) {  // merge
    PULSE_RETURN_IF_ERROR(WriteObject(client_, laddr, all.Pack(0, k, 0, all.slots.size())));
    p.keys.erase(p.keys.begin() + li);
    p.slots.erase(p.slots.begin() + li + 1);
    PULSE_RETURN_IF_ERROR(WriteObject(client_, parent_addr, p.Pack(0, p.keys.size(), 0, p.slots.size())));
    return client_->Free(raddr);
  }
  const size_t half = k / 2;
  Node l, r;
  if (all.leaf) {
    Wide left = all;
    left.next = raddr;
    l = left.Pack(0, half, 0, half);
    r = all.Pack(half, k, half, k);
  } else {
    l = all.Pack(0, half, 0, half + 1);
    r = all.Pack(half + 1, k, half + 1, k + 1);
  }
  p.keys[li] = all.keys[half];
  PULSE_RETURN_IF_ERROR(WriteObject(client_, raddr, r));
  PULSE_RETURN_IF_ERROR(WriteObject(client_, laddr, l));
  return WriteObject(client_, parent_addr, p.Pack(0, p.keys.size(), 0, p.slots.size()));
}

// Removes key below addr; returns whether the node at addr underflowed.
Result<bool> BTree::EraseAt(uint64_t addr, uint64_t key, bool* erased) {
  Node n;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, addr, n));
  if (n.count > kMaxKeys) return Status::Internal(fmt::format("BTree: corrupt node {:#x} (count > 15)", addr));
  if (!n.leaf) {
    const uint32_t c = ChildIndex(n, key);
    auto under = EraseAt(n.slot[c], key, erased);
    if (!under.ok() || !*under) return under;
    PULSE_RETURN_IF_ERROR(Rebalance(addr, c));
    PULSE_RETURN_IF_ERROR(ReadObject(client_, addr, n));
    return n.count < kMinKeys;
  }
  const uint32_t i = static_cast<uint32_t>(std::lower_bound(n.keys, n.keys + n.count, key) - n.keys);
  if (i == n.count || n.keys[i] != key) {
    *erased = false;
    return false;
  }
  *erased = true;
  Wide w(n);
  w.keys.erase(w.keys.begin() + i);
  w.slots.erase(w.slots.begin() + i);
  PULSE_RETURN_IF_ERROR(WriteObject(client_, addr, w.Pack(0, w.keys.size(), 0, w.slots.size())));
  return w.keys.size() < kMinKeys;
}

Result<bool> BTree::Erase(uint64_t key) {
  bool erased = false;
  auto under = EraseAt(root_, key, &erased);
  if (!under.ok()) return under.status();
  if (!erased) return false;
  Node root;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, root_, root));
  if (!root.leaf && root.count == 0) {  // one child left: it becomes the root
    const uint64_t old = root_;
    root_ = root.slot[0];
    --height_;
    --size_;
    PULSE_RETURN_IF_ERROR(WriteHeader());
    PULSE_RETURN_IF_ERROR(client_->Free(old));
    return true;
  }
  --size_;
  PULSE_RETURN_IF_ERROR(WriteHeader());
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

Result<std::optional<BTree::Entry>> BTree::UpperBound(uint64_t key) {
  if (key == UINT64_MAX) return std::optional<Entry>();
  return LowerBound(key + 1);
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

Status BTree::Validate() {
  struct Frame {
    uint64_t addr;
    uint32_t depth;
    uint64_t lo, hi;  // keys k in the subtree: lo <= k < hi (hi == 0: no bound)
    bool has_hi;
  };
  std::vector<Frame> stack{{root_, 1, 0, 0, false}};
  std::vector<uint64_t> leaves;  // in order
  uint64_t entries = 0;
  while (!stack.empty()) {
    const Frame f = stack.back();
    stack.pop_back();
    Node n;
    PULSE_RETURN_IF_ERROR(ReadObject(client_, f.addr, n));
    auto bad = [&](const std::string& why) {
      return Status::Internal(fmt::format("BTree::Validate: node {:#x} at depth {}: {}", f.addr, f.depth, why));
    };
    if (n.count > kMaxKeys) return bad("count > 15");
    if (f.addr != root_ && n.count < kMinKeys) return bad(fmt::format("{} keys, fewer than {}", n.count, kMinKeys));
    for (uint32_t i = 0; i < n.count; ++i) {
      if (i > 0 && n.keys[i - 1] >= n.keys[i]) return bad("keys not strictly increasing");
      if (n.keys[i] < f.lo || (f.has_hi && n.keys[i] >= f.hi)) return bad("key outside the separator bounds");
    }
    if (n.leaf) {
      if (f.depth != height_) return bad(fmt::format("leaf at depth {}, height {}", f.depth, height_));
      leaves.push_back(f.addr);
      entries += n.count;
      continue;
    }
    if (n.count == 0) return bad("inner node without keys");
    for (int i = static_cast<int>(n.count); i >= 0; --i) {  // pushed in reverse: popped in order
      const uint64_t lo = i == 0 ? f.lo : n.keys[i - 1];
      const bool has_hi = i < static_cast<int>(n.count) || f.has_hi;
      const uint64_t hi = i < static_cast<int>(n.count) ? n.keys[i] : f.hi;
      stack.push_back(Frame{n.slot[i], f.depth + 1, lo, hi, has_hi});
    }
  }
  if (entries != size_) return Status::Internal(fmt::format("BTree::Validate: {} entries, size {}", entries, size_));
  for (size_t i = 0; i < leaves.size(); ++i) {
    Node n;
    PULSE_RETURN_IF_ERROR(ReadObject(client_, leaves[i], n));
    const uint64_t want = i + 1 < leaves.size() ? leaves[i + 1] : 0;
    if (n.slot[kNext] != want)
      return Status::Internal(fmt::format("BTree::Validate: leaf {:#x} links to {:#x}, not {:#x}", leaves[i],
                                          n.slot[kNext], want));
  }
  return Status::Ok();
}

Result<uint64_t> BTree::WarmCache(uint32_t levels) {
  uint64_t bytes = 0;
  std::vector<uint64_t> level{root_};
  for (uint32_t d = 0; d < levels && !level.empty(); ++d) {
    std::vector<uint64_t> below;
    for (uint64_t addr : level) {
      Node n;
      PULSE_RETURN_IF_ERROR(ReadObject(client_, addr, n));
      bytes += sizeof(Node);
      if (!n.leaf) below.insert(below.end(), n.slot, n.slot + n.count + 1);
    }
    level = std::move(below);
  }
  return bytes;
}

}  // namespace pulse::ds
