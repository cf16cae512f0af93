// The pulse and pulse-acc systems: every traversal is the application's
// pulse iterator, run where the dispatch rule (or --mode) says; they differ
// only in what happens at a memory-node boundary (ClientOptions::pulse_acc).
#include "bench/app_systems.h"
#include "pulse/apps/btrdb.h"
#include "pulse/apps/wiredtiger.h"

namespace pulse::bench {
namespace {

class PulseSystem : public apps::AppSystem {
 public:
  PulseSystem(std::string name, std::unique_ptr<Client> client) : name_(std::move(name)), client_(std::move(client)) {}
  std::string name() const override { return name_; }
  Client* client() override { return client_.get(); }

  Result<std::optional<uint64_t>> HashLookup(ds::UnorderedMap& map, uint64_t key) override { return map.Find(key); }
  Result<std::vector<apps::ScanRecord>> BTreeScan(ds::BTree& tree, uint64_t start, uint32_t count) override {
    return apps::OffloadedScan(client_.get(), tree.root(), start, count, tree.mode());
  }
  Result<ds::Aggregate> TsvAggregate(apps::TsvTree& tree, uint64_t lo, uint64_t hi) override {
    return tree.Aggregate(lo, hi);
  }

 private:
  std::string name_;
  std::unique_ptr<Client> client_;
};

Result<std::unique_ptr<apps::AppSystem>> Make(const AppSystemConfig& config, bool acc) {
  ClientOptions co = config.client;
  co.pulse_acc = acc;
  if (config.mode) co.dispatch.mode = *config.mode;
  auto client = Client::Connect(co);
  if (!client.ok()) return client.status();
  return std::unique_ptr<apps::AppSystem>(new PulseSystem(acc ? "pulse-acc" : "pulse", std::move(*client)));
}

}  // namespace

Result<std::unique_ptr<apps::AppSystem>> MakePulseSystem(const AppSystemConfig& config) { return Make(config, false); }
Result<std::unique_ptr<apps::AppSystem>> MakePulseAccSystem(const AppSystemConfig& config) { return Make(config, true); }

}  // namespace pulse::bench
