// The comparison systems of `pulse bench app` (cache, rpc, rpc-wimpy,
// cache-rpc) on a real local rack: each runs each application for a handful
// of requests, and every answer must equal the native computation over the
// same data (as the bench drivers check).  With two memory nodes the rpc
// systems re-issue at node boundaries; their requests cross the switch
// process by default (counted apart from continuations) or go direct; and
// cache-rpc refuses more than one memory node.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "bench/app_systems.h"
#include "client/client_internal.h"
#include "support/ds_cluster.h"
#include "pulse/apps/btrdb.h"
#include "pulse/apps/webservice.h"
#include "pulse/apps/wiredtiger.h"
#include "pulse/cluster.h"
#include "pulse/rpc.h"
#include "protocol/rpc_message.h"
#include "support/local_rack.h"

namespace pulse::bench {
namespace {

using pulse::ds::testing::ScaledOps;

// A rack of `nodes` memory nodes and a way to make systems on it.
class Rack {
 public:
  bool Start(int nodes) {
    pulse::testing::SetUcxTestEnvironment();
    nodes_ = static_cast<uint32_t>(nodes);
    return rack_.Start(nodes, /*pool_mib=*/16);
  }
  AppSystemConfig Config(uint32_t memory_nodes = 0) const {
    AppSystemConfig c;
    c.client.switch_address = fmt::format("127.0.0.1:{}", rack_.switch_port());
    c.client.slab_bytes = 64 * 1024;  // small: the data spans every memory node
    c.client.request_timeout = std::chrono::milliseconds(1000);
    c.mode = ExecutionMode::kOffload;
    c.working_set_bytes = 1 << 20;  // the caches: 10 % of it, so they evict
    c.memory_nodes = memory_nodes != 0 ? memory_nodes : nodes_;
    return c;
  }
  std::unique_ptr<apps::AppSystem> System(const std::string& name, const AppSystemConfig& config) {
    auto s = MakeAppSystem(name, config);
    EXPECT_TRUE(s.ok()) << name << ": " << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  pulse::testing::LocalRack& rack() { return rack_; }

 private:
  pulse::testing::LocalRack rack_;
  uint32_t nodes_ = 0;
};

uint64_t Counter(const apps::AppSystemStats& s, const std::string& name) {
  for (const auto& [n, v] : s.counters)
    if (n == name) return v;
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

// Serves n operations of app's workload through system; check(op, answer)
// for each.
template <typename App, typename Check>
void ServeOps(App& app, apps::AppSystem* system, uint64_t n, Check check) {
  for (uint64_t i = 0; i < n; ++i) {
    const apps::ycsb::Operation op = app.NextOperation();
    auto r = app.Serve(op);
    ASSERT_TRUE(r.ok()) << system->name() << ": " << r.status().ToString();
    check(op, *r);
  }
}

void RunWebService(apps::AppSystem* system) {
  apps::WebServiceOptions o;
  o.users = 100;
  o.workload = 'A';
  o.chain_length = 10;  // chains of ten: lookups walk them
  o.operations = 1000;
  auto app = apps::WebService::Load(system, o);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  uint64_t reads = 0;
  ServeOps(**app, system, ScaledOps(60), [&](const apps::ycsb::Operation& op, const apps::WebResponse& r) {
    ASSERT_TRUE(r.found) << system->name() << " user " << op.key;
    if (op.op != apps::ycsb::Op::kRead) return;
    ++reads;
    auto obj = (*app)->Open(r);
    ASSERT_TRUE(obj.ok()) << obj.status().ToString();
    EXPECT_EQ(*obj, (*app)->Expected(op.key)) << system->name() << " user " << op.key;
  });
  EXPECT_GT(reads, 0u);
  auto absent = (*app)->Serve(apps::ycsb::Operation{apps::ycsb::Op::kRead, 0, 12345, 0});
  ASSERT_TRUE(absent.ok()) << absent.status().ToString();
  EXPECT_FALSE(absent->found);
}

void RunWiredTiger(apps::AppSystem* system) {
  apps::WiredTigerOptions o;
  o.records = 1500;
  o.operations = 1000;
  auto app = apps::WiredTiger::Load(system, o);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  uint64_t scans = 0;
  ServeOps(**app, system, ScaledOps(40),
           [&](const apps::ycsb::Operation& op, const std::vector<apps::ScanRecord>& records) {
             if (op.op != apps::ycsb::Op::kScan) return;
             ++scans;
             EXPECT_EQ(records, (*app)->NativeScan(op.key, op.scan_length))
                 << system->name() << " scan from " << op.key;
           });
  EXPECT_GT(scans, 0u);
  // Before the first key, past the last, the longest scan.
  for (auto [start, count] : std::vector<std::pair<uint64_t, uint32_t>>{{0, 128}, {UINT64_MAX, 5}, {1, 1}}) {
    auto r = system->BTreeScan((*app)->tree(), start, count);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, (*app)->NativeScan(start, count)) << system->name() << " scan from " << start;
  }
}

void RunBtrdb(apps::AppSystem* system) {
  apps::BtrdbOptions o;
  o.seconds = 180;
  auto app = apps::Btrdb::Load(system, o);
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  std::mt19937_64 rng(9);
  for (uint64_t i = 0; i < ScaledOps(40); ++i) {
    const apps::TsvQuery q = (*app)->NextQuery(rng);
    auto r = (*app)->Run(q);
    ASSERT_TRUE(r.ok()) << system->name() << ": " << r.status().ToString();
    EXPECT_DOUBLE_EQ(*r, (*app)->Native(q)) << system->name() << " [" << q.lo << ", " << q.hi << "]";
  }
  const uint64_t last = (*app)->values().size() - 1;
  for (auto [lo, hi] : std::vector<std::pair<uint64_t, uint64_t>>{{0, 0}, {0, last}, {31, 32}, {last, last + 100}}) {
    auto a = system->TsvAggregate((*app)->tree(), lo, hi);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(*a, apps::NativeAggregate((*app)->values(), lo, hi)) << system->name() << " [" << lo << ", " << hi << "]";
  }
}

using AppRun = void (*)(apps::AppSystem*);
constexpr AppRun kApps[] = {RunWebService, RunWiredTiger, RunBtrdb};

// Each application on a fresh system `name`; after_each(run, system).
template <typename After>
void RunEveryApp(Rack& rack, const char* name, After after_each) {
  SCOPED_TRACE(name);
  for (AppRun run : kApps) {
    auto system = rack.System(name, rack.Config());
    ASSERT_NE(system, nullptr);
    run(system.get());
    if (::testing::Test::HasFatalFailure()) return;
    after_each(run, system.get());
  }
}

class OneMemoryNode : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(rack_.Start(1)); }
  Rack rack_;
};

class TwoMemoryNodes : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(rack_.Start(2)); }
  uint64_t SwitchCounter(const char* name) {
    return rack_.rack().SwitchStats()["counters"][name].get<uint64_t>();
  }
  Rack rack_;
};

TEST_F(OneMemoryNode, EverySystemRunsEveryApplication) {
  for (const char* name : {"cache", "rpc", "rpc-wimpy", "cache-rpc"}) {
    RunEveryApp(rack_, name, [](AppRun, apps::AppSystem*) {});
    if (HasFatalFailure()) return;
  }
}

TEST_F(OneMemoryNode, CachesHitAndMiss) {
  // The Fastswap-like page cache, with CLOCK, and the AIFM-like object cache:
  // a zipfian workload over a cache of 10 % of the data both hits and misses.
  AppSystemConfig config = rack_.Config();
  config.cache_policy = "clock";
  for (const char* name : {"cache", "cache-rpc"}) {
    auto system = rack_.System(name, config);
    ASSERT_NE(system, nullptr);
    RunWebService(system.get());
    const apps::AppSystemStats s = system->Stats();
    const std::string what = std::string(name) == "cache" ? "cache" : "cache_object";
    EXPECT_GT(Counter(s, what + "_hits"), 0u) << name;
    EXPECT_GT(Counter(s, what + "_misses"), 0u) << name;
    EXPECT_GT(Counter(s, what + "_evictions"), 0u) << name;
  }
  config.cache_policy = "fifo";
  EXPECT_EQ(MakeAppSystem("cache", config).status().code(), Status::Code::kInvalidArgument);
}

TEST_F(TwoMemoryNodes, RpcSystemsReissueAtNodeBoundaries) {
  for (const char* name : {"rpc", "rpc-wimpy"}) {
    RunEveryApp(rack_, name, [](AppRun run, apps::AppSystem* system) {
      // A scan's value slots lie on both nodes: its calls cross them.
      if (run != RunWiredTiger) return;
      EXPECT_GT(system->Stats().reissues, 0u) << system->name();
    });
    if (HasFatalFailure()) return;
  }
}

TEST_F(TwoMemoryNodes, RpcGoesThroughTheSwitchUnlessDirect) {
  for (const std::string path : {"switch", "direct"}) {
    SCOPED_TRACE(path);
    AppSystemConfig config = rack_.Config();
    config.rpc_path = path;
    auto system = rack_.System("rpc", config);
    ASSERT_NE(system, nullptr);
    const uint64_t forwarded0 = SwitchCounter("rpc_requests"), replies0 = SwitchCounter("rpc_replies");
    const uint64_t forwards0 = SwitchCounter("forwards");
    const uint64_t requests0 = Counter(system->Stats(), "rpc_requests");
    RunWiredTiger(system.get());
    const uint64_t requests = Counter(system->Stats(), "rpc_requests") - requests0;
    EXPECT_GT(requests, 0u);
    // Every request (re-issues included) and its reply cross the switch, or
    // none do; either way they are no continuations.
    const uint64_t expected = path == "switch" ? requests : 0;
    EXPECT_EQ(SwitchCounter("rpc_requests") - forwarded0, expected);
    EXPECT_EQ(SwitchCounter("rpc_replies") - replies0, expected);
    EXPECT_EQ(SwitchCounter("forwards"), forwards0);
  }
  AppSystemConfig config = rack_.Config();
  config.rpc_path = "sideways";
  auto bad = MakeAppSystem("rpc", config);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--rpc-path"), std::string::npos) << bad.status().ToString();
}

TEST_F(TwoMemoryNodes, TheSwitchAnswersRpcsItCannotForward) {
  // A raw request through the switch for a pointer no memory node owns,
  // under a request id naming another CPU node: the switch answers it
  // itself, kFaultInvalidPointer, to the connection that asked, with the
  // id's CPU-node bits set to that connection's.
  auto client = Client::Connect(rack_.Config().client);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Client& c = **client;
  std::optional<rpc::RpcReply> reply;
  ClientInternal::worker(c).SetHandler(kAmRpcReply, [&](net::EndpointId, std::span<const uint8_t> p) {
    auto r = rpc::DecodeRpcReply(p, 1 << 20);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    reply = std::move(*r);
  });
  rpc::RpcRequest req;
  req.handler = kRpcUmapFind;
  req.request_id = MakeRequestId(c.cpu_node() + 5, 1234);
  req.tenant = c.tenant();
  req.start = FarBase(40);
  req.state.assign(40, 0);
  const uint64_t answered0 = SwitchCounter("rpc_answered");
  ASSERT_TRUE(ClientInternal::worker(c).Send(ClientInternal::switch_endpoint(c), kAmRpcRequest, rpc::EncodeRpcRequest(req)).ok());
  ASSERT_TRUE(ClientInternal::loop(c).DriveUntil([&] { return reply.has_value(); }, std::chrono::seconds(5)).ok());
  EXPECT_EQ(reply->status, TraversalStatus::kFaultInvalidPointer);
  EXPECT_EQ(reply->request_id, MakeRequestId(c.cpu_node(), 1234));
  EXPECT_EQ(reply->fault_addr, req.start);
  EXPECT_EQ(SwitchCounter("rpc_answered"), answered0 + 1);
  // A reply from a CPU node is not forwarded anywhere.  The switch handles
  // a connection's messages in order: once the request sent after it is
  // answered, the reply has been dropped.
  const uint64_t dropped0 = SwitchCounter("rpc_dropped");
  ASSERT_TRUE(ClientInternal::worker(c).Send(ClientInternal::switch_endpoint(c), kAmRpcReply, rpc::EncodeRpcReply(*reply)).ok());
  reply.reset();
  ASSERT_TRUE(ClientInternal::worker(c).Send(ClientInternal::switch_endpoint(c), kAmRpcRequest, rpc::EncodeRpcRequest(req)).ok());
  ASSERT_TRUE(ClientInternal::loop(c).DriveUntil([&] { return reply.has_value(); }, std::chrono::seconds(5)).ok());
  EXPECT_EQ(SwitchCounter("rpc_dropped"), dropped0 + 1);
  ClientInternal::worker(c).SetHandler(kAmRpcReply, {});
}

TEST_F(TwoMemoryNodes, CacheRpcRefusesMoreThanOneMemoryNode) {
  // Asked for two, and (asked for none in particular) finding two.
  for (uint32_t asked : {2u, 1u}) {
    AppSystemConfig config = rack_.Config(asked);
    auto s = MakeAppSystem("cache-rpc", config);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(s.status().message().find("--memory-nodes"), std::string::npos) << s.status().ToString();
  }
}

}  // namespace
}  // namespace pulse::bench
