// The rack tier end to end (docs/racks.md), against real processes: memory
// node 0 is the pool of rack "a", memory node 1 that of rack "b", both
// offering it to tenant 1; the CPU nodes run with UCX_TLS=tcp, as racks do.
// A client of rack "a" reads and writes its allocations on node 0 by loads
// and stores (no message: counted), everything else the normal way; its
// results equal those of a client without a rack (the remote path) and a
// shadow copy.  Its traversals run here while in rack "a" and are offloaded
// from the first pointer into rack "b".  A killed node 0 is never read
// through its dead mapping; restarted, it is mapped anew.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "engine/run_both.h"  // MustBuild
#include "pulse/client.h"
#include "support/cpu_node.h"
#include "support/local_rack.h"

namespace pulse {
namespace {

using testing::LocalRack;
using namespace std::chrono_literals;

ProgramRef Build(const char* text) { return testing::MustBuild(text); }

// Walks a list of {next, value} nodes, summing the values in sp[0] (as
// tests/engine/sum_list_program.h, but with a 16-byte window: each window
// is exactly one list node, so the counts of windows served by the rack
// pool and the cache below are exact).
constexpr const char* kListSum = R"(
    LOAD data, 16
    ADD sp[0], data[8]
    COMPARE data[0], 0
    JUMP_EQ end
    MOVE cur_ptr, data[0]
    NEXT_ITER
  end:
    RETURN)";

uint64_t Sp0(const TraversalResult& r) {
  uint64_t v = 0;
  if (r.scratch.size() >= 8) std::memcpy(&v, r.scratch.data(), 8);
  return v;
}


class RackTier : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::SetUcxTestEnvironment();
    ASSERT_TRUE(rack_.StartTwoRacks(/*pool_mib=*/16));
    local_ = Connect("a");
    remote_ = Connect("");
    ASSERT_NE(local_, nullptr);
    ASSERT_NE(remote_, nullptr);
  }
  void TearDown() override { unsetenv("UCX_TLS"); }
  std::unique_ptr<Client> Connect(const std::string& rack) {
    ClientOptions o;
    o.switch_address = rack_.switch_address();
    o.policy = AllocationPolicy::kPartitioned;
    o.slab_bytes = 4096;
    o.request_timeout = 1000ms;
    o.rack = rack;
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  LocalRack rack_;
  std::unique_ptr<Client> local_;   // a CPU node of rack "a"
  std::unique_ptr<Client> remote_;  // no rack: every access is remote
};

TEST_F(RackTier, LocalRackReadsAndWritesSendNoMessage) {
  auto a = local_->Allocate(4096, 0);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const ClientCounters before = local_->counters();
  const net::Counters net_before = local_->net_counters();
  std::vector<uint8_t> out(1000), in(1000);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(local_->Write(*a + 24, out.data(), out.size()).ok());
  ASSERT_TRUE(local_->Read(*a + 24, in.data(), in.size()).ok());
  EXPECT_EQ(in, out);
  const ClientCounters& after = local_->counters();
  const net::Counters& net_after = local_->net_counters();
  EXPECT_EQ(after.rack_writes, before.rack_writes + 1);
  EXPECT_EQ(after.rack_write_bytes, before.rack_write_bytes + 1000);
  EXPECT_EQ(after.rack_reads, before.rack_reads + 1);
  EXPECT_EQ(after.rack_read_bytes, before.rack_read_bytes + 1000);
  EXPECT_EQ(after.rack_mappings, 1u);
  // Nothing moved on the fabric.
  EXPECT_EQ(after.remote_reads, before.remote_reads);
  EXPECT_EQ(after.remote_writes, before.remote_writes);
  EXPECT_EQ(after.requests_sent, before.requests_sent);
  EXPECT_EQ(net_after.messages_sent, net_before.messages_sent);
  EXPECT_EQ(net_after.rma_ops, net_before.rma_ops);
  // The remote path sees the bytes.
  std::vector<uint8_t> seen(1000);
  ASSERT_TRUE(remote_->Read(*a + 24, seen.data(), seen.size()).ok());
  EXPECT_EQ(seen, out);
  // Memory in rack "b" is remote for this client.
  auto b = local_->Allocate(64, 1);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_TRUE(local_->Write(*b, out.data(), 64).ok());
  EXPECT_EQ(local_->counters().remote_writes, before.remote_writes + 1);
  EXPECT_EQ(local_->counters().rack_writes, before.rack_writes + 1);
}

TEST_F(RackTier, RandomReadsAndWritesMatchTheRemotePathAndAShadow) {
  // Allocations of random sizes on both racks; random writes by either
  // client; every read by both clients compared with the shadow.
  std::mt19937_64 rng(16);
  std::map<uint64_t, std::vector<uint8_t>> shadow;  // by allocation base
  for (int i = 0; i < 24; ++i) {
    const uint64_t bytes = 8 * (1 + rng() % 256);
    auto a = local_->Allocate(bytes, static_cast<uint32_t>(i % 2));
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    shadow[*a] = std::vector<uint8_t>(bytes, 0);
    ASSERT_TRUE(local_->Write(*a, shadow[*a].data(), bytes).ok());
  }
  for (int op = 0; op < 2000; ++op) {
    auto it = std::next(shadow.begin(), static_cast<long>(rng() % shadow.size()));
    std::vector<uint8_t>& s = it->second;
    const uint64_t off = rng() % s.size(), len = 1 + rng() % (s.size() - off);
    if (rng() % 2 == 0) {
      for (uint64_t i = 0; i < len; ++i) s[off + i] = static_cast<uint8_t>(rng());
      Client& writer = rng() % 4 == 0 ? *remote_ : *local_;
      ASSERT_TRUE(writer.Write(it->first + off, s.data() + off, len).ok());
    } else {
      std::vector<uint8_t> here(len), there(len);
      ASSERT_TRUE(local_->Read(it->first + off, here.data(), len).ok());
      ASSERT_TRUE(remote_->Read(it->first + off, there.data(), len).ok());
      ASSERT_EQ(here, there) << "op " << op;
      ASSERT_TRUE(std::equal(here.begin(), here.end(), s.begin() + static_cast<long>(off))) << "op " << op;
    }
  }
  EXPECT_GT(local_->counters().rack_reads, 300u);
  EXPECT_GT(local_->counters().rack_writes, 300u);
  EXPECT_GT(local_->counters().remote_reads, 300u) << "rack b's memory is read remotely";
  EXPECT_EQ(remote_->counters().rack_reads, 0u);
}

TEST_F(RackTier, TraversalRunsHereInTheLocalRackAndIsOffloadedAtTheFirstRemotePointer) {
  // 20 list nodes in rack "a", then 20 in rack "b", then 10 in "a" again.
  const ProgramRef sum = Build(kListSum);
  std::vector<uint64_t> nodes;
  uint64_t want = 0;
  for (int i = 0; i < 50; ++i) {
    auto a = local_->Allocate(16, i < 20 || i >= 40 ? 0 : 1);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    nodes.push_back(*a);
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const uint64_t cell[2] = {i + 1 < nodes.size() ? nodes[i + 1] : 0, 1000 + i};
    want += cell[1];
    ASSERT_TRUE(local_->Write(nodes[i], cell, 16).ok());
  }
  auto run = [&](Client& c, ExecutionMode mode) {
    TraverseOptions o;
    o.mode = mode;
    auto r = c.Traverse(sum, nodes[0], std::vector<uint8_t>(8, 0), o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : TraversalResult{};
  };
  const TraversalResult reference = run(*remote_, ExecutionMode::kOffload);
  ASSERT_EQ(reference.status, TraversalStatus::kDone);
  EXPECT_EQ(Sp0(reference), want);
  EXPECT_EQ(reference.iterations, 50u);

  // Offload: the first 20 iterations run here over the mapping.
  ClientCounters before = local_->counters();
  const TraversalResult off = run(*local_, ExecutionMode::kOffload);
  EXPECT_EQ(off.status, TraversalStatus::kDone);
  EXPECT_EQ(Sp0(off), want);
  EXPECT_EQ(off.iterations, 50u);
  EXPECT_EQ(local_->counters().rack_prefix_iterations - before.rack_prefix_iterations, 20u);
  EXPECT_EQ(local_->counters().rack_reads - before.rack_reads, 20u);
  EXPECT_EQ(local_->counters().offloaded - before.offloaded, 1u);
  EXPECT_EQ(local_->counters().remote_reads, before.remote_reads);

  // At the CPU node: rack "a"'s windows by loads, rack "b"'s by one-sided reads.
  before = local_->counters();
  const TraversalResult here = run(*local_, ExecutionMode::kCpuNode);
  EXPECT_EQ(here.status, TraversalStatus::kDone);
  EXPECT_EQ(Sp0(here), want);
  EXPECT_FALSE(here.offloaded);
  EXPECT_EQ(local_->counters().rack_reads - before.rack_reads, 30u);
  EXPECT_EQ(local_->counters().remote_reads - before.remote_reads, 20u);

  // Entirely in rack "a": the traversal ends here, nothing offloaded, no message.
  before = local_->counters();
  const uint64_t messages_before = local_->net_counters().messages_sent;
  TraverseOptions o;
  o.mode = ExecutionMode::kOffload;
  auto tail = local_->Traverse(sum, nodes[40], std::vector<uint8_t>(8, 0), o);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ(tail->status, TraversalStatus::kDone);
  EXPECT_FALSE(tail->offloaded);
  EXPECT_EQ(tail->iterations, 10u);
  EXPECT_EQ(local_->counters().offloaded, before.offloaded);
  EXPECT_EQ(local_->net_counters().messages_sent, messages_before);
}

TEST_F(RackTier, LocalPrefixRunsOverRackWindowsAndCachedWindowsAlike) {
  // With a CPU-node cache: a list of 10 nodes in rack "a" then 10 in rack
  // "b" whose blocks this client has cached runs here to its end.
  ClientOptions o;
  o.switch_address = rack_.switch_address();
  o.policy = AllocationPolicy::kPartitioned;
  o.slab_bytes = 4096;
  o.rack = "a";
  o.cache.bytes = 64 << 10;
  o.cache.object_bytes = 16;
  auto cached = Client::Connect(o);
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  Client& c = **cached;
  std::vector<uint64_t> nodes;
  for (int i = 0; i < 20; ++i) {
    auto a = c.Allocate(16, i < 10 ? 0 : 1);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    nodes.push_back(*a);
  }
  uint64_t want = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const uint64_t cell[2] = {i + 1 < nodes.size() ? nodes[i + 1] : 0, 7 * i};
    want += cell[1];
    ASSERT_TRUE(c.Write(nodes[i], cell, 16).ok());  // rack b's: into the cache (write-back)
  }
  ASSERT_TRUE(c.FlushCache().ok());
  const ClientCounters before = c.counters();
  TraverseOptions off;
  off.mode = ExecutionMode::kOffload;
  auto r = c.Traverse(Build(kListSum), nodes[0], std::vector<uint8_t>(8, 0), off);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, TraversalStatus::kDone);
  EXPECT_EQ(Sp0(*r), want);
  EXPECT_FALSE(r->offloaded);
  EXPECT_EQ(c.counters().offloaded, before.offloaded);
  EXPECT_EQ(c.counters().rack_reads - before.rack_reads, 10u);
  EXPECT_EQ(c.counters().cache_hits - before.cache_hits, 10u);
  EXPECT_EQ(c.counters().rack_prefix_iterations - before.rack_prefix_iterations, 20u);
  // The same list from the remote path.
  auto ref = remote_->Traverse(Build(kListSum), nodes[0], std::vector<uint8_t>(8, 0), off);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_EQ(Sp0(*ref), want);
}

TEST_F(RackTier, KilledMemoryNodeIsNeverReadThroughItsDeadMappingAndIsRemappedAfterRestart) {
  auto a = local_->Allocate(64, 0);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const uint64_t v = 0x1234;
  ASSERT_TRUE(local_->Write(*a, &v, 8).ok());
  ASSERT_EQ(local_->counters().rack_writes, 1u);

  rack_.memnode(0).Signal(SIGKILL);
  ASSERT_NE(rack_.memnode(0).Wait(10s), -1);
  uint64_t got = 0;
  Status dead = local_->Read(*a, &got, 8);
  EXPECT_EQ(dead.code(), Status::Code::kUnavailable) << dead.ToString();
  EXPECT_EQ(local_->counters().rack_dead_mappings, 1u);
  EXPECT_EQ(local_->counters().rack_reads, 0u);
  TraverseOptions here;
  here.mode = ExecutionMode::kCpuNode;
  auto walked = local_->Traverse(Build(kListSum), *a, std::vector<uint8_t>(8, 0), here);
  EXPECT_FALSE(walked.ok() && walked->status == TraversalStatus::kDone) << "read a dead node";

  // Restarted: it re-attaches the pool; the client reconnects (that read is
  // remote), then maps the new offer.
  rack_.StartMemNode(0, /*pool_mib=*/16, LocalRack::RackFlags("a"));
  ASSERT_TRUE(rack_.Join(2));
  ASSERT_TRUE(local_->Read(*a, &got, 8).ok());
  EXPECT_EQ(got, v);
  ASSERT_TRUE(local_->Read(*a, &got, 8).ok());
  EXPECT_EQ(got, v);
  EXPECT_EQ(local_->counters().rack_reads, 1u);
  EXPECT_EQ(local_->counters().rack_mappings, 2u);
}

TEST_F(RackTier, AClientOfAnotherRackUsesTheFabric) {
  std::unique_ptr<Client> other = Connect("b");
  ASSERT_NE(other, nullptr);
  auto a = other->Allocate(64, 0);  // rack "a": remote for it
  auto b = other->Allocate(64, 1);  // its own rack
  ASSERT_TRUE(a.ok() && b.ok());
  const uint64_t v = 5;
  ASSERT_TRUE(other->Write(*a, &v, 8).ok());
  ASSERT_TRUE(other->Write(*b, &v, 8).ok());
  EXPECT_EQ(other->counters().remote_writes, 1u);
  EXPECT_EQ(other->counters().rack_writes, 1u);
  // Another client's allocation (same tenant) is not served by the tier.
  uint64_t got = 0;
  ASSERT_TRUE(local_->Read(*a, &got, 8).ok());
  EXPECT_EQ(got, v);
  EXPECT_EQ(local_->counters().rack_reads, 0u);
}

TEST(RackTierPolicy, APoolSharedWithNoTenantIsNotOffered) {
  testing::SetUcxTestEnvironment();
  LocalRack rack;
  ASSERT_TRUE(rack.StartSwitch());
  rack.StartMemNode(0, /*pool_mib=*/8, LocalRack::RackFlags("a", /*share_with_tenant1=*/false));
  ASSERT_TRUE(rack.Join(1));
  ClientOptions o;
  o.switch_address = rack.switch_address();
  o.rack = "a";
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto a = (*c)->Allocate(64);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const uint64_t v = 9;
  ASSERT_TRUE((*c)->Write(*a, &v, 8).ok());
  EXPECT_EQ((*c)->counters().rack_writes, 0u);
  EXPECT_EQ((*c)->counters().rack_mappings, 0u);
  EXPECT_EQ((*c)->counters().remote_writes, 1u);
}

}  // namespace
}  // namespace pulse
