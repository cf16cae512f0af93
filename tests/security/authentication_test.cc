// Who may connect to a running rack, and what a tenant's connection may do
// (issue 19, part 2): the rack has a cluster secret and the default tenant's
// credential (cluster::EnsureClusterKeys, as `pulse cluster up`); a client
// proves its tenant in the handshake; an administrative operation needs the
// cluster secret; the memory node takes a request's tenant from the
// connection, not from the request.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "engine/run_both.h"
#include "engine/sum_list_program.h"
#include "protocol/control_client.h"
#include "protocol/rpc_message.h"
#include "pulse/client.h"
#include "pulse/net.h"
#include "pulse/program.h"
#include "pulse/rpc.h"
#include "pulse/protocol.h"
#include "support/local_rack.h"

namespace pulse::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// Unsets an environment variable for a scope.
class ScopedUnsetEnv {
 public:
  explicit ScopedUnsetEnv(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    unsetenv(name);
  }
  ~ScopedUnsetEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::vector<uint8_t> RackSecret() {
  auto secret = net::ReadKeyFile(std::getenv(net::kSecretFileEnvironmentVariable));
  EXPECT_TRUE(secret.ok()) << secret.status().ToString();
  return secret.ok() ? *secret : std::vector<uint8_t>{};
}

// Allocates 4 KiB of tenant 1's memory on memory node 0 (as the rack's
// cluster peer) and writes `n` bytes of `data` at its start; its base, or 0
// (and a test failure).
uint64_t Tenant1Block(LocalRack& rack, const void* data, size_t n) {
  json mine = rack.Alloc(0, 4096, 1);
  EXPECT_TRUE(mine.value("ok", false)) << mine.dump();
  if (!mine.value("ok", false)) return 0;
  const uint64_t base = mine["base"].get<uint64_t>();
  Status put = rack.Put(0, base, data, n);
  EXPECT_TRUE(put.ok()) << put.ToString();
  return put.ok() ? base : 0;
}

// A CPU node of tenant `tenant` (it holds only that tenant's key), joined
// to the rack's switch; `sw` stays invalid (and the test has failed) if it
// could not.
struct TenantCpuNode {
  std::unique_ptr<TestCpuNode> node;
  net::EndpointId sw = net::kInvalidEndpoint;
  uint32_t cpu_node = 0;
};

TenantCpuNode JoinSwitchAsTenant(LocalRack& rack, uint32_t tenant) {
  TenantCpuNode t;
  net::Credentials creds;
  creds.tenant = tenant;
  creds.tenant_key = net::DeriveTenantKey(RackSecret(), tenant);
  t.node = std::make_unique<TestCpuNode>(creds);
  EXPECT_TRUE(t.node->ok());
  if (!t.node->ok()) return t;
  auto sw = t.node->Connect(rack.switch_address());
  EXPECT_TRUE(sw.ok()) << sw.status().ToString();
  if (!sw.ok()) return t;
  json hello = t.node->Call(*sw, {{"op", "hello"}});
  EXPECT_TRUE(hello.value("ok", false)) << hello.dump();
  if (!hello.value("ok", false)) return t;
  t.cpu_node = hello["cpu_node"].get<uint32_t>();
  t.sw = *sw;
  return t;
}

// A bare Worker with `creds`, connected to the memory node 0 and the
// switch of `rack`, for raw control calls.
struct RawPeer {
  std::unique_ptr<net::Worker> worker;
  std::unique_ptr<ControlClient> control;
  net::EndpointId sw = net::kInvalidEndpoint;
  net::EndpointId mem = net::kInvalidEndpoint;
};

RawPeer ConnectRaw(LocalRack& rack, const net::Credentials& creds) {
  RawPeer p;
  net::WorkerOptions wo;
  wo.credentials = creds;
  auto w = net::Worker::Create(wo);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  if (!w.ok()) return p;
  p.worker = std::move(*w);
  p.control = std::make_unique<ControlClient>(p.worker.get());
  auto sw = p.worker->Connect("127.0.0.1", rack.switch_port(), 10s);
  EXPECT_TRUE(sw.ok()) << sw.status().ToString();
  if (sw.ok()) p.sw = *sw;
  auto hello = p.control->Call(p.sw, json{{"op", "hello"}}, 10s);
  EXPECT_TRUE(hello.ok()) << hello.status().ToString();
  if (!hello.ok()) return p;
  const std::string address = (*hello)["memnodes"][0]["address"].get<std::string>();
  auto colon = address.rfind(':');
  auto mem = p.worker->Connect(address.substr(0, colon), static_cast<uint16_t>(std::stoul(address.substr(colon + 1))), 10s);
  EXPECT_TRUE(mem.ok()) << mem.status().ToString();
  if (mem.ok()) p.mem = *mem;
  return p;
}

TEST(Authentication, TenantCredentialFileLetsAClientIn) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  ScopedUnsetEnv no_secret(net::kSecretFileEnvironmentVariable);  // the file alone must do
  ClientOptions co;
  co.switch_address = rack.switch_address();
  co.tenant = 1;
  co.credential_file = rack.config().CredentialFileOf(rack.config().TenantsOrDefault()[0]);
  auto client = Client::Connect(co);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto a = (*client)->Allocate(64);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const uint64_t v = 0x5ec0de;
  ASSERT_TRUE((*client)->Write(*a, &v, 8).ok());
  uint64_t back = 0;
  ASSERT_TRUE((*client)->Read(*a, &back, 8).ok());
  EXPECT_EQ(back, v);
}

TEST(Authentication, ClientWithoutCredentialsIsRefused) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  ScopedUnsetEnv no_secret(net::kSecretFileEnvironmentVariable);
  ClientOptions co;
  co.switch_address = rack.switch_address();
  co.connect_timeout = 10s;
  auto client = Client::Connect(co);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), Status::Code::kPermissionDenied) << client.status().ToString();
}

TEST(Authentication, WrongTenantCredentialIsRefused) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  const std::vector<uint8_t> secret = RackSecret();
  ClientOptions co;
  co.switch_address = rack.switch_address();
  co.connect_timeout = 10s;
  // Tenant 2 claimed with tenant 1's key.
  co.tenant = 2;
  co.credential = net::DeriveTenantKey(secret, 1);
  auto client = Client::Connect(co);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), Status::Code::kPermissionDenied) << client.status().ToString();
  // Random bytes.
  co.tenant = 1;
  co.credential = std::vector<uint8_t>(net::kKeySize, 0x42);
  client = Client::Connect(co);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), Status::Code::kPermissionDenied) << client.status().ToString();
  // The right one.
  co.credential = net::DeriveTenantKey(secret, 1);
  client = Client::Connect(co);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
}

TEST(Authentication, WrongClusterSecretIsRefusedByEveryNode) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  net::WorkerOptions wo;
  wo.credentials = net::Credentials{};
  wo.credentials->cluster_secret.assign(net::kKeySize, 7);
  auto w = net::Worker::Create(wo);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto sw = (*w)->Connect("127.0.0.1", rack.switch_port(), 10s);
  ASSERT_FALSE(sw.ok());
  EXPECT_EQ(sw.status().code(), Status::Code::kPermissionDenied) << sw.status().ToString();
  const std::string address = rack.view(0).address;
  auto colon = address.rfind(':');
  auto mem = (*w)->Connect(address.substr(0, colon), static_cast<uint16_t>(std::stoul(address.substr(colon + 1))), 10s);
  ASSERT_FALSE(mem.ok());
  EXPECT_EQ(mem.status().code(), Status::Code::kPermissionDenied) << mem.status().ToString();
  EXPECT_FALSE(rack.switch_process().Exited());
  EXPECT_FALSE(rack.memnode(0).Exited());
}

TEST(Authentication, TenantConnectionActsOnlyForItsTenant) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  const std::vector<uint8_t> secret = RackSecret();
  // Tenant 1's allocation, made by the rack (a cluster peer naming tenant 1).
  json mine = rack.Alloc(0, 4096, 1);
  ASSERT_TRUE(mine.value("ok", false)) << mine.dump();
  const uint64_t base1 = mine["base"].get<uint64_t>();

  net::Credentials tenant2;
  tenant2.tenant = 2;
  tenant2.tenant_key = net::DeriveTenantKey(secret, 2);
  RawPeer p = ConnectRaw(rack, tenant2);
  ASSERT_NE(p.mem, net::kInvalidEndpoint);
  auto peer = rack.cpu().worker().PeerOf(rack.switch_ep());
  ASSERT_TRUE(peer.ok());
  EXPECT_EQ(peer->kind, net::PeerKind::kCluster);  // the rack's CPU node sees the switch

  auto call = [&](net::EndpointId ep, json req) { return p.control->Call(ep, std::move(req), 10s); };
  // Claiming another tenant is refused; naming none or its own works.
  auto r = call(p.mem, json{{"op", "alloc"}, {"bytes", 4096}, {"tenant", 1}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kPermissionDenied) << r.status().ToString();
  r = call(p.mem, json{{"op", "alloc"}, {"bytes", 4096}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  r = call(p.mem, json{{"op", "alloc"}, {"bytes", 4096}, {"tenant", 2}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Tenant 1's memory: no free, no lock, whatever tenant the request names.
  for (json t : {json(1), json(2), json()}) {
    json free_req{{"op", "free"}, {"base", base1}};
    json lock_req{{"op", "lock"}, {"addr", base1}, {"holder", 9}, {"exclusive", true}, {"lease_ms", 1000}};
    if (!t.is_null()) free_req["tenant"] = lock_req["tenant"] = t;
    r = call(p.mem, free_req);
    EXPECT_EQ(r.status().code(), Status::Code::kPermissionDenied) << free_req.dump() << " " << r.status().ToString();
    r = call(p.mem, lock_req);
    EXPECT_EQ(r.status().code(), Status::Code::kPermissionDenied) << lock_req.dump() << " " << r.status().ToString();
  }
  // Administrative operations need the cluster secret.
  r = call(p.sw, json{{"op", "register_memnode"}, {"node", 9}, {"address", "127.0.0.1:1"}, {"base", 1ull << 40},
                      {"size", 1 << 20}});
  EXPECT_EQ(r.status().code(), Status::Code::kPermissionDenied) << r.status().ToString();
  r = call(p.sw, json{{"op", "shutdown"}});
  EXPECT_EQ(r.status().code(), Status::Code::kPermissionDenied) << r.status().ToString();
  r = call(p.mem, json{{"op", "shutdown"}});
  EXPECT_EQ(r.status().code(), Status::Code::kPermissionDenied) << r.status().ToString();
  EXPECT_FALSE(rack.switch_process().Exited());
  EXPECT_FALSE(rack.memnode(0).Exited());
  // Tenant 1's bytes are untouched and its owner can still free them.
  json freed = rack.cpu().Call(rack.view(0).ep, {{"op", "free"}, {"base", base1}, {"tenant", 1}});
  EXPECT_TRUE(freed.value("ok", false)) << freed.dump();
}

// A traversal runs as the tenant its connection proved: tenant 2's
// connection that claims tenant 1 cannot read tenant 1's list, while the
// same request from a cluster peer (the rack's CPU node) can.
TEST(Authentication, TraversalRunsAsTheConnectionsTenant) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  const uint64_t element[2] = {0, 77};  // {next, value}
  const uint64_t base1 = Tenant1Block(rack, element, sizeof(element));
  ASSERT_NE(base1, 0u);
  const ProgramRef program = MustBuild(kSumListProgram);
  ASSERT_NE(program, nullptr);
  auto request = [&](uint32_t cpu, uint64_t n) {
    TraversalMessage m;
    m.request_id = MakeRequestId(cpu, n);
    m.cpu_node = cpu;
    m.tenant = 1;  // claimed
    m.program_hash = program->hash();
    m.program = program->encoded();
    m.cur_ptr = base1;
    m.scratch.assign(8, 0);
    m.max_iterations = 10;
    return m;
  };
  auto sum_of = [](const TraversalMessage& r) {
    uint64_t v = 0;
    if (r.scratch.size() >= 8) std::memcpy(&v, r.scratch.data(), 8);
    return v;
  };

  ASSERT_TRUE(rack.cpu().SendTraversal(rack.switch_ep(), request(rack.cpu_node(), 1)).ok());
  auto ok = rack.cpu().WaitResponse(MakeRequestId(rack.cpu_node(), 1));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, TraversalStatus::kDone) << TraversalStatusName(ok->status);
  EXPECT_EQ(sum_of(*ok), 77u);

  TenantCpuNode intruder = JoinSwitchAsTenant(rack, 2);
  ASSERT_NE(intruder.sw, net::kInvalidEndpoint);
  ASSERT_TRUE(intruder.node->SendTraversal(intruder.sw, request(intruder.cpu_node, 1)).ok());
  auto denied = intruder.node->WaitResponse(MakeRequestId(intruder.cpu_node, 1));
  ASSERT_TRUE(denied.ok()) << denied.status().ToString();
  EXPECT_NE(denied->status, TraversalStatus::kDone) << TraversalStatusName(denied->status);
  EXPECT_NE(sum_of(*denied), 77u);
}

// An RPC routed through the switch (`--rpc-path switch`) runs as the tenant
// the switch proved for the client's connection: the memory node trusts the
// switch's word, so the switch overwrites a claim.  Tenant 2's connection
// that claims tenant 1 gets kFaultProtection and no byte of tenant 1's
// list; the same request from a cluster peer (the rack's CPU node) reads it.
TEST(Authentication, SwitchRoutedRpcRunsAsTheConnectionsTenant) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  const uint64_t node[3] = {0, 0, 77};  // ds::List node {next, prev, value}
  const uint64_t base1 = Tenant1Block(rack, node, sizeof(node));
  ASSERT_NE(base1, 0u);
  auto request = [&](uint32_t cpu, uint64_t n) {
    rpc::RpcRequest r;
    r.handler = kRpcListAggregate;
    r.request_id = MakeRequestId(cpu, n);
    r.tenant = 1;  // claimed
    r.start = base1;
    const uint64_t state[6] = {0, UINT64_MAX, 0, UINT64_MAX, 0, 0};  // lo, hi, sum, min, max, count
    r.state.assign(reinterpret_cast<const uint8_t*>(state), reinterpret_cast<const uint8_t*>(state) + sizeof(state));
    return rpc::EncodeRpcRequest(r);
  };
  // Sends through the switch `sw` of `cpu` and waits for the reply.
  auto call = [&](TestCpuNode& cpu, net::EndpointId sw, uint32_t cpu_node) -> std::optional<rpc::RpcReply> {
    std::optional<rpc::RpcReply> reply;
    cpu.worker().SetHandler(kAmRpcReply, [&](net::EndpointId, std::span<const uint8_t> p) {
      auto r = rpc::DecodeRpcReply(p, 1 << 20);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (r.ok()) reply = std::move(*r);
    });
    EXPECT_TRUE(cpu.worker().Send(sw, kAmRpcRequest, request(cpu_node, 1)).ok());
    Status s = cpu.worker().RunUntil([&] { return reply.has_value(); }, 10s);
    EXPECT_TRUE(s.ok()) << s.ToString();
    cpu.worker().SetHandler(kAmRpcReply, {});
    return reply;
  };
  auto sum_of = [](const rpc::RpcReply& r) {
    uint64_t v = 0;
    if (r.state.size() >= 24) std::memcpy(&v, r.state.data() + 16, 8);
    return v;
  };

  auto ok = call(rack.cpu(), rack.switch_ep(), rack.cpu_node());
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, TraversalStatus::kDone) << TraversalStatusName(ok->status);
  EXPECT_EQ(sum_of(*ok), 77u);

  TenantCpuNode intruder = JoinSwitchAsTenant(rack, 2);
  ASSERT_NE(intruder.sw, net::kInvalidEndpoint);
  auto denied = call(*intruder.node, intruder.sw, intruder.cpu_node);
  ASSERT_TRUE(denied.has_value());
  EXPECT_EQ(denied->status, TraversalStatus::kFaultProtection) << TraversalStatusName(denied->status);
  EXPECT_NE(sum_of(*denied), 77u);
  // Tenant 1's bytes are unchanged.
  uint64_t after[3] = {};
  ASSERT_TRUE(rack.Get(0, base1, after, sizeof(after)).ok());
  EXPECT_EQ(std::memcmp(after, node, sizeof(node)), 0);
}

}  // namespace
}  // namespace pulse::testing
