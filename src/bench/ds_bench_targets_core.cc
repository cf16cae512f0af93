#include "bench/ds_bench_targets_core.h"

#include <algorithm>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "pulse/ds/btree.h"
#include "pulse/ds/list.h"
#include "pulse/ds/unordered_map.h"

namespace pulse::bench {
namespace {

// 0..n-1 in the fixed shuffled order every target loads.
std::vector<uint64_t> ShuffledKeys(uint64_t n) {
  std::vector<uint64_t> keys(n);
  std::iota(keys.begin(), keys.end(), 0);
  std::mt19937_64 rng(42);
  std::shuffle(keys.begin(), keys.end(), rng);
  return keys;
}

uint64_t ValueOf(uint64_t key) { return key * 2 + 1; }

// A found key must carry its value.
Result<bool> Checked(const std::string& name, uint64_t key, const std::optional<uint64_t>& value) {
  if (value && *value != ValueOf(key))
    return Status::Internal(fmt::format("{}: key {} has value {}, loaded {}", name, key, *value, ValueOf(key)));
  return value.has_value();
}

class UnorderedMapTarget : public DsBenchTarget {
 public:
  std::string name() const override { return "unordered_map"; }
  Status Load(Client* client, uint64_t n) override {
    ds::UnorderedMapOptions options;
    options.buckets = std::max<uint64_t>(1, n / 4);  // chains of about four nodes
    auto m = ds::UnorderedMap::Create(client, options);
    if (!m.ok()) return m.status();
    map_ = std::move(*m);
    for (uint64_t k : ShuffledKeys(n)) {
      auto r = map_->Insert(k, ValueOf(k));
      if (!r.ok()) return r.status();
    }
    return Status::Ok();
  }
  Result<bool> Lookup(uint64_t key, ExecutionMode mode) override {
    map_->set_mode(mode);
    auto r = map_->Find(key);
    if (!r.ok()) return r.status();
    return Checked(name(), key, *r);
  }

 private:
  std::unique_ptr<ds::UnorderedMap> map_;
};

class ListTarget : public DsBenchTarget {
 public:
  std::string name() const override { return "list"; }
  Status Load(Client* client, uint64_t n) override {
    auto l = ds::List::Create(client);
    if (!l.ok()) return l.status();
    list_ = std::move(*l);
    for (uint64_t k : ShuffledKeys(n)) PULSE_RETURN_IF_ERROR(list_->PushBack(k));
    n_ = n;
    return Status::Ok();
  }
  // Find by value: the position of key; found iff it was loaded.
  Result<bool> Lookup(uint64_t key, ExecutionMode mode) override {
    list_->set_mode(mode);
    auto r = list_->Find(key);
    if (!r.ok()) return r.status();
    if (r->has_value() && **r >= n_)
      return Status::Internal(fmt::format("list: value {} at position {} of {}", key, **r, n_));
    return r->has_value();
  }

 private:
  std::unique_ptr<ds::List> list_;
  uint64_t n_ = 0;
};

class BTreeTarget : public DsBenchTarget {
 public:
  explicit BTreeTarget(bool partitioned) : partitioned_(partitioned) {}
  std::string name() const override { return partitioned_ ? "btree_partitioned" : "btree"; }
  Status Load(Client* client, uint64_t n) override {
    ds::BTreeOptions options;
    if (partitioned_) {
      const uint32_t high = client->memory_nodes() > 1 ? 1 : 0;
      options.partition = ds::BTreePartition{n / 2, 0, high};
    }
    auto t = ds::BTree::Create(client, options);
    if (!t.ok()) return t.status();
    tree_ = std::move(*t);
    for (uint64_t k : ShuffledKeys(n)) {
      auto r = tree_->Insert(k, ValueOf(k));
      if (!r.ok()) return r.status();
    }
    return tree_->Validate();
  }
  Result<bool> Lookup(uint64_t key, ExecutionMode mode) override {
    tree_->set_mode(mode);
    auto r = tree_->Find(key);
    if (!r.ok()) return r.status();
    return Checked(name(), key, *r);
  }

 private:
  bool partitioned_;
  std::unique_ptr<ds::BTree> tree_;
};

}  // namespace

void AddCoreBenchTargets(DsBenchTargets& out) {
  out.push_back(std::make_unique<UnorderedMapTarget>());
  out.push_back(std::make_unique<ListTarget>());
  out.push_back(std::make_unique<BTreeTarget>(false));
  out.push_back(std::make_unique<BTreeTarget>(true));
}

}  // namespace pulse::bench
