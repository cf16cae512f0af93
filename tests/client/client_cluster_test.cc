// The client against a real cluster (switch and memory nodes as processes):
// Listing 3 compiled from C, run offloaded and at the CPU node, checked
// against std::unordered_map; many traversals in flight; the offload rule;
// dead nodes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include <map>
#include <random>
#include <unordered_map>

#include "compiler/iterators/nodes.h"
#include "pulse/assembler.h"
#include "pulse/client.h"
#include "pulse/iterators/unordered_map_find.h"
#include "support/local_rack.h"

namespace pulse {
namespace {

using testing::LocalRack;

constexpr uint64_t kBuckets = 61;  // odd: consecutive keys of a chain alternate nodes

ProgramRef UmapFind() {
  auto p = VerifiedProgram::FromBytes(iterators::unordered_map_find());
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

// A chained hash table in far memory: a bucket array of far pointers and
// nodes {key, value, next} (tests/compiler/iterators/nodes.h), spread over
// the memory nodes by the allocation policy.
class FarHashTable {
 public:
  explicit FarHashTable(Client* client) : client_(client) {
    buckets_ = *client->Allocate(kBuckets * 8);
    std::vector<uint64_t> zero(kBuckets, 0);
    EXPECT_TRUE(client->Write(buckets_, zero.data(), zero.size() * 8).ok());
  }
  void Insert(uint64_t key, uint64_t value) {
    const uint64_t slot = buckets_ + (key % kBuckets) * 8;
    uint64_t head = 0;
    ASSERT_TRUE(client_->Read(slot, &head, 8).ok());
    node n{key, value, head};
    auto addr = client_->Allocate(sizeof(node));
    ASSERT_TRUE(addr.ok()) << addr.status().ToString();
    ASSERT_TRUE(client_->Write(*addr, &n, sizeof(n)).ok());
    ASSERT_TRUE(client_->Write(slot, &*addr, 8).ok());
  }
  // init(): the bucket's first node (0 for an empty bucket) and the key.
  uint64_t Head(uint64_t key) {
    uint64_t head = 0;
    EXPECT_TRUE(client_->Read(buckets_ + (key % kBuckets) * 8, &head, 8).ok());
    return head;
  }

 private:
  Client* client_;
  uint64_t buckets_ = 0;
};

std::vector<uint8_t> KeyScratch(uint64_t key) {
  std::vector<uint8_t> s(8);
  std::memcpy(s.data(), &key, 8);
  return s;
}

uint64_t Answer(const TraversalResult& r) {
  uint64_t v;
  std::memcpy(&v, r.scratch.data(), 8);
  return v;
}

class ClientCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::SetUcxTestEnvironment();
    ASSERT_TRUE(StartRack());
    options_.switch_address = fmt::format("127.0.0.1:{}", rack_.switch_port());
    options_.slab_bytes = 4096;  // small slabs: chains cross memory nodes
    options_.request_timeout = std::chrono::milliseconds(300);
    options_.max_attempts = 3;
    auto c = Client::Connect(options_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
  }
  virtual bool StartRack() { return rack_.Start(2, /*pool_mib=*/16); }
  LocalRack rack_;
  ClientOptions options_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientCluster, ListingThreeOffloadedAndAtTheCpuNodeMatchUnorderedMap) {
  ASSERT_EQ(client_->memory_nodes(), 2u);
  FarHashTable table(client_.get());
  std::unordered_map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(17);
  for (int i = 0; i < 1500; ++i) {
    const uint64_t key = rng() % 5000, value = rng();
    if (native.count(key)) continue;
    native[key] = value;
    table.Insert(key, value);
  }
  auto program = UmapFind();
  int hits = 0;
  for (int i = 0; i < 300; ++i) {
    const uint64_t key = rng() % 5500;
    const uint64_t head = table.Head(key);
    if (head == 0) continue;  // init() answers an empty bucket itself
    TraverseOptions off, local;
    off.mode = ExecutionMode::kOffload;
    local.mode = ExecutionMode::kCpuNode;
    auto a = client_->Traverse(program, head, KeyScratch(key), off);
    auto b = client_->Traverse(program, head, KeyScratch(key), local);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    ASSERT_EQ(a->status, TraversalStatus::kDone);
    EXPECT_TRUE(a->offloaded);
    EXPECT_FALSE(b->offloaded);
    EXPECT_EQ(a->scratch, b->scratch);  // the two execution paths agree byte for byte
    EXPECT_EQ(a->iterations, b->iterations);
    auto it = native.find(key);
    if (it != native.end()) {
      EXPECT_EQ(Answer(*a), it->second);
      ++hits;
    } else {
      EXPECT_EQ(static_cast<uint32_t>(Answer(*a)), KEY_NOT_FOUND);
    }
  }
  EXPECT_GT(hits, 50);
  EXPECT_GT(client_->counters().remote_reads, 300u);  // the CPU-node path read windows remotely
  EXPECT_GT(rack_.Continuations(), 0u) << "chains should cross memory nodes";
}

TEST_F(ClientCluster, ManyAsyncTraversalsInFlight) {
  FarHashTable table(client_.get());
  std::unordered_map<uint64_t, uint64_t> native;
  for (uint64_t k = 0; k < 400; ++k) {
    native[k * 7] = k * 1000 + 1;
    table.Insert(k * 7, k * 1000 + 1);
  }
  auto program = UmapFind();
  std::vector<std::pair<uint64_t, uint64_t>> got;
  TraverseOptions off;
  off.mode = ExecutionMode::kOffload;
  std::vector<uint64_t> heads;  // init() for every key first: a synchronous read drives the fabric
  for (uint64_t k = 0; k < 400; k += 2) heads.push_back(table.Head(k * 7));
  for (uint64_t k = 0; k < 400; k += 2) {
    const uint64_t key = k * 7;
    client_->TraverseAsync(program, heads[k / 2], KeyScratch(key), off, [&got, key](Result<TraversalResult> r) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      got.emplace_back(key, Answer(*r));
    });
  }
  EXPECT_GT(client_->pending(), 10u);
  ASSERT_TRUE(client_->WaitAll(std::chrono::seconds(20)).ok());
  ASSERT_EQ(got.size(), 200u);
  for (auto& [key, value] : got) EXPECT_EQ(value, native[key]);
  // Issued together, the 200 requests left in envelopes of at most 16
  // (ClientOptions::batching): far fewer messages than requests.
  const ClientCounters& c = client_->counters();
  EXPECT_GE(c.requests_carried, 200u);
  EXPECT_LE(c.request_messages, c.requests_carried - 150) << c.request_messages << " messages";
}

TEST_F(ClientCluster, WithoutAggregationEveryRequestIsItsOwnMessageAndAnswersAreTheSame) {
  FarHashTable table(client_.get());
  for (uint64_t k = 0; k < 100; ++k) table.Insert(k * 3, k + 5);
  ClientOptions lone = options_;
  lone.batching.max_messages = 1;
  auto plain = Client::Connect(lone);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto program = UmapFind();
  TraverseOptions off;
  off.mode = ExecutionMode::kOffload;
  std::vector<uint64_t> heads;
  for (uint64_t k = 0; k < 100; ++k) heads.push_back(table.Head(k * 3));
  std::map<uint64_t, uint64_t> batched_answers, plain_answers;
  for (auto [client, answers_of_client] : {std::pair{client_.get(), &batched_answers}, {plain->get(), &plain_answers}}) {
    std::map<uint64_t, uint64_t>* answers = answers_of_client;  // a structured binding cannot be captured before C++20 in clang 14
    for (uint64_t k = 0; k < 100; ++k)
      client->TraverseAsync(program, heads[k], KeyScratch(k * 3), off, [answers, k](Result<TraversalResult> r) {
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        (*answers)[k] = Answer(*r);
      });
    ASSERT_TRUE(client->WaitAll(std::chrono::seconds(20)).ok());
  }
  EXPECT_EQ(batched_answers, plain_answers);
  ASSERT_EQ(plain_answers.size(), 100u);
  for (auto [k, v] : plain_answers) EXPECT_EQ(v, k + 5);
  const ClientCounters& c = (*plain)->counters();
  EXPECT_EQ(c.request_messages, c.requests_carried);
  EXPECT_LT(client_->counters().request_messages, client_->counters().requests_carried);
}

TEST_F(ClientCluster, OffloadDecisionFollowsEta) {
  FarHashTable table(client_.get());
  table.Insert(5, 55);
  auto program = UmapFind();
  const uint32_t n = program->info().longest_path;
  DispatchPolicy p = client_->dispatch_policy();
  p.mode = ExecutionMode::kAuto;
  p.t_i_ns = 1.0;
  p.t_d_ns = 10.0;
  p.eta = (n - 1) / 10.0;  // t_c = n > eta * t_d: run at the CPU node
  client_->SetDispatchPolicy(p);
  auto r = client_->Traverse(program, table.Head(5), KeyScratch(5));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, TraversalStatus::kDone);
  EXPECT_FALSE(r->offloaded);
  EXPECT_EQ(Answer(*r), 55u);
  p.eta = (n + 1) / 10.0;  // now t_c < eta * t_d: offload
  client_->SetDispatchPolicy(p);
  r = client_->Traverse(program, table.Head(5), KeyScratch(5));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, TraversalStatus::kDone);
  EXPECT_TRUE(r->offloaded);
  EXPECT_EQ(Answer(*r), 55u);
}

TEST_F(ClientCluster, PulseAccReissuesFromTheCpuNode) {
  FarHashTable table(client_.get());
  std::unordered_map<uint64_t, uint64_t> native;
  for (uint64_t k = 0; k < 600; ++k) {
    native[k] = k + 1;
    table.Insert(k, k + 1);
  }
  auto program = UmapFind();
  TraverseOptions acc;
  acc.mode = ExecutionMode::kOffload;
  acc.pulse_acc = true;
  uint32_t issues = 0;
  for (uint64_t k = 0; k < 600; k += 37) {
    auto r = client_->Traverse(program, table.Head(k), KeyScratch(k), acc);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(Answer(*r), native[k]);
    issues += r->issues;
  }
  EXPECT_GT(issues, 17u) << "some chains cross nodes, so some lookups need more than one issue";
}

TEST_F(ClientCluster, DeadMemoryNodeGivesAClearErrorAndTheOtherKeepsServing) {
  auto program = UmapFind();
  ClientOptions o = options_;
  o.policy = AllocationPolicy::kPartitioned;
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok());
  Client& client = **c;
  uint64_t on[2];
  for (uint32_t n = 0; n < 2; ++n) {
    on[n] = *client.Allocate(sizeof(node), n);
    node x{9, 90 + n, 0};
    ASSERT_TRUE(client.Write(on[n], &x, sizeof(x)).ok());
  }
  TraverseOptions off;
  off.mode = ExecutionMode::kOffload;
  ASSERT_EQ(Answer(*client.Traverse(program, on[1], KeyScratch(9), off)), 91u);
  rack_.memnode(1).Kill();
  const ClientCounters before = client.counters();
  auto dead = client.Traverse(program, on[1], KeyScratch(9), off);
  ASSERT_FALSE(dead.ok());
  EXPECT_TRUE(dead.status().code() == Status::Code::kUnavailable || dead.status().code() == Status::Code::kTimeout)
      << dead.status().ToString();
  // Not a hang: either the switch refused it, or the client gave up after
  // its retry budget (one timeout, at most max_attempts sends).
  if (dead.status().code() == Status::Code::kTimeout) {
    EXPECT_EQ(client.counters().timeouts, before.timeouts + 1);
    EXPECT_LE(client.counters().retransmissions - before.retransmissions, o.max_attempts);
  }
  auto alive = client.Traverse(program, on[0], KeyScratch(9), off);
  ASSERT_TRUE(alive.ok()) << alive.status().ToString();
  EXPECT_EQ(Answer(*alive), 90u);
}

// The ring request path (docs/ring.md), forced on (kAuto takes it only
// where the puts into the node's rings are one-sided), against a client
// forced onto messages: the same traversals give the same answers, requests
// really went through the rings, and a ring with few slots sends the
// overflow through the switch.
TEST_F(ClientCluster, RingPathAnswersLikeTheMessagePath) {
  FarHashTable table(client_.get());
  std::unordered_map<uint64_t, uint64_t> native;
  std::mt19937_64 rng(23);
  for (int i = 0; i < 800; ++i) {
    const uint64_t key = rng() % 3000, value = rng();
    if (native.count(key)) continue;
    native[key] = value;
    table.Insert(key, value);
  }
  ClientOptions ring_options = options_;
  ring_options.request_path = RequestPath::kRing;
  ring_options.ring_slots = 8;
  auto rc = Client::Connect(ring_options);
  ASSERT_TRUE(rc.ok()) << rc.status().ToString();
  std::unique_ptr<Client> ring = std::move(*rc);
  ClientOptions am_options = options_;
  am_options.request_path = RequestPath::kMessages;
  auto ac = Client::Connect(am_options);
  ASSERT_TRUE(ac.ok()) << ac.status().ToString();
  std::unique_ptr<Client> am = std::move(*ac);
  auto program = UmapFind();
  TraverseOptions off;
  off.mode = ExecutionMode::kOffload;
  for (int i = 0; i < 200; ++i) {
    const uint64_t key = rng() % 3300;
    const uint64_t head = table.Head(key);
    if (head == 0) continue;
    auto a = ring->Traverse(program, head, KeyScratch(key), off);
    auto b = am->Traverse(program, head, KeyScratch(key), off);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(a->status, b->status);
    EXPECT_EQ(a->scratch, b->scratch);
    EXPECT_EQ(a->iterations, b->iterations);
  }
  EXPECT_GT(ring->counters().ring_requests, 0u);
  EXPECT_EQ(am->counters().ring_requests, 0u);
  // Many in flight: 8 slots per node, the rest by the switch, all answered.
  std::vector<std::pair<uint64_t, uint64_t>> got;
  std::vector<uint64_t> keys;
  for (const auto& [key, value] : native) keys.push_back(key);
  keys.resize(std::min<size_t>(keys.size(), 150));
  std::vector<uint64_t> heads;
  for (uint64_t key : keys) heads.push_back(table.Head(key));
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint64_t key = keys[i];
    ring->TraverseAsync(program, heads[i], KeyScratch(key), off, [&got, key](Result<TraversalResult> r) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      got.emplace_back(key, Answer(*r));
    });
  }
  ASSERT_TRUE(ring->WaitAll(std::chrono::seconds(20)).ok());
  ASSERT_EQ(got.size(), keys.size());
  for (auto& [key, value] : got) EXPECT_EQ(value, native[key]);
  EXPECT_GT(ring->counters().ring_fallbacks, 0u);
  uint64_t entries = 0;
  std::set<uint64_t> ring_cpu_nodes;  // the CPU nodes the nodes list with a ring (by_connection)
  for (uint32_t n = 0; n < 2; ++n) {
    auto stats = rack_.MemNodeStats(n);
    ASSERT_TRUE(stats["counters"].contains("ring")) << stats.dump();
    entries += stats["counters"]["ring"]["entries"].get<uint64_t>();
    EXPECT_EQ(stats["counters"]["ring"]["malformed"].get<uint64_t>(), 0u);
    for (const auto& [ep, path] : stats["counters"]["ring"]["by_connection"].items()) {
      EXPECT_EQ(path["layout"], "slots") << ep;
      if (path.contains("cpu_node")) ring_cpu_nodes.insert(path["cpu_node"].get<uint64_t>());
    }
  }
  EXPECT_GE(entries, ring->counters().ring_requests);
  // What `pulse cluster status` prints per connection: the ring client's
  // connections have rings; the message client's none.
  EXPECT_EQ(ring_cpu_nodes.count(ring->cpu_node()), 1u);
  if (am->counters().ring_requests == 0) EXPECT_EQ(ring_cpu_nodes.count(am->cpu_node()), 0u);
}

}  // namespace
}  // namespace pulse

namespace pulse {
namespace {

TEST_F(ClientCluster, OffloadRuleUsesTheMemoryNodesCalibration) {
  double worst_ratio = 0, t_i = 0, t_d = 0;
  for (uint32_t n = 0; n < 2; ++n) {
    auto hello = rack_.cpu().Call(rack_.view(n).ep, {{"op", "hello"}});
    ASSERT_TRUE(hello.contains("t_i_ns")) << hello.dump();
    const double ti = hello["t_i_ns"].get<double>(), td = hello["t_d_ns"].get<double>();
    EXPECT_GT(td, 0);
    if (ti / td > worst_ratio) {
      worst_ratio = ti / td;
      t_i = ti;
      t_d = td;
    }
  }
  EXPECT_EQ(client_->dispatch_policy().t_i_ns, t_i);
  EXPECT_EQ(client_->dispatch_policy().t_d_ns, t_d);
}

// Memory node 1 caches one program, and after every lookup a second program
// run there evicts the lookup's.  Memory node 0 continues chains to node 1 by
// hash once it has sent the code there, so node 1 answers kUnknownProgram,
// and the CPU node resumes the traversal with the code: every lookup still
// matches the reference.
class ClientClusterEviction : public ClientCluster {
 protected:
  bool StartRack() override {
    if (!rack_.StartSwitch()) return false;
    rack_.StartMemNode(0, /*pool_mib=*/16);
    rack_.StartMemNode(1, /*pool_mib=*/16, {"--program-cache-entries", "1"});
    return rack_.Join(2);
  }
};

TEST_F(ClientClusterEviction, ContinuationToANodeThatLostTheProgramIsResumedWithTheCode) {
  Client* client = client_.get();
  FarHashTable table(client);
  std::unordered_map<uint64_t, uint64_t> native;
  for (uint64_t k = 0; k < 600; ++k) {
    native[k] = k + 1;
    table.Insert(k, k + 1);
  }
  uint64_t on_node1 = 0;
  for (int i = 0; i < 1000 && on_node1 == 0; ++i) {
    auto a = client->Allocate(64);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    if (client->NodeOf(*a) == 1u) on_node1 = *a;
  }
  ASSERT_NE(on_node1, 0u);
  auto insns = Assemble("    LOAD data\n    RETURN");
  ASSERT_TRUE(insns.ok()) << insns.status().ToString();
  auto evictor = VerifiedProgram::Create(std::move(*insns));
  ASSERT_TRUE(evictor.ok()) << evictor.status().ToString();

  auto program = UmapFind();
  TraverseOptions off;
  off.mode = ExecutionMode::kOffload;
  for (uint64_t k = 0; k < 600; k += 7) {
    auto r = client->Traverse(program, table.Head(k), KeyScratch(k), off);
    ASSERT_TRUE(r.ok()) << "key " << k << ": " << r.status().ToString();
    EXPECT_EQ(Answer(*r), native[k]) << "key " << k;
    auto e = client->Traverse(*evictor, on_node1, std::vector<uint8_t>(8, 0), off);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
  }
  EXPECT_GT(client->counters().unknown_programs, 0u);
}

}  // namespace
}  // namespace pulse
