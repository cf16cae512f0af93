// Create() of the ordered trees: Map, MultiMap, Set, MultiSet (red-black),
// AvlTree, SplayTree and ScapegoatTree over the shared OrderedTree.
#include "ds/bst_balancer.h"
#include "pulse/ds/avl_tree.h"
#include "pulse/ds/map.h"
#include "pulse/ds/scapegoat_tree.h"
#include "pulse/ds/set.h"
#include "pulse/ds/splay_tree.h"

namespace pulse::ds {

Result<std::unique_ptr<Map>> Map::Create(Client* client, const OrderedTreeOptions& options) {
  PULSE_RETURN_IF_ERROR(Validate(client, TreeBalance::kRedBlack, options));
  return std::unique_ptr<Map>(new Map(client, TreeBalance::kRedBlack, options, false));
}

Result<std::unique_ptr<MultiMap>> MultiMap::Create(Client* client,
                                                   const OrderedTreeOptions& options) {
  PULSE_RETURN_IF_ERROR(Validate(client, TreeBalance::kRedBlack, options));
  return std::unique_ptr<MultiMap>(new MultiMap(client, TreeBalance::kRedBlack, options, true));
}

Result<std::unique_ptr<Set>> Set::Create(Client* client, const OrderedTreeOptions& options) {
  PULSE_RETURN_IF_ERROR(Validate(client, TreeBalance::kRedBlack, options));
  return std::unique_ptr<Set>(new Set(client, TreeBalance::kRedBlack, options, false));
}

Result<std::unique_ptr<MultiSet>> MultiSet::Create(Client* client,
                                                   const OrderedTreeOptions& options) {
  PULSE_RETURN_IF_ERROR(Validate(client, TreeBalance::kRedBlack, options));
  return std::unique_ptr<MultiSet>(new MultiSet(client, TreeBalance::kRedBlack, options, true));
}

Result<std::unique_ptr<AvlTree>> AvlTree::Create(Client* client,
                                                 const OrderedTreeOptions& options) {
  PULSE_RETURN_IF_ERROR(Validate(client, TreeBalance::kAvl, options));
  return std::unique_ptr<AvlTree>(new AvlTree(client, TreeBalance::kAvl, options, false));
}

Result<std::unique_ptr<SplayTree>> SplayTree::Create(Client* client,
                                                     const OrderedTreeOptions& options) {
  PULSE_RETURN_IF_ERROR(Validate(client, TreeBalance::kSplay, options));
  return std::unique_ptr<SplayTree>(new SplayTree(client, TreeBalance::kSplay, options, false));
}

Result<std::unique_ptr<ScapegoatTree>> ScapegoatTree::Create(Client* client,
                                                             const OrderedTreeOptions& options) {
  PULSE_RETURN_IF_ERROR(Validate(client, TreeBalance::kScapegoat, options));
  return std::unique_ptr<ScapegoatTree>(
      new ScapegoatTree(client, TreeBalance::kScapegoat, options, false));
}

uint64_t ScapegoatTree::max_size() const { return internal::ScapegoatMaxSize(balancer()); }

uint32_t ScapegoatTree::DepthBound(double alpha, uint64_t n) {
  return internal::ScapegoatDepthBound(alpha, n);
}

}  // namespace pulse::ds
