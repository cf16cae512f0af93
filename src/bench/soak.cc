#include "bench/soak.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "bench/bench_cluster.h"
#include "bench/traverse_bench.h"
#include "cluster/control_session.h"
#include "cluster/launcher.h"
#include "pulse/assembler.h"
#include "pulse/cluster.h"
#include "pulse/ds/btree.h"
#include "pulse/ds/list.h"
#include "pulse/ds/unordered_map.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Value = std::optional<uint64_t>;  // nullopt: absent

constexpr size_t kMaxViolations = 20;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A key-value shadow in which a key whose write failed holds the set of
// states it may be in until a read decides.
class KeyShadow {
 public:
  // The known state, or nullopt if the key is undecided.
  std::optional<Value> Known(uint64_t key) const {
    auto it = known_.find(key);
    if (it != known_.end()) return Value(it->second);
    if (undecided_.count(key)) return std::nullopt;
    return Value();
  }
  void Set(uint64_t key, Value v) {
    undecided_.erase(key);
    if (v) known_[key] = *v;
    else known_.erase(key);
  }
  // A write of `next` that may or may not have happened.
  void Unsure(uint64_t key, Value next) {
    std::set<Value>& options = undecided_[key];
    if (options.empty()) {
      auto it = known_.find(key);
      options.insert(it == known_.end() ? Value() : Value(it->second));
      known_.erase(key);
    }
    options.insert(next);
  }
  // A read saw `got`: true if that is a possible state (then it is the state).
  bool Observe(uint64_t key, Value got) {
    auto u = undecided_.find(key);
    if (u == undecided_.end()) return *Known(key) == got;
    if (!u->second.count(got)) return false;
    Set(key, got);
    return true;
  }
  std::vector<uint64_t> Undecided() const {
    std::vector<uint64_t> out;
    for (const auto& [k, v] : undecided_) out.push_back(k);
    return out;
  }
  const std::map<uint64_t, uint64_t>& known() const { return known_; }
  std::string Describe(uint64_t key) const {
    auto show = [](const Value& v) { return v ? std::to_string(*v) : std::string("absent"); };
    if (auto k = Known(key)) return show(*k);
    std::string s = "one of {";
    for (const Value& v : undecided_.at(key)) s += show(v) + " ";
    return s + "}";
  }

 private:
  std::map<uint64_t, uint64_t> known_;
  std::map<uint64_t, std::set<Value>> undecided_;
};

class Soak {
 public:
  Soak(const SoakOptions& o, Client* client, SoakResult* res)
      : o_(o),
        client_(client),
        res_(res),
        rng_(o.seed),
        use_map_(Uses(o, "map")),
        use_tree_(Uses(o, "tree")),
        use_list_(Uses(o, "list")),
        use_counters_(Uses(o, "counter")) {}

  static bool Uses(const SoakOptions& o, const std::string& name) {
    return ("," + o.structures + ",").find("," + name + ",") != std::string::npos;
  }

  Status Create() {
    PULSE_ASSIGN_OR_RETURN(auto m, ds::UnorderedMap::Create(client_, {.buckets = 509, .mode = std::nullopt}));
    map_ = std::move(m);
    PULSE_ASSIGN_OR_RETURN(auto t, ds::BTree::Create(client_, {}));
    tree_ = std::move(t);
    PULSE_ASSIGN_OR_RETURN(auto l, ds::List::Create(client_, {}));
    list_ = std::move(l);
    if (!use_counters_) return Status::Ok();
    PULSE_ASSIGN_OR_RETURN(auto insns, Assemble(kIncrement));
    PULSE_ASSIGN_OR_RETURN(auto increment, VerifiedProgram::Create(std::move(insns)));
    increment_ = std::move(increment);
    for (uint32_t node = 0; node < client_->memory_nodes(); ++node) {  // one on each node
      auto a = client_->Allocate(8, node);
      if (!a.ok()) return a.status();
      const uint64_t zero = 0;
      PULSE_RETURN_IF_ERROR(client_->Write(*a, &zero, 8));
      counters_.push_back({*a, 0, 0});
    }
    return Status::Ok();
  }

  // One randomly chosen operation.
  void Step() {
    if (use_counters_ && rng_() % 8 == 0) return CounterStep();
    if (!use_map_ && !use_tree_ && !use_list_) return CounterStep();
    uint32_t dice = rng_() % 100;
    while ((dice < 45 && !use_map_) || (dice >= 45 && dice < 79 && !use_tree_) || (dice >= 79 && !use_list_))
      dice = rng_() % 100;
    const uint64_t key = rng_() % o_.keys;
    if (dice < 20) return MapWrite(key);
    if (dice < 45) return MapFind(key);
    if (dice < 57) return TreeWrite(key);
    if (dice < 75) return TreeFind(key);
    if (dice < 79) return TreeScan(key);
    if (dice < 88) return ListWrite();
    return ListFind();
  }

  // Reads every key of every structure back and compares the structures
  // with their shadows.
  void FinalCheck() {
    for (const FarCounter& c : counters_) CheckCounter(c, "at the end");
    for (uint64_t k = 0; use_map_ && k < o_.keys; ++k) {
      ++res_->keys_checked;
      auto got = Retry([&] { return map_->Find(k); });
      if (!got.ok()) {
        Violation(fmt::format("map key {} unreadable at the end: {}", k, got.status().ToString()));
        continue;
      }
      if (!map_shadow_.Observe(k, *got)) Violation(fmt::format("map key {}: read {}, expected {}", k, Show(*got), map_shadow_.Describe(k)));
    }
    if (use_tree_) {
      CheckTree();
      ValidateTree("at the end");
    }
    if (!use_list_) return;
    Status s = ResolveList();
    if (!s.ok()) Violation("list unreadable at the end: " + s.ToString());
    res_->keys_checked += list_shadow_.size();
  }

  // The B+tree invariants (a failed call is not a violation unless the
  // tree itself is wrong).
  void ValidateTree(const std::string& when) {
    Status v = tree_->Validate();
    for (int i = 0; i < 5 && !v.ok() && v.code() != Status::Code::kInternal; ++i) v = tree_->Validate();
    if (v.code() == Status::Code::kInternal) Violation("tree invalid " + when + ": " + v.ToString());
    else if (v.ok()) ++res_->tree_validations;
    else Error(v);
  }

  void CheckTree() {
    for (uint64_t k = 0; k < o_.keys; ++k) {  // by descent: every acknowledged key, every erased one
      ++res_->keys_checked;
      auto got = Retry([&] { return tree_->Find(k); });
      if (!got.ok()) {
        Violation(fmt::format("tree key {} unreadable at the end: {}", k, got.status().ToString()));
        continue;
      }
      if (!tree_shadow_.Observe(k, *got))
        Violation(fmt::format("tree key {}: find {}, expected {}", k, Show(*got), tree_shadow_.Describe(k)));
    }
    for (uint64_t k : tree_shadow_.Undecided()) {
      auto got = Retry([&] { return tree_->Find(k); });
      if (got.ok() && !tree_shadow_.Observe(k, *got))
        Violation(fmt::format("tree key {}: read {}, expected {}", k, Show(*got), tree_shadow_.Describe(k)));
    }
    auto all = Retry([&] { return tree_->Scan(0, UINT64_MAX); });
    if (!all.ok()) {
      Violation("tree unreadable at the end: " + all.status().ToString());
    } else {
      res_->keys_checked += all->size();
      std::map<uint64_t, uint64_t> got(all->begin(), all->end());
      if (got != tree_shadow_.known())
        Violation(fmt::format("tree holds {} keys, its shadow {} (first difference at key {})", got.size(),
                              tree_shadow_.known().size(), FirstDifference(got, tree_shadow_.known())));
    }
  }

  // After a restart: decide the undecided keys while nothing is down.
  void Resolve() {
    for (uint64_t k : map_shadow_.Undecided()) {
      auto got = map_->Find(k);
      if (got.ok() && !map_shadow_.Observe(k, *got))
        Violation(fmt::format("map key {}: read {}, expected {}", k, Show(*got), map_shadow_.Describe(k)));
    }
    for (uint64_t k : tree_shadow_.Undecided()) {
      auto got = tree_->Find(k);
      if (got.ok() && !tree_shadow_.Observe(k, *got))
        Violation(fmt::format("tree key {}: read {}, expected {}", k, Show(*got), tree_shadow_.Describe(k)));
    }
    // A list that cannot be read yet keeps its undecided values; the final
    // check resolves it and reports that error.
    if (use_list_) IgnoreError(ResolveList());
    if (use_tree_) ValidateTree("after a restart");
  }

 private:
  static std::string Show(const Value& v) { return v ? std::to_string(*v) : "absent"; }
  static uint64_t FirstDifference(const std::map<uint64_t, uint64_t>& a, const std::map<uint64_t, uint64_t>& b) {
    auto x = a.begin();
    auto y = b.begin();
    while (x != a.end() && y != b.end() && *x == *y) ++x, ++y;
    if (x == a.end()) return y == b.end() ? 0 : y->first;
    if (y == b.end()) return x->first;
    return std::min(x->first, y->first);
  }

  template <typename Fn>
  auto Retry(Fn fn) -> decltype(fn()) {
    auto r = fn();
    for (int i = 0; i < 5 && !r.ok(); ++i) r = fn();
    return r;
  }

  void Count(const char* kind) {
    ++res_->ops;
    ++res_->ops_by_kind[kind];
  }
  void Error(const Status& s) {
    ++res_->errors_by_kind[std::string(StatusCodeName(s.code()))];
    if (s.code() == Status::Code::kOutcomeUnknown) ++res_->outcome_unknown;
  }
  void TreeFailed(const Status& s) {
    Error(s);
    ++res_->unacknowledged_writes;
    if (tree_->repair_needed()) ++res_->tree_half_done;
  }
  void Violation(std::string what) {
    if (res_->violations.size() < kMaxViolations) res_->violations.push_back(std::move(what));
  }

  void MapWrite(uint64_t key) {
    const bool erase = rng_() % 4 == 0;
    const uint64_t value = rng_() >> 1;
    Count(erase ? "map.erase" : "map.assign");
    if (erase) {
      auto r = map_->Erase(key);
      if (!r.ok()) {
        Error(r.status());
        ++res_->unacknowledged_writes;
        return map_shadow_.Unsure(key, std::nullopt);
      }
      if (auto k = map_shadow_.Known(key); k && k->has_value() != *r)
        Violation(fmt::format("map.erase({}) said {}, the shadow holds {}", key, *r, Show(*k)));
      return map_shadow_.Set(key, std::nullopt);
    }
    auto r = map_->InsertOrAssign(key, value);
    if (!r.ok()) {
      Error(r.status());
      ++res_->unacknowledged_writes;
      return map_shadow_.Unsure(key, value);
    }
    if (auto k = map_shadow_.Known(key); k && k->has_value() == *r)
      Violation(fmt::format("map.insert_or_assign({}) said inserted={}, the shadow holds {}", key, *r, Show(*k)));
    map_shadow_.Set(key, value);
  }

  void MapFind(uint64_t key) {
    Count("map.find");
    auto r = map_->Find(key);
    if (!r.ok()) return Error(r.status());
    if (!map_shadow_.Observe(key, *r))
      Violation(fmt::format("map.find({}) = {}, expected {}", key, Show(*r), map_shadow_.Describe(key)));
  }

  // Insert when absent, erase when present (BTree::Insert does not assign).
  void TreeWrite(uint64_t key) {
    const std::optional<Value> known = tree_shadow_.Known(key);
    if (!known) return TreeFind(key);  // decide it first
    if (known->has_value()) {
      Count("tree.erase");
      auto r = tree_->Erase(key);
      if (!r.ok()) {
        TreeFailed(r.status());
        return tree_shadow_.Unsure(key, std::nullopt);
      }
      if (!*r) Violation(fmt::format("tree.erase({}) found nothing, the shadow holds {}", key, **known));
      return tree_shadow_.Set(key, std::nullopt);
    }
    const uint64_t value = rng_() >> 1;
    Count("tree.insert");
    auto r = tree_->Insert(key, value);
    if (!r.ok()) {
      TreeFailed(r.status());
      return tree_shadow_.Unsure(key, value);
    }
    if (!*r) Violation(fmt::format("tree.insert({}) found the key present, the shadow says absent", key));
    tree_shadow_.Set(key, value);
  }

  void TreeFind(uint64_t key) {
    Count("tree.find");
    auto r = tree_->Find(key);
    if (!r.ok()) return Error(r.status());
    if (!tree_shadow_.Observe(key, *r))
      Violation(fmt::format("tree.find({}) = {}, expected {}", key, Show(*r), tree_shadow_.Describe(key)));
  }

  void TreeScan(uint64_t lo) {
    Count("tree.scan");
    const uint64_t hi = lo + 64;
    auto r = tree_->Scan(lo, hi);
    if (!r.ok()) return Error(r.status());
    // Keys of [lo, hi] the shadow knows must match; undecided ones decide.
    std::map<uint64_t, uint64_t> got(r->begin(), r->end());
    for (uint64_t k = lo; k <= hi && k < o_.keys; ++k) {
      auto it = got.find(k);
      const Value v = it == got.end() ? Value() : Value(it->second);
      if (!tree_shadow_.Observe(k, v))
        Violation(fmt::format("tree.scan({}, {}) has {} for key {}, expected {}", lo, hi, Show(v), k,
                              tree_shadow_.Describe(k)));
    }
  }

  // Distinct values: each push is a new one.
  void ListWrite() {
    const bool erase = list_shadow_.size() >= o_.max_list || (!list_shadow_.empty() && rng_() % 3 == 0);
    if (erase) {
      const uint64_t v = list_shadow_[rng_() % list_shadow_.size()];
      Count("list.erase");
      auto r = list_->Erase(v);
      if (!r.ok()) {
        Error(r.status());
        ++res_->unacknowledged_writes;
        list_unsure_.insert(v);
        return;
      }
      if (!*r && !list_unsure_.count(v)) Violation(fmt::format("list.erase({}) found nothing", v));
      list_shadow_.erase(std::find(list_shadow_.begin(), list_shadow_.end(), v));
      list_unsure_.erase(v);
      return;
    }
    const uint64_t v = next_list_value_++;
    Count("list.push_back");
    Status s = list_->PushBack(v);
    if (!s.ok()) {
      Error(s);
      ++res_->unacknowledged_writes;
      list_unsure_.insert(v);
      list_shadow_.push_back(v);  // where it would be
      return;
    }
    list_shadow_.push_back(v);
  }

  void ListFind() {
    if (list_shadow_.empty()) return;
    const uint64_t v = list_shadow_[rng_() % list_shadow_.size()];
    Count("list.find");
    auto r = list_->Find(v);
    if (!r.ok()) return Error(r.status());
    if (!list_unsure_.empty()) return;  // positions are undecided until ResolveList
    const uint64_t want = static_cast<uint64_t>(std::find(list_shadow_.begin(), list_shadow_.end(), v) - list_shadow_.begin());
    if (*r != std::optional<uint64_t>(want))
      Violation(fmt::format("list.find({}) = {}, expected position {}", v, r->has_value() ? std::to_string(**r) : "none", want));
  }

  // Far counters incremented by an offloaded STORE-bearing program: each
  // must end up incremented exactly once per acknowledged increment, plus at
  // most once per failed one (lost or "outcome unknown"): a duplicate run
  // of a retransmitted request shows as a value above that range.
  struct FarCounter {
    uint64_t addr;
    uint64_t acknowledged;
    uint64_t unacknowledged;
  };

  void CounterStep() {
    FarCounter& c = counters_[rng_() % counters_.size()];
    if (rng_() % 4 == 0) {
      Count("counter.read");
      return CheckCounter(c, "");
    }
    Count("counter.add");
    TraverseOptions off;
    off.mode = ExecutionMode::kOffload;
    auto r = client_->Traverse(increment_, c.addr, std::vector<uint8_t>(8, 0), off);
    if (r.ok() && r->status == TraversalStatus::kDone) {
      ++c.acknowledged;
      return;
    }
    if (r.ok()) {
      Violation(fmt::format("counter.add at {:#x} ended {}", c.addr, TraversalStatusName(r->status)));
      return;
    }
    Error(r.status());
    ++res_->unacknowledged_writes;
    ++c.unacknowledged;
  }

  void CheckCounter(const FarCounter& c, const char* when) {
    uint64_t v = 0;
    Status s = Retry([&] { return client_->Read(c.addr, &v, 8); });
    if (!s.ok()) {
      if (*when) Violation(fmt::format("counter at {:#x} unreadable {}: {}", c.addr, when, s.ToString()));
      else Error(s);
      return;
    }
    if (*when) ++res_->keys_checked;
    if (v < c.acknowledged || v > c.acknowledged + c.unacknowledged)
      Violation(fmt::format("counter at {:#x} holds {}{}{}, expected {} acknowledged increments plus at most {} "
                            "unacknowledged",
                            c.addr, v, *when ? " " : "", when, c.acknowledged, c.unacknowledged));
  }

  // Reads the whole list: it must be the shadow with each undecided value
  // present or not; then that is the shadow.
  Status ResolveList() {
    PULSE_ASSIGN_OR_RETURN(auto all, Retry([&] { return list_->ToVector(); }));
    std::vector<uint64_t> certain_got, certain_want;
    for (uint64_t v : all)
      if (!list_unsure_.count(v)) certain_got.push_back(v);
    for (uint64_t v : list_shadow_)
      if (!list_unsure_.count(v)) certain_want.push_back(v);
    std::vector<uint64_t> in_order;  // the undecided values seen must be in shadow order
    for (uint64_t v : list_shadow_)
      if (list_unsure_.count(v) && std::find(all.begin(), all.end(), v) != all.end()) in_order.push_back(v);
    std::vector<uint64_t> got_unsure;
    for (uint64_t v : all)
      if (list_unsure_.count(v)) got_unsure.push_back(v);
    if (certain_got != certain_want || got_unsure != in_order) {
      Violation(fmt::format("list holds {} values, its shadow {} ({} undecided)", all.size(), list_shadow_.size(),
                            list_unsure_.size()));
    }
    list_shadow_ = std::move(all);
    list_unsure_.clear();
    return Status::Ok();
  }

  const SoakOptions& o_;
  Client* client_;
  SoakResult* res_;
  std::mt19937_64 rng_;
  std::unique_ptr<ds::UnorderedMap> map_;
  std::unique_ptr<ds::BTree> tree_;
  std::unique_ptr<ds::List> list_;
  KeyShadow map_shadow_, tree_shadow_;
  std::vector<uint64_t> list_shadow_;
  std::set<uint64_t> list_unsure_;
  uint64_t next_list_value_ = 1;
  const bool use_map_, use_tree_, use_list_, use_counters_;
  static constexpr const char* kIncrement =
      "LOAD data, 8\nMOVE r1, cur_ptr\nADD sp[0], data[0]\nADD sp[0], 1\nSTORE [r1], sp[0]\nRETURN";
  ProgramRef increment_;
  std::vector<FarCounter> counters_;
};

void Say(const SoakOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

uint64_t Faults(const nlohmann::json& stats) {
  const nlohmann::json& net = stats["counters"]["net"];
  return net.value("faults_dropped", uint64_t{0}) + net.value("faults_duplicated", uint64_t{0}) +
         net.value("faults_reordered", uint64_t{0});
}

// Adds the counters of the live memory nodes (only `node` if set) and, for
// all of them, of the switch to `res`: injected faults and duplicate
// suppression.  Counters of a process are lost when it is killed, so the
// victim is read just before.
void AddNodeCounters(const std::string& switch_address, std::optional<uint32_t> node, SoakResult* res) {
  auto session = cluster::ControlSession::Create();
  if (!session.ok()) return;
  auto sw = (*session)->Call(switch_address, "stats", std::chrono::seconds(2));
  if (!sw.ok()) return;
  if (!node) res->node_faults_injected += Faults(*sw);
  for (const auto& m : (*sw)["memnodes"]) {
    if (!m.value("alive", false) || (node && m.value("node", uint32_t{0}) != *node)) continue;
    auto st = (*session)->Call(m.value("address", std::string()), "stats", std::chrono::seconds(2));
    if (!st.ok()) continue;
    res->node_faults_injected += Faults(*st);
    const nlohmann::json& c = (*st)["counters"];
    res->node_duplicates += c.value("duplicates", uint64_t{0});
    res->node_durable_answers += c.value("durable_answers", uint64_t{0});
    res->node_outcome_unknown += c.value("outcome_unknown", uint64_t{0});
  }
}

// Milliseconds from `killed` until the switch lists memory node `node` as
// dead, polling its stats every 10 ms; nullopt if it has not within 10 s
// (or cannot be asked).  The figure the process tests used to assert on.
std::optional<double> SwitchDetectMs(const std::string& switch_address, uint32_t node, Clock::time_point killed) {
  auto session = cluster::ControlSession::Create();
  if (!session.ok()) return std::nullopt;
  while (Clock::now() - killed < std::chrono::seconds(10)) {
    auto sw = (*session)->Call(switch_address, "stats", std::chrono::seconds(2));
    if (!sw.ok()) return std::nullopt;
    for (const auto& m : (*sw)["memnodes"])
      if (m.value("node", UINT32_MAX) == node && !m.value("alive", true))
        return std::chrono::duration<double, std::milli>(Clock::now() - killed).count();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

// Kills a memory node every `every_s` and restarts it `down_s` later, on a
// thread of its own, so a request the client keeps re-sending while its
// node is down (ClientOptions::ride_out_unavailable) can see the node come
// back.  Reads the victim's counters into the result before each kill (the
// result's node_* fields are its own until Quiesce() returns).  The thread
// lives until the object is destroyed: the nodes it restarted get SIGTERM
// when the thread that launched them exits (LaunchOptions::die_with_parent).
class NodeChaos {
 public:
  NodeChaos(const SoakOptions& o, const cluster::ClusterConfig& config, const cluster::LaunchOptions& lo,
            cluster::ClusterGuard* guard, uint32_t memory_nodes, SoakResult* res)
      : thread_([=, this] { Run(o, config, lo, guard, memory_nodes, res); }) {}
  ~NodeChaos() {
    // A restart that failed was reported by the caller's own Quiesce().
    IgnoreError(Quiesce());
    {
      std::lock_guard<std::mutex> lock(mu_);
      exit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  NodeChaos(const NodeChaos&) = delete;
  NodeChaos& operator=(const NodeChaos&) = delete;

  uint32_t restarts() const { return restarts_.load(); }

  // Stops the kills; returns once a node it killed is back (or its restart
  // failed: that error).
  Status Quiesce() {
    std::unique_lock<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return quiet_; });
    return status_;
  }

 private:
  void Run(const SoakOptions& o, const cluster::ClusterConfig& config, const cluster::LaunchOptions& lo,
           cluster::ClusterGuard* guard, uint32_t memory_nodes, SoakResult* res) {
    const auto every = [](double s) {
      return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
    };
    std::unique_lock<std::mutex> lock(mu_);
    for (uint32_t i = 0; status_.ok(); ++i) {
      if (cv_.wait_until(lock, Clock::now() + every(o.restart_every_s), [&] { return stop_; })) break;
      const uint32_t victim = i % memory_nodes;
      AddNodeCounters(res->switch_address, victim, res);
      const auto killed = Clock::now();
      status_ = cluster::KillMemNode(*guard->state(), victim, std::chrono::seconds(10));
      if (!status_.ok()) break;
      const std::optional<double> detect_ms = SwitchDetectMs(res->switch_address, victim, killed);
      if (detect_ms) res->switch_detect_ms.push_back(*detect_ms);
      Say(o, fmt::format("soak: killed memory node {}; the switch noticed {}", victim,
                         detect_ms ? fmt::format("after {:.0f} ms", *detect_ms) : std::string("not within 10 s")));
      cv_.wait_until(lock, Clock::now() + every(o.down_s), [&] { return stop_; });
      status_ = cluster::RestartMemNode(config, guard->mutable_state(), victim, lo);
      if (status_.ok()) {
        restarts_.fetch_add(1);
        Say(o, fmt::format("soak: restarted memory node {}", victim));
      }
    }
    quiet_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return exit_; });
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, quiet_ = false, exit_ = false;
  Status status_;
  std::atomic<uint32_t> restarts_{0};
  std::thread thread_;  // last: starts once the rest is constructed
};

}  // namespace

Result<SoakResult> RunSoak(const SoakOptions& o) {
  if (o.minutes <= 0 || o.keys == 0 || o.max_list == 0 || o.memnodes == 0)
    return Status::InvalidArgument("bench soak: minutes, keys, max_list and memnodes must be positive");
  if (!Soak::Uses(o, "map") && !Soak::Uses(o, "tree") && !Soak::Uses(o, "list") && !Soak::Uses(o, "counter"))
    return Status::InvalidArgument("bench soak: --structures names none of map, tree, list, counter");
  std::string spec = o.faults;
  // Traversal messages only, so soaks stay comparable run to run; control
  // calls and one-sided access under faults have their own cluster tests.
  // Aggregated ones (kAmBatch envelopes) included.
  if (!spec.empty()) spec += fmt::format(",ids={}+{}", kAmTraversal, kAmBatch);
  auto faults = net::FaultInjection::Parse(spec);
  if (!faults.ok()) return faults.status();

  SoakResult res;
  res.switch_address = o.switch_address;
  BenchClusterOptions bco;
  bco.name = "bench-soak";
  bco.binary = o.binary;
  bco.run_dir = o.run_dir;
  bco.memory_nodes = o.memnodes;
  cluster::ClusterConfig config = BenchClusterConfig(bco);
  cluster::ClusterGuard guard;
  cluster::LaunchOptions lo;
  lo.die_with_parent = true;
  lo.progress = o.progress;
  if (o.switch_address.empty()) {
    if (!spec.empty()) config.env.emplace_back(net::kFaultsEnvironmentVariable, spec);
    PULSE_ASSIGN_OR_RETURN(auto st, cluster::StartCluster(config, lo));
    res.switch_address = st.switch_address;
    res.own_cluster = true;
    guard = cluster::ClusterGuard(std::move(st), std::chrono::milliseconds(3000));
  }

  ClientOptions co;
  co.switch_address = res.switch_address;
  co.slab_bytes = 4096;  // structures spread over the memory nodes
  co.request_timeout = std::chrono::milliseconds(100);
  co.max_attempts = 10;
  co.reconnect_timeout = std::chrono::milliseconds(3000);
  // Requests to a killed node wait for its restart (re-sent under the same
  // id), so retransmissions reach the restarted node and its record of
  // STORE-bearing requests is exercised.
  if (o.restart_every_s > 0) co.ride_out_unavailable = std::chrono::milliseconds(static_cast<int64_t>(o.down_s * 1000) + 3000);
  co.worker.name = "bench-soak";
  co.worker.faults = *faults;
  auto client = Client::Connect(co);
  if (!client.ok()) return client.status();

  Soak soak(o, client->get(), &res);
  PULSE_RETURN_IF_ERROR(soak.Create());
  Say(o, fmt::format("soak: {} min against {} ({} memory nodes), faults '{}', {}", o.minutes, res.switch_address,
                     (*client)->memory_nodes(), spec.empty() ? "none" : spec,
                     res.own_cluster && o.restart_every_s > 0
                         ? fmt::format("a memory node killed every {} s for {} s", o.restart_every_s, o.down_s)
                         : std::string("no restarts")));

  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.minutes * 60));
  const auto every = [](double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };

  std::optional<NodeChaos> chaos;
  if (res.own_cluster && o.restart_every_s > 0) chaos.emplace(o, config, lo, &guard, (*client)->memory_nodes(), &res);
  auto restarts = [&] { return chaos ? chaos->restarts() : 0u; };

  auto next_progress = t0 + every(o.progress_every_s);
  uint32_t resolved_restarts = 0;
  while (Clock::now() < end) {
    if (const uint32_t r = restarts(); r != resolved_restarts) {
      resolved_restarts = r;
      soak.Resolve();  // decide the keys of failed writes while the nodes are up
    }
    soak.Step();
    if (Clock::now() >= next_progress) {
      next_progress += every(o.progress_every_s);
      uint64_t errors = 0;
      for (const auto& [k, n] : res.errors_by_kind) errors += n;
      Say(o, fmt::format("soak: {:.0f}/{:.0f} s  ops {} ({:.0f}/s)  errors {}  retransmissions {}  restarts {}  "
                         "violations {}",
                         SecondsSince(t0), o.minutes * 60, res.ops, res.ops / SecondsSince(t0), errors,
                         (*client)->counters().retransmissions, restarts(), res.violations.size()));
    }
  }
  if (chaos) PULSE_RETURN_IF_ERROR(chaos->Quiesce());  // a node it killed is restarted first
  res.restarts = restarts();
  res.seconds = SecondsSince(t0);
  Say(o, "soak: final check: reading every key back");
  soak.Resolve();
  soak.FinalCheck();
  res.invariants_ok = res.violations.empty();
  res.client = (*client)->counters();
  const net::Counters& cn = (*client)->net_counters();
  res.client_faults_injected = cn.faults_dropped + cn.faults_duplicated + cn.faults_reordered;
  AddNodeCounters(res.switch_address, std::nullopt, &res);
  client->reset();
  if (guard.state() != nullptr) {
    PULSE_ASSIGN_OR_RETURN(auto stopped, guard.Stop());
  }
  return res;
}

}  // namespace pulse::bench
