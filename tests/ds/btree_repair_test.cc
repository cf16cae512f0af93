// BTree updates that fail part-way (TestingHooks::FailWrite stands in for
// a memory node dying between two writes): at every step of a split, a
// borrow, a merge and a root change, the tree must stay readable (checked
// through a second handle that does not repair) and, once repaired (by the
// next operation, Repair() or Open()), must be a valid B+tree equal to its
// std::map shadow.  Then random operations with random failed writes.
#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "support/ds_cluster.h"
#include "ds/iterators/ds_nodes.h"
#include "ds/testing_hooks.h"
#include "pulse/ds/btree.h"

namespace pulse::ds::testing {
namespace {

using DsBTreeRepair = DsCluster;
using Shadow = std::map<uint64_t, uint64_t>;

// The value of `key` found by descending from the root the far header names
// to the one leaf the separators route it to, without following the leaf
// chain (which Find()'s lower bound may, hiding a wrong separator).
Result<std::optional<uint64_t>> DescendOnly(Client* client, uint64_t header, uint64_t key) {
  uint64_t h[5];  // magic, root, height, size, log
  PULSE_RETURN_IF_ERROR(client->Read(header, h, sizeof(h)));
  pulse_ds_btree_node n;
  for (uint64_t addr = h[1];;) {
    PULSE_RETURN_IF_ERROR(client->Read(addr, &n, sizeof(n)));
    if (n.count > PULSE_DS_BTREE_MAX_KEYS) return Status::Internal("corrupt node");
    if (n.leaf) break;
    addr = n.slot[std::upper_bound(n.keys, n.keys + n.count, key) - n.keys];
  }
  for (uint32_t i = 0; i < n.count; ++i)
    if (n.keys[i] == key) return std::optional<uint64_t>(n.slot[i]);
  return std::optional<uint64_t>();
}

// Every key of `shadow` (and key `either`, which may or may not be there
// with value `either_value`) is what `tree` finds, and nothing else is in it.
void ExpectHolds(Client* client, BTree& tree, const Shadow& shadow, std::optional<uint64_t> either, uint64_t either_value,
                 const std::string& when) {
  for (const auto& [k, v] : shadow) {
    if (either && k == *either) continue;
    auto got = tree.Find(k);
    ASSERT_TRUE(got.ok()) << when << ": find " << k << ": " << got.status().ToString();
    ASSERT_EQ(*got, std::optional<uint64_t>(v)) << when << ": key " << k;
    auto down = DescendOnly(client, tree.header_address(), k);
    ASSERT_TRUE(down.ok()) << when << ": " << down.status().ToString();
    ASSERT_EQ(*down, std::optional<uint64_t>(v)) << when << ": key " << k << " by the separators alone";
  }
  auto all = tree.Scan(0, UINT64_MAX);
  ASSERT_TRUE(all.ok()) << when << ": " << all.status().ToString();
  Shadow got(all->begin(), all->end());
  ASSERT_EQ(got.size(), all->size()) << when << ": a key scanned twice";
  // The offloaded aggregate walks the same leaf chain: it too must count a
  // key shown in two leaves by a half-done borrow once.
  Aggregate want_agg;
  for (const auto& [k, v] : got) {
    want_agg.sum += v;
    want_agg.min = std::min(want_agg.min, v);
    want_agg.max = std::max(want_agg.max, v);
    ++want_agg.count;
  }
  auto agg = tree.AggregateRange(0, UINT64_MAX);
  ASSERT_TRUE(agg.ok()) << when << ": " << agg.status().ToString();
  EXPECT_EQ(agg->count, want_agg.count) << when << ": aggregate count";
  EXPECT_EQ(agg->sum, want_agg.sum) << when << ": aggregate sum";
  EXPECT_EQ(agg->min, want_agg.min) << when << ": aggregate min";
  EXPECT_EQ(agg->max, want_agg.max) << when << ": aggregate max";
  if (either) {
    auto it = got.find(*either);
    if (it != got.end()) {
      EXPECT_EQ(it->second, either_value) << when;
      got.erase(it);
    }
    Shadow want = shadow;
    want.erase(*either);
    EXPECT_EQ(got, want) << when << ": scan";
  } else {
    EXPECT_EQ(got, shadow) << when << ": scan";
  }
}

// After a failed update and its repair, `key` must hold either what it held
// before the update (rolled back) or what the update would have left
// (completed): for an insert of `value`, the old value if the key was present,
// else absence or `value`; for an erase, the old value or absence.  The
// shadow decides both states on its own; the tree's answer only picks one
// of them.  Applies the picked state to the shadow.
void AdoptRolledBackOrCompleted(Shadow& shadow, bool insert, uint64_t key, uint64_t value,
                                const std::optional<uint64_t>& got, const std::string& when) {
  struct KeyState {  // not std::optional: GCC 12 warns about formatting one (-Wmaybe-uninitialized)
    bool present;
    uint64_t value;
    bool operator==(const KeyState& o) const { return present == o.present && (!present || value == o.value); }
    std::string ToString() const { return present ? fmt::format("{}", value) : "absent"; }
  };
  const auto it = shadow.find(key);
  const KeyState before{it != shadow.end(), it != shadow.end() ? it->second : 0};
  const KeyState after = !insert ? KeyState{false, 0} : before.present ? before : KeyState{true, value};
  const KeyState now{got.has_value(), got.value_or(0)};
  ASSERT_TRUE(now == before || now == after)
      << when << ": key " << key << " holds " << now.ToString() << ", neither its state before the "
      << (insert ? "insert" : "erase") << " (" << before.ToString() << ") nor after it (" << after.ToString()
      << ")";
  if (now.present) shadow[key] = now.value;
  else shadow.erase(key);
}

struct Scenario {
  const char* name;
  std::vector<uint64_t> build;  // inserted in order
  std::vector<uint64_t> erase;  // then erased
  bool insert;                  // the failing operation: insert or erase `key`
  uint64_t key;
};

// Keys 0..n-1 ascending: leaves split 8/8 and the left ones stay at 8.
std::vector<uint64_t> Ascending(uint64_t n) {
  std::vector<uint64_t> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = i * 10;
  return v;
}

// The number of ascending keys (Ascending) after which inserting the next
// one grows the tree to `height`.
uint64_t KeysBeforeHeight(Client* client, uint32_t height) {
  auto t = BTree::Create(client);
  EXPECT_TRUE(t.ok());
  for (uint64_t i = 0;; ++i) {
    EXPECT_TRUE((*t)->Insert(i * 10, i).ok());
    if ((*t)->height() == height) return i;
  }
}

TEST_F(DsBTreeRepair, AWriteFailingAtEveryStepOfASplitBorrowMergeOrRootChangeIsRepaired) {
  const uint64_t to_height3 = KeysBeforeHeight(client_.get(), 3);
  const std::vector<Scenario> scenarios = {
      {"root leaf split", Ascending(15), {}, true, 155},
      {"leaf split under an inner node", Ascending(40), {}, true, 395},
      {"leaf, inner and root split", Ascending(to_height3), {}, true, to_height3 * 10},
      {"borrow between leaves", Ascending(18), {0}, false, 10},
      {"merge and root collapse", Ascending(16), {0}, false, 10},
  };
  for (const Scenario& sc : scenarios) {
    bool completed = false;
    for (int64_t step = 0; !completed; ++step) {
      ASSERT_LT(step, 40) << sc.name;
      const std::string when = fmt::format("{}, write {} fails", sc.name, step);
      auto created = BTree::Create(client_.get());
      ASSERT_TRUE(created.ok()) << created.status().ToString();
      BTree& tree = **created;
      Shadow shadow;
      for (uint64_t k : sc.build) {
        ASSERT_TRUE(tree.Insert(k, k + 1).ok());
        shadow[k] = k + 1;
      }
      for (uint64_t k : sc.erase) {
        ASSERT_TRUE(tree.Erase(k).ok());
        shadow.erase(k);
      }
      auto reader = BTree::Open(client_.get(), tree.header_address());  // another CPU node's handle
      ASSERT_TRUE(reader.ok()) << reader.status().ToString();

      internal::TestingHooks::FailWrite(tree, step);
      const uint64_t value = 7777;
      const bool ok = sc.insert ? tree.Insert(sc.key, value).ok() : tree.Erase(sc.key).ok();
      internal::TestingHooks::FailWrite(tree, -1);
      if (ok) {  // fewer writes than `step`: the whole update ran
        completed = true;
        if (sc.insert) shadow[sc.key] = value;
        else shadow.erase(sc.key);
        ASSERT_TRUE(tree.Validate().ok()) << when;
        ExpectHolds(client_.get(), tree, shadow, std::nullopt, 0, when);
        continue;
      }
      EXPECT_TRUE(tree.repair_needed()) << when;
      // Reads stay correct before any repair.
      ASSERT_TRUE((*reader)->Refresh().ok()) << when;
      ExpectHolds(client_.get(), **reader, shadow, sc.key, sc.insert ? value : sc.key + 1, when + ", before repair");
      // Repaired three ways in turn: Repair(), the next operation, Open().
      BTree* repaired = &tree;
      std::unique_ptr<BTree> opened;
      if (step % 3 == 0) {
        ASSERT_TRUE(tree.Repair().ok()) << when;
      } else if (step % 3 == 1) {
        ASSERT_TRUE(tree.Find(sc.key).ok()) << when;
      } else {
        auto o = BTree::Open(client_.get(), tree.header_address());
        ASSERT_TRUE(o.ok()) << when << ": " << o.status().ToString();
        opened = std::move(*o);
        repaired = opened.get();
      }
      EXPECT_FALSE(repaired->repair_needed());
      Status v = repaired->Validate();
      ASSERT_TRUE(v.ok()) << when << ": " << v.ToString();
      auto got = repaired->Find(sc.key);
      ASSERT_TRUE(got.ok());
      AdoptRolledBackOrCompleted(shadow, sc.insert, sc.key, value, *got, when);
      if (HasFatalFailure()) return;
      EXPECT_EQ(repaired->size(), shadow.size()) << when;
      ExpectHolds(client_.get(), *repaired, shadow, std::nullopt, 0, when + ", after repair");
      // And it takes updates again.
      ASSERT_TRUE(repaired->Insert(1'000'000, 1).ok()) << when;
      ASSERT_TRUE(repaired->Validate().ok()) << when;
    }
  }
}

TEST_F(DsBTreeRepair, RandomOperationsWithRandomFailedWritesMatchStdMap) {
  auto created = BTree::Create(client_.get());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  BTree& tree = **created;
  Shadow shadow;
  std::mt19937_64 rng(71);
  constexpr uint64_t kKeys = 600;
  const uint64_t n = ScaledOps(3000);
  uint64_t failures = 0;
  for (uint64_t op = 0; op < n; ++op) {
    const uint64_t key = rng() % kKeys;
    const bool insert = op < n / 2 ? rng() % 3 != 0 : rng() % 3 == 0;  // grow, then shrink
    if (rng() % 5 == 0) internal::TestingHooks::FailWrite(tree, static_cast<int64_t>(rng() % 6));
    auto r = insert ? tree.Insert(key, op) : tree.Erase(key);
    internal::TestingHooks::FailWrite(tree, -1);
    if (r.ok()) {
      EXPECT_EQ(*r, insert ? !shadow.count(key) : shadow.count(key) == 1) << "op " << op;
      if (insert) shadow.emplace(key, op);
      else shadow.erase(key);
      continue;
    }
    ++failures;
    ASSERT_TRUE(tree.Repair().ok());
    auto got = tree.Find(key);  // the failed operation's key: either state
    ASSERT_TRUE(got.ok());
    AdoptRolledBackOrCompleted(shadow, insert, key, op, *got, fmt::format("op {}", op));
    if (HasFatalFailure()) return;
    if (failures % 16 == 0) {
      Status v = tree.Validate();
      ASSERT_TRUE(v.ok()) << "op " << op << ": " << v.ToString();
    }
  }
  EXPECT_GT(failures, 0u);
  Status v = tree.Validate();
  ASSERT_TRUE(v.ok()) << v.ToString();
  ExpectHolds(client_.get(), tree, shadow, std::nullopt, 0, "at the end");
}

}  // namespace
}  // namespace pulse::ds::testing
