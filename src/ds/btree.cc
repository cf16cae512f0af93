#include "pulse/ds/btree.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include <fmt/format.h>

#include "ds/ds_common.h"
#include "ds/far_redo_log.h"
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

// The nodes from the root to the leaf that may hold a key.
struct Path {
  std::vector<uint64_t> addrs;
  std::vector<Node> nodes;
  std::vector<uint32_t> child;  // child[i]: the index of nodes[i + 1] in nodes[i]
};

Status ReadPath(Client* client, uint64_t root, uint64_t key, Path* out) {
  for (uint64_t addr = root;;) {
    Node n;
    PULSE_RETURN_IF_ERROR(ReadObject(client, addr, n));
    if (n.count > kMaxKeys) return Status::Internal(fmt::format("BTree: corrupt node {:#x} (count > 15)", addr));
    out->addrs.push_back(addr);
    out->nodes.push_back(n);
    if (n.leaf) return Status::Ok();
    out->child.push_back(ChildIndex(n, key));
    addr = n.slot[out->child.back()];
  }
}

Node EmptyLeaf() {
  Node n;
  std::memset(&n, 0, sizeof(n));
  n.leaf = 1;
  return n;
}

}  // namespace

// The far header: what another CPU node needs to use the tree.
struct BTree::Header {
  uint64_t magic;
  uint64_t root;
  uint64_t height;
  uint64_t size;
  uint64_t log;
};

// An update computed at the CPU node before anything is written: the final
// image of every node it changes or creates, the header after it, and the
// order constraints that keep reads correct while the images are written
// one by one (see btree.h).
struct BTree::Plan {
  Header header;
  std::map<uint64_t, Node> nodes;
  std::vector<uint64_t> added;                       // nodes' keys, first-set order
  std::vector<std::pair<uint64_t, uint64_t>> before;  // (a, b): write a before b
  std::vector<uint64_t> frees;                        // after the log is cleared

  void Set(uint64_t addr, const Node& n) {
    if (nodes.insert_or_assign(addr, n).second) added.push_back(addr);
  }
  // `addr` is not written after all (it is freed); constraints on it now
  // apply to `heir`, the node that took its place.
  void Drop(uint64_t addr, uint64_t heir) {
    nodes.erase(addr);
    added.erase(std::remove(added.begin(), added.end(), addr), added.end());
    for (auto& [a, b] : before) {
      if (a == addr) a = heir;
      if (b == addr) b = heir;
    }
  }
  void Before(uint64_t a, uint64_t b) { before.emplace_back(a, b); }
};

std::optional<uint32_t> BTree::PlaceFor(uint64_t min_key) const {
  if (!partition_) return std::nullopt;
  return min_key < partition_->split_key ? partition_->low_node : partition_->high_node;
}

Result<uint64_t> BTree::AllocateNode(uint64_t min_key) { return client_->Allocate(sizeof(Node), PlaceFor(min_key)); }

Status BTree::Put(uint64_t addr, const void* src, size_t length) {
  if (fail_write_in_ >= 0 && fail_write_in_-- == 0)
    return Status::Unavailable(fmt::format("BTree: injected failure of the write to {:#x}", addr));
  return client_->Write(addr, src, length);
}

Status BTree::WriteHeader() {
  const Header h{kHeaderMagic, root_, height_, size_, log_};
  return Put(header_, &h, sizeof(h));
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
  // The log goes where the header is: a node that is down then fails the
  // update before the commit, and the header's node holds both.
  auto log = client->Allocate(internal::FarRedoLog::kBytes, first ? first : client->NodeOf(*header));
  if (!log.ok()) return log.status();
  tree->log_ = *log;
  PULSE_RETURN_IF_ERROR(internal::FarRedoLog::Clear(
      [&](uint64_t a, const void* s, size_t n) { return client->Write(a, s, n); }, *log));
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
  PULSE_ASSIGN_OR_RETURN(auto pending, internal::FarRedoLog::Load(client, tree->log_));
  if (!pending.empty()) PULSE_RETURN_IF_ERROR(tree->Repair());  // a writer failed part-way
  return tree;
}

Status BTree::Refresh() {
  Header h;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, header_, h));
  if (h.magic != kHeaderMagic || h.height == 0 || h.root == 0 || h.log == 0)
    return Status::InvalidArgument(fmt::format("BTree: no tree header at {:#x}", header_));
  root_ = h.root;
  height_ = static_cast<uint32_t>(h.height);
  size_ = h.size;
  log_ = h.log;
  return Status::Ok();
}

Result<uint64_t> BTree::CountEntries() {
  Node n;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, root_, n));
  while (!n.leaf) PULSE_RETURN_IF_ERROR(ReadObject(client_, n.slot[0], n));
  uint64_t count = 0;
  for (;;) {
    if (n.count > kMaxKeys) return Status::Internal("BTree: corrupt leaf (count > 15) while counting");
    count += n.count;
    if (n.slot[kNext] == 0) return count;
    PULSE_RETURN_IF_ERROR(ReadObject(client_, n.slot[kNext], n));
  }
}

Status BTree::Repair() {
  repair_needed_ = true;  // until this completes
  PULSE_RETURN_IF_ERROR(Refresh());
  PULSE_ASSIGN_OR_RETURN(auto pending, internal::FarRedoLog::Load(client_, log_));
  const internal::FarWriteFn put = [this](uint64_t a, const void* s, size_t n) { return Put(a, s, n); };
  if (!pending.empty()) {
    PULSE_RETURN_IF_ERROR(internal::FarRedoLog::Apply(put, pending));
    PULSE_RETURN_IF_ERROR(internal::FarRedoLog::Clear(put, log_));
    PULSE_RETURN_IF_ERROR(Refresh());
  }
  // A one-node update whose leaf write failed may have landed or not: the
  // header's size is only a hint until counted.
  PULSE_ASSIGN_OR_RETURN(auto count, CountEntries());
  if (count != size_) {
    size_ = count;
    PULSE_RETURN_IF_ERROR(WriteHeader());
  }
  repair_needed_ = false;
  return Status::Ok();
}

Status BTree::Apply(Plan& plan) {
  // Kahn's algorithm over the order constraints, new nodes first, the rest
  // in the order the plan met them.
  std::vector<uint64_t> vertices = plan.added;
  const bool header_changed =
      plan.header.root != root_ || plan.header.height != height_ || plan.header.size != size_;
  if (header_changed) vertices.push_back(header_);
  std::map<uint64_t, int> indegree;
  for (uint64_t v : vertices) indegree[v] = 0;
  std::vector<std::pair<uint64_t, uint64_t>> edges;
  for (const auto& [a, b] : plan.before)
    if (a != b && indegree.count(a) && indegree.count(b)) edges.emplace_back(a, b), ++indegree[b];
  std::vector<uint64_t> order;
  std::vector<bool> done(vertices.size(), false);
  while (order.size() < vertices.size()) {
    size_t pick = vertices.size();
    for (size_t i = 0; i < vertices.size() && pick == vertices.size(); ++i)
      if (!done[i] && indegree[vertices[i]] == 0) pick = i;
    if (pick == vertices.size()) return Status::Internal("BTree: the update's write order has a cycle");
    done[pick] = true;
    order.push_back(vertices[pick]);
    for (const auto& [a, b] : edges)
      if (a == vertices[pick]) --indegree[b];
  }
  std::vector<internal::FarWrite> writes;
  for (uint64_t addr : order) {
    const uint8_t* p = addr == header_ ? reinterpret_cast<const uint8_t*>(&plan.header)
                                       : reinterpret_cast<const uint8_t*>(&plan.nodes.at(addr));
    const size_t n = addr == header_ ? sizeof(Header) : sizeof(Node);
    writes.push_back(internal::FarWrite{addr, std::vector<uint8_t>(p, p + n)});
  }
  const internal::FarWriteFn put = [this](uint64_t a, const void* s, size_t n) { return Put(a, s, n); };
  const bool one_node =
      plan.nodes.size() == 1 && plan.frees.empty() && plan.header.root == root_ && plan.header.height == height_;
  Status s;
  if (one_node) {
    s = internal::FarRedoLog::Apply(put, writes);  // the node, then the size
  } else {
    s = internal::FarRedoLog::Commit(put, log_, writes);
    if (s.code() == Status::Code::kResourceExhausted) return s;  // nothing written
    if (s.ok()) s = internal::FarRedoLog::Apply(put, writes);
    if (s.ok()) s = internal::FarRedoLog::Clear(put, log_);
  }
  if (!s.ok()) {
    repair_needed_ = true;
    return s;
  }
  root_ = plan.header.root;
  height_ = static_cast<uint32_t>(plan.header.height);
  size_ = plan.header.size;
  for (uint64_t addr : plan.frees) PULSE_RETURN_IF_ERROR(client_->Free(addr));
  return Status::Ok();
}

Result<bool> BTree::Insert(uint64_t key, uint64_t value) {
  PULSE_RETURN_IF_ERROR(RepairIfNeeded());
  Path down;
  PULSE_RETURN_IF_ERROR(ReadPath(client_, root_, key, &down));
  const std::vector<uint64_t>& addrs = down.addrs;
  const std::vector<Node>& path = down.nodes;
  Wide w(path.back());
  const size_t i = std::lower_bound(w.keys.begin(), w.keys.end(), key) - w.keys.begin();
  if (i < w.keys.size() && w.keys[i] == key) return false;
  w.keys.insert(w.keys.begin() + i, key);
  w.slots.insert(w.slots.begin() + i, value);
  Plan plan;
  plan.header = Header{kHeaderMagic, root_, height_, size_ + 1, log_};
  for (size_t level = path.size(); level-- > 0;) {
    const uint64_t at = addrs[level];
    if (w.keys.size() <= kMaxKeys) {
      plan.Set(at, w.Pack(0, w.keys.size(), 0, w.slots.size()));
      break;
    }
    // 16 keys: split.  A leaf keeps 8 and moves 8 (the separator is the
    // right leaf's first key); an inner node keeps 8, moves 7 and pushes
    // keys[8] up.
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
    const uint64_t parent = level > 0 ? addrs[level - 1] : header_;  // the header "links" the root
    plan.Set(*right, r);
    plan.Set(at, l);
    plan.Before(*right, parent);  // linked only once written
    plan.Before(parent, at);      // the moved keys stay findable in `at` until the parent routes past it
    if (level == 0) {
      auto root = client_->Allocate(sizeof(Node), partition_ ? std::optional<uint32_t>(partition_->low_node)
                                                              : std::nullopt);
      if (!root.ok()) return root.status();
      Node n;
      std::memset(&n, 0, sizeof(n));
      n.count = 1;
      n.leaf = 0;
      n.keys[0] = sep;
      n.slot[0] = at;
      n.slot[1] = *right;
      plan.Set(*root, n);
      plan.Before(*root, header_);
      plan.header.root = *root;
      ++plan.header.height;
      break;
    }
    const Node& up = path[level - 1];
    const uint32_t c = down.child[level - 1];
    w = Wide(up);
    w.keys.insert(w.keys.begin() + c, sep);
    w.slots.insert(w.slots.begin() + c + 1, *right);
  }
  PULSE_RETURN_IF_ERROR(Apply(plan));
  return true;
}

Result<bool> BTree::Erase(uint64_t key) {
  PULSE_RETURN_IF_ERROR(RepairIfNeeded());
  Path down;
  PULSE_RETURN_IF_ERROR(ReadPath(client_, root_, key, &down));
  const std::vector<uint64_t>& addrs = down.addrs;
  const std::vector<Node>& path = down.nodes;
  const std::vector<uint32_t>& child = down.child;
  const Node& leaf = path.back();
  const uint32_t i = static_cast<uint32_t>(std::lower_bound(leaf.keys, leaf.keys + leaf.count, key) - leaf.keys);
  if (i == leaf.count || leaf.keys[i] != key) return false;
  Plan plan;
  plan.header = Header{kHeaderMagic, root_, height_, size_ - 1, log_};
  Wide w(leaf);
  w.keys.erase(w.keys.begin() + i);
  w.slots.erase(w.slots.begin() + i);
  plan.Set(addrs.back(), w.Pack(0, w.keys.size(), 0, w.slots.size()));
  auto image = [&](uint64_t addr, Node* out) -> Status {
    auto it = plan.nodes.find(addr);
    if (it != plan.nodes.end()) {
      *out = it->second;
      return Status::Ok();
    }
    return ReadObject(client_, addr, *out);
  };
  // Bottom-up: a node below kMinKeys borrows from or merges with a sibling.
  for (size_t level = path.size() - 1; level > 0 && plan.nodes.at(addrs[level]).count < kMinKeys; --level) {
    const uint64_t parent_addr = addrs[level - 1];
    Node parent;
    PULSE_RETURN_IF_ERROR(image(parent_addr, &parent));
    const uint32_t li = child[level - 1] > 0 ? child[level - 1] - 1 : child[level - 1];  // the pair (li, li + 1)
    if (li + 1 > parent.count) break;  // an only child: the root shrinks below
    const uint64_t laddr = parent.slot[li], raddr = parent.slot[li + 1];
    Node ln, rn;
    PULSE_RETURN_IF_ERROR(image(laddr, &ln));
    PULSE_RETURN_IF_ERROR(image(raddr, &rn));
    Wide all(ln);
    Wide right(rn);
    if (!all.leaf) all.keys.push_back(parent.keys[li]);  // the separator comes down
    all.keys.insert(all.keys.end(), right.keys.begin(), right.keys.end());
    all.slots.insert(all.slots.end(), right.slots.begin(), right.slots.end());
    all.next = right.next;
    Wide p(parent);
    const size_t k = all.keys.size();
    if (k <= kMaxKeys) {  // merge into the left node; the right one is freed
      plan.Set(laddr, all.Pack(0, k, 0, all.slots.size()));
      plan.Drop(raddr, laddr);
      plan.frees.push_back(raddr);
      p.keys.erase(p.keys.begin() + li);
      p.slots.erase(p.slots.begin() + li + 1);
      plan.Set(parent_addr, p.Pack(0, p.keys.size(), 0, p.slots.size()));
      plan.Before(laddr, parent_addr);  // holds the right node's keys before the parent drops it
      continue;
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
    plan.Set(laddr, l);
    plan.Set(raddr, r);
    plan.Set(parent_addr, p.Pack(0, p.keys.size(), 0, p.slots.size()));
    const bool to_left = l.count > ln.count;  // which node gains keys
    const uint64_t gains = to_left ? laddr : raddr, loses = to_left ? raddr : laddr;
    plan.Before(gains, parent_addr);
    plan.Before(parent_addr, loses);
  }
  Node root;
  PULSE_RETURN_IF_ERROR(image(root_, &root));
  if (!root.leaf && root.count == 0) {  // one child left: it becomes the root
    plan.header.root = root.slot[0];
    --plan.header.height;
    plan.Drop(root_, header_);
    plan.frees.push_back(root_);
  }
  PULSE_RETURN_IF_ERROR(Apply(plan));
  return true;
}

Result<std::optional<BTree::Entry>> BTree::LowerBound(uint64_t key) {
  PULSE_RETURN_IF_ERROR(RepairIfNeeded());
  PULSE_ASSIGN_OR_RETURN(auto program, LowerBoundProgram());
  pulse_ds_btree_lb_state st{key, 0, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(
      internal::RunTraversal(client_, program, root_, st, mode_, "BTree::LowerBound"));
  if (st.found == 0) return std::optional<Entry>();
  return std::optional<Entry>(Entry{st.rkey, st.rvalue});
}

Result<std::optional<BTree::Entry>> BTree::UpperBound(uint64_t key) {
  if (key == UINT64_MAX) return std::optional<Entry>();
  return LowerBound(key + 1);
}

Result<std::optional<uint64_t>> BTree::Find(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto lb, LowerBound(key));
  if (!lb.has_value() || (lb)->first != key) return std::optional<uint64_t>();
  return std::optional<uint64_t>((lb)->second);
}

Result<Aggregate> BTree::AggregateRange(uint64_t lo, uint64_t hi) {
  PULSE_RETURN_IF_ERROR(RepairIfNeeded());
  Aggregate out;
  if (lo > hi || size_ == 0) return out;
  PULSE_ASSIGN_OR_RETURN(auto program, AggregateProgram());
  pulse_ds_btree_agg_state st{lo, hi, 0, out.min, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(
      internal::RunTraversal(client_, program, root_, st, mode_, "BTree::AggregateRange"));
  out.sum = st.sum;
  out.min = st.min;
  out.max = st.max;
  out.count = st.count;
  return out;
}

Result<std::vector<BTree::Entry>> BTree::Scan(uint64_t lo, uint64_t hi, size_t limit) {
  PULSE_RETURN_IF_ERROR(RepairIfNeeded());
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
      // A borrow that failed part-way may show a moved key in two leaves.
      if (n.keys[i] >= lo && (out.empty() || n.keys[i] > out.back().first)) {
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
  PULSE_RETURN_IF_ERROR(RepairIfNeeded());
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
  PULSE_RETURN_IF_ERROR(RepairIfNeeded());
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
