// A switch and memory nodes, each a real `pulse` process (PULSE_BINARY)
// started by the launcher (src/cluster/launcher.h: its command lines, port
// files, environment), plus the test's CPU node (cpu_node.h) connected to
// all of them.
//
// Every wait has a deadline and watches a condition (a port file, a reply,
// a counter, a process exit); the nodes are SIGKILLed when the rack goes
// away and when the test process dies (PR_SET_PDEATHSIG), and their pools'
// shared-memory objects are unlinked.  The nodes' logs are in a temporary
// run directory, removed with the rack unless the test failed (then its path
// is printed).  Not thread-safe: the test's thread drives it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/config.h"
#include "pulse/net.h"
#include "support/cpu_node.h"
#include "support/environment_snapshot.h"
#include "support/node_process.h"

namespace pulse::testing {

class LocalRack {
 public:
  LocalRack();
  ~LocalRack();
  LocalRack(const LocalRack&) = delete;
  LocalRack& operator=(const LocalRack&) = delete;

  // Starts the switch on a port of its choosing (it reports it in a port
  // file), with `extra` flags.  Returns false (and fails the test) if it
  // does not come up within 20 s.
  bool StartSwitch(const std::vector<std::string>& extra = {});

  // The pool object name memory node `node` of this rack uses.
  std::string shm_name(uint32_t node) const;

  // Starts memory node `node` against the switch on port 0 (it registers its
  // real address), with `extra` flags; does not wait (Join does).  A node
  // started again (after it died) gets the same pool name and re-attaches
  // the pool.
  void StartMemNode(uint32_t node, uint64_t pool_mib = 8, const std::vector<std::string>& extra = {});

  // The flags that make a memory node the daemon of rack `rack`, its pool
  // shared with tenant 1 (`share_with_tenant1` false: with no tenant, so the
  // rack offers no pool).
  static std::vector<std::string> RackFlags(const std::string& rack, bool share_with_tenant1 = true);

  // Starts the switch and two racks, memory node 0 the daemon of rack "a"
  // and node 1 of rack "b", each with a pool of `pool_mib` shared with
  // tenant 1, and joins both.  The racks reach each other only through the
  // fabric: it sets UCX_TLS=tcp in this process's environment, which the
  // nodes inherit (the caller unsets it when done).  False (and a test
  // failure) as Join.
  bool StartTwoRacks(uint64_t pool_mib, const std::vector<std::string>& switch_flags = {});

  // Starts the switch (with `switch_extra` flags, e.g. {"--routing",
  // "switch"}) and memory nodes 0..n-1 and joins as a CPU node.
  bool Start(int n, uint64_t pool_mib = 8, const std::vector<std::string>& switch_extra = {});

  // Connects the CPU node (once) and waits until `n` memory nodes are alive
  // at the switch (hello); then connects to each (new) one.  False (and a
  // test failure) if a memory node exits or the deadline passes.
  bool Join(int n, Clock::duration timeout = std::chrono::seconds(20));
  bool ConnectMemNode(uint32_t id, const std::string& address);
  // Whether a memory node the switch lists is the process this rack started
  // last for that id (true for nodes it did not start).
  bool IsCurrent(const nlohmann::json& listed) const;

  // Allocates on a memory node; the reply (ok or not).
  json Alloc(uint32_t node, uint64_t bytes, uint32_t tenant = 1, const std::string& perms = "rw");
  // One-sided access as `tenant`: the key of the allocation holding `far`
  // ("key"), then Get/Put with it.  The node's refusal (PermissionDenied,
  // NotFound) comes back as is.
  struct Key {
    net::RemoteKey key;
    uint64_t remote = 0;  // the remote address of `far`
  };
  Result<Key> KeyFor(uint32_t node, uint64_t far, uint32_t tenant = 1);
  Status Put(uint32_t node, uint64_t far, const void* data, size_t n, uint32_t tenant = 1);
  Status Get(uint32_t node, uint64_t far, void* data, size_t n, uint32_t tenant = 1);
  json SwitchStats() { return cpu_->Call(switch_ep_, {{"op", "stats"}}); }
  json MemNodeStats(uint32_t node) { return cpu_->Call(views_.at(node).ep, {{"op", "stats"}}); }
  // "Not local" continuations between memory nodes so far, whichever way
  // they went: forwarded by the switch (routing "switch", or a fall-back)
  // plus sent straight from node to node (routing "direct").
  uint64_t Continuations();
  // The cluster's routing as the switch reports it: "direct" or "switch"
  // (the switch's --routing, else $PULSE_ROUTING, else direct).
  std::string Routing() { return SwitchStats()["counters"].value("routing", std::string("switch")); }

  // Waits until the switch's stats satisfy `pred`; returns the last stats.
  template <typename Pred>
  json WaitForSwitchStats(Pred pred, Clock::duration timeout = std::chrono::seconds(10)) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      json s = SwitchStats();
      if ((s.value("ok", false) && pred(s["counters"])) || Clock::now() >= deadline) return s;
      cpu_->Pump(std::chrono::milliseconds(10));
    }
  }

  TestCpuNode& cpu() { return *cpu_; }
  // The rack as the launcher sees it (its secret and credential files).
  const cluster::ClusterConfig& config() const { return config_; }
  NodeProcess& switch_process() { return *switch_; }
  NodeProcess& memnode(uint32_t node) { return *memnodes_.at(node); }
  MemNodeView& view(uint32_t node) { return views_.at(node); }
  // Drops the view of a memory node that died (Join connects it again).
  void ForgetMemNode(uint32_t node) { views_.erase(node); }
  uint16_t switch_port() const { return switch_port_; }
  // "127.0.0.1:<port>": what a Client's switch_address takes.
  std::string switch_address() const;
  net::EndpointId switch_ep() const { return switch_ep_; }
  uint32_t cpu_node() const { return cpu_node_; }

 private:
  // Starts node `n` of config_ (its launcher command line) with a log of its
  // own; nullptr (and a test failure) if it cannot.
  std::unique_ptr<NodeProcess> Launch(const cluster::NodeConfig& n);

  uint32_t tag_;
  cluster::ClusterConfig config_;  // the rack as the launcher sees it
  int launches_ = 0;               // numbers the logs
  std::unique_ptr<NodeProcess> switch_;
  std::map<uint32_t, std::unique_ptr<NodeProcess>> memnodes_;
  std::vector<std::string> shm_names_;
  std::unique_ptr<TestCpuNode> cpu_;
  std::map<uint32_t, MemNodeView> views_;
  uint16_t switch_port_ = 0;
  net::EndpointId switch_ep_ = net::kInvalidEndpoint;
  uint32_t cpu_node_ = 0;
  EnvironmentSnapshot environment_;  // put back when the rack goes: its secret stays with it
};

}  // namespace pulse::testing
