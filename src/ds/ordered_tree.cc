#include "pulse/ds/ordered_tree.h"

#include <fmt/format.h>

#include "ds/bst_balancer.h"
#include "ds/ds_common.h"
#include "pulse/iterators/ds_bst_aggregate.h"
#include "pulse/iterators/ds_bst_search.h"

namespace pulse::ds {
namespace {

using internal::BstEdit;
using internal::BstNode;
using internal::ReadObject;
static_assert(sizeof(BstNode) == 48, "an ordered-tree node is 48 bytes");

Result<ProgramRef> SearchProgram() {
  static const Result<ProgramRef> program =
      internal::LoadProgram(iterators::ds_bst_search(), "ds_bst_search");
  return program;
}
Result<ProgramRef> AggregateProgram() {
  static const Result<ProgramRef> program =
      internal::LoadProgram(iterators::ds_bst_aggregate(), "ds_bst_aggregate");
  return program;
}

std::unique_ptr<internal::BstBalancer> NewBalancer(TreeBalance balance,
                                                   const OrderedTreeOptions& options) {
  switch (balance) {
    case TreeBalance::kAvl:
      return internal::NewAvlBalancer();
    case TreeBalance::kSplay:
      return internal::NewSplayBalancer();
    case TreeBalance::kScapegoat:
      return internal::NewScapegoatBalancer(options.scapegoat_alpha);
    case TreeBalance::kRedBlack:
      break;
  }
  return internal::NewRedBlackBalancer();
}

// The in-order successor of the node `n` at `addr`, by reads at the CPU
// node: the leftmost node of its right subtree, or the first ancestor
// reached from a left child; 0 after the last node.
Result<uint64_t> Successor(Client* client, uint64_t addr, const BstNode& n) {
  BstNode cur;
  if (n.right != 0) {
    addr = n.right;
    PULSE_RETURN_IF_ERROR(ReadObject(client, addr, cur));
    while (cur.left != 0) {
      addr = cur.left;
      PULSE_RETURN_IF_ERROR(ReadObject(client, addr, cur));
    }
    return addr;
  }
  uint64_t parent = n.parent;
  while (parent != 0) {
    PULSE_RETURN_IF_ERROR(ReadObject(client, parent, cur));
    if (cur.left == addr) return parent;
    addr = parent;
    parent = cur.parent;
  }
  return uint64_t{0};
}

}  // namespace

// The answer of one ds_bst_search descent.
struct OrderedTree::Hit {
  bool found = false;  // entry is the answer
  Entry entry;
  uint64_t node = 0;  // the answer's node
  uint64_t last = 0;  // where the descent left the tree (0: empty tree)
  // The node a splay tree splays after this lookup.
  uint64_t landed() const { return found ? node : last; }
};

Status OrderedTree::Validate(Client* client, TreeBalance balance,
                             const OrderedTreeOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("ordered tree: no client");
  if (balance == TreeBalance::kScapegoat &&
      !(options.scapegoat_alpha > 0.5 && options.scapegoat_alpha < 1.0)) {
    return Status::InvalidArgument(
        fmt::format("ScapegoatTree: scapegoat_alpha {} is not in (0.5, 1)", options.scapegoat_alpha));
  }
  for (auto p : {SearchProgram(), AggregateProgram()}) {
    if (!p.ok()) return p.status();
  }
  return Status::Ok();
}

OrderedTree::OrderedTree(Client* client, TreeBalance balance, const OrderedTreeOptions& options,
                         bool multi)
    : options_(options),
      client_(client),
      balance_(balance),
      multi_(multi),
      balancer_(NewBalancer(balance, options)) {}

OrderedTree::~OrderedTree() = default;

Result<OrderedTree::Hit> OrderedTree::Search(uint64_t key, uint64_t kind) {
  Hit hit;
  if (root_ == 0) return hit;
  PULSE_ASSIGN_OR_RETURN(auto program, SearchProgram());
  pulse_ds_bst_search_state st{key, kind, 0, 0, 0, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(
      internal::RunTraversal(client_, program, root_, st, options_.mode, "OrderedTree search"));
  hit.found = st.found != 0 && (kind != PULSE_DS_BST_FIND || st.rkey == key);
  hit.entry = Entry{st.rkey, st.rvalue};
  hit.node = st.rnode;
  hit.last = st.last;
  return hit;
}

Status OrderedTree::Accessed(uint64_t node) {
  if (node == 0 || !balancer_->RestructuresOnAccess() || !options_.splay_on_access) {
    return Status::Ok();
  }
  BstEdit edit(client_, root_);
  balancer_->Accessed(edit, node);
  PULSE_RETURN_IF_ERROR(edit.Commit());
  root_ = edit.root();
  return Status::Ok();
}

Result<std::optional<OrderedTree::Entry>> OrderedTree::LowerBound(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto hit, Search(key, PULSE_DS_BST_LOWER_BOUND));
  PULSE_RETURN_IF_ERROR(Accessed(hit.landed()));
  return hit.found ? std::optional<Entry>(hit.entry) : std::nullopt;
}

Result<std::optional<OrderedTree::Entry>> OrderedTree::UpperBound(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto hit, Search(key, PULSE_DS_BST_UPPER_BOUND));
  PULSE_RETURN_IF_ERROR(Accessed(hit.landed()));
  return hit.found ? std::optional<Entry>(hit.entry) : std::nullopt;
}

Result<std::optional<OrderedTree::Entry>> OrderedTree::FindEntry(uint64_t key) {
  // Multi trees want the first equal key: a lower bound; unique trees can
  // stop at the equal key.
  PULSE_ASSIGN_OR_RETURN(auto hit, Search(key, multi_ ? PULSE_DS_BST_LOWER_BOUND : PULSE_DS_BST_FIND));
  if (hit.found && hit.entry.first != key) hit.found = false;
  PULSE_RETURN_IF_ERROR(Accessed(hit.landed()));
  return hit.found ? std::optional<Entry>(hit.entry) : std::nullopt;
}

Result<Aggregate> OrderedTree::AggregateRange(uint64_t lo, uint64_t hi) {
  Aggregate out;
  if (lo > hi || root_ == 0) return out;
  PULSE_ASSIGN_OR_RETURN(auto program, AggregateProgram());
  pulse_ds_bst_agg_state st{{lo, hi, 0, out.min, 0, 0}, PULSE_DS_BST_DESCEND, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(internal::RunTraversal(client_, program, root_, st, options_.mode,
                                               "OrderedTree::AggregateRange"));
  out.sum = st.agg.sum;
  out.min = st.agg.min;
  out.max = st.agg.max;
  out.count = st.agg.count;
  return out;
}

Result<uint64_t> OrderedTree::Count(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto a, AggregateRange(key, key));
  return a.count;
}

Result<std::vector<OrderedTree::Entry>> OrderedTree::Scan(uint64_t lo, uint64_t hi, size_t limit) {
  std::vector<Entry> out;
  if (lo > hi || limit == 0) return out;
  PULSE_ASSIGN_OR_RETURN(auto hit, Search(lo, PULSE_DS_BST_LOWER_BOUND));
  if (!hit.found) return out;
  BstNode n;
  for (uint64_t addr = hit.node; addr != 0 && out.size() < limit;) {
    PULSE_RETURN_IF_ERROR(ReadObject(client_, addr, n));
    if (n.key > hi) break;
    out.emplace_back(n.key, n.value);
    PULSE_ASSIGN_OR_RETURN(auto next, Successor(client_, addr, n));
    addr = next;
  }
  return out;
}

Result<bool> OrderedTree::InsertEntry(uint64_t key, uint64_t value, bool assign) {
  // Unique trees find the key or the leaf to hang it from; multi trees
  // descend as upper_bound does, so a new key goes after its equals.
  PULSE_ASSIGN_OR_RETURN(auto hit, Search(key, multi_ ? PULSE_DS_BST_UPPER_BOUND : PULSE_DS_BST_FIND));
  if (!multi_ && hit.found) {
    if (assign && hit.entry.second != value) {
      PULSE_RETURN_IF_ERROR(internal::WriteObject(
          client_, hit.node + offsetof(BstNode, value), value));
    }
    PULSE_RETURN_IF_ERROR(Accessed(hit.node));
    return false;
  }
  BstEdit edit(client_, root_);
  const uint64_t node = edit.NewNode(key, value);
  if (node == 0) return edit.Commit();  // not OK: the allocation error
  const uint64_t parent = hit.last;
  edit.Link(parent, parent != 0 && key < edit.Get(parent).key, node);
  balancer_->Inserted(edit, node, size_ + 1);
  PULSE_RETURN_IF_ERROR(edit.Commit());
  root_ = edit.root();
  ++size_;
  return true;
}

Status OrderedTree::RemoveNode(uint64_t node) {
  BstEdit edit(client_, root_);
  const BstNode& n = edit.Get(node);
  if (n.left != 0 && n.right != 0) {
    // Two children: the successor's entry moves here and its node goes.
    const uint64_t next = edit.Leftmost(n.right);
    const Entry moved{edit.Get(next).key, edit.Get(next).value};
    BstNode& m = edit.Mut(node);
    m.key = moved.first;
    m.value = moved.second;
    node = next;
  }
  const BstNode gone = edit.Get(node);
  const uint64_t child = gone.left != 0 ? gone.left : gone.right;
  const bool left = gone.parent != 0 && edit.Get(gone.parent).left == node;
  edit.Replace(gone.parent, node, child);
  edit.FreeNode(node);
  balancer_->Removed(edit, gone.parent, child, left, gone.meta, size_ - 1);
  PULSE_RETURN_IF_ERROR(edit.Commit());
  root_ = edit.root();
  --size_;
  return Status::Ok();
}

Result<uint64_t> OrderedTree::EraseKey(uint64_t key, bool all) {
  uint64_t erased = 0;
  for (;;) {
    PULSE_ASSIGN_OR_RETURN(auto hit, Search(key, multi_ ? PULSE_DS_BST_LOWER_BOUND : PULSE_DS_BST_FIND));
    if (!hit.found || hit.entry.first != key) break;
    PULSE_RETURN_IF_ERROR(RemoveNode(hit.node));
    ++erased;
    if (!all) break;
  }
  return erased;
}

Status OrderedTree::InsertDuplicate(uint64_t key, uint64_t value) {
  auto r = InsertEntry(key, value, false);
  return r.ok() ? Status::Ok() : r.status();
}

Result<bool> OrderedTree::EraseFirst(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto n, EraseKey(key, false));
  return n != 0;
}

Result<uint64_t> OrderedTree::EraseAll(uint64_t key) { return EraseKey(key, true); }

Result<std::optional<uint64_t>> OrderedTree::FindValue(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto e, FindEntry(key));
  return e.has_value() ? std::optional<uint64_t>((e)->second) : std::nullopt;
}

Result<bool> OrderedTree::ContainsKey(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto e, FindEntry(key));
  return e.has_value();
}

}  // namespace pulse::ds
