// The cluster under faults, with real processes (LocalRack): messages lost,
// duplicated and reordered at the transport boundary (net::FaultInjection
// in the switch, the memory nodes and the client), a memory node killed
// during a workload and restarted, the switch killed and restarted or left
// dead.  Answers are checked against std:: shadows; every wait has a
// deadline.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include "engine/increment_pair_program.h"
#include "pulse/assembler.h"
#include "pulse/client.h"
#include "pulse/ds/btree.h"
#include "pulse/ds/unordered_map.h"
#include "support/ds_cluster.h"
#include "support/local_rack.h"

namespace pulse {
namespace {

using testing::LocalRack;
using testing::NodeProcess;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

ProgramRef Build(const char* text) {
  auto insns = Assemble(text);
  EXPECT_TRUE(insns.ok()) << insns.status().ToString();
  auto p = VerifiedProgram::Create(std::move(*insns));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

// Increments the u64 at cur_ptr and returns the new value in sp[0].
constexpr const char* kIncrement = "LOAD data, 8\nMOVE r1, cur_ptr\nADD sp[0], data[0]\nADD sp[0], 1\nSTORE [r1], sp[0]\nRETURN";
// Returns the u64 at cur_ptr in sp[0].
constexpr const char* kReadOne = "LOAD data, 8\nMOVE sp[0], data[0]\nRETURN";

uint64_t Sp0(const TraversalResult& r) {
  uint64_t v = 0;
  if (r.scratch.size() >= 8) std::memcpy(&v, r.scratch.data(), 8);
  return v;
}

// Traversal messages (kAmTraversal, and kAmBatch envelopes of them) only
// (FaultyTransport faults the rest).
std::string FaultSpec(uint64_t seed) {
  return fmt::format("loss=0.05,dup=0.05,reorder=0.1,hold_us=2000,seed={},ids={}+{}", seed, kAmTraversal,
                     kAmBatch);
}

uint64_t NetCounter(const nlohmann::json& stats, const char* name) {
  return stats["counters"]["net"].value(name, uint64_t{0});
}

// Switch and memory nodes inherit $PULSE_NET_FAULTS; the client gets its
// faults through its options.
class FaultyCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::SetUcxTestEnvironment();
    setenv(net::kFaultsEnvironmentVariable, FaultSpec(11).c_str(), 1);
    const bool started = rack_.Start(2, /*pool_mib=*/16);
    unsetenv(net::kFaultsEnvironmentVariable);
    ASSERT_TRUE(started);
    ClientOptions o;
    o.switch_address = fmt::format("127.0.0.1:{}", rack_.switch_port());
    o.slab_bytes = 4096;  // structures cross memory nodes: continuations through the switch
    // Short: every lost message costs one timeout.  A spurious retransmission
    // on a loaded machine is harmless (that is what is being tested).
    o.request_timeout = 60ms;
    o.max_attempts = 20;  // 5% loss per hop: a request failing 20 times is not expected
    o.worker.faults = *net::FaultInjection::Parse(FaultSpec(23));
    auto c = Client::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
  }
  // Faults the nodes injected (dropped + duplicated + reordered).
  uint64_t NodeFaults() {
    uint64_t n = 0;
    auto add = [&](const nlohmann::json& s) {
      n += NetCounter(s, "faults_dropped") + NetCounter(s, "faults_duplicated") + NetCounter(s, "faults_reordered");
    };
    add(rack_.SwitchStats());
    for (uint32_t i = 0; i < 2; ++i) add(rack_.MemNodeStats(i));
    return n;
  }
  LocalRack rack_;
  std::unique_ptr<Client> client_;
};

// The transport under the client's calls: its control requests
// (kAmControl: hello, alloc) and one-sided requests are lost, duplicated and
// reordered, and so are the memory nodes' one-sided replies.  (The nodes'
// control answers are left alone: the rack harness does not re-send its own
// calls.)
class FaultyTransport : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::SetUcxTestEnvironment();
    setenv(net::kFaultsEnvironmentVariable,
           fmt::format("loss=0.05,dup=0.1,reorder=0.1,hold_us=2000,seed=31,ids={},rma=1", kAmTraversal).c_str(), 1);
    const bool started = rack_.Start(2, /*pool_mib=*/16);
    unsetenv(net::kFaultsEnvironmentVariable);
    ASSERT_TRUE(started);
    ClientOptions o;
    o.switch_address = fmt::format("127.0.0.1:{}", rack_.switch_port());
    o.slab_bytes = 4096;
    // Control calls are re-sent after 1/8 of their timeout: connect_timeout
    // for hellos, request_timeout * max_attempts for alloc.
    o.connect_timeout = 1200ms;
    o.request_timeout = 60ms;
    o.max_attempts = 20;
    o.worker.rma_retransmit_us = 5000;
    o.worker.faults = *net::FaultInjection::Parse(
        fmt::format("loss=0.2,dup=0.3,reorder=0.1,hold_us=2000,seed=37,ids={},rma=1", kAmControl));
    auto c = Client::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
  }
  uint64_t MemNodeSum(const char* name, bool net) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < 2; ++i) {
      const nlohmann::json s = rack_.MemNodeStats(i);
      n += net ? NetCounter(s, name) : s["counters"].value(name, uint64_t{0});
    }
    return n;
  }
  LocalRack rack_;
  std::unique_ptr<Client> client_;
};

// Objects larger than a slab: one alloc call each.  Every read matches a
// local shadow; a duplicated alloc request allocated once.
TEST_F(FaultyTransport, ControlCallsAndOneSidedAccessAreResentAndTakeEffectOnce) {
  const uint64_t allocations_before = MemNodeSum("allocations", false);
  const int kObjects = static_cast<int>(std::max<uint64_t>(40, ds::testing::ScaledOps(40)));
  const int kOps = static_cast<int>(std::max<uint64_t>(200, ds::testing::ScaledOps(400)));
  constexpr size_t kBytes = 4104;
  std::vector<uint64_t> addrs;
  std::vector<std::vector<uint8_t>> shadow;
  std::mt19937_64 rng(9);
  for (int i = 0; i < kObjects; ++i) {
    auto a = client_->Allocate(kBytes);
    ASSERT_TRUE(a.ok()) << "object " << i << ": " << a.status().ToString();
    addrs.push_back(*a);
    std::vector<uint8_t> bytes(kBytes);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    ASSERT_TRUE(client_->Write(*a, bytes.data(), kBytes).ok());
    shadow.push_back(std::move(bytes));
  }
  for (int i = 0; i < kOps; ++i) {
    const size_t k = rng() % addrs.size();
    const size_t len = 1 + rng() % 300, off = rng() % (kBytes - len + 1);
    if (rng() % 2 == 0) {
      std::vector<uint8_t> bytes(len);
      for (auto& b : bytes) b = static_cast<uint8_t>(rng());
      Status s = client_->Write(addrs[k] + off, bytes.data(), len);
      ASSERT_TRUE(s.ok()) << "op " << i << ": " << s.ToString();
      std::copy(bytes.begin(), bytes.end(), shadow[k].begin() + off);
    } else {
      std::vector<uint8_t> got(len);
      Status s = client_->Read(addrs[k] + off, got.data(), len);
      ASSERT_TRUE(s.ok()) << "op " << i << ": " << s.ToString();
      ASSERT_TRUE(std::equal(got.begin(), got.end(), shadow[k].begin() + off)) << "op " << i;
    }
  }
  for (size_t k = 0; k < addrs.size(); ++k) {
    std::vector<uint8_t> got(kBytes);
    ASSERT_TRUE(client_->Read(addrs[k], got.data(), kBytes).ok());
    EXPECT_EQ(got, shadow[k]) << "object " << k;
  }
  EXPECT_EQ(MemNodeSum("allocations", false) - allocations_before, static_cast<uint64_t>(kObjects))
      << "a re-sent or duplicated alloc must allocate once";
  const net::Counters& n = client_->net_counters();
  EXPECT_GT(n.faults_dropped, 0u);
  EXPECT_GT(n.faults_duplicated, 0u);
  EXPECT_GT(client_->counters().control_retransmissions, 0u) << "lost control requests must have been re-sent";
  EXPECT_GT(n.rma_retransmissions, 0u) << "lost one-sided requests must have been re-sent";
  EXPECT_GT(MemNodeSum("rma_duplicates", true), 0u) << "duplicated writes must have been answered, not re-applied";
  EXPECT_GT(MemNodeSum("faults_dropped", true), 0u) << "the nodes' one-sided replies must have been faulted";
}

TEST_F(FaultyCluster, LookupsStayCorrectUnderLossDuplicationAndReordering) {
  auto map = ds::UnorderedMap::Create(client_.get(), {.buckets = 61, .mode = ExecutionMode::kOffload});
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  auto tree = ds::BTree::Create(client_.get(), {});
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  std::unordered_map<uint64_t, uint64_t> shadow;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 150; ++i) {
    const uint64_t key = rng() % 600, value = rng();
    auto a = (*map)->InsertOrAssign(key, value);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    auto b = (*tree)->Insert(key, value);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (!*b) {  // present: replace its value
      ASSERT_TRUE((*tree)->Erase(key).ok());
      ASSERT_TRUE((*tree)->Insert(key, value).ok());
    }
    shadow[key] = value;
  }
  for (int i = 0; i < 150; ++i) {
    const uint64_t key = rng() % 660;
    auto want = shadow.find(key);
    auto m = (*map)->Find(key);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto t = (*tree)->Find(key);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    if (want == shadow.end()) {
      EXPECT_FALSE(m->has_value()) << key;
      EXPECT_FALSE(t->has_value()) << key;
    } else {
      EXPECT_EQ(m->value_or(~0ull), want->second) << key;
      EXPECT_EQ(t->value_or(~0ull), want->second) << key;
    }
  }
  const ClientCounters& c = client_->counters();
  EXPECT_GT(c.offloaded, 150u);
  EXPECT_GT(c.retransmissions, 0u) << "lost messages must have been sent again";
  EXPECT_GT(client_->net_counters().faults_dropped, 0u);
  EXPECT_GT(NodeFaults(), 0u) << "the switch and memory nodes must have injected faults too";
}

TEST_F(FaultyCluster, StoreBearingTraversalsTakeEffectExactlyOnce) {
  auto increment = Build(kIncrement);
  ASSERT_TRUE(increment->info().has_store);
  auto cell = client_->Allocate(8);
  ASSERT_TRUE(cell.ok()) << cell.status().ToString();
  const uint64_t zero = 0;
  ASSERT_TRUE(client_->Write(*cell, &zero, 8).ok());
  TraverseOptions off;
  off.mode = ExecutionMode::kOffload;
  constexpr uint64_t kRequests = 300;
  std::vector<uint64_t> answers;
  uint64_t failed = 0;
  for (uint64_t sent = 0; sent < kRequests;) {
    for (int k = 0; k < 20 && sent < kRequests; ++k, ++sent) {  // 20 in flight
      client_->TraverseAsync(increment, *cell, std::vector<uint8_t>(8, 0), off, [&](Result<TraversalResult> r) {
        if (!r.ok()) {
          ++failed;
          ADD_FAILURE() << r.status().ToString();
          return;
        }
        const TraversalResult& t = r.value();
        if (t.status != TraversalStatus::kDone) {
          ++failed;
          ADD_FAILURE() << TraversalStatusName(t.status);
          return;
        }
        answers.push_back(Sp0(t));
      });
    }
    ASSERT_TRUE(client_->WaitAll(60s).ok());
  }
  ASSERT_EQ(failed, 0u);
  uint64_t value = 0;
  ASSERT_TRUE(client_->Read(*cell, &value, 8).ok());
  EXPECT_EQ(value, answers.size()) << "each acknowledged increment applied exactly once";
  // Each request saw its own increment: the answers are 1..N, each once
  // (a duplicate that ran twice would skip a number and repeat none).
  std::sort(answers.begin(), answers.end());
  for (uint64_t i = 0; i < answers.size(); ++i) ASSERT_EQ(answers[i], i + 1);
  EXPECT_GT(client_->counters().retransmissions, 0u);
  const auto owner = client_->NodeOf(*cell);
  ASSERT_TRUE(owner.has_value());
  auto stats = rack_.MemNodeStats(*owner);
  EXPECT_GT(stats["counters"]["duplicates"].get<uint64_t>(), 0u)
      << "retransmitted and duplicated requests must have been suppressed: " << stats.dump();
  // The 20 requests of each round left in shared messages (lost and
  // duplicated as wholes), and the node answered in shared messages too.
  const ClientCounters& c = client_->counters();
  EXPECT_LT(c.request_messages, c.requests_carried) << "requests must have been aggregated";
  EXPECT_GT(stats["counters"]["aggregation"]["envelopes_in"].get<uint64_t>(), 0u) << stats.dump();
  EXPECT_GT(c.envelopes_in, 0u) << "responses must have been aggregated";
}

TEST_F(FaultyCluster, AggregatedReadsEqualTheirCellsUnderLossDuplicationAndReordering) {
  // Cells on both memory nodes, each holding its own index: every answer
  // says which request it belongs to.
  constexpr int kCells = 64;
  std::vector<uint64_t> cells;
  for (int i = 0; i < kCells; ++i) {
    auto a = client_->Allocate(8, static_cast<uint32_t>(i % 2));
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    const uint64_t v = 1000 + i;
    ASSERT_TRUE(client_->Write(*a, &v, 8).ok());
    cells.push_back(*a);
  }
  auto read = Build(kReadOne);
  TraverseOptions off;
  off.mode = ExecutionMode::kOffload;
  std::vector<uint64_t> got(kCells * 5, 0);
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < kCells; ++i) {
      client_->TraverseAsync(read, cells[i], std::vector<uint8_t>(8, 0), off,
                             [&got, round, i](Result<TraversalResult> r) {
                               ASSERT_TRUE(r.ok()) << r.status().ToString();
                               ASSERT_EQ(r->status, TraversalStatus::kDone);
                               got[round * kCells + i] = Sp0(*r);
                             });
    }
    ASSERT_TRUE(client_->WaitAll(60s).ok());
  }
  for (int round = 0; round < 5; ++round)
    for (int i = 0; i < kCells; ++i) ASSERT_EQ(got[round * kCells + i], 1000u + i) << round << " " << i;
  const ClientCounters& c = client_->counters();
  EXPECT_GE(c.requests_carried, 5u * kCells);
  EXPECT_LT(c.request_messages, c.requests_carried / 2) << "32 requests per node per round share messages";
  EXPECT_GT(c.retransmissions, 0u) << "lost envelopes and messages must have been re-sent";
  EXPECT_GT(NodeFaults(), 0u);
}

// ---- dead and restarted nodes (no injected faults) -------------------------

class NodeFailures : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::SetUcxTestEnvironment();
    ASSERT_TRUE(rack_.Start(2, /*pool_mib=*/8));
    options_.switch_address = fmt::format("127.0.0.1:{}", rack_.switch_port());
    options_.policy = AllocationPolicy::kPartitioned;
    options_.request_timeout = 200ms;
    options_.max_attempts = 3;
    options_.reconnect_timeout = 5000ms;
    auto c = Client::Connect(options_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
  }
  // The longest a traversal may take before it must have answered.
  Clock::duration Budget() const { return options_.request_timeout * (options_.max_attempts + 1) + 1s; }
  // A far u64 on `node` holding `value`.
  uint64_t Cell(uint32_t node, uint64_t value) {
    auto a = client_->Allocate(8, node);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    if (!a.ok()) return 0;
    EXPECT_TRUE(client_->Write(*a, &value, 8).ok());
    return *a;
  }
  // Its value, read by an offloaded one-iteration traversal.
  Result<TraversalResult> ReadByTraversal(uint64_t cell) {
    TraverseOptions off;
    off.mode = ExecutionMode::kOffload;
    return client_->Traverse(read_, cell, std::vector<uint8_t>(8, 0), off);
  }
  ProgramRef read_ = Build(kReadOne);
  LocalRack rack_;
  ClientOptions options_;
  std::unique_ptr<Client> client_;
};

TEST_F(NodeFailures, KilledMemoryNodeFailsClearlyTheOtherServesAndTheRestartedOneServesItsDataAgain) {
  const ProgramRef& read = read_;
  // 16 cells on each node with known values.
  std::map<uint64_t, uint64_t> cells[2];
  for (uint32_t n = 0; n < 2; ++n) {
    for (uint64_t i = 0; i < 16; ++i) {
      auto a = client_->Allocate(8, n);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      const uint64_t v = 1000 * (n + 1) + i;
      ASSERT_TRUE(client_->Write(*a, &v, 8).ok());
      cells[n][*a] = v;
    }
  }
  TraverseOptions off;
  off.mode = ExecutionMode::kOffload;
  // A running workload over both nodes, two traversals in flight; node 1 is
  // killed a third of the way in.
  uint64_t ok[2] = {0, 0}, failed_dead = 0, failed_alive = 0;
  bool killed = false;
  for (int round = 0; round < 90; ++round) {
    if (round == 30) {
      rack_.memnode(1).Signal(SIGKILL);
      ASSERT_NE(rack_.memnode(1).Wait(10s), -1);
      killed = true;
    }
    for (uint32_t n = 0; n < 2; ++n) {
      auto it = std::next(cells[n].begin(), round % 16);
      const uint64_t addr = it->first, want = it->second;
      client_->TraverseAsync(read, addr, std::vector<uint8_t>(8, 0), off, [&, n, want](Result<TraversalResult> r) {
        if (r.ok()) {
          EXPECT_EQ(r->status, TraversalStatus::kDone);
          EXPECT_EQ(Sp0(*r), want);
          ++ok[n];
          return;
        }
        const bool clear = r.status().code() == Status::Code::kUnavailable || r.status().code() == Status::Code::kTimeout;
        EXPECT_TRUE(clear) << r.status().ToString();
        if (n == 1 && killed) {
          ++failed_dead;
        } else {
          ++failed_alive;
          ADD_FAILURE() << "node " << n << " (alive) failed: " << r.status().ToString();
        }
      });
    }
    // Every request is answered (or fails) within its retry budget: the
    // bounded wait is the check, not a measured time.
    ASSERT_TRUE(client_->WaitAll(std::chrono::duration_cast<std::chrono::milliseconds>(Budget())).ok());
  }
  EXPECT_EQ(ok[0], 90u);
  EXPECT_EQ(failed_alive, 0u);
  EXPECT_GE(ok[1], 30u);
  EXPECT_EQ(failed_dead + ok[1], 90u);
  EXPECT_GT(failed_dead, 50u) << "after the kill, requests to node 1 fail";
  // One-sided access to the dead node: a clear error naming it, at once.
  uint64_t v = 0;
  Status dead = client_->Read(cells[1].begin()->first, &v, 8);
  EXPECT_EQ(dead.code(), Status::Code::kUnavailable) << dead.ToString();
  EXPECT_NE(dead.message().find("memory node 1"), std::string::npos) << dead.ToString();

  // Restarted under the same pool name: it re-attaches the pool its
  // predecessor left, so everything written before the crash is there.
  rack_.StartMemNode(1, /*pool_mib=*/8);
  ASSERT_TRUE(rack_.Join(2));
  EXPECT_NE(rack_.memnode(1).Log().find("re-attached the pool"), std::string::npos) << rack_.memnode(1).Log();
  for (const auto& [addr, want] : cells[1]) {
    auto r = client_->Traverse(read, addr, std::vector<uint8_t>(8, 0), off);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, TraversalStatus::kDone);
    EXPECT_EQ(Sp0(*r), want);
    ASSERT_TRUE(client_->Read(addr, &v, 8).ok());  // the client reconnects for one-sided access
    EXPECT_EQ(v, want);
  }
  EXPECT_GE(client_->counters().reconnections, 1u);
  // Its allocations survived too: a new one does not overlap the old cells,
  // and writes land.
  auto fresh = client_->Allocate(8, 1);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(cells[1].count(*fresh), 0u);
  const uint64_t seven = 7;
  ASSERT_TRUE(client_->Write(cells[1].begin()->first, &seven, 8).ok());
  auto r = client_->Traverse(read, cells[1].begin()->first, std::vector<uint8_t>(8, 0), off);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Sp0(*r), 7u);
}

// ClientOptions::ride_out_unavailable: a traversal to a dead memory node is
// re-sent under its id until the node is back (then it is answered) or the
// ride-out time has passed (then Unavailable says so).
TEST_F(NodeFailures, ATraversalRidesOutAMemoryNodeRestartWithinItsRideOutTime) {
  const uint64_t v = 4242;
  const uint64_t a = Cell(1, v);
  rack_.memnode(1).Signal(SIGKILL);
  ASSERT_NE(rack_.memnode(1).Wait(10s), -1);
  // Until the switch has noticed, a request is lost rather than refused.
  const auto noticed_by = Clock::now() + 10s;
  Result<TraversalResult> r = ReadByTraversal(a);
  while (!(!r.ok() && r.status().code() == Status::Code::kUnavailable) && Clock::now() < noticed_by)
    r = ReadByTraversal(a);
  ASSERT_EQ(r.status().code(), Status::Code::kUnavailable) << r.status().ToString();
  EXPECT_EQ(r.status().message().find("re-sent"), std::string::npos) << "no ride-out by default";

  ClientOptions patient = options_;
  patient.ride_out_unavailable = 20000ms;
  patient.unavailable_retry_interval = 20ms;
  auto c = Client::Connect(patient);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  TraverseOptions off;
  off.mode = ExecutionMode::kOffload;
  std::optional<Result<TraversalResult>> got;
  (*c)->TraverseAsync(read_, a, std::vector<uint8_t>(8, 0), off, [&](Result<TraversalResult> x) { got = std::move(x); });
  // While the node is down the request stays pending and is re-sent: it is
  // still pending after its second re-send (however long the machine takes
  // to get there; the deadline only bounds a hang).
  const auto resent_by = Clock::now() + 15s;
  while ((*c)->counters().unavailable_resends < 2 && Clock::now() < resent_by) {
    ASSERT_EQ((*c)->WaitAll(50ms).code(), Status::Code::kTimeout);
    ASSERT_FALSE(got.has_value()) << got->status().ToString();
  }
  EXPECT_GE((*c)->counters().unavailable_resends, 2u);
  EXPECT_FALSE(got.has_value());
  // Back (re-attaching its pool): the same request is answered.
  rack_.StartMemNode(1, /*pool_mib=*/8);
  ASSERT_TRUE((*c)->WaitAll(15000ms).ok());
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->ok()) << got->status().ToString();
  EXPECT_EQ(Sp0(**got), v);

  // A ride-out that ends with the node still down is Unavailable, and says so.
  // Connected while the node is up: a client connecting just after the kill
  // may find the switch still listing the node, and fail to reach it.
  patient.ride_out_unavailable = 300ms;
  auto brief = Client::Connect(patient);
  ASSERT_TRUE(brief.ok()) << brief.status().ToString();
  rack_.memnode(1).Signal(SIGKILL);
  ASSERT_NE(rack_.memnode(1).Wait(10s), -1);
  const auto gave_up_by = Clock::now() + 10s;
  Result<TraversalResult> last = (*brief)->Traverse(read_, a, std::vector<uint8_t>(8, 0), off);
  while (!(!last.ok() && last.status().code() == Status::Code::kUnavailable) && Clock::now() < gave_up_by)
    last = (*brief)->Traverse(read_, a, std::vector<uint8_t>(8, 0), off);
  ASSERT_EQ(last.status().code(), Status::Code::kUnavailable) << last.status().ToString();
  EXPECT_NE(last.status().message().find("re-sent for 300 ms"), std::string::npos) << last.status().ToString();
}

// A STORE-bearing traversal that crosses memory nodes (increment a counter
// on node 0, follow its pointer, increment one on node 1) while node 1 is
// killed and restarted: continuations target it while it dies, while it is
// down and while it comes back.  Nothing is lost (every request is answered:
// done, or OutcomeUnknown where node 1 restarted while running its part) and
// nothing runs twice: node 0, which never restarts, applied each request's
// increment exactly once although the client re-sent the requests under
// their ids until node 1 was back, and node 1 applied each acknowledged one
// once.  In whichever routing the rack runs (scripts/routing_tests.sh runs
// this file with PULSE_ROUTING=switch too).
TEST_F(NodeFailures, ContinuationsTargetingARestartingMemoryNodeAreNeitherLostNorRunTwice) {
  // Each pair: {counter, next} on node 0 -> {counter, 0} on node 1.
  auto step = Build(testing::kIncrementPairProgram);
  ASSERT_TRUE(step->info().has_store);
  constexpr uint32_t kPairs = 4;
  uint64_t first[kPairs], second[kPairs];
  for (uint32_t i = 0; i < kPairs; ++i) {
    auto b = client_->Allocate(16, 1);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    auto a = client_->Allocate(16, 0);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    const uint64_t tail[2] = {0, 0}, head[2] = {0, *b};
    ASSERT_TRUE(client_->Write(*b, tail, sizeof tail).ok());
    ASSERT_TRUE(client_->Write(*a, head, sizeof head).ok());
    first[i] = *a;
    second[i] = *b;
  }
  ClientOptions patient = options_;
  patient.ride_out_unavailable = 60000ms;
  patient.unavailable_retry_interval = 20ms;
  patient.max_attempts = 100;  // a continuation lost into the dying connection: re-sent under its id
  auto c = Client::Connect(patient);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  TraverseOptions off;
  off.mode = ExecutionMode::kOffload;
  struct Answer {
    uint64_t at_first, at_second;
  };
  std::vector<Answer> done[kPairs];
  uint64_t sent[kPairs] = {}, unknown[kPairs] = {}, lost = 0;
  auto issue = [&](uint32_t count) {
    for (uint32_t k = 0; k < count; ++k) {
      const uint32_t i = k % kPairs;
      ++sent[i];
      (*c)->TraverseAsync(step, first[i], std::vector<uint8_t>(16, 0), off, [&, i](Result<TraversalResult> r) {
        if (!r.ok() && r.status().code() == Status::Code::kOutcomeUnknown) {
          ++unknown[i];
          return;
        }
        if (!r.ok() || r->status != TraversalStatus::kDone) {
          ++lost;
          ADD_FAILURE() << (r.ok() ? TraversalStatusName(r->status) : r.status().ToString());
          return;
        }
        uint64_t sp[2];
        std::memcpy(sp, r->scratch.data(), sizeof sp);
        done[i].push_back({sp[0], sp[1]});
      });
    }
  };
  issue(24);  // in flight when node 1 dies
  rack_.memnode(1).Signal(SIGKILL);
  ASSERT_NE(rack_.memnode(1).Wait(10s), -1);
  issue(24);  // their continuations target a dead node
  // Until it is back they are pending (re-sent, or waiting for an answer).
  EXPECT_EQ((*c)->WaitAll(200ms).code(), Status::Code::kTimeout);
  rack_.StartMemNode(1, /*pool_mib=*/8);  // re-attaches its pool and its STORE record
  issue(24);  // while it comes back
  // A request still pending here is one whose node died (under ASan an
  // error report aborts the process, as Peers::MemNode's read of a freed
  // routing entry would have) or a lost one: say which.
  Status waited = (*c)->WaitAll(60s);
  ASSERT_TRUE(waited.ok()) << waited.ToString() << "; memory node 0 "
                           << (rack_.memnode(0).Exited() ? "exited" : "runs") << ", memory node 1 "
                           << (rack_.memnode(1).Exited() ? "exited" : "runs") << "\nnode 0:\n"
                           << rack_.memnode(0).Log() << "\nnode 1:\n" << rack_.memnode(1).Log();
  EXPECT_EQ(lost, 0u);
  for (uint32_t i = 0; i < kPairs; ++i) {
    SCOPED_TRACE(i);
    uint64_t at_first = 0, at_second = 0;
    ASSERT_TRUE((*c)->Read(first[i], &at_first, 8).ok());
    ASSERT_TRUE((*c)->Read(second[i], &at_second, 8).ok());
    ASSERT_EQ(done[i].size() + unknown[i], sent[i]) << "every request answered";
    // Node 0 never restarted: each request's first increment once.
    EXPECT_EQ(at_first, sent[i]);
    // Node 1: each acknowledged increment once; one whose outcome is unknown
    // at most once.
    EXPECT_GE(at_second, done[i].size());
    EXPECT_LE(at_second, done[i].size() + unknown[i]);
    // Each acknowledged request saw its own increments: no two saw the same
    // count on either node (one run twice would have repeated an answer
    // from a later count).
    std::set<uint64_t> seen_first, seen_second;
    for (const Answer& a : done[i]) {
      EXPECT_TRUE(seen_first.insert(a.at_first).second) << a.at_first;
      EXPECT_TRUE(seen_second.insert(a.at_second).second) << a.at_second;
      EXPECT_GE(a.at_first, 1u);
      EXPECT_LE(a.at_first, at_first);
      EXPECT_GE(a.at_second, 1u);
      EXPECT_LE(a.at_second, at_second);
    }
  }
  EXPECT_GE((*c)->counters().unavailable_resends + (*c)->counters().retransmissions, 1u)
      << "the requests waited out the restart";
}

TEST_F(NodeFailures, ClientsRejoinARestartedSwitch) {
  const uint64_t v = 4242;
  const uint64_t a = Cell(0, v);
  ASSERT_TRUE(ReadByTraversal(a).ok());
  const bool direct = rack_.Routing() == "direct";
  rack_.switch_process().Signal(SIGKILL);
  ASSERT_NE(rack_.switch_process().Wait(10s), -1);
  ASSERT_TRUE(rack_.memnode(0).WaitForLog("lost the switch", 10s)) << rack_.memnode(0).Log();
  NodeProcess second({"switch", "--listen", fmt::format("127.0.0.1:{}", rack_.switch_port())});
  ASSERT_TRUE(second.WaitForLog("listening on", 10s)) << second.Log();
  // The next traversal reconnects (bounded) and waits for the memory nodes
  // to re-register with the new switch.
  auto r = ReadByTraversal(a);
  ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << second.Log();
  EXPECT_EQ(Sp0(*r), v);
  // Under direct routing the switch is not on the data path: the traversal
  // needed no reconnection.
  if (!direct) EXPECT_GE(client_->counters().reconnections, 1u);
  // Both memory nodes serve through it.
  r = ReadByTraversal(Cell(1, v));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Sp0(*r), v);
}

TEST_F(NodeFailures, ASwitchThatStaysDownIsReportedAsUnavailable) {
  const uint64_t v = 99;
  const uint64_t a = Cell(0, v);
  const bool direct = rack_.Routing() == "direct";
  rack_.switch_process().Signal(SIGKILL);
  ASSERT_NE(rack_.switch_process().Wait(10s), -1);
  auto r = ReadByTraversal(a);
  if (direct) {
    // The switch is the control plane only: traversals go on without it.
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(Sp0(*r), v);
    return;
  }
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable) << r.status().ToString();
  EXPECT_NE(r.status().message().find(options_.switch_address), std::string::npos) << r.status().ToString();
  const std::string budget = fmt::format("reconnecting for {} ms failed", options_.reconnect_timeout.count());
  EXPECT_NE(r.status().message().find(budget), std::string::npos) << "gave up after its reconnection budget: "
                                                                    << r.status().ToString();
  // Until the budget has passed again, calls fail with that remembered
  // failure instead of trying once more (no reconnection, same answer).
  const uint64_t reconnections = client_->counters().reconnections;
  auto again = ReadByTraversal(a);
  EXPECT_EQ(again.status().code(), Status::Code::kUnavailable) << again.status().ToString();
  EXPECT_NE(again.status().message().find(budget), std::string::npos) << again.status().ToString();
  EXPECT_EQ(client_->counters().reconnections, reconnections);
  // One-sided access goes straight to the memory node: it still works.
  uint64_t got = 0;
  ASSERT_TRUE(client_->Read(a, &got, 8).ok());
  EXPECT_EQ(got, v);
}

}  // namespace
}  // namespace pulse
