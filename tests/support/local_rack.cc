#include "support/local_rack.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cluster/keys.h"
#include "cluster/launcher.h"
#include "cluster/process.h"
#include "protocol/control_reply.h"

namespace pulse::testing {

using namespace std::chrono_literals;

namespace {

// A fresh directory for the rack's logs and port files.
std::string TemporaryRunDirectory() {
  char path[] = "/tmp/pulse-rack-XXXXXX";
  if (mkdtemp(path) == nullptr) ADD_FAILURE() << "cannot create a directory under /tmp";
  return path;
}

}  // namespace

LocalRack::LocalRack()
    : tag_(RandomNumber() % 1000000), config_(cluster::LocalClusterConfig("rack", 0, 8, TemporaryRunDirectory())) {
  config_.binary = PULSE_BINARY;
  // The nodes' own defaults, so a test sees the node the command line gives:
  // the launcher passes these as flags.
  config_.poll.window_us = net::kDefaultPollWindowUs;
  config_.log_level = "info";
  config_.start_timeout = 10s;  // a memory node's --connect-timeout-s (its default)
  // The rack's cluster secret and tenant credentials, as `pulse cluster up`
  // makes them; the nodes get the secret through the launcher's
  // environment, this process's Workers (the CPU node, Clients) through its
  // own, restored when the rack goes.
  if (Status s = cluster::EnsureClusterKeys(config_); !s.ok()) ADD_FAILURE() << s.ToString();
  setenv(net::kSecretFileEnvironmentVariable, config_.SecretFile().c_str(), /*overwrite=*/1);
}

LocalRack::~LocalRack() {
  cpu_.reset();
  for (auto& [id, p] : memnodes_) p.reset();
  switch_.reset();
  for (const auto& name : shm_names_) shm_unlink(name.c_str());
  if (::testing::Test::HasFailure()) {
    std::fprintf(stderr, "the rack's logs are kept in %s\n", config_.ClusterDir().c_str());
  } else {
    std::error_code ec;
    std::filesystem::remove_all(config_.run_dir, ec);
  }
}

std::unique_ptr<NodeProcess> LocalRack::Launch(const cluster::NodeConfig& n) {
  std::error_code ec;
  std::filesystem::create_directories(config_.ClusterDir(), ec);
  cluster::LaunchOptions lo;
  lo.die_with_parent = true;
  lo.parent_death_signal = SIGKILL;
  auto so = cluster::NodeSpawnOptions(config_, n, lo);
  if (!so.ok()) {
    ADD_FAILURE() << n.Name() << ": " << so.status().ToString();
    return nullptr;
  }
  // A log per start: a restarted node's log does not replace its old one.
  so->log_path = fmt::format("{}/{}-{}.log", config_.ClusterDir(), n.Name(), ++launches_);
  auto p = cluster::ChildProcess::Start(*so);
  if (!p.ok()) {
    ADD_FAILURE() << n.Name() << ": " << p.status().ToString();
    return nullptr;
  }
  return std::make_unique<NodeProcess>(std::move(*p));
}

bool LocalRack::StartSwitch(const std::vector<std::string>& extra) {
  cluster::NodeConfig& n = config_.switch_node;
  n.port = 0;
  n.extra_args = extra;
  switch_ = Launch(n);
  if (switch_ == nullptr) return false;
  auto port = cluster::WaitForPortFile(switch_->id(), n.Name(), cluster::PortFileOf(config_, n), switch_->log_path(),
                                       20s);
  if (!port.ok()) {
    ADD_FAILURE() << "the switch did not start: " << port.status().ToString();
    return false;
  }
  switch_port_ = *port;
  return true;
}

std::string LocalRack::shm_name(uint32_t node) const {
  return fmt::format("/pulse-test-{}-{}-{}", getpid(), tag_, node);
}

void LocalRack::StartMemNode(uint32_t node, uint64_t pool_mib, const std::vector<std::string>& extra) {
  cluster::NodeConfig n;
  n.role = cluster::Role::kMemNode;
  n.node = node;
  n.port = 0;
  n.pool_mib = pool_mib;
  n.shm_name = shm_name(node);
  n.extra_args = extra;
  config_.switch_node.port = switch_port_;  // where the memory node registers
  shm_names_.push_back(n.shm_name);
  memnodes_[node] = Launch(n);
  if (memnodes_[node] == nullptr) memnodes_.erase(node);
}

bool LocalRack::Start(int n, uint64_t pool_mib, const std::vector<std::string>& switch_extra) {
  if (!StartSwitch(switch_extra)) return false;
  for (int i = 0; i < n; ++i) StartMemNode(static_cast<uint32_t>(i), pool_mib);
  return Join(n);
}

std::vector<std::string> LocalRack::RackFlags(const std::string& rack, bool share_with_tenant1) {
  std::vector<std::string> f = {"--rack", rack};
  if (share_with_tenant1) f.insert(f.end(), {"--rack-tenants", "1"});
  return f;
}

bool LocalRack::StartTwoRacks(uint64_t pool_mib, const std::vector<std::string>& switch_flags) {
  setenv("UCX_TLS", "tcp", 1);
  if (!StartSwitch(switch_flags)) return false;
  StartMemNode(0, pool_mib, RackFlags("a"));
  StartMemNode(1, pool_mib, RackFlags("b"));
  return Join(2);
}

bool LocalRack::Join(int n, Clock::duration timeout) {
  if (cpu_ == nullptr) {
    cpu_ = std::make_unique<TestCpuNode>();
    if (!cpu_->ok()) return false;
    auto ep = cpu_->Connect(switch_address());
    if (!ep.ok()) {
      ADD_FAILURE() << "connecting to the switch: " << ep.status().ToString();
      return false;
    }
    switch_ep_ = *ep;
  }
  const auto deadline = Clock::now() + timeout;
  json hello;
  for (;;) {
    hello = cpu_->Call(switch_ep_, {{"op", "hello"}});
    int alive = 0;
    if (hello.value("ok", false))
      for (const auto& m : hello["memnodes"]) alive += m.value("alive", false) && IsCurrent(m);
    if (alive >= n) break;
    for (auto& [id, p] : memnodes_) {
      if (p->Exited()) {
        ADD_FAILURE() << "memory node " << id << " exited:\n" << p->Log();
        return false;
      }
    }
    if (Clock::now() >= deadline) {
      ADD_FAILURE() << "memory nodes did not register in time; last hello: " << hello.dump();
      return false;
    }
    cpu_->Pump(10ms);
  }
  cpu_node_ = hello["cpu_node"].get<uint32_t>();
  for (const auto& m : hello["memnodes"]) {
    if (!m.value("alive", false) || !IsCurrent(m)) continue;
    const uint32_t id = m["node"].get<uint32_t>();
    if (views_.count(id) && views_[id].address == m["address"].get<std::string>()) continue;
    if (!ConnectMemNode(id, m["address"].get<std::string>())) return false;
  }
  return true;
}

bool LocalRack::IsCurrent(const json& listed) const {
  const uint32_t id = listed.value("node", UINT32_MAX);
  if (!memnodes_.count(id)) return true;  // not started by this rack
  cluster::NodeConfig n;
  n.role = cluster::Role::kMemNode;
  n.node = id;
  // The launcher removes a node's port file before starting it, and a memory
  // node writes it once registered: until then the switch may still list the
  // process this one replaced (it has not noticed that one's death yet).
  auto port = cluster::ReadPortFile(cluster::PortFileOf(config_, n));
  const std::string address = listed.value("address", "");
  return port.ok() && address.ends_with(fmt::format(":{}", *port));
}

bool LocalRack::ConnectMemNode(uint32_t id, const std::string& address) {
  MemNodeView v;
  v.node = id;
  v.address = address;
  auto ep = cpu_->Connect(address);
  if (!ep.ok()) {
    ADD_FAILURE() << "connecting to memory node " << id << ": " << ep.status().ToString();
    return false;
  }
  v.ep = *ep;
  json h = cpu_->Call(v.ep, {{"op", "hello"}});
  if (!h.value("ok", false)) {
    ADD_FAILURE() << "hello to memory node " << id << ": " << h.dump();
    return false;
  }
  v.base = h["base"].get<uint64_t>();
  v.size = h["size"].get<uint64_t>();
  views_[id] = std::move(v);
  return true;
}

json LocalRack::Alloc(uint32_t node, uint64_t bytes, uint32_t tenant, const std::string& perms) {
  return cpu_->Call(views_.at(node).ep, {{"op", "alloc"}, {"bytes", bytes}, {"tenant", tenant}, {"perms", perms}});
}

Result<LocalRack::Key> LocalRack::KeyFor(uint32_t node, uint64_t far, uint32_t tenant) {
  MemNodeView& v = views_.at(node);
  json k = cpu_->Call(v.ep, {{"op", "key"}, {"addr", far}, {"tenant", tenant}});
  if (!k.value("ok", false)) return ControlReplyStatus(k, "key");
  auto imported = cpu_->worker().ImportRkey(v.ep, HexDecode(k["rkey"].get<std::string>()));
  if (!imported.ok()) return imported.status();
  return Key{std::move(imported).value(), k["remote_base"].get<uint64_t>() + (far - k["base"].get<uint64_t>())};
}

Status LocalRack::Put(uint32_t node, uint64_t far, const void* data, size_t n, uint32_t tenant) {
  PULSE_ASSIGN_OR_RETURN(Key k, KeyFor(node, far, tenant));
  return cpu_->worker().Put(k.key, k.remote, data, n, 10s);
}

Status LocalRack::Get(uint32_t node, uint64_t far, void* data, size_t n, uint32_t tenant) {
  PULSE_ASSIGN_OR_RETURN(Key k, KeyFor(node, far, tenant));
  return cpu_->worker().Get(k.key, k.remote, data, n, 10s);
}

std::string LocalRack::switch_address() const { return fmt::format("127.0.0.1:{}", switch_port_); }

uint64_t LocalRack::Continuations() {
  json s = SwitchStats();
  uint64_t n = s.value("ok", false) ? s["counters"].value("forwards", uint64_t{0}) : 0;
  for (const auto& [id, view] : views_) {
    json m = MemNodeStats(id);
    if (m.value("ok", false)) n += m["counters"].value("direct_continuations", uint64_t{0});
  }
  return n;
}

}  // namespace pulse::testing
