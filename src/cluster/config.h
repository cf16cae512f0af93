// The description of a pulse cluster: which processes `pulse cluster up`
// starts, where, and with which settings.  Read from a TOML file (the keys
// are documented in docs/cluster.md; config/local.toml is the default and is
// embedded in the binary) or built in code (the benchmarks).
//
// Errors name the file, the key and what was expected, e.g.
//   cluster config: memnode[2].port: expected an integer
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pulse/status.h"

namespace pulse::cluster {

// How a node's UCX worker waits for traffic (include/pulse/net.h PollMode).
struct PollConfig {
  uint32_t window_us = 50;     // adaptive polling window after traffic
  bool when_core_idle = true;  // ... polled only while at most one thread waits for a CPU (net::WorkerOptions::poll_when_core_idle)
  bool busy = false;           // never sleep (dedicated cores only)
};

enum class Role { kSwitch, kMemNode, kAgent };
std::string_view RoleName(Role role);  // "switch" | "memnode" | "agent"

// One process of the cluster.
struct NodeConfig {
  Role role = Role::kSwitch;
  uint32_t node = 0;            // memory node id (memnodes only)
  std::string host = "127.0.0.1";
  uint16_t port = 0;            // 0: the node binds a free port and reports it
  std::string advertise;        // memnode: host CPU nodes use (default: host)
  uint64_t pool_mib = 256;      // memnode pool size
  uint64_t granularity_kib = 64;
  uint32_t workspaces = 0;      // 0: the engine's default
  uint32_t pipelines = 0;       // engine pipeline threads; 0: the node's default (1)
  std::string engine;           // "interp" or "jit"; empty: $PULSE_ENGINE, else the node's default
  uint32_t max_iterations = 0;  // 0: the engine's default
  std::string shm_name;         // empty: a name unique to each start of the cluster
  // memnode: the rack whose shared pool it is (docs/racks.md; empty: no
  // rack), and the tenants whose CPU nodes of that rack may map the pool.
  std::string rack;
  std::vector<uint32_t> rack_tenants;
  std::optional<PollConfig> poll;  // overrides ClusterConfig::poll
  // Set in code only (tests, benchmarks), not read from TOML: flags appended
  // to the node's command line after the launcher's own (do not repeat one
  // of those), and variables for this node's environment on top of
  // ClusterConfig::env (e.g. $PULSE_NET_FAULTS for one node).
  std::vector<std::string> extra_args;
  std::vector<std::pair<std::string, std::string>> env;
  // The agent only ([agent] flags): `pulse agent` flags, e.g. "--mode proxy".
  std::string agent_flags;

  // "switch", "memnode-<id>" or "agent": the name in tables, logs and errors.
  std::string Name() const;
};

// A tenant of the cluster ([[tenant]]): its id, a name for tables and
// messages, and where `pulse cluster up` writes its credential (the key
// net::DeriveTenantKey gives for the cluster secret; docs/security.md).
struct TenantConfig {
  uint32_t id = 1;
  std::string name;
  std::string credential_file;  // empty: <ClusterDir>/tenant-<id>.key
};

// [tx]: the memory nodes' chain-replicated transaction replicas
// (docs/tx.md).  Passed to every memory node as $PULSE_TX_* (TxEnvironment).
struct TxConfig {
  // The most members a chain of this cluster may have: a memory node
  // refuses a chain configuration naming more (1..16, at most the memory
  // nodes).
  uint32_t chain_length = 3;
  std::string log_dir;  // the logs' directory; empty: $PULSE_TX_LOG_DIR, else /var/tmp
  std::string sync = "fdatasync";  // "fdatasync" (group commit) | "none" (page cache only)
  uint64_t compact_mib = 64;       // a log is compacted past this size; 0: never
  uint64_t keep_records = 65536;   // each chain's last records a log keeps (and backfills from)
  // How replicas send each other forwards and acknowledgements: "auto" (a
  // one-sided write into the other replica's ring where the transport has
  // one-sided puts, else a message) | "am" (always a message).
  std::string replica_path = "auto";
};

// The environment that carries `tx` to a memory node.
std::vector<std::pair<std::string, std::string>> TxEnvironment(const TxConfig& tx);

struct ClusterConfig {
  std::string source = "<built-in>";  // where it was read from, for messages
  std::string name = "local";         // names the run subdirectory and shm objects
  // Logs and the state file go to <run_dir>/<name>/.  Relative paths are
  // relative to the current directory; $PULSE_RUN_DIR replaces run_dir.
  std::string run_dir = "run";
  std::string binary;                 // the pulse executable; empty: this one
  std::string log_level = "info";     // the nodes' --log-level
  // How traversals travel: "direct" or "switch" (the switch's --routing,
  // docs/architecture.md section 6); $PULSE_ROUTING replaces it.  Empty:
  // not passed, so the switch takes $PULSE_ROUTING, else direct.
  std::string routing;
  std::chrono::milliseconds start_timeout{20000};  // until every node answers stats
  std::chrono::milliseconds stop_timeout{5000};    // per stage of `down`
  // Transport.  ucx_tls empty: the nodes inherit UCX_TLS from the
  // environment (or UCX chooses).  `env` holds further variables for the
  // node processes (UCX_* or anything else); UCX_POSIX_ERROR_HANDLING and
  // UCX_SYSV_ERROR_HANDLING default to "y" (include/pulse/net.h).
  std::string ucx_tls;
  std::vector<std::pair<std::string, std::string>> env;
  PollConfig poll;
  // The cluster secret every node and administrator proves when it
  // connects (a 32-byte key file, mode 0600).  Empty: <ClusterDir>/secret.key,
  // created by `pulse cluster up` if missing.  A multi-host cluster names a
  // file every host has a copy of.
  std::string secret_file;
  // Declared tenants; none: one tenant, id 1, "default".
  std::vector<TenantConfig> tenants;
  NodeConfig switch_node;             // role kSwitch
  std::vector<NodeConfig> memnodes;   // role kMemNode, ids unique
  // [agent]: the far-memory offload agent (`pulse agent`, docs/farmem_agent.md),
  // started once the memory nodes are registered.  Absent: none.
  std::optional<NodeConfig> agent;    // role kAgent
  // [tx]; absent: the memory nodes' defaults (and their environment).
  std::optional<TxConfig> tx;

  // "host:port" of the switch / of a node (after ports are chosen).
  std::string SwitchAddress() const;
  // The directory holding the logs and the state file.
  std::string ClusterDir() const;
  // The state file of a running cluster: <ClusterDir()>/state.json.
  std::string StateFile() const;
  // The cluster secret's file (secret_file or its default).
  std::string SecretFile() const;
  // The declared tenants, or the default one.
  std::vector<TenantConfig> TenantsOrDefault() const;
  // Where tenant `t`'s credential is written (credential_file or its default).
  std::string CredentialFileOf(const TenantConfig& t) const;
  // True if some memory node names a rack (docs/racks.md).
  bool Racked() const;
  // The node's effective poll settings.
  const PollConfig& PollOf(const NodeConfig& n) const { return n.poll ? *n.poll : poll; }
};

// Parses TOML text.  `source` names it in errors.  Applies $PULSE_RUN_DIR.
// Errors: InvalidArgument "cluster config: <source>:<line>:<col>: ..." for
// syntax, "cluster config: <key>: <what is wrong>" for content.
Result<ClusterConfig> ParseClusterConfig(std::string_view text, const std::string& source);

// Reads and parses a file.  NotFound if it does not exist.
Result<ClusterConfig> LoadClusterConfig(const std::string& path);

// The default: config/local.toml if the current directory has one, else the
// copy of config/local.toml embedded in the binary at build time.
Result<ClusterConfig> LoadDefaultClusterConfig();

// `path` if non-empty, else the default.
Result<ClusterConfig> LoadClusterConfigOrDefault(const std::string& path);

// Checks a config built in code (ParseClusterConfig calls it too): ids and
// addresses unique, sizes in range.  Errors name the key.
Status ValidateClusterConfig(const ClusterConfig& config);

// The TOML text of config/local.toml as embedded at build time.
std::string_view EmbeddedLocalConfig();

}  // namespace pulse::cluster
