// The `cache-rpc` system, AIFM-like (seed 000 section 6: a data-structure-
// aware object cache at the CPU node plus RPC on a miss; single memory node
// only, as in the paper).  Its budget is --cache-fraction of the working set
// (include/pulse/rpc_cache.h's LRU object caches):
//   webservice  hash lookups are cached per key (rpc::CachedUnorderedMap,
//               1/16 of the budget; a miss is one kRpcUmapFind call) and the
//               8 KiB user objects per address (the rest; a miss is one
//               one-sided read, as AIFM fetches a remote object; writes go
//               through and keep the object written, as the page cache
//               keeps a written page).
//   wiredtiger  the index is not cached: a scan is one kRpcBTreeScan call
//               returning (key, value address) pairs; the 240-byte values
//               are objects in the object cache (a miss: one read), and the
//               checksums are computed here.
//   btrdb       the tree's inner nodes (with their per-child aggregates) are
//               cached: a query runs at the CPU node over cached nodes and,
//               at its first uncached node, hands the rest to one
//               kRpcTsvAggregate call, which also returns that node when it
//               is an inner node so that the cache fills from the top.
// No application needs re-issues here: there is one memory node.
#include <cstring>

#include <fmt/format.h>

#include "apps/wiredtiger/iterators/wt_nodes.h"
#include "bench/app_systems.h"
#include "pulse/apps/btrdb.h"
#include "pulse/rpc_cache.h"
#include "pulse/rpc_ds.h"
#include "rpc/handlers/tsv_step.h"
#include "rpc/rpc_apps_internal.h"
#include "rpc/rpc_call_typed.h"

namespace pulse::bench {
namespace {

class CacheRpcSystem : public apps::AppSystem {
 public:
  CacheRpcSystem(std::unique_ptr<Client> client, std::unique_ptr<RpcClient> rpc, const RpcOptions& options,
                 uint64_t budget, double fraction)
      : client_(std::move(client)),
        rpc_(std::move(rpc)),
        options_(options),
        budget_(budget),
        fraction_(fraction),
        objects_(budget - budget / 16, 0),
        nodes_(budget, sizeof(pulse_tsv_node)) {}
  std::string name() const override { return "cache-rpc"; }
  Client* client() override { return client_.get(); }

  Result<std::optional<uint64_t>> HashLookup(ds::UnorderedMap& map, uint64_t key) override {
    if (lookups_ == nullptr || lookups_map_ != &map) {
      rpc::ObjectCacheOptions o;
      o.budget_bytes = budget_ / 16;
      auto cached = rpc::CachedUnorderedMap::Create(rpc_.get(), &map, o);
      if (!cached.ok()) return cached.status();
      lookups_ = std::move(*cached);
      lookups_map_ = &map;
    }
    return lookups_->Find(key);
  }

  Result<std::vector<apps::ScanRecord>> BTreeScan(ds::BTree& tree, uint64_t start, uint32_t count) override {
    auto entries = rpc::Scan(*rpc_, tree, start, UINT64_MAX, count);
    if (!entries.ok()) return entries.status();
    std::vector<apps::ScanRecord> records;
    records.reserve(entries->size());
    uint64_t words[PULSE_WT_VALUE_WORDS];
    for (const ds::BTree::Entry& e : *entries) {
      PULSE_RETURN_IF_ERROR(ReadObject(e.second, words, PULSE_WT_VALUE_BYTES));  // (key, value slot)
      uint64_t sum = 0;
      for (uint64_t w : words) sum += w;
      records.push_back({e.first, sum});
    }
    return records;
  }

  Result<ds::Aggregate> TsvAggregate(apps::TsvTree& tree, uint64_t lo, uint64_t hi) override {
    rpc::TsvAggregateState st = rpc::TsvQueryState(lo, hi);
    uint64_t ptr = tree.root();
    while (ptr != 0) {
      if (const pulse_tsv_node* n = nodes_.Get(ptr)) {
        ptr = rpc::TsvStep(*n, &st.agg);
        continue;
      }
      // The rest of the query (this subtree and any pending right edge) on
      // the memory node, which sends this node back if it is an inner one.
      st.flags = rpc::kTsvReturnFirstInner;
      RpcResult info;
      PULSE_RETURN_IF_ERROR(rpc::CallTyped(*rpc_, kRpcTsvAggregate, ptr, st, {}, &info, "cache-rpc TsvAggregate"));
      if (info.output.size() == sizeof(pulse_tsv_node)) {
        pulse_tsv_node node;
        std::memcpy(&node, info.output.data(), sizeof node);
        nodes_.Put(ptr, node);
      }
      break;
    }
    return rpc::TsvAnswerOf(st.agg);
  }

  Status ReadObject(uint64_t addr, void* dst, size_t length) override {
    if (const std::vector<uint8_t>* o = objects_.Get(addr); o != nullptr && o->size() >= length) {
      std::memcpy(dst, o->data(), length);
      return Status::Ok();
    }
    PULSE_RETURN_IF_ERROR(client_->Read(addr, dst, length));
    const auto* b = static_cast<const uint8_t*>(dst);
    objects_.Put(addr, std::vector<uint8_t>(b, b + length), length);
    return Status::Ok();
  }
  Status WriteObject(uint64_t addr, const void* src, size_t length) override {
    // Write-through and write-allocate (the object written is the one kept,
    // as the page cache baseline keeps a written page).
    PULSE_RETURN_IF_ERROR(client_->Write(addr, src, length));
    const auto* b = static_cast<const uint8_t*>(src);
    objects_.Put(addr, std::vector<uint8_t>(b, b + length), length);
    return Status::Ok();
  }

  apps::AppSystemStats Stats() const override {
    apps::AppSystemStats s;
    AddRpcStats(*rpc_, *client_, options_, &s);
    auto add = [&](const char* what, const rpc::ObjectCacheCounters& c) {
      s.counters.emplace_back(fmt::format("{}_hits", what), c.hits);
      s.counters.emplace_back(fmt::format("{}_misses", what), c.misses);
      s.counters.emplace_back(fmt::format("{}_evictions", what), c.evictions);
    };
    if (lookups_ != nullptr) add("cache_lookup", lookups_->counters());
    add("cache_object", objects_.counters());
    add("cache_node", nodes_.counters());
    s.settings = {{"cache_budget_bytes", static_cast<double>(budget_)}, {"cache_fraction", fraction_}};
    return s;
  }

 private:
  std::unique_ptr<Client> client_;
  std::unique_ptr<RpcClient> rpc_;  // destroyed before client_, which it hooks into
  RpcOptions options_;
  uint64_t budget_;
  double fraction_;
  std::unique_ptr<rpc::CachedUnorderedMap> lookups_;
  const ds::UnorderedMap* lookups_map_ = nullptr;
  rpc::LruObjectCache<std::vector<uint8_t>> objects_;  // by far address
  rpc::LruObjectCache<pulse_tsv_node> nodes_;          // TsvTree inner nodes, by far address
};

}  // namespace

Result<std::unique_ptr<apps::AppSystem>> MakeCacheRpcSystem(const AppSystemConfig& config) {
  if (config.memory_nodes > 1)
    return Status::InvalidArgument(fmt::format(
        "cache-rpc runs on one memory node only, as AIFM does in the paper (--memory-nodes {}; use 1)",
        config.memory_nodes));
  if (!(config.cache_fraction > 0 && config.cache_fraction <= 1))
    return Status::InvalidArgument(
        fmt::format("cache-rpc: --cache-fraction {} must be in (0, 1]", config.cache_fraction));
  auto options = AppRpcOptions(config, /*wimpy=*/false);
  if (!options.ok()) return options.status();
  ClientOptions co = config.client;
  if (config.mode) co.dispatch.mode = *config.mode;  // the applications' loading (inserts)
  auto client = Client::Connect(co);
  if (!client.ok()) return client.status();
  if ((*client)->memory_nodes() > 1)
    return Status::InvalidArgument(fmt::format(
        "cache-rpc runs on one memory node only, as AIFM does in the paper; the cluster has {} (--memory-nodes)",
        (*client)->memory_nodes()));
  auto rpc = RpcClient::Create(client->get(), *options);
  if (!rpc.ok()) return rpc.status();
  const uint64_t budget =
      std::max<uint64_t>(4096, static_cast<uint64_t>(config.cache_fraction * static_cast<double>(config.working_set_bytes)));
  return std::unique_ptr<apps::AppSystem>(new CacheRpcSystem(std::move(*client), std::move(*rpc), *options, budget,
                                                             config.cache_fraction));
}

}  // namespace pulse::bench
