// `pulse switch` and `pulse memnode` as real processes, with the test as the
// CPU node: distributed traversals through the switch, malformed messages,
// invalid pointers, a memory node killed and restarted, counters, and clean
// shutdown.
#include <signal.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>

#include "client/client_internal.h"
#include "engine/sum_list_program.h"
#include "pulse/assembler.h"
#include "pulse/client.h"
#include "pulse/program.h"
#include "protocol/routing_table.h"
#include "support/local_rack.h"

namespace pulse::testing {
namespace {

// Sums value fields along a list of {next @0, value @8}.
constexpr const char* kSum = testing::kSumListProgram;

ProgramRef SumProgram() {
  auto insns = Assemble(kSum);
  EXPECT_TRUE(insns.ok()) << insns.status().ToString();
  auto p = VerifiedProgram::Create(std::move(*insns));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

uint64_t Sp0(const TraversalMessage& m) {
  uint64_t v = 0;
  if (m.scratch.size() >= 8) std::memcpy(&v, m.scratch.data(), 8);
  return v;
}

// A list of `hops` nodes whose nodes switch memory node every `run` hops,
// written with one-sided Puts into one allocation per node.
struct FarList {
  uint64_t head = 0;
  uint64_t sum = 0;
  std::map<uint32_t, uint64_t> region;  // node -> allocation base
};

FarList BuildList(LocalRack& rack, int hops, int run, uint32_t tenant = 1, uint32_t memnodes = 2) {
  FarList list;
  std::map<uint32_t, std::vector<uint8_t>> image;
  std::vector<std::pair<uint32_t, uint64_t>> nodes;  // (memory node, far address)
  std::map<uint32_t, uint64_t> used;
  for (uint32_t n = 0; n < memnodes; ++n) {
    json a = rack.Alloc(n, 64 * 1024, tenant);
    EXPECT_TRUE(a.value("ok", false)) << a.dump();
    list.region[n] = a.value("base", uint64_t{0});
    image[n].assign(static_cast<size_t>(hops) * 16, 0);
  }
  for (int i = 0; i < hops; ++i) {
    const uint32_t n = static_cast<uint32_t>((i / run) % memnodes);
    nodes.emplace_back(n, list.region[n] + used[n]);
    used[n] += 16;
  }
  for (int i = 0; i < hops; ++i) {
    auto [n, far] = nodes[i];
    const uint64_t next = i + 1 < hops ? nodes[i + 1].second : 0;
    const uint64_t value = 1000 + i;
    std::memcpy(image[n].data() + (far - list.region[n]), &next, 8);
    std::memcpy(image[n].data() + (far - list.region[n]) + 8, &value, 8);
    list.sum += value;
  }
  for (auto& [n, bytes] : image) {
    Status s = rack.Put(n, list.region[n], bytes.data(), bytes.size());
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  list.head = nodes[0].second;
  return list;
}

TraversalMessage Request(const LocalRack& rack, const ProgramRef& p, uint64_t cur_ptr, uint64_t counter,
                         uint32_t tenant = 1) {
  TraversalMessage m;
  m.request_id = MakeRequestId(rack.cpu_node(), counter);
  m.cpu_node = rack.cpu_node();
  m.tenant = tenant;
  m.program_hash = p->hash();
  m.program = p->encoded();
  m.cur_ptr = cur_ptr;
  m.scratch.assign(8, 0);
  m.max_iterations = 1000;
  return m;
}

TEST(RackProcess, TraversalSpansBothMemoryNodesThroughTheSwitch) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2, 8, {"--routing", "switch"}));
  FarList list = BuildList(rack, 32, 8);
  ASSERT_NE(list.head, 0u);
  auto program = SumProgram();
  ASSERT_TRUE(rack.cpu().SendTraversal(rack.switch_ep(), Request(rack, program, list.head, 1)).ok());
  auto r = rack.cpu().WaitResponse(MakeRequestId(rack.cpu_node(), 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << rack.switch_process().Log();
  EXPECT_EQ(r->status, TraversalStatus::kDone) << TraversalStatusName(r->status);
  EXPECT_EQ(Sp0(*r), list.sum);
  EXPECT_EQ(r->iterations, 32u);

  // The program is cached now: the same request by hash only.
  TraversalMessage again = Request(rack, program, list.head, 2);
  again.program.clear();
  ASSERT_TRUE(rack.cpu().SendTraversal(rack.switch_ep(), again).ok());
  r = rack.cpu().WaitResponse(again.request_id);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, TraversalStatus::kDone) << TraversalStatusName(r->status);
  EXPECT_EQ(Sp0(*r), list.sum);

  json stats = rack.SwitchStats();
  ASSERT_TRUE(stats.value("ok", false)) << stats.dump();
  EXPECT_EQ(stats["role"], "switch");
  EXPECT_EQ(stats["counters"]["forwards"], 2 * 3);  // 4 runs of 8 hops, twice
  EXPECT_EQ(stats["counters"]["requests"], 2);
  EXPECT_EQ(stats["counters"]["responses"], 2);
}

TEST(RackProcess, StatsJsonHasTheCounters) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2));
  FarList list = BuildList(rack, 16, 4);
  auto program = SumProgram();
  ASSERT_TRUE(rack.cpu().SendTraversal(rack.switch_ep(), Request(rack, program, list.head, 1)).ok());
  ASSERT_TRUE(rack.cpu().WaitResponse(MakeRequestId(rack.cpu_node(), 1)).ok());

  json s = rack.SwitchStats();
  ASSERT_TRUE(s.value("ok", false)) << s.dump();
  for (const char* key : {"requests", "forwards", "responses", "invalid_pointers", "malformed", "node_unavailable",
                          "responses_dropped", "bytes_in", "bytes_out", "memnodes_alive", "cpu_nodes", "cpu_seconds"})
    EXPECT_TRUE(s["counters"].contains(key)) << key << " missing in " << s.dump();
  EXPECT_TRUE(s["counters"]["net"].contains("messages_received")) << s.dump();
  EXPECT_GT(s["counters"]["bytes_in"].get<uint64_t>(), 0u);
  EXPECT_EQ(s["counters"]["memnodes_alive"], 2);
  EXPECT_EQ(s["memnodes"].size(), 2u);

  uint64_t iterations = 0;
  for (uint32_t n = 0; n < 2; ++n) {
    json m = rack.MemNodeStats(n);
    ASSERT_TRUE(m.value("ok", false)) << m.dump();
    EXPECT_EQ(m["role"], "memnode");
    const json& c = m["counters"];
    for (const char* key : {"requests", "responses", "iterations", "malformed", "bytes_in", "bytes_out",
                            "engine_active", "engine_capacity", "pool_used", "pool_free", "cpu_seconds"})
      EXPECT_TRUE(c.contains(key)) << key << " missing in " << m.dump();
    EXPECT_EQ(c["engine_active"], 0);
    EXPECT_EQ(c["engine_capacity"], 16);
    EXPECT_EQ(c["pool_used"], 64 * 1024);
    EXPECT_EQ(c["pool_free"], 8 * 1024 * 1024 - 64 * 1024);
    EXPECT_TRUE(c["net"].contains("messages_sent"));
    iterations += c["iterations"].get<uint64_t>();
  }
  EXPECT_EQ(iterations, 16u);
}

TEST(RackProcess, MalformedTraversalIsCountedAndTheSwitchKeepsServing) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2));
  FarList list = BuildList(rack, 8, 4);
  auto program = SumProgram();

  ASSERT_TRUE(rack.cpu().SendRaw(rack.switch_ep(), {1, 2, 3, 4, 5}).ok());  // garbage
  std::vector<uint8_t> truncated = EncodeMessage(Request(rack, program, list.head, 7));
  truncated.resize(truncated.size() - 3);
  ASSERT_TRUE(rack.cpu().SendRaw(rack.switch_ep(), truncated).ok());
  std::vector<uint8_t> empty;
  ASSERT_TRUE(rack.cpu().SendRaw(rack.switch_ep(), empty).ok());

  json s = rack.WaitForSwitchStats([](const json& c) { return c["malformed"] == 3; });
  EXPECT_EQ(s["counters"]["malformed"], 3) << s.dump();

  ASSERT_TRUE(rack.cpu().SendTraversal(rack.switch_ep(), Request(rack, program, list.head, 8)).ok());
  auto r = rack.cpu().WaitResponse(MakeRequestId(rack.cpu_node(), 8));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, TraversalStatus::kDone);
  EXPECT_EQ(Sp0(*r), list.sum);
  EXPECT_FALSE(rack.switch_process().Exited());
}

// Several requests in one kAmBatch envelope, to the switch and straight to
// a memory node: each is answered as if it had come alone.
TEST(RackProcess, AnEnvelopeOfRequestsIsAnsweredLikeSeparateRequests) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2));
  FarList list = BuildList(rack, 12, 3);
  auto program = SumProgram();
  const uint32_t first = static_cast<uint32_t>(NodeOfFarAddress(list.head));
  for (net::EndpointId to : {rack.switch_ep(), rack.view(first).ep}) {
    static uint64_t counter = 100;
    std::vector<std::vector<uint8_t>> requests;
    std::vector<uint64_t> ids;
    for (int i = 0; i < 5; ++i) {
      ids.push_back(MakeRequestId(rack.cpu_node(), ++counter));
      requests.push_back(EncodeMessage(Request(rack, program, list.head, counter)));
    }
    ASSERT_TRUE(rack.cpu().SendRawBatch(to, EncodeBatch(kAmTraversal, requests)).ok());
    for (uint64_t id : ids) {
      auto r = rack.cpu().WaitResponse(id);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->status, TraversalStatus::kDone);
      EXPECT_EQ(Sp0(*r), list.sum);
    }
  }
  json mn = rack.MemNodeStats(first);
  EXPECT_GE(mn["counters"]["aggregation"]["envelopes_in"].get<uint64_t>(), 1u) << mn.dump();
  // The switch got ours, and (this CPU node named itself to no memory node:
  // its answers go through the switch) the nodes' answers aggregated too.
  json sw = rack.SwitchStats();
  EXPECT_GE(sw["counters"]["aggregation"]["envelopes_in"].get<uint64_t>(), 1u) << sw.dump();
  EXPECT_GE(sw["counters"]["aggregation"]["carried_in"].get<uint64_t>(), 5u) << sw.dump();
}

// Malformed envelopes are refused whole: none of the requests in them runs,
// and the node keeps serving.
TEST(RackProcess, AMalformedEnvelopeIsCountedWholeAndNothingInItRuns) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2));
  FarList list = BuildList(rack, 8, 4);
  auto program = SumProgram();
  const uint32_t first = static_cast<uint32_t>(NodeOfFarAddress(list.head));
  std::vector<std::vector<uint8_t>> requests{EncodeMessage(Request(rack, program, list.head, 1)),
                                             EncodeMessage(Request(rack, program, list.head, 2))};
  const std::vector<uint8_t> good = EncodeBatch(kAmTraversal, requests);
  std::vector<uint8_t> truncated = good;
  truncated.resize(good.size() - 1);
  std::vector<uint8_t> lying = good;
  const uint32_t count = 3;
  std::memcpy(lying.data() + 4, &count, 4);
  std::vector<uint8_t> wrong_inner = EncodeBatch(kAmControl, requests);
  const json before = rack.MemNodeStats(first);
  for (net::EndpointId to : {rack.switch_ep(), rack.view(first).ep}) {
    ASSERT_TRUE(rack.cpu().SendRawBatch(to, truncated).ok());
    ASSERT_TRUE(rack.cpu().SendRawBatch(to, lying).ok());
    ASSERT_TRUE(rack.cpu().SendRawBatch(to, wrong_inner).ok());
    ASSERT_TRUE(rack.cpu().SendRawBatch(to, {1, 2, 3}).ok());
    // Messages on one connection arrive in order: when this is answered,
    // the envelopes before it were handled.
    ASSERT_TRUE(rack.cpu().SendTraversal(to, Request(rack, program, list.head, to == rack.switch_ep() ? 3 : 4)).ok());
    auto r = rack.cpu().WaitResponse(MakeRequestId(rack.cpu_node(), to == rack.switch_ep() ? 3 : 4));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(Sp0(*r), list.sum);
  }
  json sw = rack.SwitchStats();
  EXPECT_EQ(sw["counters"]["aggregation"]["malformed_envelopes"].get<uint64_t>(), 4u) << sw.dump();
  EXPECT_EQ(sw["counters"]["aggregation"]["envelopes_in"].get<uint64_t>(), 0u) << sw.dump();
  json mn = rack.MemNodeStats(first);
  EXPECT_EQ(mn["counters"]["aggregation"]["malformed_envelopes"].get<uint64_t>(), 4u) << mn.dump();
  // Two requests ran on the first node: the good ones (one through the switch, one direct).
  EXPECT_EQ(mn["counters"]["requests"].get<uint64_t>() - before["counters"]["requests"].get<uint64_t>(), 2u)
      << mn.dump();
  EXPECT_EQ(rack.cpu().WaitResponse(MakeRequestId(rack.cpu_node(), 1), std::chrono::milliseconds(0)).status().code(),
            Status::Code::kTimeout);
}

TEST(RackProcess, InvalidPointerIsAnsweredByTheSwitch) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  auto program = SumProgram();
  const uint64_t nowhere = FarBase(7) + 64;
  ASSERT_TRUE(rack.cpu().SendTraversal(rack.switch_ep(), Request(rack, program, nowhere, 1)).ok());
  auto r = rack.cpu().WaitResponse(MakeRequestId(rack.cpu_node(), 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, TraversalStatus::kFaultInvalidPointer) << TraversalStatusName(r->status);
  EXPECT_EQ(r->fault_addr, nowhere);
  EXPECT_EQ(rack.SwitchStats()["counters"]["invalid_pointers"], 1);
}

TEST(RackProcess, KilledMemoryNodeGivesNodeUnavailableAndOthersKeepWorking) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2));
  auto program = SumProgram();
  // A one-node list on each memory node.
  uint64_t head[2];
  for (uint32_t n = 0; n < 2; ++n) {
    json a = rack.Alloc(n, 4096);
    ASSERT_TRUE(a.value("ok", false)) << a.dump();
    head[n] = a["base"].get<uint64_t>();
    uint64_t node[2] = {0, 40 + n};
    ASSERT_TRUE(rack.Put(n, head[n], node, sizeof(node)).ok());
  }
  rack.memnode(1).Signal(SIGKILL);
  ASSERT_NE(rack.memnode(1).Wait(10s), -1);
  rack.ForgetMemNode(1);
  // The switch notices (a bounded wait; how fast is `pulse bench soak`'s
  // figure, not this test's).
  json s = rack.WaitForSwitchStats([](const json& c) { return c["memnodes_alive"] == 1; });
  ASSERT_EQ(s["counters"]["memnodes_alive"], 1) << s.dump();

  TraversalMessage m = Request(rack, program, head[1], 1);
  m.scratch.assign(8, 0x5a);
  ASSERT_TRUE(rack.cpu().SendTraversal(rack.switch_ep(), m).ok());
  auto r = rack.cpu().WaitResponse(m.request_id, 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Refused by the switch itself (counted there), not lost at the dead node.
  EXPECT_EQ(r->status, TraversalStatus::kNodeUnavailable) << TraversalStatusName(r->status);
  EXPECT_EQ(r->cur_ptr, head[1]);                        // the state is intact:
  EXPECT_EQ(r->scratch, std::vector<uint8_t>(8, 0x5a));  // it can be re-issued

  ASSERT_TRUE(rack.cpu().SendTraversal(rack.switch_ep(), Request(rack, program, head[0], 2)).ok());
  r = rack.cpu().WaitResponse(MakeRequestId(rack.cpu_node(), 2));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, TraversalStatus::kDone);
  EXPECT_EQ(Sp0(*r), 40u);
  EXPECT_EQ(rack.SwitchStats()["counters"]["node_unavailable"], 1);

  // A node with the same id comes back, re-attaches the pool its
  // predecessor left (same shared-memory name) and replaces it at the
  // switch: the list node written before the kill is served again.
  rack.StartMemNode(1);
  ASSERT_TRUE(rack.Join(2));
  EXPECT_NE(rack.memnode(1).Log().find("re-attached the pool"), std::string::npos) << rack.memnode(1).Log();
  json a = rack.Alloc(1, 4096);
  ASSERT_TRUE(a.value("ok", false)) << a.dump();
  EXPECT_NE(a["base"].get<uint64_t>(), head[1]);  // the old allocation is still live
  ASSERT_TRUE(rack.cpu().SendTraversal(rack.switch_ep(), Request(rack, program, head[1], 3)).ok());
  r = rack.cpu().WaitResponse(MakeRequestId(rack.cpu_node(), 3));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, TraversalStatus::kDone) << TraversalStatusName(r->status);
  EXPECT_EQ(Sp0(*r), 41u);
}

TEST(RackProcess, CpuNodeThatLeavesIsForgotten) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  {
    TestCpuNode other;
    ASSERT_TRUE(other.ok());
    auto ep = other.Connect(fmt::format("127.0.0.1:{}", rack.switch_port()));
    ASSERT_TRUE(ep.ok()) << ep.status().ToString();
    json h = other.Call(*ep, {{"op", "hello"}});
    ASSERT_TRUE(h.value("ok", false)) << h.dump();
    EXPECT_NE(h["cpu_node"], rack.cpu_node());
    EXPECT_EQ(rack.SwitchStats()["counters"]["cpu_nodes"], 2);
  }  // `other` closes its connection
  json s = rack.WaitForSwitchStats([](const json& c) { return c["cpu_nodes"] == 1; });
  EXPECT_EQ(s["counters"]["cpu_nodes"], 1) << s.dump();
}

TEST(RackProcess, ResponsesForADepartedCpuNodeAreDroppedAndCounted) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  // A list node that points at itself: the traversal runs until its
  // iteration limit, long enough for its CPU node to leave first.
  json a = rack.Alloc(0, 4096);
  ASSERT_TRUE(a.value("ok", false)) << a.dump();
  const uint64_t self = a["base"].get<uint64_t>();
  uint64_t node[2] = {self, 1};
  ASSERT_TRUE(rack.Put(0, self, node, sizeof(node)).ok());
  auto program = SumProgram();
  {
    TestCpuNode other;
    auto ep = other.Connect(fmt::format("127.0.0.1:{}", rack.switch_port()));
    ASSERT_TRUE(ep.ok()) << ep.status().ToString();
    json h = other.Call(*ep, {{"op", "hello"}});
    ASSERT_TRUE(h.value("ok", false)) << h.dump();
    TraversalMessage m = Request(rack, program, self, 1);
    m.cpu_node = h["cpu_node"].get<uint32_t>();
    m.request_id = MakeRequestId(m.cpu_node, 1);
    m.max_iterations = 3'000'000;
    ASSERT_TRUE(other.SendTraversal(*ep, m).ok());
    ASSERT_TRUE(other.worker().Flush(*ep, 5s).ok());
    // The memory node still answers control operations while it runs.
    json busy;
    const auto deadline = Clock::now() + 5s;
    do {
      busy = rack.MemNodeStats(0);
    } while (busy["counters"]["engine_active"] != 1 && Clock::now() < deadline);
    EXPECT_EQ(busy["counters"]["engine_active"], 1) << busy.dump();
  }  // `other` leaves with its request running
  json s = rack.WaitForSwitchStats([](const json& c) { return c["responses_dropped"] == 1; }, 30s);
  EXPECT_EQ(s["counters"]["responses_dropped"], 1) << s.dump();
  EXPECT_EQ(s["counters"]["cpu_nodes"], 1) << s.dump();
}

TEST(RackProcess, RegistrationConflictsAreRefused) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  // A "memory node" announcing a range that overlaps node 0's.
  TestCpuNode fake;
  auto ep = fake.Connect(fmt::format("127.0.0.1:{}", rack.switch_port()));
  ASSERT_TRUE(ep.ok());
  json r = fake.Call(*ep, {{"op", "register_memnode"}, {"node", 5}, {"address", "127.0.0.1:1"},
                           {"base", FarBase(0) + 4096}, {"size", 4096}});
  EXPECT_FALSE(r.value("ok", true)) << r.dump();
  EXPECT_NE(r.value("error", "").find("overlaps"), std::string::npos) << r.dump();
  r = fake.Call(*ep, {{"op", "register_memnode"}, {"node", 6}, {"address", "127.0.0.1:1"}, {"base", FarBase(6)}});
  EXPECT_EQ(r.value("error", ""), "register_memnode: size is missing") << r.dump();
  r = fake.Call(*ep, {{"op", "no_such_op"}});
  EXPECT_EQ(r.value("error", ""), "control: unknown op 'no_such_op'") << r.dump();
}

TEST(SwitchProcess, ShutdownOpExitsZeroAndMemoryNodesJoinTheNextSwitch) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  json r = rack.cpu().Call(rack.switch_ep(), {{"op", "shutdown"}});
  EXPECT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_EQ(NodeProcess::ExitCode(rack.switch_process().Wait(10s)), 0) << rack.switch_process().Log();
  // The memory node notices, keeps running, and registers with a new
  // switch on the same address.
  EXPECT_TRUE(rack.memnode(0).WaitForLog("lost the switch", 10s)) << rack.memnode(0).Log();
  EXPECT_FALSE(rack.memnode(0).Exited());
  NodeProcess second({"switch", "--listen", fmt::format("127.0.0.1:{}", rack.switch_port())});
  EXPECT_TRUE(second.WaitForLog("memory node 0 at", 10s)) << second.Log() << rack.memnode(0).Log();
  EXPECT_TRUE(rack.memnode(0).WaitForLog("reconnected to the switch", 10s)) << rack.memnode(0).Log();
}

TEST(SwitchProcess, SigtermExitsZero) {
  LocalRack rack;
  ASSERT_TRUE(rack.StartSwitch());
  rack.switch_process().Signal(SIGTERM);
  EXPECT_EQ(NodeProcess::ExitCode(rack.switch_process().Wait(10s)), 0) << rack.switch_process().Log();
  EXPECT_NE(rack.switch_process().Log().find("shutting down"), std::string::npos);
}

TEST(SwitchProcess, BadFlagsAreNamed) {
  NodeProcess bogus({"switch", "--bogus"});
  EXPECT_NE(NodeProcess::ExitCode(bogus.Wait(10s)), 0);
  EXPECT_NE(bogus.Log().find("--bogus"), std::string::npos) << bogus.Log();
  NodeProcess listen({"switch", "--listen", "nohost"});
  EXPECT_NE(NodeProcess::ExitCode(listen.Wait(10s)), 0);
  EXPECT_NE(listen.Log().find("--listen"), std::string::npos) << listen.Log();
  NodeProcess level({"switch", "--log-level", "loud"});
  EXPECT_NE(NodeProcess::ExitCode(level.Wait(10s)), 0);
  EXPECT_NE(level.Log().find("--log-level"), std::string::npos) << level.Log();
}

TEST(SwitchProcess, PortInUseIsAClearError) {
  LocalRack rack;
  ASSERT_TRUE(rack.StartSwitch());
  NodeProcess second({"switch", "--listen", fmt::format("127.0.0.1:{}", rack.switch_port())});
  EXPECT_EQ(NodeProcess::ExitCode(second.Wait(10s)), 1);
  EXPECT_NE(second.Log().find(fmt::format("cannot listen on 127.0.0.1:{}", rack.switch_port())), std::string::npos)
      << second.Log();
}

}  // namespace
}  // namespace pulse::testing

// ---- direct routing (docs/architecture.md section 6) ------------------------

namespace pulse::testing {
namespace {

uint64_t SumOver(int memnodes, LocalRack& rack, const char* counter) {
  uint64_t n = 0;
  for (int i = 0; i < memnodes; ++i) {
    json s = rack.MemNodeStats(static_cast<uint32_t>(i));
    EXPECT_TRUE(s.value("ok", false)) << s.dump();
    EXPECT_EQ(s["counters"]["routing"], "direct");
    n += s["counters"].value(counter, uint64_t{0});
  }
  return n;
}

TEST(DirectRouting, AContinuationCrossesThreeMemoryNodesWithNoSwitchHop) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(3, 8, {"--routing", "direct"}));
  // 24 hops in runs of 4: nodes 0 1 2 0 1 2, five crossings.
  FarList list = BuildList(rack, 24, 4, 1, 3);
  ClientOptions options;
  options.switch_address = rack.switch_address();
  options.tenant = 1;
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const json before = rack.SwitchStats()["counters"];
  TraverseOptions offload;
  offload.mode = ExecutionMode::kOffload;
  auto r = (*client)->Traverse(SumProgram(), list.head, std::vector<uint8_t>(8, 0), offload);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->status, TraversalStatus::kDone) << TraversalStatusName(r->status);
  uint64_t sum = 0;
  std::memcpy(&sum, r->scratch.data(), 8);
  EXPECT_EQ(sum, list.sum);
  EXPECT_EQ(r->iterations, 24u);

  // No traversal message touched the switch ...
  const json after = rack.SwitchStats()["counters"];
  EXPECT_EQ(after["messages_in"], before["messages_in"]);
  EXPECT_EQ(after["forwards"], before["forwards"]);
  EXPECT_EQ(after["routing"], "direct");
  EXPECT_GE(after["routing_version"].get<uint64_t>(), 3u) << "three registrations";
  // ... the memory nodes sent the five continuations to each other and the
  // answer to the CPU node ...
  EXPECT_EQ(SumOver(3, rack, "direct_continuations"), 5u);
  EXPECT_EQ(SumOver(3, rack, "direct_responses"), 1u);
  EXPECT_EQ(SumOver(3, rack, "switch_sends"), 0u);
  // ... and the client sent the request straight to node 0.
  EXPECT_EQ((*client)->counters().direct_sends, 1u);
  EXPECT_EQ((*client)->counters().switch_sends, 0u);
}

// Issue 14: a memory node remembers which programs it sent each peer with
// their code and sends later continuations by hash.  A peer that restarts
// has lost its program cache: before, the first continuation to the new
// process went by hash and bounced there as an unknown program (the CPU node
// then re-sent the code, three legs later).  Now the closed connection and
// the changed routing entry make node 0 send the code again.
TEST(DirectRouting, TheFirstContinuationToARestartedPeerCarriesTheProgram) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2, 8, {"--routing", "direct"}));
  FarList list = BuildList(rack, 8, 4);  // hops 0-3 on node 0, 4-7 on node 1: one crossing
  ClientOptions options;
  options.switch_address = rack.switch_address();
  options.tenant = 1;
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  TraverseOptions offload;
  offload.mode = ExecutionMode::kOffload;
  const auto sum_from_head = [&]() -> uint64_t {
    auto r = (*client)->Traverse(SumProgram(), list.head, std::vector<uint8_t>(8, 0), offload);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return 0;
    EXPECT_EQ(r->status, TraversalStatus::kDone) << TraversalStatusName(r->status);
    uint64_t sum = 0;
    std::memcpy(&sum, r->scratch.data(), 8);
    return sum;
  };
  ASSERT_EQ(sum_from_head(), list.sum);
  ASSERT_EQ(sum_from_head(), list.sum);
  json node0 = rack.MemNodeStats(0)["counters"];
  ASSERT_EQ(node0["continuations_with_code"], 1) << node0.dump();
  ASSERT_EQ(node0["continuations_by_hash"], 1) << "the second went by hash: " << node0.dump();

  rack.memnode(1).Signal(SIGKILL);
  ASSERT_NE(rack.memnode(1).Wait(10s), -1);
  rack.ForgetMemNode(1);
  json s = rack.WaitForSwitchStats([](const json& c) { return c["memnodes_alive"] == 1; });
  ASSERT_EQ(s["counters"]["memnodes_alive"], 1) << s.dump();
  rack.StartMemNode(1);  // re-attaches the pool: the list's second half is there again
  ASSERT_TRUE(rack.Join(2));

  EXPECT_EQ(sum_from_head(), list.sum);
  node0 = rack.MemNodeStats(0)["counters"];
  EXPECT_EQ(node0["continuations_with_code"], 2) << node0.dump();
  EXPECT_EQ(node0["continuations_by_hash"], 1) << node0.dump();
  const json node1 = rack.MemNodeStats(1)["counters"];
  EXPECT_EQ(node1["unknown_programs"], 0) << "the continuation bounced: " << node1.dump();
  EXPECT_EQ(node1["requests"], 1) << node1.dump();
  EXPECT_EQ((*client)->counters().unknown_programs, 0u);
}

TEST(DirectRouting, ARequestForAPointerTheNodeDoesNotOwnIsRedirectedUnrun) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2, 8, {"--routing", "direct"}));
  FarList list = BuildList(rack, 8, 4);  // hops 0-3 on node 0, 4-7 on node 1
  auto program = SumProgram();
  // A sender with a stale table sends node 1's pointer to node 0.
  const uint64_t on_node1 = list.region[1];
  TraversalMessage m = Request(rack, program, on_node1, 1);
  ASSERT_TRUE(rack.cpu().SendTraversal(rack.view(0).ep, m).ok());
  auto r = rack.cpu().WaitResponse(m.request_id);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->flags & kFlagRedirect);
  EXPECT_EQ(r->status, TraversalStatus::kNotLocal);
  EXPECT_EQ(r->cur_ptr, on_node1);
  EXPECT_EQ(r->iterations, 0u);
  EXPECT_EQ(r->scratch, m.scratch) << "state intact";
  const uint64_t version = rack.SwitchStats()["counters"]["routing_version"].get<uint64_t>();
  EXPECT_EQ(r->routing_version, version) << "the node's table is the switch's";
  json node0 = rack.MemNodeStats(0)["counters"];
  EXPECT_EQ(node0["redirects_sent"], 1);
  EXPECT_EQ(node0["requests"], 0) << "nothing ran on node 0";

  // Re-sent through the switch, as a client does: it runs once, on node 1.
  ASSERT_TRUE(rack.cpu().SendTraversal(rack.switch_ep(), m).ok());
  r = rack.cpu().WaitResponse(m.request_id);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, TraversalStatus::kDone) << TraversalStatusName(r->status);
  EXPECT_FALSE(r->flags & kFlagRedirect);
  EXPECT_EQ(Sp0(*r), 1004u + 1005 + 1006 + 1007);
  EXPECT_EQ(rack.MemNodeStats(1)["counters"]["requests"], 1);
}

// Issue 14: a CPU node that a redirect found stale asks the switch for its
// table with an empty kAmRouting and gets it as a push (what the client's
// TraversalPath::RefreshTable sends); any other payload on that id is no
// request and is dropped.
TEST(DirectRouting, ACpuNodeAsksTheSwitchForItsTableAndGetsItPushed) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2, 8, {"--routing", "direct"}));
  std::vector<json> tables;
  rack.cpu().worker().SetHandler(kAmRouting, [&tables](net::EndpointId, std::span<const uint8_t> p) {
    tables.push_back(json::parse(p.begin(), p.end(), nullptr, /*allow_exceptions=*/false));
  });
  const uint8_t junk[] = {'{', '}'};
  ASSERT_TRUE(rack.cpu().worker().Send(rack.switch_ep(), kAmRouting, std::span<const uint8_t>(junk)).ok());
  ASSERT_TRUE(rack.cpu().worker().Send(rack.switch_ep(), kAmRouting, std::span<const uint8_t>()).ok());
  for (int i = 0; i < 500 && tables.empty(); ++i) rack.cpu().Pump(std::chrono::milliseconds(10));
  ASSERT_FALSE(tables.empty()) << "no table pushed in 5 s";
  const json sw = rack.SwitchStats()["counters"];
  Result<RoutingTable> table = RoutingTable::FromJson(tables[0]);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->version(), sw["routing_version"].get<uint32_t>()) << "the switch's current table";
  EXPECT_EQ(table->entries().size(), 2u) << "both memory nodes";
  // The junk went first on the same connection, so it was handled before
  // the request the table answered.
  EXPECT_EQ(sw["table_requests"], 1) << "the non-empty payload is not a request";
}

// Issue 14: the switch pushes each new table to every memory node and CPU
// node.  A third memory node's registration makes a new version; the two
// running nodes, the test's CPU node and a Client each come to hold exactly
// that version, without asking for it.
TEST(DirectRouting, EachNewTableReachesEveryMemoryNodeAndCpuNode) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(2, 8, {"--routing", "direct"}));
  std::vector<uint32_t> pushed;  // versions pushed to the test's CPU node
  rack.cpu().worker().SetHandler(kAmRouting, [&pushed](net::EndpointId, std::span<const uint8_t> p) {
    Result<RoutingTable> t = RoutingTable::FromJson(json::parse(p.begin(), p.end(), nullptr, false));
    if (t.ok()) pushed.push_back(t->version());
  });
  ClientOptions options;
  options.switch_address = rack.switch_address();
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const uint32_t before = rack.SwitchStats()["counters"]["routing_version"].get<uint32_t>();
  EXPECT_EQ(ClientInternal::routing_version(**client), before) << "the hello's table";

  rack.StartMemNode(2, 8);
  const json sw = rack.WaitForSwitchStats(
      [before](const json& c) { return c["routing_version"].get<uint32_t>() > before; });
  const uint32_t after = sw["counters"]["routing_version"].get<uint32_t>();
  ASSERT_GT(after, before) << "node 2's registration changes the table";
  const uint64_t asked = sw["counters"]["table_requests"].get<uint64_t>();

  const auto deadline = Clock::now() + std::chrono::seconds(10);
  for (uint32_t n = 0; n < 2; ++n) {
    uint32_t held = 0;
    while ((held = rack.MemNodeStats(n)["counters"]["routing_version"].get<uint32_t>()) < after &&
           Clock::now() < deadline)
      rack.cpu().Pump(std::chrono::milliseconds(10));
    EXPECT_EQ(held, after) << "memory node " << n;
  }
  while ((pushed.empty() || pushed.back() < after) && Clock::now() < deadline)
    rack.cpu().Pump(std::chrono::milliseconds(10));
  ASSERT_FALSE(pushed.empty()) << "no table pushed to the test's CPU node";
  EXPECT_EQ(pushed.back(), after);
  Status adopted = ClientInternal::loop(**client).DriveUntil(
      [&] { return ClientInternal::routing_version(**client) >= after; }, std::chrono::milliseconds(10000));
  ASSERT_TRUE(adopted.ok()) << adopted.ToString();
  EXPECT_EQ(ClientInternal::routing_version(**client), after);
  EXPECT_EQ(rack.SwitchStats()["counters"]["table_requests"].get<uint64_t>(), asked) << "pushed, not asked for";
}

}  // namespace
}  // namespace pulse::testing
