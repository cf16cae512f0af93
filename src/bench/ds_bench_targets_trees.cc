#include "bench/ds_bench_targets_trees.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <type_traits>

#include "pulse/ds/avl_tree.h"
#include "pulse/ds/map.h"
#include "pulse/ds/scapegoat_tree.h"
#include "pulse/ds/set.h"
#include "pulse/ds/splay_tree.h"

namespace pulse::bench {
namespace {

// One ordered tree; sets store the keys only, multi trees one copy of each.
template <typename Tree>
class TreeTarget : public DsBenchTarget {
 public:
  explicit TreeTarget(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }

  Status Load(Client* client, uint64_t n) override {
    auto created = Tree::Create(client);
    if (!created.ok()) return created.status();
    tree_ = std::move(*created);
    std::vector<uint64_t> keys(n);
    std::iota(keys.begin(), keys.end(), uint64_t{0});
    std::shuffle(keys.begin(), keys.end(), std::mt19937_64(42));
    for (uint64_t key : keys) {
      Status s = Insert(key);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }

  Result<bool> Lookup(uint64_t key, ExecutionMode mode) override {
    if (tree_ == nullptr) return Status::InvalidArgument(name_ + ": Lookup before Load");
    tree_->set_mode(mode);
    return tree_->Contains(key);
  }

 private:
  Status Insert(uint64_t key) {
    if constexpr (std::is_same_v<Tree, ds::MultiSet>) {
      return tree_->Insert(key);
    } else if constexpr (std::is_same_v<Tree, ds::MultiMap>) {
      return tree_->Insert(key, key * 2 + 1);
    } else {
      Result<bool> r = [&] {
        if constexpr (std::is_same_v<Tree, ds::Set>) {
          return tree_->Insert(key);
        } else {
          return tree_->Insert(key, key * 2 + 1);
        }
      }();
      return r.ok() ? Status::Ok() : r.status();
    }
  }

  std::string name_;
  std::unique_ptr<Tree> tree_;
};

}  // namespace

void AddTreeBenchTargets(DsBenchTargets& out) {
  out.push_back(std::make_unique<TreeTarget<ds::Map>>("map"));
  out.push_back(std::make_unique<TreeTarget<ds::MultiMap>>("multimap"));
  out.push_back(std::make_unique<TreeTarget<ds::Set>>("set"));
  out.push_back(std::make_unique<TreeTarget<ds::MultiSet>>("multiset"));
  out.push_back(std::make_unique<TreeTarget<ds::AvlTree>>("avl_tree"));
  out.push_back(std::make_unique<TreeTarget<ds::SplayTree>>("splay_tree"));
  out.push_back(std::make_unique<TreeTarget<ds::ScapegoatTree>>("scapegoat_tree"));
}

}  // namespace pulse::bench
