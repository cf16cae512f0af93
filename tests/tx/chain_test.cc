// pulse::tx::Chain on a local cluster of three memory nodes (head 0 ->
// 1 -> tail 2).  The backbone is differential: every acknowledged
// transaction is replayed, in the chain's sequence order, on a serial
// reference (std::map); each transaction's reads must equal the reference
// at its place in that order, the sequence numbers must be exactly 1..N (no
// acknowledged transaction lost, none committed twice or unacknowledged),
// and every replica's region must equal the reference at the end.
#include "pulse/tx/chain.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <map>
#include <random>
#include <string>

#include "client/client_internal.h"
#include "pulse/cluster.h"
#include "support/ds_cluster.h"
#include "support/local_rack.h"
#include "memnode/extension_entry.h"
#include "net/ring_client.h"
#include "tx/tx_wire.h"

namespace pulse::tx {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kNodes = 3;
constexpr uint64_t kSlot = 64;  // one key: a 64-byte slot of the region
constexpr uint64_t kKeys = 48;
constexpr uint64_t kRegion = 64 << 10;

// What one acknowledged transaction did and saw.
struct Acked {
  uint64_t seq = 0;
  Transaction tx;
  std::vector<std::vector<uint8_t>> values;
};

class TxChain : public ::testing::Test {
 protected:
  void SetUp() override {
    pulse::testing::SetUcxTestEnvironment();
    ASSERT_TRUE(rack_.Start(kNodes, /*pool_mib=*/16));
    creator_ = Connect(1);
    ASSERT_NE(creator_, nullptr);
    ChainOptions o;
    o.replicas = {0, 1, 2};
    o.region_bytes = kRegion;
    auto c = Chain::Create(creator_.get(), o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    chain_ = std::move(*c);
  }
  std::unique_ptr<Client> Connect(TenantId tenant) {
    ClientOptions options;
    options.switch_address = rack_.switch_address();
    options.policy = AllocationPolicy::kPartitioned;
    options.tenant = tenant;
    options.request_timeout = std::chrono::milliseconds(1000);
    auto c = Client::Connect(options);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }
  nlohmann::json TxStats(uint32_t node) { return rack_.MemNodeStats(node)["counters"]["tx"]; }
  // How the replicas should talk in this run (the memory nodes inherit the
  // test's environment): by ring; as messages because
  // PULSE_TX_REPLICA_PATH=am says so; or as messages because the transport
  // has no one-sided puts (UCX_TLS=tcp: TxReplicasOverTcp.tx_test).
  enum class Path { kRing, kMessagesAsked, kMessagesNoPuts };
  static Path ExpectedPath() {
    const char* path = std::getenv("PULSE_TX_REPLICA_PATH");
    if (path != nullptr && std::string(path) == "am") return Path::kMessagesAsked;
    const char* tls = std::getenv("UCX_TLS");
    if (tls != nullptr && std::string(tls) == "tcp") return Path::kMessagesNoPuts;
    return Path::kRing;
  }

  // A random transaction: (0,1), (4,2), (2,0) or (1,1), whole 64-byte slots.
  static Transaction RandomTx(std::mt19937_64& rng, uint64_t tag) {
    static constexpr std::pair<int, int> kShapes[] = {{0, 1}, {4, 2}, {2, 0}, {1, 1}};
    const auto [reads, writes] = kShapes[rng() % 4];
    Transaction tx;
    for (int i = 0; i < reads; ++i) tx.reads.push_back(TxRead{(rng() % kKeys) * kSlot, kSlot});
    for (int i = 0; i < writes; ++i) {
      TxWrite w{(rng() % kKeys) * kSlot, std::vector<uint8_t>(kSlot)};
      for (size_t b = 0; b < kSlot; ++b) w.data[b] = static_cast<uint8_t>((tag * 131 + i * 17 + b) ^ (tag >> 8));
      tx.writes.push_back(std::move(w));
    }
    return tx;
  }

  // Runs `total` random transactions from every client (up to 4 in flight
  // each), calling `midway` once half are acknowledged.
  void RunWorkload(std::vector<Chain*> chains, std::vector<Client*> clients, uint64_t total,
                   const std::function<void()>& midway) {
    std::mt19937_64 rng(15);
    uint64_t issued = 0, done = 0, tag = 1;
    bool called = false;
    std::vector<uint32_t> in_flight(chains.size(), 0);
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(120);
    while (done < total && Clock::now() < deadline) {
      for (size_t i = 0; i < chains.size(); ++i) {
        while (in_flight[i] < 4 && issued < total) {
          Transaction tx = RandomTx(rng, tag++);
          ++in_flight[i];
          ++issued;
          const Clock::time_point issued_at = Clock::now();
          chains[i]->ExecuteAsync(tx, [this, tx, i, issued_at, &in_flight, &done](Result<TxOutcome> r) {
            --in_flight[i];
            ++done;
            longest_wait_ = std::max(longest_wait_, Clock::now() - issued_at);
            if (!r.ok()) {
              ++errors_;
              ADD_FAILURE() << "transaction failed: " << r.status().ToString();
              return;
            }
            acked_.push_back(Acked{r->seq, tx, std::move(r->values)});
          });
        }
      }
      for (Client* c : clients) c->Poll();
      if (!called && midway && done >= total / 2) {
        called = true;
        midway();
      }
    }
    ASSERT_EQ(done, total) << "transactions still unanswered at the deadline";
    if (errors_ > 0) {
      for (uint32_t n = 0; n < kNodes; ++n)
        if (!rack_.memnode(n).Exited())
          std::cerr << "node " << n << " tx stats: " << TxStats(n).dump()
                    << "\nnode " << n << " net: " << rack_.MemNodeStats(n)["counters"]["net"].dump() << "\n";
      // Each client's view: who it believes alive, and what it sent.
      for (size_t i = 0; i < chains.size(); ++i) {
        const ChainCounters c = chains[i]->counters();
        std::cerr << "client " << i << ": live members";
        for (uint32_t m : chains[i]->LiveMembers()) std::cerr << " " << m;
        std::cerr << "; sent " << c.messages_sent << ", re-sent " << c.retransmissions << ", replies " << c.replies
                  << ", errors " << c.errors;
        if (i < clients.size()) {
          net::Worker& worker = ClientInternal::worker(*clients[i]);
          const net::Counters& n = worker.counters();
          std::cerr << "; its worker received " << n.messages_received << " messages, dropped " << n.messages_dropped
                    << ", saw " << n.endpoints_failed << " endpoints fail, holds " << worker.held_inbound()
                    << " undelivered";
          for (uint32_t m : chains[i]->LiveMembers()) {
            auto info = worker.DescribeEndpoint(ClientInternal::memnode_endpoint(*clients[i], m));
            std::cerr << "\n  to node " << m << ": " << (info.ok() ? *info : info.status().ToString());
          }
        }
        std::cerr << "\n";
      }
    }
  }

  // The reference check (see the file comment).
  void CheckAgainstReference(const std::vector<uint32_t>& replicas) {
    std::map<uint64_t, const Acked*> writers;
    std::multimap<uint64_t, const Acked*> readers;  // read-only: they saw the state after `seq`
    for (const Acked& a : acked_) {
      if (a.tx.writes.empty()) {
        readers.emplace(a.seq, &a);
      } else {
        ASSERT_TRUE(writers.emplace(a.seq, &a).second) << "two transactions acknowledged with seq " << a.seq;
      }
    }
    if (!writers.empty()) {
      EXPECT_EQ(writers.begin()->first, 1u);
      EXPECT_EQ(writers.rbegin()->first, writers.size()) << "a gap in the acknowledged sequence numbers";
    }
    std::map<uint64_t, std::vector<uint8_t>> ref;  // slot offset -> bytes (absent: zeroes)
    auto value = [&](uint64_t off) { return ref.count(off) ? ref[off] : std::vector<uint8_t>(kSlot, 0); };
    auto check_reads = [&](const Acked& a) {
      ASSERT_EQ(a.values.size(), a.tx.reads.size());
      for (size_t i = 0; i < a.values.size(); ++i)
        EXPECT_EQ(a.values[i], value(a.tx.reads[i].offset)) << "seq " << a.seq << " read " << i;
    };
    auto r = readers.begin();
    for (; r != readers.end() && r->first == 0; ++r) check_reads(*r->second);
    for (const auto& [seq, a] : writers) {
      check_reads(*a);
      for (const TxWrite& w : a->tx.writes) ref[w.offset] = w.data;
      for (; r != readers.end() && r->first == seq; ++r) check_reads(*r->second);
    }
    CheckReplicas(replicas, value);
  }
  // Every replica's kKeys slots equal `value` of each slot's offset.
  void CheckReplicas(const std::vector<uint32_t>& replicas,
                     const std::function<std::vector<uint8_t>(uint64_t)>& value) {
    for (uint32_t node : replicas) {
      auto bytes = chain_->ReadReplica(node, 0, kKeys * kSlot);
      ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
      for (uint64_t k = 0; k < kKeys; ++k) {
        std::vector<uint8_t> got(bytes->begin() + k * kSlot, bytes->begin() + (k + 1) * kSlot);
        EXPECT_EQ(got, value(k * kSlot)) << "replica " << node << " key " << k;
      }
    }
  }

  // `ops` random transactions from the creator, one at a time, each run by
  // ExecuteHyperLoop with probability `hyperloop_share` and by Execute
  // otherwise, against a serial reference (std::map): each one's reads
  // equal the reference before its writes; the chain numbers every write
  // of a HyperLoop transaction (one chain walk per write) and every
  // Execute with writes once, so the sequence numbers continue from the
  // last; each replica ends equal to the reference, having logged them
  // all; and the client did one one-sided read per HyperLoop read and sent
  // one request per HyperLoop write and per Execute.
  void RunSeriallyAgainstReference(uint64_t ops, double hyperloop_share) {
    std::mt19937_64 rng(25);
    std::bernoulli_distribution by_hyperloop(hyperloop_share);
    std::map<uint64_t, std::vector<uint8_t>> ref;  // slot offset -> bytes (absent: zeroes)
    auto value = [&](uint64_t off) { return ref.count(off) ? ref[off] : std::vector<uint8_t>(kSlot, 0); };
    std::map<uint64_t, bool> by_hyperloop_last;  // slot offset -> whether a HyperLoop write was its last
    uint64_t crossed_reads = 0;  // reads of a slot the other way of running last wrote
    const ChainCounters before = chain_->counters();
    uint64_t seq = 0, hyperloop_reads = 0, requests = 0, hyperloop_runs = 0;
    for (uint64_t i = 0; i < ops; ++i) {
      const Transaction tx = RandomTx(rng, i + 1);
      const bool hyperloop = by_hyperloop(rng);
      const std::string what = fmt::format("transaction {} ({} reads, {} writes) by {}", i, tx.reads.size(),
                                           tx.writes.size(), hyperloop ? "ExecuteHyperLoop" : "Execute");
      Result<TxOutcome> r = hyperloop ? chain_->ExecuteHyperLoop(tx) : chain_->Execute(tx);
      ASSERT_TRUE(r.ok()) << what << ": " << r.status().ToString();
      ASSERT_EQ(r->values.size(), tx.reads.size()) << what;
      for (size_t k = 0; k < tx.reads.size(); ++k) {
        EXPECT_EQ(r->values[k], value(tx.reads[k].offset)) << what << ", read " << k;
        auto last = by_hyperloop_last.find(tx.reads[k].offset);
        if (last != by_hyperloop_last.end() && last->second != hyperloop) ++crossed_reads;
      }
      for (const TxWrite& w : tx.writes) {
        ref[w.offset] = w.data;
        by_hyperloop_last[w.offset] = hyperloop;
      }
      if (!tx.writes.empty()) {
        seq += hyperloop ? tx.writes.size() : 1;
        EXPECT_EQ(r->seq, seq) << what;
      }
      if (hyperloop) {
        ++hyperloop_runs;
        hyperloop_reads += tx.reads.size();
        requests += tx.writes.size();
      } else {
        ++requests;
      }
    }
    const ChainCounters after = chain_->counters();
    if (hyperloop_share > 0 && hyperloop_share < 1 && ops >= 100) {
      // Enough to be sure (fixed seed) that both ways ran and read each other's writes.
      EXPECT_GT(hyperloop_runs, 0u);
      EXPECT_LT(hyperloop_runs, ops);
      EXPECT_GT(crossed_reads, 0u);
    }
    EXPECT_EQ(after.one_sided_reads - before.one_sided_reads, hyperloop_reads);
    EXPECT_EQ((after.messages_sent - after.retransmissions) - (before.messages_sent - before.retransmissions), requests);
    EXPECT_EQ(after.errors, before.errors);
    CheckReplicas({0, 1, 2}, value);
    for (uint32_t node = 0; node < kNodes; ++node) {
      auto logged = chain_->LastLogged(node);
      ASSERT_TRUE(logged.ok()) << logged.status().ToString();
      EXPECT_EQ(*logged, seq) << "node " << node;
    }
  }

  void KillRestartAndRejoin(uint32_t victim);

  // Restarts memory node `node` on its pool (it replays its log) and
  // rejoins it to the chain as the tail.
  void RestartAndRejoin(uint32_t node) {
    rack_.ForgetMemNode(node);
    rack_.StartMemNode(node, /*pool_mib=*/16);
    ASSERT_TRUE(rack_.Join(kNodes));
    Status rejoined = Status::Unavailable("not tried");
    for (int attempt = 0; attempt < 50 && !rejoined.ok(); ++attempt) {
      rejoined = chain_->Rejoin(node);
      if (!rejoined.ok()) creator_->Poll();
    }
    ASSERT_TRUE(rejoined.ok()) << rejoined.ToString();
  }
  // `ops` more random transactions from the creator and one new client
  // (attached with `options`), none failing.
  void RunMore(uint64_t ops, const ChainOptions& options = {}) {
    auto client = Connect(1);
    ASSERT_TRUE(client);
    auto attached = Chain::Attach(client.get(), chain_->handle(), options);
    ASSERT_TRUE(attached.ok());
    RunWorkload({chain_.get(), attached->get()}, {creator_.get(), client.get()}, ops, {});
    EXPECT_EQ(errors_, 0u);
  }

  pulse::testing::LocalRack rack_;
  std::unique_ptr<Client> creator_;
  std::unique_ptr<Chain> chain_;
  std::vector<Acked> acked_;
  uint64_t errors_ = 0;
  Clock::duration longest_wait_{};  // the longest a transaction waited for its callback
};

TEST_F(TxChain, ConcurrentClientsMatchASerialReference) {
  auto c2 = Connect(1), c3 = Connect(1);
  ASSERT_TRUE(c2 && c3);
  auto a2 = Chain::Attach(c2.get(), chain_->handle(), {});
  auto a3 = Chain::Attach(c3.get(), chain_->handle(), {});
  ASSERT_TRUE(a2.ok() && a3.ok());
  RunWorkload({chain_.get(), a2->get(), a3->get()}, {creator_.get(), c2.get(), c3.get()},
              ds::testing::ScaledOps(600), {});
  CheckAgainstReference({0, 1, 2});
  // One-sided reads at the tail see the last committed values.
  auto tail = chain_->Read(0, kSlot);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  nlohmann::json head = TxStats(0);
  EXPECT_GT(TxStats(2)["commits"].get<uint64_t>(), 0u);
  EXPECT_GT(head["log"]["syncs"].get<uint64_t>(), 0u);
  EXPECT_EQ(head["log"]["error"].get<std::string>(), "");
  // The way replicas talked: forwards down and acknowledgements up by
  // one-sided writes into each other's rings (this host's shared memory
  // has one-sided puts), every one accounted for; with
  // PULSE_TX_REPLICA_PATH=am (TxReplicasByMessage.tx_test) no ring is
  // opened; over TCP (TxReplicasOverTcp.tx_test) every open is refused,
  // saying why, and everything goes as messages.
  const Path path = ExpectedPath();
  std::vector<nlohmann::json> tx, ring;
  for (uint32_t node = 0; node < kNodes; ++node) {
    nlohmann::json counters = rack_.MemNodeStats(node)["counters"];
    tx.push_back(counters["tx"]);
    ring.push_back(counters["ring"]);
  }
  auto n = [](const nlohmann::json& j, const char* key) { return j[key].get<uint64_t>(); };
  EXPECT_GT(n(tx[0], "forwards_out"), 0u);
  EXPECT_GT(n(tx[1], "forwards_out"), 0u);
  EXPECT_GT(n(tx[1], "acks_out"), 0u);
  EXPECT_GT(n(tx[2], "acks_out"), 0u);
  for (uint32_t node = 0; node < kNodes; ++node) {
    const nlohmann::json& rings = tx[node]["replica_rings"];
    EXPECT_EQ(tx[node]["rings_between_replicas"].get<bool>(), path != Path::kMessagesAsked);
    const uint64_t neighbours = node == 1 ? 2 : 1;
    if (path != Path::kRing) {
      EXPECT_EQ(n(tx[node], "forwards_by_ring") + n(tx[node], "acks_by_ring"), 0u) << tx[node].dump();
      EXPECT_EQ(n(rings, "rings_opened"), 0u) << rings.dump();
      EXPECT_EQ(n(ring[node], "service_entries"), 0u) << ring[node].dump();
      if (path == Path::kMessagesNoPuts) {
        EXPECT_EQ(n(rings, "opens_failed"), neighbours) << rings.dump();
        EXPECT_EQ(n(rings, "by_message"), n(tx[node], "forwards_out") + n(tx[node], "acks_out")) << rings.dump();
        for (const auto& [ep, why] : rings["paths"].items())
          EXPECT_NE(why.get<std::string>().find("no one-sided puts"), std::string::npos) << ep << ": " << why;
      }
      continue;
    }
    // Entries that fit a slot with credit to spare (4 in flight per
    // client): all of them by ring, none refused.
    EXPECT_EQ(n(tx[node], "forwards_by_ring"), n(tx[node], "forwards_out")) << "node " << node << ": " << rings.dump();
    EXPECT_EQ(n(tx[node], "acks_by_ring"), n(tx[node], "acks_out")) << "node " << node << ": " << rings.dump();
    EXPECT_EQ(n(rings, "by_message"), 0u) << rings.dump();
    EXPECT_EQ(n(rings, "refused"), 0u) << rings.dump();
    // A ring to each neighbour: the middle has two.
    EXPECT_EQ(n(rings, "rings_opened"), neighbours) << "node " << node << ": " << rings.dump();
    // What a node's ring server handed its replica is what its neighbours
    // wrote: forwards from the one before, acknowledgements from the one after.
    const uint64_t from_before = node > 0 ? n(tx[node - 1], "forwards_by_ring") : 0;
    const uint64_t from_after = node + 1 < kNodes ? n(tx[node + 1], "acks_by_ring") : 0;
    EXPECT_EQ(n(ring[node], "service_entries"), from_before + from_after) << "node " << node << ": " << ring[node].dump();
    EXPECT_EQ(n(ring[node], "service_refused"), 0u) << ring[node].dump();
  }
}

// The HyperLoop-like baseline alone: random transactions, one at a time,
// against the serial reference (RunSeriallyAgainstReference).
TEST_F(TxChain, HyperLoopMatchesASerialReference) { RunSeriallyAgainstReference(ds::testing::ScaledOps(200), 1.0); }

// HyperLoop and Execute interleaved at random on the same keys: each sees
// what the other committed, as the serial reference says.
TEST_F(TxChain, HyperLoopAndExecuteInterleavedOnTheSameKeysMatchASerialReference) {
  RunSeriallyAgainstReference(ds::testing::ScaledOps(200), 0.5);
}

// Kills member `victim` mid-run, checks the shrunk chain, restarts and
// rejoins it, runs more, and compares the three replicas.
void TxChain::KillRestartAndRejoin(uint32_t victim) {
  auto c2 = Connect(1);
  ASSERT_TRUE(c2);
  auto a2 = Chain::Attach(c2.get(), chain_->handle(), {});
  ASSERT_TRUE(a2.ok());
  // The member dies with transactions in flight; its predecessor skips it.
  RunWorkload({chain_.get(), a2->get()}, {creator_.get(), c2.get()}, ds::testing::ScaledOps(600),
              [&] { rack_.memnode(victim).Kill(); });
  EXPECT_EQ(errors_, 0u);
  EXPECT_GT(TxStats(victim - 1)["members_skipped"].get<uint64_t>(), 0u) << "the predecessor should skip it";
  ASSERT_TRUE(chain_->Refresh().ok());
  EXPECT_EQ(chain_->handle().members.size(), 2u);
  CheckAgainstReference(victim == 1 ? std::vector<uint32_t>{0, 2} : std::vector<uint32_t>{0, 1});

  // Restarted: it re-attaches its pool, replays its log and, rejoining as
  // the tail, is backfilled with what it missed.
  RestartAndRejoin(victim);
  if (HasFatalFailure()) return;
  EXPECT_EQ(chain_->handle().members.back().node, victim);
  nlohmann::json restarted = TxStats(victim);
  EXPECT_GT(restarted["replayed"].get<uint64_t>(), 0u) << restarted.dump();
  // More transactions through the whole chain again (the attached client's
  // view is refreshed by its own Refresh), then everything compared.
  acked_.clear();
  RunMore(ds::testing::ScaledOps(200));
  // Quiesced: every replica holds the same bytes.
  auto r0 = chain_->ReadReplica(0, 0, kRegion), r1 = chain_->ReadReplica(1, 0, kRegion),
       r2 = chain_->ReadReplica(2, 0, kRegion);
  ASSERT_TRUE(r0.ok() && r1.ok() && r2.ok());
  EXPECT_TRUE(*r0 == *r1) << "replica 1 differs from the head";
  EXPECT_TRUE(*r0 == *r2) << "replica 2 differs from the head";
  auto s0 = chain_->LastLogged(0), s1 = chain_->LastLogged(victim);
  ASSERT_TRUE(s0.ok() && s1.ok());
  EXPECT_EQ(*s0, *s1);
  EXPECT_GT(TxStats(victim)["backfilled_in"].get<uint64_t>(), 0u) << "the rejoined member was not backfilled";
}

TEST_F(TxChain, MiddleReplicaKilledAndRestartedMidRunLosesNothing) { KillRestartAndRejoin(1); }

// The head dies (SIGKILL) with transactions of three clients in flight: each
// client re-sends what is unanswered to node 1, which takes over as head
// and answers what had committed with its original result.  Every
// transaction is answered (none OutcomeUnknown here: the new head knows
// them all) within its deadline, the acknowledged ones replay on the serial
// reference with sequence numbers exactly 1..N (none lost, none applied
// twice) and both live replicas hold the reference and logged exactly N.
TEST_F(TxChain, HeadKilledMidRunEveryAcknowledgedTransactionCommitsOnce) {
  auto c2 = Connect(1), c3 = Connect(1);
  ASSERT_TRUE(c2 && c3);
  ChainOptions options;  // the deadline below is this one's
  auto a2 = Chain::Attach(c2.get(), chain_->handle(), options);
  auto a3 = Chain::Attach(c3.get(), chain_->handle(), options);
  ASSERT_TRUE(a2.ok() && a3.ok());
  RunWorkload({chain_.get(), a2->get(), a3->get()}, {creator_.get(), c2.get(), c3.get()},
              ds::testing::ScaledOps(600), [&] { rack_.memnode(0).Kill(); });
  EXPECT_EQ(errors_, 0u);
  // Execute's own budget: request_timeout for each attempt and one more.
  EXPECT_LE(longest_wait_, options.request_timeout * (options.max_attempts + 1))
      << "a client waited past its deadline";
  nlohmann::json new_head = TxStats(1);
  EXPECT_GT(new_head["takeovers"].get<uint64_t>(), 0u) << new_head.dump();
  EXPECT_GT(new_head["retries"].get<uint64_t>(), 0u) << "the clients should have retried on node 1";
  EXPECT_EQ(new_head["outcome_unknown"].get<uint64_t>(), 0u);
  ASSERT_TRUE(chain_->Refresh().ok());
  ASSERT_EQ(chain_->handle().members.size(), 2u);
  EXPECT_EQ(chain_->handle().members.front().node, 1u);
  CheckAgainstReference({1, 2});
  uint64_t writers = 0;
  for (const Acked& a : acked_) writers += a.tx.writes.empty() ? 0 : 1;
  for (uint32_t node : {1u, 2u}) {
    auto last = chain_->LastLogged(node);
    ASSERT_TRUE(last.ok()) << last.status().ToString();
    EXPECT_EQ(*last, writers) << "node " << node << " committed a transaction no client saw acknowledged";
  }

  // The shrunk chain goes on under the new head; everything still matches.
  RunMore(ds::testing::ScaledOps(200), options);
  CheckAgainstReference({1, 2});

  // The old head restarts.  Its log may end with records it never
  // forwarded (their sequence numbers since reused by the new head): it
  // replays only up to the last point every member had committed, rejoins
  // as the tail, is backfilled from there, and ends identical to the rest.
  RestartAndRejoin(0);
  if (HasFatalFailure()) return;
  // Its last records were logged before every member had committed them.
  EXPECT_GT(TxStats(0)["replay_dropped"].get<uint64_t>(), 0u);
  RunMore(ds::testing::ScaledOps(200), options);
  CheckAgainstReference({1, 2, 0});
  auto s1 = chain_->LastLogged(1), s0 = chain_->LastLogged(0);
  ASSERT_TRUE(s1.ok() && s0.ok());
  EXPECT_EQ(*s1, *s0);
}
TEST_F(TxChain, TailKilledAndRestartedMidRunLosesNothing) { KillRestartAndRejoin(2); }

// Every member dies (SIGKILL) with 64 writing transactions sent and none
// answered yet (the client has not polled): a transaction whose answer
// came back is OK; every other one ends OutcomeUnknown (it was sent, so it
// may have committed), never Unavailable or Timeout, which would say it
// did not happen.  A transaction issued afterwards was never sent:
// Unavailable.
TEST_F(TxChain, WritesInFlightWhenEveryMemberDiesEndOutcomeUnknown) {
  std::vector<Result<TxOutcome>> results;
  for (uint64_t i = 0; i < 64; ++i) {
    Transaction tx;  // all on one key: they commit one after another
    tx.writes.push_back(TxWrite{0, std::vector<uint8_t>(kSlot, static_cast<uint8_t>(i))});
    chain_->ExecuteAsync(tx, [&results](Result<TxOutcome> r) { results.push_back(std::move(r)); });
  }
  for (uint32_t n = 0; n < kNodes; ++n) rack_.memnode(n).Kill();
  ASSERT_TRUE(chain_->WaitAll(std::chrono::seconds(30)).ok());
  ASSERT_EQ(results.size(), 64u);
  uint64_t unknown = 0;
  for (const Result<TxOutcome>& r : results) {
    if (r.ok()) continue;
    EXPECT_EQ(r.status().code(), Status::Code::kOutcomeUnknown) << r.status().ToString();
    ++unknown;
  }
  EXPECT_GT(unknown, 0u) << "64 transactions on one key committed before three processes were killed";
  Transaction late;
  late.writes.push_back(TxWrite{0, std::vector<uint8_t>(kSlot, 1)});
  EXPECT_EQ(chain_->Execute(late).status().code(), Status::Code::kUnavailable);
}

// Log truncation: with a small compaction threshold and 16 records kept,
// every member's log is compacted again and again during a run (what all
// members committed, beyond the last 16, is dropped); a member restarted
// afterwards replays its truncated log (fewer records than the chain
// committed, ending at the last one), rejoins, and the three replicas go on
// identical to the reference.
class TxChainCompacting : public TxChain {
 protected:
  void SetUp() override {
    ::setenv("PULSE_TX_LOG_COMPACT_BYTES", "8192", 1);  // the nodes started below inherit them
    ::setenv("PULSE_TX_LOG_KEEP_RECORDS", "16", 1);
    TxChain::SetUp();
  }
  void TearDown() override {
    ::unsetenv("PULSE_TX_LOG_COMPACT_BYTES");
    ::unsetenv("PULSE_TX_LOG_KEEP_RECORDS");
  }
};

TEST_F(TxChainCompacting, RestartedMemberReplaysItsTruncatedLog) {
  auto c2 = Connect(1);
  ASSERT_TRUE(c2);
  auto a2 = Chain::Attach(c2.get(), chain_->handle(), {});
  ASSERT_TRUE(a2.ok());
  RunWorkload({chain_.get(), a2->get()}, {creator_.get(), c2.get()}, ds::testing::ScaledOps(600), {});
  EXPECT_EQ(errors_, 0u);
  uint64_t writers = 0;
  for (const Acked& a : acked_) writers += a.tx.writes.empty() ? 0 : 1;
  for (uint32_t node = 0; node < kNodes; ++node) {
    nlohmann::json log = TxStats(node)["log"];
    EXPECT_GT(log["compactions"].get<uint64_t>(), 0u) << "node " << node << ": " << log.dump();
    EXPECT_GT(log["dropped"].get<uint64_t>(), 0u) << "node " << node;
    EXPECT_LT(log["dropped"].get<uint64_t>(), writers) << "node " << node << " dropped records it must keep";
    EXPECT_EQ(log["error"].get<std::string>(), "");
  }
  CheckAgainstReference({0, 1, 2});

  // The tail dies quiesced and restarts: it replays what its log kept.
  rack_.memnode(2).Kill();
  ASSERT_TRUE(ClientInternal::loop(*creator_)
                  .DriveUntil([&] { return chain_->LiveMembers().size() == 2; }, std::chrono::seconds(10))
                  .ok())
      << "the client did not see the tail die";
  ASSERT_TRUE(chain_->Refresh().ok());
  RestartAndRejoin(2);
  if (HasFatalFailure()) return;
  nlohmann::json restarted = TxStats(2);
  EXPECT_GT(restarted["replayed"].get<uint64_t>(), 0u) << restarted.dump();
  EXPECT_LT(restarted["replayed"].get<uint64_t>(), writers) << "the replayed log was not truncated";

  RunMore(ds::testing::ScaledOps(200));
  CheckAgainstReference({0, 1, 2});
  auto r0 = chain_->ReadReplica(0, 0, kRegion), r2 = chain_->ReadReplica(2, 0, kRegion);
  ASSERT_TRUE(r0.ok() && r2.ok());
  EXPECT_TRUE(*r0 == *r2) << "the restarted member differs from the head";
  auto s0 = chain_->LastLogged(0), s2 = chain_->LastLogged(2);
  ASSERT_TRUE(s0.ok() && s2.ok());
  EXPECT_EQ(*s0, *s2);
}

// tx.chain_length (the memory nodes' $PULSE_TX_MAX_CHAIN): a chain longer
// than the cluster allows is refused by name; one within it works.
class TxChainLimited : public TxChain {
 protected:
  void SetUp() override {
    pulse::testing::SetUcxTestEnvironment();
    ::setenv("PULSE_TX_MAX_CHAIN", "2", 1);  // the nodes started below inherit it
    ASSERT_TRUE(rack_.Start(kNodes, /*pool_mib=*/16));
    creator_ = Connect(1);
    ASSERT_NE(creator_, nullptr);
  }
  void TearDown() override { ::unsetenv("PULSE_TX_MAX_CHAIN"); }
};

TEST_F(TxChainLimited, ChainLongerThanTheClustersLengthIsRefused) {
  ChainOptions o;
  o.region_bytes = kRegion;
  o.replicas = {0, 1, 2};
  auto three = Chain::Create(creator_.get(), o);
  EXPECT_EQ(three.status().code(), Status::Code::kFailedPrecondition) << three.status().ToString();
  EXPECT_NE(three.status().message().find("tx.chain_length"), std::string::npos) << three.status().ToString();
  o.replicas = {1, 2};
  auto two = Chain::Create(creator_.get(), o);
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  Transaction put;
  put.writes.push_back(TxWrite{0, std::vector<uint8_t>(kSlot, 5)});
  ASSERT_TRUE((*two)->Execute(put).ok());
  auto v = (*two)->ReadReplica(1, 0, kSlot);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, std::vector<uint8_t>(kSlot, 5));
}

// Sends hand-made requests and waits for their answers.
class RawSender {
 public:
  explicit RawSender(Client* c) : c_(c) {
    ClientInternal::worker(*c).SetHandler(kAmTxReply, [this](net::EndpointId, std::span<const uint8_t> p) {
      auto r = DecodeReply(p);
      if (r.ok()) replies_[r->request_id] = *r;
    });
  }
  Result<Reply> Send(uint32_t node, const std::vector<uint8_t>& bytes, uint64_t id) {
    const net::EndpointId ep = ClientInternal::memnode_endpoint(*c_, node);
    PULSE_RETURN_IF_ERROR(ClientInternal::worker(*c_).Send(ep, kAmTxRequest, bytes));
    PULSE_RETURN_IF_ERROR(ClientInternal::loop(*c_).DriveUntil([&] { return replies_.count(id) != 0; },
                                                                 std::chrono::milliseconds(5000)));
    return replies_[id];
  }
  // Forgets the answers seen, so that an id's next answer is waited for.
  void Forget() { replies_.clear(); }

 private:
  Client* c_;
  std::map<uint64_t, Reply> replies_;
};

// The retry window's edge, with a window of 4 committed ids
// ($PULSE_TX_COMMITTED_IDS): after 10 transactions, a retry of the last
// gets its original result, a retry of the first (committed, forgotten)
// OutcomeUnknown, and a retry of an id never sent (newer than everything
// forgotten) runs as a new transaction.
class TxChainSmallWindow : public TxChain {
 protected:
  void SetUp() override {
    ::setenv("PULSE_TX_COMMITTED_IDS", "4", 1);  // the nodes started below inherit it
    TxChain::SetUp();
  }
  void TearDown() override { ::unsetenv("PULSE_TX_COMMITTED_IDS"); }
};

TEST_F(TxChainSmallWindow, RetryOlderThanTheWindowIsOutcomeUnknownNeverRunTwice) {
  auto raw_client = Connect(1);
  ASSERT_TRUE(raw_client);
  RawSender raw(raw_client.get());
  const uint64_t chain = chain_->handle().id;
  auto id = [&](uint64_t n) { return MakeRequestId(raw_client->cpu_node(), n); };
  auto execute = [&](uint64_t n, uint8_t flags) {
    ExecuteBody b;
    b.reads.push_back(ReadOp{kSlot, kSlot});  // what the previous transaction wrote
    b.writes.push_back(WriteOp{kSlot, std::vector<uint8_t>(kSlot, static_cast<uint8_t>(n))});
    return raw.Send(0, EncodeExecute(Header{Kind::kExecute, flags, 1, id(n), chain}, b), id(n));
  };
  std::vector<Reply> first;
  for (uint64_t n = 1; n <= 10; ++n) {
    auto r = execute(n, 0);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->code, StatusCodeToWire(Status::Code::kOk)) << r->message;
    first.push_back(*r);
  }
  raw.Forget();
  auto last = execute(10, kFlagRetry);
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(last->code, StatusCodeToWire(Status::Code::kOk)) << last->message;
  EXPECT_EQ(last->seq, first.back().seq) << "a retry of a committed transaction must not run again";
  EXPECT_EQ(last->values, first.back().values);
  auto forgotten = execute(1, kFlagRetry);
  ASSERT_TRUE(forgotten.ok()) << forgotten.status().ToString();
  EXPECT_EQ(forgotten->code, StatusCodeToWire(Status::Code::kOutcomeUnknown)) << forgotten->message;
  auto fresh = execute(11, kFlagRetry);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->code, StatusCodeToWire(Status::Code::kOk)) << fresh->message;
  EXPECT_EQ(fresh->seq, first.back().seq + 1);
  EXPECT_EQ(fresh->values.at(0), std::vector<uint8_t>(kSlot, 10));
  // Eleven transactions committed, each once, on every replica.
  for (uint32_t node = 0; node < kNodes; ++node) {
    auto logged = chain_->LastLogged(node);
    ASSERT_TRUE(logged.ok()) << logged.status().ToString();
    EXPECT_EQ(*logged, 11u) << "node " << node;
    auto v = chain_->ReadReplica(node, kSlot, kSlot);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(*v, std::vector<uint8_t>(kSlot, 11)) << "node " << node;
  }
  EXPECT_EQ(TxStats(0)["outcome_unknown"].get<uint64_t>(), 1u);
}

// The ring's service entries (memnode/extension_entry.h), written by hand
// into a ring the test opens with memory node 1: one for the replica's id
// is handed over (its header is garbage, so the replica counts a bad
// header) and answered OK in its slot at once; one for an id no service
// has is refused with NotFound; a header cut short and one with its
// reserved byte set are refused with InvalidArgument and counted as
// malformed.  Every slot is answered, none twice.
TEST_F(TxChain, ServiceRingEntriesAreHandedOverOrRefusedInTheirSlot) {
  net::Worker& worker = rack_.cpu().worker();
  net::ring::RingClientOptions ro;
  ro.require_native_rma = false;
  auto ring = net::ring::RingClient::Open(&worker, rack_.view(1).ep, ro);
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  const nlohmann::json before = rack_.MemNodeStats(1)["counters"];
  std::vector<uint8_t> to_replica, to_nobody;
  const std::vector<uint8_t> garbage = {1, 2, 3};
  memnode::EncodeExtensionEntry(kAmTxRequest, garbage, &to_replica);
  memnode::EncodeExtensionEntry(9999, garbage, &to_nobody);
  const std::vector<uint8_t> short_header = {memnode::kExtensionEntryMagic, 0};
  const std::vector<uint8_t> reserved_set = {memnode::kExtensionEntryMagic, 1, 50, 0};
  std::map<uint64_t, Status::Code> want;
  for (const auto& [entry, code] :
       std::vector<std::pair<std::vector<uint8_t>, Status::Code>>{{to_replica, Status::Code::kOk},
                                                                   {to_nobody, Status::Code::kNotFound},
                                                                   {short_header, Status::Code::kInvalidArgument},
                                                                   {reserved_set, Status::Code::kInvalidArgument}}) {
    auto seq = (*ring)->Post(entry);
    ASSERT_TRUE(seq.ok()) << seq.status().ToString();
    want[*seq] = code;
  }
  std::map<uint64_t, Status> got;
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  while (got.size() < want.size() && Clock::now() < deadline) {
    (*ring)->Poll([&](uint64_t seq, const Status& status, std::span<const uint8_t> payload) {
      EXPECT_TRUE(got.emplace(seq, status).second) << "entry " << seq << " answered twice";
      if (status.ok()) {
        EXPECT_TRUE(payload.empty());
      }
    });
    (void)worker.Progress();
  }
  ASSERT_EQ(got.size(), want.size()) << "entries unanswered at the deadline";
  for (const auto& [seq, code] : want) EXPECT_EQ(got.at(seq).code(), code) << "entry " << seq << ": " << got.at(seq).ToString();
  // The refusals name what was wrong.
  auto message_of = [&](Status::Code code) {
    std::string all;
    for (const auto& [seq, c] : want)
      if (c == code) all += got.at(seq).message() + "\n";
    return all;
  };
  EXPECT_NE(message_of(Status::Code::kNotFound).find("no service on id 9999"), std::string::npos)
      << message_of(Status::Code::kNotFound);
  EXPECT_NE(message_of(Status::Code::kInvalidArgument).find("shorter than its 4-byte header"), std::string::npos);
  EXPECT_NE(message_of(Status::Code::kInvalidArgument).find("reserved byte is 1"), std::string::npos);
  const nlohmann::json after = rack_.MemNodeStats(1)["counters"];
  auto delta = [&](const char* key) {
    return after["ring"][key].get<uint64_t>() - before["ring"][key].get<uint64_t>();
  };
  EXPECT_EQ(delta("service_entries"), 1u);
  EXPECT_EQ(delta("service_refused"), 1u);
  EXPECT_EQ(delta("malformed"), 2u);
  EXPECT_EQ(after["tx"]["malformed"]["bad_header"].get<uint64_t>() -
                before["tx"]["malformed"]["bad_header"].get<uint64_t>(),
            1u)
      << "the entry for the replica did not reach it";
  ring->reset();
}

TEST_F(TxChain, MalformedRequestsAreRejectedByNameAndCounted) {
  auto raw_client = Connect(1);
  ASSERT_TRUE(raw_client);
  RawSender raw(raw_client.get());
  const uint64_t chain = chain_->handle().id;
  auto header = [&](uint64_t id) { return Header{Kind::kExecute, 0, 1, id, chain}; };

  // Bad n: a read count beyond the limit.
  std::vector<uint8_t> bad_n = EncodeExecute(header(1), ExecuteBody{});
  const uint32_t huge = 1000;
  std::memcpy(bad_n.data() + 24, &huge, 4);
  auto r = raw.Send(0, bad_n, 1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->code, StatusCodeToWire(Status::Code::kInvalidArgument));
  EXPECT_NE(r->message.find("bad n"), std::string::npos) << r->message;

  // A write whose length runs past the end of the message.
  ExecuteBody one;
  one.writes.push_back(WriteOp{0, std::vector<uint8_t>(100, 7)});
  std::vector<uint8_t> cut = EncodeExecute(header(2), one);
  cut.resize(cut.size() - 90);
  r = raw.Send(0, cut, 2);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->code, StatusCodeToWire(Status::Code::kInvalidArgument));
  EXPECT_NE(r->message.find("past the end"), std::string::npos) << r->message;

  // Offsets outside the chain's region, by the public API.
  Transaction outside;
  outside.writes.push_back(TxWrite{kRegion - 8, std::vector<uint8_t>(64, 1)});
  auto o = chain_->Execute(outside);
  EXPECT_EQ(o.status().code(), Status::Code::kOutOfRange) << o.status().ToString();
  Transaction far_read;
  far_read.reads.push_back(TxRead{uint64_t{1} << 40, 8});
  EXPECT_EQ(chain_->Execute(far_read).status().code(), Status::Code::kOutOfRange);

  nlohmann::json s = TxStats(0);
  EXPECT_EQ(s["malformed"]["bad_count"].get<uint64_t>(), 1u);
  EXPECT_EQ(s["malformed"]["bad_length"].get<uint64_t>(), 1u);
  EXPECT_EQ(s["malformed"]["out_of_range"].get<uint64_t>(), 2u);
  EXPECT_EQ(s["commits"].get<uint64_t>(), 0u) << "nothing malformed was committed";
  // Nothing reached the other replicas.
  EXPECT_EQ(TxStats(1)["forwards_in"].get<uint64_t>(), 0u);
}

TEST_F(TxChain, SecondTenantCannotWriteTheFirstTenantsKeys) {
  Transaction put;
  put.writes.push_back(TxWrite{0, std::vector<uint8_t>(kSlot, 0x11)});
  ASSERT_TRUE(chain_->Execute(put).ok());

  auto other = Connect(2);
  ASSERT_TRUE(other);
  auto theirs = Chain::Attach(other.get(), chain_->handle(), {});
  ASSERT_TRUE(theirs.ok());
  Transaction overwrite;
  overwrite.writes.push_back(TxWrite{0, std::vector<uint8_t>(kSlot, 0x22)});
  auto r = (*theirs)->Execute(overwrite);
  EXPECT_EQ(r.status().code(), Status::Code::kPermissionDenied) << r.status().ToString();
  // Nor reach the replicas one-sidedly.
  EXPECT_EQ((*theirs)->Read(0, kSlot).status().code(), Status::Code::kPermissionDenied);
  // Nor claim tenant 1 in a request of its own.
  RawSender raw(other.get());
  ExecuteBody b;
  b.writes.push_back(WriteOp{0, std::vector<uint8_t>(kSlot, 0x33)});
  auto forged = raw.Send(0, EncodeExecute(Header{Kind::kExecute, 0, 1, 77, chain_->handle().id}, b), 77);
  ASSERT_TRUE(forged.ok()) << forged.status().ToString();
  EXPECT_EQ(forged->code, StatusCodeToWire(Status::Code::kPermissionDenied));

  for (uint32_t node = 0; node < kNodes; ++node) {
    auto v = chain_->ReadReplica(node, 0, kSlot);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(*v, std::vector<uint8_t>(kSlot, 0x11)) << "replica " << node;
  }
  EXPECT_GE(TxStats(0)["refused"].get<uint64_t>(), 2u);
}

}  // namespace
}  // namespace pulse::tx
