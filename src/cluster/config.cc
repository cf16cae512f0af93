// Reading the cluster description from TOML (toml++).
//
// Every table is read through a TableReader that knows the key path it is
// at ("memnode[2]"), so each error names the key, and that remembers which
// keys it was asked for, so a misspelt key is an error instead of a silently
// ignored setting.
#include "cluster/config.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "common/bounded_file.h"
#include "pulse/engine.h"

namespace pulse::cluster {

std::string_view RoleName(Role role) {
  return role == Role::kSwitch ? "switch" : role == Role::kAgent ? "agent" : "memnode";
}

std::string NodeConfig::Name() const {
  if (role == Role::kAgent) return "agent";
  return role == Role::kSwitch ? std::string("switch") : fmt::format("memnode-{}", node);
}

bool ClusterConfig::Racked() const {
  for (const NodeConfig& n : memnodes)
    if (!n.rack.empty()) return true;
  return false;
}

std::string ClusterConfig::SwitchAddress() const {
  return fmt::format("{}:{}", switch_node.host, switch_node.port);
}
std::string ClusterConfig::ClusterDir() const { return run_dir + "/" + name; }
std::string ClusterConfig::StateFile() const { return ClusterDir() + "/state.json"; }
std::string ClusterConfig::SecretFile() const { return secret_file.empty() ? ClusterDir() + "/secret.key" : secret_file; }
std::vector<TenantConfig> ClusterConfig::TenantsOrDefault() const {
  if (!tenants.empty()) return tenants;
  return {TenantConfig{1, "default", ""}};
}
std::string ClusterConfig::CredentialFileOf(const TenantConfig& t) const {
  return t.credential_file.empty() ? fmt::format("{}/tenant-{}.key", ClusterDir(), t.id) : t.credential_file;
}

namespace {

Status ConfigError(const std::string& key, const std::string& what) {
  return Status::InvalidArgument(fmt::format("cluster config: {}: {}", key, what));
}

std::string_view TypeName(toml::node_type t) {
  switch (t) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date or time";
  }
}

// Typed access to one TOML table; see the file comment.
class TableReader {
 public:
  TableReader(const toml::table* table, std::string path) : table_(table), path_(std::move(path)) {}

  std::string Key(std::string_view key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }

  // Each Get leaves *out unchanged when the key is absent.
  Status GetString(std::string_view key, std::string* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_string()) return Expected(key, "a string", n);
    *out = n->as_string()->get();
    return Status::Ok();
  }
  Status GetBool(std::string_view key, bool* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_boolean()) return Expected(key, "a boolean (true or false)", n);
    *out = n->as_boolean()->get();
    return Status::Ok();
  }
  template <typename T>
  Status GetInt(std::string_view key, int64_t lo, int64_t hi, T* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_integer()) return Expected(key, "an integer", n);
    const int64_t v = n->as_integer()->get();
    if (v < lo || v > hi) return ConfigError(Key(key), fmt::format("{} is out of range [{}, {}]", v, lo, hi));
    *out = static_cast<T>(v);
    return Status::Ok();
  }
  // An array of integers in [lo, hi].
  template <typename T>
  Status GetIntArray(std::string_view key, int64_t lo, int64_t hi, std::vector<T>* out) {
    const toml::node* n = Find(key);
    if (n == nullptr) return Status::Ok();
    if (!n->is_array()) return Expected(key, "an array of integers", n);
    out->clear();
    for (const toml::node& e : *n->as_array()) {
      if (!e.is_integer()) return Expected(key, "an array of integers", &e);
      const int64_t v = e.as_integer()->get();
      if (v < lo || v > hi) return ConfigError(Key(key), fmt::format("{} is out of range [{}, {}]", v, lo, hi));
      out->push_back(static_cast<T>(v));
    }
    return Status::Ok();
  }
  // A sub-table, or nullptr if absent.
  Result<const toml::table*> GetTable(std::string_view key) {
    const toml::node* n = Find(key);
    if (n == nullptr) return static_cast<const toml::table*>(nullptr);
    if (!n->is_table()) return Expected(key, "a table", n);
    return n->as_table();
  }
  // An array of tables ([[key]]), or nullptr if absent.
  Result<const toml::array*> GetTableArray(std::string_view key) {
    const toml::node* n = Find(key);
    if (n == nullptr) return static_cast<const toml::array*>(nullptr);
    if (!n->is_array_of_tables()) return Expected(key, fmt::format("an array of tables ([[{}]])", key), n);
    return n->as_array();
  }

  // Fails on the first key nobody asked for.
  Status CheckNoUnknownKeys() const {
    for (auto&& [k, v] : *table_)
      if (!used_.count(std::string(k.str()))) return ConfigError(Key(k.str()), "unknown key");
    return Status::Ok();
  }

 private:
  const toml::node* Find(std::string_view key) {
    used_.insert(std::string(key));
    return table_->get(key);
  }
  Status Expected(std::string_view key, std::string_view what, const toml::node* n) const {
    return ConfigError(Key(key), fmt::format("expected {}, got {}", what, TypeName(n->type())));
  }

  const toml::table* table_;
  std::string path_;
  std::set<std::string> used_;
};

Status ReadPoll(TableReader& r, PollConfig* poll) {
  PULSE_RETURN_IF_ERROR(r.GetInt("window_us", 0, 10'000'000, &poll->window_us));
  PULSE_RETURN_IF_ERROR(r.GetBool("when_core_idle", &poll->when_core_idle));
  PULSE_RETURN_IF_ERROR(r.GetBool("busy", &poll->busy));
  return r.CheckNoUnknownKeys();
}

// Keys shared by [switch] and [[memnode]].
Status ReadNodeCommon(TableReader& r, NodeConfig* n) {
  PULSE_RETURN_IF_ERROR(r.GetString("host", &n->host));
  PULSE_RETURN_IF_ERROR(r.GetInt("port", 0, 65535, &n->port));
  PollConfig poll;
  bool has_poll = false;
  auto t = r.GetTable("poll");
  if (!t.ok()) return t.status();
  if (*t != nullptr) {
    TableReader pr(*t, r.Key("poll"));
    PULSE_RETURN_IF_ERROR(ReadPoll(pr, &poll));
    has_poll = true;
  }
  if (has_poll) n->poll = poll;
  return Status::Ok();
}

Status ReadMemNode(TableReader& r, NodeConfig* n) {
  PULSE_RETURN_IF_ERROR(ReadNodeCommon(r, n));
  PULSE_RETURN_IF_ERROR(r.GetInt("node", 0, (int64_t{1} << 24) - 2, &n->node));
  PULSE_RETURN_IF_ERROR(r.GetString("advertise", &n->advertise));
  PULSE_RETURN_IF_ERROR(r.GetInt("pool_mib", 1, int64_t{1} << 20, &n->pool_mib));
  PULSE_RETURN_IF_ERROR(r.GetInt("granularity_kib", 4, int64_t{1} << 30, &n->granularity_kib));
  PULSE_RETURN_IF_ERROR(r.GetInt("workspaces", 1, 4096, &n->workspaces));
  PULSE_RETURN_IF_ERROR(r.GetInt("pipelines", 1, kMaxPipelinesPerNode, &n->pipelines));
  PULSE_RETURN_IF_ERROR(r.GetString("engine", &n->engine));
  PULSE_RETURN_IF_ERROR(r.GetInt("max_iterations", 1, UINT32_MAX, &n->max_iterations));
  PULSE_RETURN_IF_ERROR(r.GetString("shm_name", &n->shm_name));
  PULSE_RETURN_IF_ERROR(r.GetString("rack", &n->rack));
  PULSE_RETURN_IF_ERROR(r.GetIntArray("rack_tenants", 1, UINT32_MAX, &n->rack_tenants));
  return r.CheckNoUnknownKeys();
}

Status ReadTx(TableReader& r, TxConfig* tx) {
  PULSE_RETURN_IF_ERROR(r.GetInt("chain_length", 1, 16, &tx->chain_length));
  PULSE_RETURN_IF_ERROR(r.GetString("log_dir", &tx->log_dir));
  PULSE_RETURN_IF_ERROR(r.GetString("sync", &tx->sync));
  PULSE_RETURN_IF_ERROR(r.GetInt("compact_mib", 0, int64_t{1} << 20, &tx->compact_mib));
  PULSE_RETURN_IF_ERROR(r.GetInt("keep_records", 1, int64_t{1} << 32, &tx->keep_records));
  PULSE_RETURN_IF_ERROR(r.GetString("replica_path", &tx->replica_path));
  return r.CheckNoUnknownKeys();
}

Status ReadConfig(const toml::table& root, ClusterConfig* c) {
  TableReader top(&root, "");
  // [cluster]
  auto ct = top.GetTable("cluster");
  if (!ct.ok()) return ct.status();
  if (*ct != nullptr) {
    TableReader r(*ct, "cluster");
    PULSE_RETURN_IF_ERROR(r.GetString("name", &c->name));
    PULSE_RETURN_IF_ERROR(r.GetString("run_dir", &c->run_dir));
    PULSE_RETURN_IF_ERROR(r.GetString("binary", &c->binary));
    PULSE_RETURN_IF_ERROR(r.GetString("log_level", &c->log_level));
    PULSE_RETURN_IF_ERROR(r.GetString("routing", &c->routing));
    PULSE_RETURN_IF_ERROR(r.GetString("secret_file", &c->secret_file));
    int64_t start_ms = c->start_timeout.count(), stop_ms = c->stop_timeout.count();
    PULSE_RETURN_IF_ERROR(r.GetInt("start_timeout_ms", 100, 3'600'000, &start_ms));
    PULSE_RETURN_IF_ERROR(r.GetInt("stop_timeout_ms", 100, 3'600'000, &stop_ms));
    c->start_timeout = std::chrono::milliseconds(start_ms);
    c->stop_timeout = std::chrono::milliseconds(stop_ms);
    PULSE_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  }
  // [transport] and [transport.env]
  auto tt = top.GetTable("transport");
  if (!tt.ok()) return tt.status();
  if (*tt != nullptr) {
    TableReader r(*tt, "transport");
    PULSE_RETURN_IF_ERROR(r.GetString("ucx_tls", &c->ucx_tls));
    auto et = r.GetTable("env");
    if (!et.ok()) return et.status();
    if (*et != nullptr) {
      for (auto&& [k, v] : **et) {
        const std::string key = fmt::format("transport.env.{}", k.str());
        if (!v.is_string()) return ConfigError(key, fmt::format("expected a string, got {}", TypeName(v.type())));
        c->env.emplace_back(std::string(k.str()), v.as_string()->get());
      }
    }
    PULSE_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  }
  // [poll]
  auto pt = top.GetTable("poll");
  if (!pt.ok()) return pt.status();
  if (*pt != nullptr) {
    TableReader r(*pt, "poll");
    PULSE_RETURN_IF_ERROR(ReadPoll(r, &c->poll));
  }
  // [switch]
  c->switch_node = NodeConfig{};
  c->switch_node.role = Role::kSwitch;
  c->switch_node.port = 7100;
  auto st = top.GetTable("switch");
  if (!st.ok()) return st.status();
  if (*st != nullptr) {
    TableReader r(*st, "switch");
    PULSE_RETURN_IF_ERROR(ReadNodeCommon(r, &c->switch_node));
    PULSE_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
  }
  // [[memnode]]
  auto mt = top.GetTableArray("memnode");
  if (!mt.ok()) return mt.status();
  if (*mt == nullptr || (*mt)->empty()) return ConfigError("memnode", "at least one [[memnode]] is required");
  for (size_t i = 0; i < (*mt)->size(); ++i) {
    NodeConfig n;
    n.role = Role::kMemNode;
    n.node = static_cast<uint32_t>(i);
    TableReader r((*mt)->get(i)->as_table(), fmt::format("memnode[{}]", i));
    PULSE_RETURN_IF_ERROR(ReadMemNode(r, &n));
    c->memnodes.push_back(std::move(n));
  }
  // [agent]
  auto at = top.GetTable("agent");
  if (!at.ok()) return at.status();
  if (*at != nullptr) {
    NodeConfig n;
    n.role = Role::kAgent;
    n.port = 7300;
    TableReader r(*at, "agent");
    PULSE_RETURN_IF_ERROR(ReadNodeCommon(r, &n));
    PULSE_RETURN_IF_ERROR(r.GetString("flags", &n.agent_flags));
    PULSE_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
    c->agent = std::move(n);
  }
  // [tx]
  auto xt = top.GetTable("tx");
  if (!xt.ok()) return xt.status();
  if (*xt != nullptr) {
    TableReader r(*xt, "tx");
    TxConfig tx;
    PULSE_RETURN_IF_ERROR(ReadTx(r, &tx));
    c->tx = std::move(tx);
  }
  // [[tenant]]
  auto tn = top.GetTableArray("tenant");
  if (!tn.ok()) return tn.status();
  for (size_t i = 0; *tn != nullptr && i < (*tn)->size(); ++i) {
    TenantConfig t;
    t.id = 0;  // required: 0 stays if absent
    TableReader r((*tn)->get(i)->as_table(), fmt::format("tenant[{}]", i));
    PULSE_RETURN_IF_ERROR(r.GetInt("id", 1, UINT32_MAX, &t.id));
    if (t.id == 0) return ConfigError(fmt::format("tenant[{}].id", i), "is required");
    PULSE_RETURN_IF_ERROR(r.GetString("name", &t.name));
    PULSE_RETURN_IF_ERROR(r.GetString("credential_file", &t.credential_file));
    PULSE_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
    c->tenants.push_back(std::move(t));
  }
  return top.CheckNoUnknownKeys();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> TxEnvironment(const TxConfig& tx) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"PULSE_TX_LOG_SYNC", tx.sync},
      {"PULSE_TX_LOG_COMPACT_BYTES", std::to_string(tx.compact_mib << 20)},
      {"PULSE_TX_LOG_KEEP_RECORDS", std::to_string(tx.keep_records)},
      {"PULSE_TX_MAX_CHAIN", std::to_string(tx.chain_length)},
      {"PULSE_TX_REPLICA_PATH", tx.replica_path},
  };
  if (!tx.log_dir.empty()) env.emplace_back("PULSE_TX_LOG_DIR", tx.log_dir);
  return env;
}

Status ValidateClusterConfig(const ClusterConfig& c) {
  if (c.name.empty() || c.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
                            std::string::npos || c.name[0] == '.')
    return ConfigError("cluster.name", fmt::format("'{}' must be letters, digits, '_', '-' or '.'", c.name));
  if (c.run_dir.empty()) return ConfigError("cluster.run_dir", "must not be empty");
  if (c.log_level != "error" && c.log_level != "warn" && c.log_level != "info" && c.log_level != "debug")
    return ConfigError("cluster.log_level", fmt::format("'{}' is not error, warn, info or debug", c.log_level));
  if (!c.routing.empty() && c.routing != "direct" && c.routing != "switch")
    return ConfigError("cluster.routing", fmt::format("'{}' is not direct or switch", c.routing));
  if (c.switch_node.host.empty()) return ConfigError("switch.host", "must not be empty");
  if (c.memnodes.empty()) return ConfigError("memnode", "at least one memory node is required");
  std::set<uint32_t> ids;
  std::set<std::pair<std::string, uint16_t>> addresses;
  if (c.switch_node.port != 0) addresses.emplace(c.switch_node.host, c.switch_node.port);
  for (size_t i = 0; i < c.memnodes.size(); ++i) {
    const NodeConfig& n = c.memnodes[i];
    const std::string key = fmt::format("memnode[{}]", i);
    if (!ids.insert(n.node).second) return ConfigError(key + ".node", fmt::format("id {} is used twice", n.node));
    if (n.host.empty()) return ConfigError(key + ".host", "must not be empty");
    if (n.port != 0 && !addresses.emplace(n.host, n.port).second)
      return ConfigError(key + ".port", fmt::format("{}:{} is used by another node", n.host, n.port));
    if (n.granularity_kib % 4 != 0)
      return ConfigError(key + ".granularity_kib", fmt::format("{} is not a multiple of 4", n.granularity_kib));
    if ((n.pool_mib * 1024) % n.granularity_kib != 0)
      return ConfigError(key + ".pool_mib", fmt::format("{} MiB is not a multiple of granularity_kib = {}",
                                                        n.pool_mib, n.granularity_kib));
    if (!n.shm_name.empty() &&
        (n.shm_name.size() < 2 || n.shm_name[0] != '/' || n.shm_name.find('/', 1) != std::string::npos))
      return ConfigError(key + ".shm_name", "must be '/' followed by a name without '/'");
    if (!n.engine.empty() && n.engine != "interp" && n.engine != "jit")
      return ConfigError(key + ".engine", fmt::format("'{}' is not interp or jit", n.engine));
    if (n.rack.empty() && !n.rack_tenants.empty()) return ConfigError(key + ".rack_tenants", "needs rack");
    if (n.rack.find_first_of(" \t,") != std::string::npos)
      return ConfigError(key + ".rack", fmt::format("'{}' must not contain blanks or ','", n.rack));
  }
  if (c.Racked()) {
    // Racks reach each other only through the fabric (docs/racks.md): no
    // transport that shares memory between processes.
    if (c.ucx_tls.empty())
      return ConfigError("transport.ucx_tls", "a cluster with racks must name its transports (e.g. \"tcp\")");
    std::istringstream list(c.ucx_tls);
    for (std::string t; std::getline(list, t, ',');)
      if (t.empty() || t[0] == '^' || t == "all" || t == "sm" || t == "shm" || t == "posix" || t == "sysv" ||
          t == "cma" || t == "mm" || t == "xpmem" || t == "knem")
        return ConfigError("transport.ucx_tls",
                           fmt::format("'{}': a cluster with racks allows no shared-memory transport ('{}')",
                                       c.ucx_tls, t));
  }
  if (c.agent) {
    if (c.agent->host.empty()) return ConfigError("agent.host", "must not be empty");
    if (c.agent->port != 0 && !addresses.emplace(c.agent->host, c.agent->port).second)
      return ConfigError("agent.port", fmt::format("{}:{} is used by another node", c.agent->host, c.agent->port));
  }
  std::set<uint32_t> tenant_ids;
  for (size_t i = 0; i < c.tenants.size(); ++i) {
    const TenantConfig& t = c.tenants[i];
    if (t.id == 0) return ConfigError(fmt::format("tenant[{}].id", i), "must be at least 1");
    if (!tenant_ids.insert(t.id).second) return ConfigError(fmt::format("tenant[{}].id", i), fmt::format("id {} is used twice", t.id));
  }
  for (const auto& [k, v] : c.env)
    if (k.empty() || k.find('=') != std::string::npos)
      return ConfigError("transport.env", fmt::format("'{}' is not a variable name", k));
  if (c.tx) {
    if (c.tx->chain_length < 1 || c.tx->chain_length > 16 || c.tx->chain_length > c.memnodes.size())
      return ConfigError("tx.chain_length", fmt::format("{} is not in [1, {}] (the memory nodes, at most 16)",
                                                        c.tx->chain_length, std::min<size_t>(16, c.memnodes.size())));
    if (c.tx->sync != "fdatasync" && c.tx->sync != "none")
      return ConfigError("tx.sync", fmt::format("'{}' is not fdatasync or none", c.tx->sync));
    if (c.tx->keep_records == 0) return ConfigError("tx.keep_records", "must be at least 1");
    if (c.tx->replica_path != "auto" && c.tx->replica_path != "am")
      return ConfigError("tx.replica_path", fmt::format("'{}' is not auto or am", c.tx->replica_path));
  }
  return Status::Ok();
}

Result<ClusterConfig> ParseClusterConfig(std::string_view text, const std::string& source) {
  ClusterConfig c;
  c.source = source;
  toml::table root;
#if TOML_EXCEPTIONS
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(fmt::format("cluster config: {}:{}:{}: {}", source, e.source().begin.line,
                                               e.source().begin.column, e.description()));
  }
#else
  toml::parse_result parsed = toml::parse(text, source);
  if (!parsed) {
    const auto& e = parsed.error();
    return Status::InvalidArgument(fmt::format("cluster config: {}:{}:{}: {}", source, e.source().begin.line,
                                               e.source().begin.column, e.description()));
  }
  root = std::move(parsed).table();
#endif
  Status s = ReadConfig(root, &c);
  if (!s.ok()) return Status::InvalidArgument(fmt::format("{} (in {})", s.message(), source));
  if (const char* dir = std::getenv("PULSE_RUN_DIR"); dir != nullptr && *dir != '\0') c.run_dir = dir;
  if (const char* routing = std::getenv("PULSE_ROUTING"); routing != nullptr && *routing != '\0') c.routing = routing;
  s = ValidateClusterConfig(c);
  if (!s.ok()) return Status::InvalidArgument(fmt::format("{} (in {})", s.message(), source));
  return c;
}

Result<ClusterConfig> LoadClusterConfig(const std::string& path) {
  auto text = ReadInputFile(path, kMaxConfigFileBytes, "cluster config");
  if (!text.ok()) return text.status();
  return ParseClusterConfig(*text, path);
}

Result<ClusterConfig> LoadDefaultClusterConfig() {
  struct stat st;
  if (stat("config/local.toml", &st) == 0) return LoadClusterConfig("config/local.toml");
  return ParseClusterConfig(EmbeddedLocalConfig(), "<embedded config/local.toml>");
}

Result<ClusterConfig> LoadClusterConfigOrDefault(const std::string& path) {
  return path.empty() ? LoadDefaultClusterConfig() : LoadClusterConfig(path);
}

}  // namespace pulse::cluster
