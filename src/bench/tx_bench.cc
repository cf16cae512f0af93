// `pulse bench tx` (tx_bench.h).
#include "bench/tx_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "bench/bench_cluster.h"
#include "cluster/control_session.h"
#include "pulse/client.h"
#include "pulse/tx/chain.h"
#include "tx/tx_stages.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  uint32_t reads = 0, writes = 0;
};

Result<std::vector<Shape>> ParseShapes(const std::string& text) {
  std::vector<Shape> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find(';', at), text.size());
    const std::string one = text.substr(at, end - at);
    unsigned r = 0, w = 0;
    char extra = 0;
    if (std::sscanf(one.c_str(), "%u,%u%c", &r, &w, &extra) != 2 || r + w == 0 || r > 64 || w > 64)
      return Status::InvalidArgument("bench tx: --shapes: '" + one + "' is not reads,writes (0..64 each, not both 0)");
    out.push_back(Shape{r, w});
    at = end + 1;
  }
  return out;
}

// The replicas' transaction counters, summed over the memory nodes.
struct ReplicaTotals {
  uint64_t messages = 0;     // forwards, acknowledgements and answers sent as messages
  uint64_t ring_writes = 0;  // forwards and acknowledgements written into another replica's ring
  uint64_t syncs = 0, sync_us = 0;
  std::vector<nlohmann::json> stages;  // each node's stage histograms, in the switch's order
};

// Per node and stage, the histograms' difference between two snapshots.
Result<nlohmann::json> StagesBetween(const ReplicaTotals& before, const ReplicaTotals& after) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t n = 0; n < after.stages.size() && n < before.stages.size(); ++n) {
    nlohmann::json node = nlohmann::json::object();
    for (const auto& [stage, snapshot] : after.stages[n].items()) {
      if (!before.stages[n].contains(stage)) continue;
      PULSE_ASSIGN_OR_RETURN(tx::StageHistogram h, tx::StageHistogram::Between(before.stages[n][stage], snapshot));
      if (h.count() == 0) continue;
      node[stage] = {{"count", h.count()}, {"mean_us", h.mean_us()}, {"p50_us", h.Percentile(0.5)},
                     {"p99_us", h.Percentile(0.99)}};
    }
    out[fmt::format("node{}", n)] = node;
  }
  return out;
}

Result<ReplicaTotals> Replicas(cluster::ControlSession& s, const std::string& switch_address) {
  PULSE_ASSIGN_OR_RETURN(nlohmann::json stats, s.Call(switch_address, "stats", std::chrono::seconds(2)));
  ReplicaTotals t;
  for (const nlohmann::json& n : stats["memnodes"]) {
    PULSE_ASSIGN_OR_RETURN(nlohmann::json m, s.Call(n.value("address", ""), "stats", std::chrono::seconds(2)));
    const nlohmann::json& tx = m["counters"]["tx"];
    if (!tx.is_object()) return Status::FailedPrecondition("bench tx: memory node " + n.value("address", "") + " has no tx");
    // Absent at a node older than the replica rings: nothing went by ring.
    const uint64_t by_ring = tx.value("forwards_by_ring", uint64_t{0}) + tx.value("acks_by_ring", uint64_t{0});
    t.ring_writes += by_ring;
    t.messages += tx["forwards_out"].get<uint64_t>() + tx["acks_out"].get<uint64_t>() - by_ring +
                  tx["replies"].get<uint64_t>();
    t.syncs += tx["log"]["syncs"].get<uint64_t>();
    t.sync_us += tx["log"]["sync_us"].get<uint64_t>();
    t.stages.push_back(tx.value("stages", nlohmann::json::object()));
  }
  return t;
}

// The value of slot `key` in version `v` (every byte derived from both).
std::vector<uint8_t> ValueOf(uint64_t key, uint64_t v, uint32_t bytes) {
  std::vector<uint8_t> out(bytes);
  uint64_t x = key * 0x9e3779b97f4a7c15ull + v + 1;
  for (uint8_t& c : out) {
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    c = static_cast<uint8_t>(x >> 56);
  }
  return out;
}

class Runner {
 public:
  Runner(const TxBenchOptions& o, Client* client, tx::Chain* chain, cluster::ControlSession* session,
         std::string address)
      : o_(o), client_(client), chain_(chain), session_(session), address_(std::move(address)), rng_(o.seed) {}

  Result<TxRunResult> Run(const std::string& system, Shape shape, uint32_t value_bytes) {
    const uint64_t slot = (value_bytes + 63) / 64 * 64;
    TxRunResult r;
    r.system = system;
    r.reads = shape.reads;
    r.writes = shape.writes;
    r.value_bytes = value_bytes;
    const std::string name = fmt::format("{} ({},{}) {} B", system, shape.reads, shape.writes, value_bytes);
    const bool hyperloop = system == "hyperloop";
    // Warm-up (connections, the replicas' first log syncs), not measured.
    for (int i = 0; i < 20; ++i) PULSE_RETURN_IF_ERROR(One(shape, value_bytes, slot, hyperloop, nullptr));
    PULSE_ASSIGN_OR_RETURN(uint64_t cpu0, MemNodeCpuUs(*session_, address_));
    PULSE_ASSIGN_OR_RETURN(ReplicaTotals rep0, Replicas(*session_, address_));
    const tx::ChainCounters c0 = chain_->counters();
    std::vector<double> lat;
    const Clock::time_point t0 = Clock::now();
    const Clock::time_point end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.seconds));
    Clock::time_point last_say = t0;
    while (Clock::now() < end) {
      const Clock::time_point a = Clock::now();
      PULSE_RETURN_IF_ERROR(One(shape, value_bytes, slot, hyperloop, &r.verified));
      lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
      if (o_.progress && Clock::now() - last_say > std::chrono::seconds(2)) {
        last_say = Clock::now();
        o_.progress(fmt::format("[{}] {} transactions, {:.0f}/s", name, lat.size(),
                                lat.size() / std::chrono::duration<double>(last_say - t0).count()));
      }
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    PULSE_ASSIGN_OR_RETURN(uint64_t cpu1, MemNodeCpuUs(*session_, address_));
    PULSE_ASSIGN_OR_RETURN(ReplicaTotals rep1, Replicas(*session_, address_));
    const tx::ChainCounters c1 = chain_->counters();
    r.transactions = lat.size();
    const double n = std::max<double>(1, static_cast<double>(r.transactions));
    r.throughput_tx = r.transactions / r.seconds;
    r.latency = Summarize(std::move(lat));
    r.mn_cpu_us_per_tx = (cpu1 - cpu0) / n;
    r.ring_writes_per_tx = (rep1.ring_writes - rep0.ring_writes) / n;
    r.one_sided_per_tx = (c1.one_sided_reads - c0.one_sided_reads) / n + r.ring_writes_per_tx;
    r.messages_per_tx = ((c1.messages_sent - c0.messages_sent) + (rep1.messages - rep0.messages)) / n;
    r.log_syncs_per_tx = (rep1.syncs - rep0.syncs) / n;
    r.log_sync_us_per_tx = (rep1.sync_us - rep0.sync_us) / n;
    PULSE_ASSIGN_OR_RETURN(r.stages, StagesBetween(rep0, rep1));
    if (o_.progress)
      o_.progress(fmt::format("[{}] {:.0f} tx/s, mean {:.1f} us, p50 {:.1f} us, p99 {:.1f} us, memory-node CPU {:.1f} us/tx, "
                              "{:.1f} messages and {:.1f} one-sided ops per tx",
                              name, r.throughput_tx, r.latency.mean_us, r.latency.p50_us, r.latency.p99_us,
                              r.mn_cpu_us_per_tx, r.messages_per_tx, r.one_sided_per_tx));
    return r;
  }

 private:
  // One transaction of `shape` on random distinct keys; its reads checked
  // against what this run last wrote there (one client, one at a time: the
  // reads must see exactly that).
  Status One(Shape shape, uint32_t value_bytes, uint64_t slot, bool hyperloop, uint64_t* verified) {
    std::vector<uint64_t> keys;
    while (keys.size() < shape.reads + shape.writes) {
      const uint64_t k = rng_() % o_.keys;
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
    tx::Transaction t;
    for (uint32_t i = 0; i < shape.reads; ++i) t.reads.push_back(tx::TxRead{keys[i] * slot, value_bytes});
    for (uint32_t i = 0; i < shape.writes; ++i) {
      const uint64_t k = keys[shape.reads + i];
      t.writes.push_back(tx::TxWrite{k * slot, ValueOf(k, ++version_, value_bytes)});
    }
    Result<tx::TxOutcome> out = hyperloop ? chain_->ExecuteHyperLoop(t) : chain_->Execute(t);
    if (!out.ok()) return out.status();
    for (uint32_t i = 0; i < shape.reads; ++i) {
      auto it = written_.find(keys[i]);
      const std::vector<uint8_t> want =
          it == written_.end() ? std::vector<uint8_t>(value_bytes, 0) : it->second;
      std::vector<uint8_t> got = out->values.at(i);
      got.resize(std::min<size_t>(got.size(), want.size()));
      if (got != want || out->values[i].size() != value_bytes)
        return Status::Internal(fmt::format("bench tx: key {} read back other bytes than last written", keys[i]));
      if (verified != nullptr) ++*verified;
    }
    for (const tx::TxWrite& w : t.writes) written_[w.offset / slot] = w.data;
    return Status::Ok();
  }

  const TxBenchOptions& o_;
  Client* client_;
  tx::Chain* chain_;
  cluster::ControlSession* session_;
  std::string address_;
  std::mt19937_64 rng_;
  uint64_t version_ = 0;
  std::map<uint64_t, std::vector<uint8_t>> written_;  // key -> last value (this value size)
 public:
  void Reset() { written_.clear(); }
};

}  // namespace

nlohmann::json TxBenchResult::ToJson(const TxBenchOptions& o) const {
  nlohmann::json j;
  j["config"] = {{"system", o.system},   {"shapes", o.shapes},   {"value_bytes", o.value_bytes},
                 {"chain", fmt::format("{} memory nodes, head 0", o.memory_nodes)},
                 {"keys", o.keys},       {"seconds", o.seconds}, {"seed", o.seed},
                 {"issue", "one transaction at a time, one client"},
                 {"durability", o.log_sync == "none"
                                    ? "log appended to the page cache only (--log-sync none)"
                                    : "fdatasync of each replica's log once per pass of its loop (group commit), before "
                                      "anything that pass produced is sent"},
                 {"replica_path", o.replica_path == "am" ? "messages (--replica-path am)"
                                                         : "one-sided writes into the other replica's ring where "
                                                           "the transport has one-sided puts (--replica-path auto)"},
                 {"ucx_tls", o.ucx_tls.empty() ? "(UCX's choice)" : o.ucx_tls}};
  nlohmann::json runs_json = nlohmann::json::array();
  std::map<std::string, const TxRunResult*> by;
  for (const TxRunResult& r : runs) {
    runs_json.push_back({{"system", r.system},
                         {"reads", r.reads},
                         {"writes", r.writes},
                         {"value_bytes", r.value_bytes},
                         {"transactions", r.transactions},
                         {"seconds", r.seconds},
                         {"throughput_tx", r.throughput_tx},
                         {"mean_us", r.latency.mean_us},
                         {"p50_us", r.latency.p50_us},
                         {"p99_us", r.latency.p99_us},
                         {"mn_cpu_us_per_tx", r.mn_cpu_us_per_tx},
                         {"one_sided_per_tx", r.one_sided_per_tx},
                         {"ring_writes_per_tx", r.ring_writes_per_tx},
                         {"messages_per_tx", r.messages_per_tx},
                         {"log_syncs_per_tx", r.log_syncs_per_tx},
                         {"log_sync_us_per_tx", r.log_sync_us_per_tx},
                         {"verified_reads", r.verified},
                         {"stages", r.stages}});
    by[fmt::format("{}/{},{}/{}", r.system, r.reads, r.writes, r.value_bytes)] = &r;
  }
  j["runs"] = runs_json;
  // The targets (reported, not asserted): (4,2) mean and p99 at
  // most half of HyperLoop-like; (0,1) within 10%.
  nlohmann::json targets = nlohmann::json::array();
  for (const TxRunResult& r : runs) {
    if (r.system != "pulse-chain") continue;
    auto hl = by.find(fmt::format("hyperloop/{},{}/{}", r.reads, r.writes, r.value_bytes));
    if (hl == by.end()) continue;
    const double mean = r.latency.mean_us / std::max(1e-9, hl->second->latency.mean_us);
    const double p99 = r.latency.p99_us / std::max(1e-9, hl->second->latency.p99_us);
    nlohmann::json t = {{"shape", fmt::format("({},{})", r.reads, r.writes)},
                        {"value_bytes", r.value_bytes},
                        {"mean_ratio", mean},
                        {"p99_ratio", p99}};
    if (r.reads == 4 && r.writes == 2) {
      t["target"] = "mean and p99 <= 0.5x hyperloop";
      t["met"] = mean <= 0.5 && p99 <= 0.5;
    } else if (r.reads == 0 && r.writes == 1) {
      t["target"] = "mean within 10% of hyperloop";
      t["met"] = mean >= 0.9 && mean <= 1.1;
    }
    targets.push_back(t);
  }
  j["targets"] = targets;
  j["load_average"] = load_average;
  return j;
}

Result<TxBenchResult> RunTxBench(const TxBenchOptions& o) {
  if (o.system != "pulse-chain" && o.system != "hyperloop" && o.system != "all")
    return Status::InvalidArgument("bench tx: --system " + o.system + " is none of pulse-chain, hyperloop, all");
  PULSE_ASSIGN_OR_RETURN(std::vector<Shape> shapes, ParseShapes(o.shapes));
  if (o.value_bytes.empty()) return Status::InvalidArgument("bench tx: no --value-bytes");
  for (uint32_t v : o.value_bytes)
    if (v == 0 || v > 4096) return Status::InvalidArgument(fmt::format("bench tx: --value-bytes {} is outside 1..4096", v));
  if (o.memory_nodes == 0) return Status::InvalidArgument("bench tx: --memory-nodes must be > 0");
  uint64_t max_reads_writes = 0;
  for (const Shape& s : shapes) max_reads_writes = std::max<uint64_t>(max_reads_writes, s.reads + s.writes);
  if (o.keys < max_reads_writes)
    return Status::InvalidArgument(fmt::format("bench tx: --keys {} is fewer than a transaction's keys", o.keys));
  if (o.log_sync != "fdatasync" && o.log_sync != "none")
    return Status::InvalidArgument("bench tx: --log-sync " + o.log_sync + " is none of fdatasync, none");
  if (o.log_sync == "none") {
    ::setenv("PULSE_TX_LOG_SYNC", "none", 1);  // the started nodes inherit it
  } else {
    ::unsetenv("PULSE_TX_LOG_SYNC");
  }
  if (o.replica_path != "auto" && o.replica_path != "am")
    return Status::InvalidArgument("bench tx: --replica-path " + o.replica_path + " is none of auto, am");
  ::setenv("PULSE_TX_REPLICA_PATH", o.replica_path.c_str(), 1);  // the started nodes inherit it
  TxBenchResult res;
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) > 0) res.load_average = load[0];
  const uint32_t max_value = *std::max_element(o.value_bytes.begin(), o.value_bytes.end());
  const uint64_t region = o.keys * ((max_value + 63) / 64 * 64);
  cluster::ClusterGuard guard;
  BenchClusterOptions c = BenchClusterOptionsFor("bench-tx", o);
  c.memory_nodes = o.memory_nodes;
  c.pool_mib = static_cast<uint32_t>(std::max<uint64_t>(64, 2 * region / (1 << 20) + 32));
  PULSE_ASSIGN_OR_RETURN(std::string address, StartOrJoinBenchCluster(c, o.switch_address, &guard));
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<cluster::ControlSession> session, cluster::ControlSession::Create(o.ucx_tls));
  ClientOptions co;
  co.switch_address = address;
  co.worker.transports = o.ucx_tls;
  co.worker.name = "bench-tx";
  co.policy = AllocationPolicy::kPartitioned;
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Connect(co));
  if (client->memory_nodes() < o.memory_nodes)
    return Status::InvalidArgument(fmt::format("bench tx: the cluster at {} has {} memory node(s); asked for {}", address,
                                               client->memory_nodes(), o.memory_nodes));
  tx::ChainOptions chain_options;
  for (uint32_t n = 0; n < o.memory_nodes; ++n) chain_options.replicas.push_back(n);
  chain_options.region_bytes = (region + 7) / 8 * 8;
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<tx::Chain> chain, tx::Chain::Create(client.get(), chain_options));
  if (o.progress)
    o.progress(fmt::format("chain of {} memory nodes, {} KiB regions, logs {}", o.memory_nodes, region >> 10,
                           o.log_sync == "none" ? "not synced (--log-sync none)" : "fdatasync'd per group commit"));
  std::vector<std::string> systems;
  if (o.system != "hyperloop") systems.push_back("pulse-chain");
  if (o.system != "pulse-chain") systems.push_back("hyperloop");
  Runner runner(o, client.get(), chain.get(), session.get(), address);
  for (uint32_t v : o.value_bytes) {
    runner.Reset();
    // Every slot back to zeroes for this value size (a read of a slot not
    // yet written this round must see zeroes).
    tx::Transaction zero;
    for (uint64_t k = 0; k < o.keys; ++k) {
      zero.writes.push_back(tx::TxWrite{k * ((v + 63) / 64 * 64), std::vector<uint8_t>(v, 0)});
      if (zero.writes.size() == 64 || k + 1 == o.keys) {
        PULSE_RETURN_IF_ERROR(chain->Execute(zero).status());
        zero.writes.clear();
      }
    }
    for (const Shape& s : shapes)
      for (const std::string& system : systems) {
        PULSE_ASSIGN_OR_RETURN(TxRunResult r, runner.Run(system, s, v));
        res.runs.push_back(std::move(r));
      }
  }
  chain.reset();
  client.reset();
  PULSE_RETURN_IF_ERROR(StopBenchCluster(guard));
  return res;
}

}  // namespace pulse::bench
