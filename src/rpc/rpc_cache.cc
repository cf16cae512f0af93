#include "pulse/rpc_cache.h"

#include <fmt/format.h>

#include "pulse/rpc_ds.h"

namespace pulse::rpc {
namespace {

Status CheckSingleNode(RpcClient* rpc, const void* structure, const char* what) {
  if (rpc == nullptr || structure == nullptr) return Status::InvalidArgument(fmt::format("{}: no client or structure", what));
  const uint32_t nodes = rpc->client()->memory_nodes();
  if (nodes != 1)
    return Status::InvalidArgument(fmt::format(
        "{}: cache-rpc supports a single memory node (as AIFM in the paper); the cluster has {}", what, nodes));
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<CachedUnorderedMap>> CachedUnorderedMap::Create(RpcClient* rpc, const ds::UnorderedMap* map,
                                                                       const ObjectCacheOptions& options) {
  PULSE_RETURN_IF_ERROR(CheckSingleNode(rpc, map, "CachedUnorderedMap"));
  return std::unique_ptr<CachedUnorderedMap>(new CachedUnorderedMap(rpc, map, options));
}

Result<std::optional<uint64_t>> CachedUnorderedMap::Find(uint64_t key, const RpcCallOptions& options) {
  if (const auto* hit = cache_.Get(key)) return *hit;
  auto r = rpc::Find(*rpc_, *map_, key, options);
  if (!r.ok()) return r.status();
  cache_.Put(key, *r);
  return *r;
}

Result<std::unique_ptr<CachedBTree>> CachedBTree::Create(RpcClient* rpc, const ds::BTree* tree,
                                                         const ObjectCacheOptions& options) {
  PULSE_RETURN_IF_ERROR(CheckSingleNode(rpc, tree, "CachedBTree"));
  return std::unique_ptr<CachedBTree>(new CachedBTree(rpc, tree, options));
}

Result<std::optional<ds::BTree::Entry>> CachedBTree::LowerBound(uint64_t key, const RpcCallOptions& options) {
  if (const auto* hit = cache_.Get(key)) return *hit;
  auto r = rpc::LowerBound(*rpc_, *tree_, key, options);
  if (!r.ok()) return r.status();
  cache_.Put(key, *r);
  return *r;
}

}  // namespace pulse::rpc
