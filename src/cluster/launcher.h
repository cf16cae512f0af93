// Starting and stopping a local cluster (`pulse cluster up|down`, and the
// benchmarks that bring their own cluster).
//
// StartCluster runs one process per node of the config (`pulse switch`,
// `pulse memnode`), detached in sessions of their own with one log file
// each under ClusterConfig::ClusterDir(), and records them in a state file
// (JSON) there.  A node configured with port 0 binds a free port itself and
// reports it in <name>.port there (`--port-file`); the state records the
// port.  It returns once every node answers the `stats` control
// operation and the switch knows every memory node; if that does not happen
// before the config's start_timeout, or a node exits, it stops what it
// started and names the node and its log.
//
// The pieces StartCluster is made of are public for callers that own their
// nodes instead (the test harness, tests/support/local_rack.h):
// NodeSpawnOptions gives a node's command line, environment and log, and
// WaitForPortFile the port a node started on port 0 chose; ChildProcess
// (process.h) runs it.  LocalClusterConfig is the config of a throw-away
// cluster on this host (benchmarks, tests).
//
// Each launch of a node gets a random instance id that the node returns in
// `stats`: the launcher takes a node for up, and sends it `shutdown`, only
// when the process answering at its address returns that id.
// RestartDeadNodes (`pulse cluster restart`) starts dead nodes again on
// their addresses and pools.
//
// StopCluster asks each node to `shutdown`, then sends SIGTERM, then
// SIGKILL, each stage bounded by a deadline; it never signals a pid that no
// longer belongs to the node (see process.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/config.h"
#include "cluster/process.h"
#include "pulse/status.h"

namespace pulse::cluster {

struct NodeProcess {
  std::string name;         // "switch", "memnode-<id>"
  Role role = Role::kSwitch;
  uint32_t node = 0;        // memory node id
  std::string address;      // host:port for control operations
  ProcessId process;
  std::string log;          // its stdout and stderr
  std::string shm_name;     // memnode pool object, removed after a SIGKILL
  // Random, new at every launch, passed as --instance-id and returned by
  // the node in `stats`: the process that answers at `address` is the one
  // started, not another one holding the port.  Empty in state files
  // written before instance ids (then not checked).
  std::string instance;
};

// What the state file records about a running cluster.
struct ClusterState {
  std::string name;
  std::string config_source;
  std::string state_file;
  std::string switch_address;
  std::string ucx_tls;      // the transports the nodes were given ("" : UCX's choice)
  int64_t started_unix = 0;
  std::vector<NodeProcess> nodes;  // the switch first
};

struct LaunchOptions {
  // Children get parent_death_signal when the launching thread exits (a
  // benchmark's or a test's own cluster must not outlive it); `pulse cluster
  // up` leaves this off.
  bool die_with_parent = false;
  int parent_death_signal = SIGTERM;
  // Progress lines ("started memnode-1 (pid 1234)"), optional.
  std::function<void(const std::string&)> progress;
};

// Starts the cluster.  A node counts as up once the process answering
// `stats` at its address returns the instance id it was launched with.
// Errors: InvalidArgument "already running" if every node of the state
// file's cluster still runs; FailedPrecondition if some of its nodes died
// (naming them, pointing at `pulse cluster restart`) or all did and their
// pools still exist (restart or down); FailedPrecondition naming the address
// if another process answers where a started node should; IoError (cannot
// write the run directory, cannot execute the binary); Unavailable/Timeout
// naming the node that did not come up and its log.
Result<ClusterState> StartCluster(const ClusterConfig& config, const LaunchOptions& options = {});

// What StopCluster or RestartDeadNodes did with each node.
struct NodeOutcome {
  std::string name;
  std::string how;  // StopCluster: "shutdown", "SIGTERM", "SIGKILL", "not running", "still running",
                    // with "; pool ... kept" when a live process uses the pool of a node that was dead
};
using StopOutcome = NodeOutcome;

// Stops every node of `state` (memory nodes first) and removes the state
// file.  Each stage waits at most `stage_timeout`.  The pool of a memory
// node that no longer runs is removed unless a live process uses it (e.g.
// the node restarted by hand: see pools.h).  Errors: Timeout if a process
// survived SIGKILL (the state file is then kept).
Result<std::vector<StopOutcome>> StopCluster(const ClusterState& state, std::chrono::milliseconds stage_timeout);

// Starts again the nodes of `state` named in `names` ("switch",
// "memnode-<id>" or just "<id>"; empty: every node) that no longer run, with
// their arguments, addresses and pools (memory nodes re-attach theirs: data
// kept), the switch first; leaves running ones alone.  Waits until the
// restarted nodes answer with their new instance ids and the switch lists
// every memory node again.  Updates `state` (not its file).  One outcome
// per named node: "restarted (pid N)" or "running (pid N), left alone".
// Errors: NotFound naming an unknown node; FailedPrecondition if a dead
// memory node's pool is in use by another process (restarted by hand); those
// of starting a node (nodes restarted before the failure keep running and
// are in `state`).
Result<std::vector<NodeOutcome>> RestartDeadNodes(const ClusterConfig& config, ClusterState* state,
                                                  const std::vector<std::string>& names,
                                                  const LaunchOptions& options = {});

// Starts memory node `node` of a cluster started from `config` again after
// it died, with the same arguments, port and pool name (so it re-attaches the
// pool it left: see src/memnode/memnode_server.h), and waits until it is up
// and registered with the switch.  Updates `state` (not its file).  Errors:
// NotFound (no such memory node), InvalidArgument (it still runs), those of
// starting a node.
Status RestartMemNode(const ClusterConfig& config, ClusterState* state, uint32_t node,
                      const LaunchOptions& options = {});

// Kills (SIGKILL) memory node `node` of `state` and waits until it has
// ended, at most `timeout`; its pool stays (a restarted node re-attaches
// it).  Errors: NotFound (no such memory node), Timeout (it survived).
Status KillMemNode(const ClusterState& state, uint32_t node, std::chrono::milliseconds timeout);

// How the launcher starts node `n` of `config`: the pulse binary
// (NodeBinary) with the node's flags (a new random --instance-id among them)
// then n.extra_args, the environment
// (ClusterConfig::env, UCX_TLS, n.env), the log <ClusterDir>/<name>.log,
// and, for port 0, `--port-file PortFileOf(config, n)` (removed first).
// Does not create ClusterDir.  Errors: those of NodeBinary.
Result<SpawnOptions> NodeSpawnOptions(const ClusterConfig& config, const NodeConfig& n,
                                      const LaunchOptions& options = {});

// Where node `n` launched with port 0 reports its port.
std::string PortFileOf(const ClusterConfig& config, const NodeConfig& n);

// Waits until `process` (node `name`) has written `port_file`; the port.
// A switch writes it once listening, a memory node once also registered
// with the switch.  Re-checks every 25 ms.  Errors: Unavailable naming the
// node, how it ended and its log's tail if it ends first; Timeout after
// `timeout`; InvalidArgument if the file holds no port.
Result<uint16_t> WaitForPortFile(const ProcessId& process, const std::string& name, const std::string& port_file,
                                 const std::string& log, std::chrono::milliseconds timeout);

// A cluster on this host named "<name>-<pid>": a switch and memory nodes
// 0..memory_nodes-1 with `pool_mib` each, every node on port 0 (it picks a
// free port and reports it: no port is chosen in advance and raced for), the
// run directory $PULSE_RUN_DIR else "run" (or `run_dir` if not empty).
ClusterConfig LocalClusterConfig(const std::string& name, uint32_t memory_nodes, uint64_t pool_mib,
                                 const std::string& run_dir = "");

// The state file.  ReadState: NotFound if there is none, InvalidArgument if
// it does not parse.
Result<ClusterState> ReadState(const std::string& path);
Status WriteState(const ClusterState& state);

// The "instance" of a node's `stats` answer ("" if none), and whether the
// answer came from node `n`'s process: its instance id (always true for a
// node recorded without one).
std::string InstanceOf(const nlohmann::json& stats);
bool AnsweredBy(const NodeProcess& n, const nlohmann::json& stats);

// True if any process of the state still runs.
bool AnyRunning(const ClusterState& state);

// The pulse executable to run for the nodes: config.binary, else this one.
Result<std::string> NodeBinary(const ClusterConfig& config);

// Sets the config's transport variables (UCX_TLS, [transport.env]) in this
// process's environment, so that workers created afterwards (a CPU-node
// client, a control session) use what the nodes use.
void ApplyTransportEnvironment(const ClusterConfig& config);

// A cluster that StopCluster()s itself when destroyed unless Release()d.
class ClusterGuard {
 public:
  ClusterGuard() = default;
  explicit ClusterGuard(ClusterState state, std::chrono::milliseconds stage_timeout)
      : state_(std::move(state)), stage_timeout_(stage_timeout) {}
  ClusterGuard(ClusterGuard&& o) noexcept : state_(std::exchange(o.state_, std::nullopt)), stage_timeout_(o.stage_timeout_) {}
  ClusterGuard& operator=(ClusterGuard&& o) noexcept {
    if (this != &o) {
      IgnoreError(Stop());  // best effort, as in the destructor
      state_ = std::exchange(o.state_, std::nullopt);
      stage_timeout_ = o.stage_timeout_;
    }
    return *this;
  }
  // Stops what is still running; a failure cannot be reported from here
  // (call Stop() to see it).
  ~ClusterGuard() { IgnoreError(Stop()); }
  const ClusterState* state() const { return state_ ? &*state_ : nullptr; }
  // For RestartMemNode, so that Stop() stops the restarted processes.
  ClusterState* mutable_state() { return state_ ? &*state_ : nullptr; }
  // Stops now (idempotent).
  Result<std::vector<StopOutcome>> Stop();
  void Release() { state_.reset(); }

 private:
  std::optional<ClusterState> state_;
  std::chrono::milliseconds stage_timeout_{5000};
};

}  // namespace pulse::cluster
