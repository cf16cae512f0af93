#include "bench/ds_bench_targets_lists.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <utility>

#include "pulse/ds/bimap.h"
#include "pulse/ds/forward_list.h"
#include "pulse/ds/skip_list.h"
#include "pulse/ds/unordered_set.h"

namespace pulse::bench {
namespace {

// The keys 0..n-1 in a fixed shuffled order.
std::vector<uint64_t> ShuffledKeys(uint64_t n) {
  std::vector<uint64_t> keys(n);
  std::iota(keys.begin(), keys.end(), 0);
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(42));
  return keys;
}

uint64_t ValueOf(uint64_t key) { return key * 2 + 1; }

// A target from three functions over a structure S: create, insert one key,
// look one key up.
template <typename S>
class Target final : public DsBenchTarget {
 public:
  using CreateFn = std::function<Result<std::unique_ptr<S>>(Client*)>;
  using InsertFn = std::function<Status(S&, uint64_t key)>;
  using LookupFn = std::function<Result<bool>(S&, uint64_t key)>;

  Target(std::string name, CreateFn create, InsertFn insert, LookupFn lookup)
      : name_(std::move(name)),
        create_(std::move(create)),
        insert_(std::move(insert)),
        lookup_(std::move(lookup)) {}

  std::string name() const override { return name_; }

  Status Load(Client* client, uint64_t n) override {
    auto s = create_(client);
    if (!s.ok()) return s.status();
    structure_ = std::move(*s);
    for (uint64_t key : ShuffledKeys(n)) PULSE_RETURN_IF_ERROR(insert_(*structure_, key));
    return Status::Ok();
  }

  Result<bool> Lookup(uint64_t key, ExecutionMode mode) override {
    if (!structure_) return Status::InvalidArgument(name_ + ": Lookup before Load");
    structure_->set_mode(mode);
    return lookup_(*structure_, key);
  }

 private:
  std::string name_;
  CreateFn create_;
  InsertFn insert_;
  LookupFn lookup_;
  std::unique_ptr<S> structure_;
};

// Status of a Result<bool> insert that must have inserted.
Status Inserted(const Result<bool>& r, const char* what, uint64_t key) {
  if (!r.ok()) return r.status();
  if (!*r) return Status::Internal(std::string(what) + ": duplicate key " + std::to_string(key));
  return Status::Ok();
}

// Whether a lookup answering an optional found something.
template <typename T>
Result<bool> Found(const Result<std::optional<T>>& r) {
  if (!r.ok()) return r.status();
  return r->has_value();
}

}  // namespace

void AddListBenchTargets(DsBenchTargets& out) {
  using ds::Bimap;
  using ds::ForwardList;
  using ds::SkipList;
  using ds::UnorderedSet;
  out.push_back(std::make_unique<Target<ForwardList>>(
      "forward_list", [](Client* c) { return ForwardList::Create(c); },
      [](ForwardList& l, uint64_t key) { return l.PushFront(key); },
      [](ForwardList& l, uint64_t key) { return Found(l.IndexOf(key)); }));
  out.push_back(std::make_unique<Target<UnorderedSet>>(
      "unordered_set", [](Client* c) { return UnorderedSet::Create(c); },
      [](UnorderedSet& s, uint64_t key) { return Inserted(s.Insert(key), "unordered_set", key); },
      [](UnorderedSet& s, uint64_t key) { return s.Contains(key); }));
  out.push_back(std::make_unique<Target<Bimap>>(
      "bimap", [](Client* c) { return Bimap::Create(c); },
      [](Bimap& b, uint64_t key) { return Inserted(b.Insert(key, ValueOf(key)), "bimap", key); },
      [](Bimap& b, uint64_t key) { return Found(b.FindByLeft(key)); }));
  out.push_back(std::make_unique<Target<SkipList>>(
      "skip_list", [](Client* c) { return SkipList::Create(c); },
      [](SkipList& s, uint64_t key) { return Inserted(s.Insert(key, ValueOf(key)), "skip_list", key); },
      [](SkipList& s, uint64_t key) { return Found(s.Find(key)); }));
}

}  // namespace pulse::bench
