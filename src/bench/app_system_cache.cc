// The `cache` system, Fastswap-like (seed 000 section 6, seed 001 section
// 7): every traversal runs at the CPU node (ExecutionMode::kCpuNode) over
// the client's page cache (4 KiB pages, LRU or CLOCK, a fraction of the
// application's working set), so each miss is one one-sided read of a page
// and nothing runs on the memory nodes.  Object reads and writes go through
// the same cache (write-back).
#include <algorithm>

#include <fmt/format.h>

#include "bench/app_systems.h"
#include "pulse/apps/btrdb.h"
#include "pulse/apps/wiredtiger.h"

namespace pulse::bench {
namespace {

constexpr uint32_t kPageBytes = 4096;

class CacheSystem : public apps::AppSystem {
 public:
  CacheSystem(std::unique_ptr<Client> client, uint64_t budget, double fraction)
      : client_(std::move(client)), budget_(budget), fraction_(fraction) {}
  std::string name() const override { return "cache"; }
  Client* client() override { return client_.get(); }

  Result<std::optional<uint64_t>> HashLookup(ds::UnorderedMap& map, uint64_t key) override {
    if (map.mode() != ExecutionMode::kCpuNode) map.set_mode(ExecutionMode::kCpuNode);
    return map.Find(key);
  }
  Result<std::vector<apps::ScanRecord>> BTreeScan(ds::BTree& tree, uint64_t start, uint32_t count) override {
    if (tree.mode() != ExecutionMode::kCpuNode) tree.set_mode(ExecutionMode::kCpuNode);  // its inserts too
    return apps::OffloadedScan(client_.get(), tree.root(), start, count, ExecutionMode::kCpuNode);
  }
  Result<ds::Aggregate> TsvAggregate(apps::TsvTree& tree, uint64_t lo, uint64_t hi) override {
    if (tree.mode() != ExecutionMode::kCpuNode) tree.set_mode(ExecutionMode::kCpuNode);
    return tree.Aggregate(lo, hi);
  }

  apps::AppSystemStats Stats() const override {
    const ClientCounters& c = client_->counters();
    apps::AppSystemStats s;
    s.counters = {{"cache_hits", c.cache_hits},
                  {"cache_misses", c.cache_misses},
                  {"cache_evictions", c.cache_evictions},
                  {"cache_writebacks", c.writebacks},
                  {"cache_remote_reads", c.remote_reads}};
    s.settings = {{"cache_budget_bytes", static_cast<double>(budget_)}, {"cache_fraction", fraction_}};
    return s;
  }

 private:
  std::unique_ptr<Client> client_;
  uint64_t budget_;
  double fraction_;
};

}  // namespace

Result<std::unique_ptr<apps::AppSystem>> MakeCacheSystem(const AppSystemConfig& config) {
  if (!(config.cache_fraction > 0 && config.cache_fraction <= 1))
    return Status::InvalidArgument(
        fmt::format("cache: --cache-fraction {} must be in (0, 1]", config.cache_fraction));
  ClientOptions co = config.client;
  if (config.cache_policy == "lru") {
    co.cache.eviction = CacheEviction::kLru;
  } else if (config.cache_policy == "clock") {
    co.cache.eviction = CacheEviction::kClock;
  } else {
    return Status::InvalidArgument(fmt::format("cache: --cache-policy '{}' (lru or clock)", config.cache_policy));
  }
  // At least one page, in whole pages.
  const uint64_t pages = std::max<uint64_t>(
      1, static_cast<uint64_t>(config.cache_fraction * static_cast<double>(config.working_set_bytes)) / kPageBytes);
  co.cache.bytes = pages * kPageBytes;
  co.cache.granularity = CacheGranularity::kPage;
  co.cache.page_bytes = kPageBytes;
  co.cache.write = CacheWritePolicy::kWriteBack;
  co.dispatch.mode = ExecutionMode::kCpuNode;  // --mode does not apply: this system is the CPU-node one
  auto client = Client::Connect(co);
  if (!client.ok()) return client.status();
  return std::unique_ptr<apps::AppSystem>(new CacheSystem(std::move(*client), co.cache.bytes, config.cache_fraction));
}

}  // namespace pulse::bench
