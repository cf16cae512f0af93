// `pulse bench kv` (kv_bench.h).
#include "bench/kv_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <iterator>
#include <random>

#include <sys/resource.h>

#include <fmt/format.h>

#include "bench/bench_cluster.h"
#include "client/client_internal.h"
#include "cluster/control_session.h"
#include "pulse/apps/ycsb.h"
#include "pulse/client.h"
#include "pulse/kv/store.h"
#include "pulse/rpc.h"
#include "pulse/rpc_kv.h"
#include "pulse/traversal.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kZipfTheta = 0.9;

// The ring counters of the memory nodes (`stats`.ring, RingServer::Stats)
// that say where the ring path's CPU goes, summed over the nodes.
constexpr const char* kRingCounterNames[] = {"entries", "scans", "empty_scans", "sleeps", "wakes", "doorbells",
                                             "responses", "answered_wakes", "window_us"};

// The memory nodes' CPU time so far (their `cpu_us` counters) and ring
// counters, summed.
struct NodeSample {
  uint64_t cpu_us = 0;
  std::map<std::string, uint64_t> ring;
};

Result<NodeSample> SampleMemNodes(cluster::ControlSession& s, const std::string& switch_address) {
  NodeSample sample;
  PULSE_RETURN_IF_ERROR(ForEachMemNodeStats(s, switch_address, [&](const std::string& address, const nlohmann::json& m) {
    PULSE_ASSIGN_OR_RETURN(uint64_t cpu, MemNodeCpuUsOf(address, m));
    sample.cpu_us += cpu;
    const nlohmann::json& c = m["counters"];
    if (c.contains("ring"))
      for (const char* name : kRingCounterNames) sample.ring[name] += c["ring"].value(name, uint64_t{0});
    return Status::Ok();
  }));
  return sample;
}

// Ring counter `name` of a sample (0 if the nodes reported none).
uint64_t RingCounter(const NodeSample& s, const char* name) {
  auto it = s.ring.find(name);
  return it == s.ring.end() ? 0 : it->second;
}

// What the memory nodes' ring serving did between two samples, per entry
// taken from a ring (issue 15: where the ring path's CPU per GET goes).
nlohmann::json RingNodeCounters(const NodeSample& a, const NodeSample& b) {
  auto delta = [&](const char* name) { return static_cast<double>(RingCounter(b, name) - RingCounter(a, name)); };
  const double entries = delta("entries");
  const double scans = delta("scans");
  const double empty = delta("empty_scans");
  auto per_entry = [&](double x) { return entries > 0 ? nlohmann::json(x / entries) : nlohmann::json(); };
  return {{"entries", entries},
          {"scans", scans},
          {"empty_scans", empty},
          {"scans_per_entry", per_entry(scans)},
          {"empty_scans_per_entry", per_entry(empty)},
          {"entries_per_nonempty_scan", scans > empty ? nlohmann::json(entries / (scans - empty)) : nlohmann::json()},
          {"sleeps_per_entry", per_entry(delta("sleeps"))},
          {"wakes_per_entry", per_entry(delta("wakes"))},
          {"doorbells_per_entry", per_entry(delta("doorbells"))},
          {"answered_wakes_per_entry", per_entry(delta("answered_wakes"))},
          {"window_us_at_end", RingCounter(b, "window_us")}};
}

// What messages and one-sided operations per request are counted from
// (KvPathResult::messages_per_request): the client's counters and, for
// the answers written into its rings, the memory nodes' ring counters.
struct TrafficSample {
  uint64_t messages_sent = 0, messages_received = 0;
  uint64_t rma_ops = 0, ring_stores = 0;
  uint64_t node_ring_writes = 0;  // responses and doorbells
};

TrafficSample SampleTraffic(const Client& client, const NodeSample& nodes) {
  const net::Counters& n = client.net_counters();
  return {n.messages_sent, n.messages_received, n.rma_ops, ClientInternal::ring_stores(client),
          RingCounter(nodes, "responses") + RingCounter(nodes, "doorbells")};
}

// Sets r's messages and one-sided operations per request (r.ops requests)
// from the deltas between two samples, and lists the deltas.
void TrafficBetween(const TrafficSample& a, const TrafficSample& b, KvPathResult& r) {
  const uint64_t sent = b.messages_sent - a.messages_sent, received = b.messages_received - a.messages_received;
  const uint64_t rma = b.rma_ops - a.rma_ops, stores = b.ring_stores - a.ring_stores;
  const uint64_t node = b.node_ring_writes - a.node_ring_writes;
  const double requests = static_cast<double>(std::max<uint64_t>(r.ops, 1));
  r.messages_per_request = static_cast<double>(sent + received) / requests;
  r.one_sided_per_request = static_cast<double>(rma + stores + node) / requests;
  r.traffic = {{"messages_sent", sent},   {"messages_received", received}, {"client_rma_ops", rma},
               {"client_ring_stores", stores}, {"node_ring_writes", node}};
}

// This process's CPU time (user and system) so far: the bench is the
// client, so its CPU per request is the client's.
uint64_t ClientCpuUs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

// Requests per latency band (upper bounds in us, powers of 4 from 16 us,
// the last open-ended): where the slow ones wait (issue 15's p99).
nlohmann::json LatencyHistogram(const std::vector<double>& latencies_us) {
  constexpr double kBounds[] = {16, 64, 256, 1024, 4096, 16384};
  std::vector<uint64_t> counts(std::size(kBounds) + 1, 0);
  for (double l : latencies_us) {
    size_t i = 0;
    while (i < std::size(kBounds) && l > kBounds[i]) ++i;
    ++counts[i];
  }
  nlohmann::json h = nlohmann::json::object();
  for (size_t i = 0; i < counts.size(); ++i) {
    h[i < std::size(kBounds) ? fmt::format("le_{}", kBounds[i]) : std::string("more")] = counts[i];
  }
  return h;
}

std::string KeyOf(uint64_t i) { return fmt::format("k{:015d}", i); }
// The value of item i in version v (every byte derived from both).
std::string ValueOf(uint64_t i, uint64_t v, uint32_t bytes) {
  std::string s(bytes, '\0');
  uint64_t x = i * 0x9e3779b97f4a7c15ull + v;
  for (char& c : s) {
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    c = static_cast<char>(x >> 56);
  }
  return s;
}

// ring (slots layout) and ring-double (the double-layer layout, seed 004
// 5.2) are pulse's ring path; am its messages.
bool IsRingPath(const std::string& path) { return path == "ring" || path == "ring-double"; }

Status CheckOptions(const KvBenchOptions& o) {
  if (o.path != "ring" && o.path != "ring-double" && o.path != "rings" && o.path != "am" && o.path != "both" &&
      o.path != "all")
    return Status::InvalidArgument("bench kv: --path " + o.path + " is none of ring, ring-double, rings, am, both, all");
  if (o.mix != "get" && o.mix != "50") return Status::InvalidArgument("bench kv: --mix " + o.mix + " is none of get, 50");
  if (o.system != "pulse" && o.system != "rpc" && o.system != "rpc-wimpy" && o.system != "all")
    return Status::InvalidArgument("bench kv: --system " + o.system + " is none of pulse, rpc, rpc-wimpy, all");
  if (o.distribution != "uniform" && o.distribution != "zipf")
    return Status::InvalidArgument("bench kv: --distribution " + o.distribution + " is none of uniform, zipf");
  if (o.items == 0) return Status::InvalidArgument("bench kv: --items must be > 0");
  if (o.key_bytes < 16) return Status::InvalidArgument("bench kv: --key-bytes must be >= 16 (keys are k + 15 digits)");
  return Status::Ok();
}

// A client with its own store, loaded with items 0..items-1 (version 0).
struct Loaded {
  std::unique_ptr<Client> client;
  std::unique_ptr<kv::Store> store;
  double load_put_accesses = 0;
};

Result<Loaded> ConnectAndLoad(const KvBenchOptions& o, const std::string& name, RequestPath request_path,
                              const std::string& switch_address) {
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  ClientOptions co;
  co.switch_address = switch_address;
  co.worker.transports = o.ucx_tls;
  co.worker.name = "bench-kv-" + name;
  co.request_path = request_path;
  co.ring_layout = name == "ring-double" ? RingLayout::kDoubleLayer : RingLayout::kSlots;
  // The path is the point of the run: the environment must not change it.
  ::unsetenv("PULSE_REQUEST_PATH");
  ::unsetenv("PULSE_RING_LAYOUT");
  Loaded l;
  PULSE_ASSIGN_OR_RETURN(l.client, Client::Connect(co));
  if (l.client->memory_nodes() < o.memory_nodes) {
    return Status::InvalidArgument(fmt::format("bench kv: the cluster at {} has {} memory node(s); asked for {}",
                                               switch_address, l.client->memory_nodes(), o.memory_nodes));
  }
  kv::StoreOptions so;
  so.key_bytes = o.key_bytes;
  so.value_bytes = o.value_bytes;
  so.expected_items = o.items;
  so.max_in_flight = 64;  // the load's batches; the measured batches are at most this
  PULSE_ASSIGN_OR_RETURN(l.store, kv::Store::Create(l.client.get(), so));
  say(fmt::format("[{}] loading {} items of {} bytes", name, o.items, 8 + o.key_bytes + o.value_bytes));
  const uint64_t chunk = 1000;
  auto last_say = Clock::now();
  for (uint64_t start = 0; start < o.items; start += chunk) {
    std::vector<std::pair<std::string, std::string>> batch;
    for (uint64_t i = start; i < std::min(o.items, start + chunk); ++i)
      batch.emplace_back(KeyOf(i), ValueOf(i, 0, o.value_bytes));
    for (const Status& s : l.store->PutBatch(batch)) PULSE_RETURN_IF_ERROR(s);
    if (Clock::now() - last_say > std::chrono::seconds(2)) {
      say(fmt::format("[{}] loaded {} of {}", name, start + batch.size(), o.items));
      last_say = Clock::now();
    }
  }
  l.load_put_accesses = l.store->stats().accesses_per_put();
  l.store->ResetStats();
  return l;
}

// Keys by the run's distribution (Zipf ranks scattered over the key
// space, so the popular keys are not the first ones loaded).
class KeyChooser {
 public:
  explicit KeyChooser(const KvBenchOptions& o) : items_(o.items), rng_(o.seed) {
    if (o.distribution == "zipf") zipf_.emplace(0, o.items - 1, kZipfTheta);
  }
  uint64_t Next() {
    if (zipf_) return apps::ycsb::FnvHash64(zipf_->Next(rng_)) % items_;
    return rng_.NextU64() % items_;
  }

 private:
  uint64_t items_;
  apps::ycsb::Random rng_;
  std::optional<apps::ycsb::ZipfianGenerator> zipf_;
};

Clock::time_point EndOf(const KvBenchOptions& o, Clock::time_point t0) {
  return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
}

void SayProgress(const KvBenchOptions& o, const std::string& name, uint64_t ops, Clock::time_point t0,
                 Clock::time_point* last_say) {
  if (!o.progress || Clock::now() - *last_say < std::chrono::seconds(2)) return;
  *last_say = Clock::now();
  o.progress(fmt::format("[{}] {} requests, {:.0f}/s", name, ops,
                         ops / std::chrono::duration<double>(*last_say - t0).count()));
}

void SayResult(const KvBenchOptions& o, const KvPathResult& r) {
  if (!o.progress) return;
  o.progress(fmt::format("[{}] concurrency {}: {:.0f} requests/s, p50 {:.1f} us, p99 {:.1f} us, memory-node CPU {:.2f} us/request, "
                         "{:.2f} messages and {:.2f} one-sided ops per request",
                         r.path, r.concurrency, r.throughput_ops, r.latency.p50_us, r.latency.p99_us, r.mn_cpu_us_per_op,
                         r.messages_per_request, r.one_sided_per_request));
}

// The concurrency levels a run measures: the one asked for, or (0) a
// sweep whose best throughput is the path's saturation point.
std::vector<uint32_t> Levels(const KvBenchOptions& o) {
  if (o.concurrency != 0) return {o.concurrency};
  return {4, 8, 16, 32, 64};
}

// Runs `measure` at every level and keeps the level of highest throughput;
// the others are listed in its sweep.
template <typename Measure>
Result<KvPathResult> AtSaturation(const KvBenchOptions& o, Measure measure) {
  std::optional<KvPathResult> best;
  nlohmann::json sweep = nlohmann::json::array();
  for (uint32_t level : Levels(o)) {
    PULSE_ASSIGN_OR_RETURN(KvPathResult r, measure(level));
    r.concurrency = level;
    sweep.push_back({{"concurrency", level},
                     {"throughput_ops", r.throughput_ops},
                     {"p50_us", r.latency.p50_us},
                     {"p99_us", r.latency.p99_us},
                     {"mn_cpu_us_per_op", r.mn_cpu_us_per_op},
                     {"client_cpu_us_per_op", r.client_cpu_us_per_op},
                     {"messages_per_request", r.messages_per_request},
                     {"one_sided_per_request", r.one_sided_per_request},
                     {"ring_node", r.ring_node}});
    SayResult(o, r);
    if (!best || r.throughput_ops > best->throughput_ops) best = std::move(r);
  }
  best->sweep = std::move(sweep);
  return *std::move(best);
}

// Closed-loop batches of `concurrency` requests of pulse over one path for
// o.seconds, on a loaded store; `version` is what each key holds.
Result<KvPathResult> MeasurePath(const KvBenchOptions& o, const std::string& path, Loaded& l,
                                 std::vector<uint64_t>& version, uint32_t concurrency,
                                 cluster::ControlSession& session, const std::string& switch_address) {
  Client* client = l.client.get();
  kv::Store* store = l.store.get();
  l.store->ResetStats();
  KeyChooser keys(o);
  std::mt19937_64 mix_rng(o.seed + 7);
  KvPathResult r;
  r.path = path;
  const ClientCounters c0 = client->counters();
  PULSE_ASSIGN_OR_RETURN(NodeSample n0, SampleMemNodes(session, switch_address));
  const TrafficSample traffic0 = SampleTraffic(*client, n0);  // the session has a Worker of its own
  std::vector<double> latencies, batch_lat;
  const uint64_t client_cpu0 = ClientCpuUs();
  const auto t0 = Clock::now();
  const auto end = EndOf(o, t0);
  auto last_say = t0;
  while (Clock::now() < end) {
    std::vector<std::string> gets;
    std::vector<uint64_t> get_ids;
    std::vector<std::pair<std::string, std::string>> puts;
    for (uint32_t i = 0; i < concurrency; ++i) {
      const uint64_t k = keys.Next();
      if (o.mix == "50" && (mix_rng() & 1) != 0) {
        puts.emplace_back(KeyOf(k), ValueOf(k, ++version[k], o.value_bytes));
      } else {
        gets.push_back(KeyOf(k));
        get_ids.push_back(k);
      }
    }
    // PUTs first: the GETs of the batch then see their versions.
    if (!puts.empty()) {
      for (const Status& s : store->PutBatch(puts, &batch_lat)) PULSE_RETURN_IF_ERROR(s);
      latencies.insert(latencies.end(), batch_lat.begin(), batch_lat.end());
      r.puts += puts.size();
    }
    if (!gets.empty()) {
      auto got = store->GetBatch(gets, &batch_lat);
      for (size_t i = 0; i < got.size(); ++i) {
        PULSE_RETURN_IF_ERROR(got[i].status());
        const uint64_t k = get_ids[i];
        if (!got[i]->has_value() || **got[i] != ValueOf(k, version[k], o.value_bytes)) {
          return Status::Internal(fmt::format("bench kv [{}]: GET {} returned another value than put", path, KeyOf(k)));
        }
        ++r.verified;
      }
      latencies.insert(latencies.end(), batch_lat.begin(), batch_lat.end());
      r.gets += gets.size();
    }
    SayProgress(o, path, r.gets + r.puts, t0, &last_say);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const uint64_t client_cpu = ClientCpuUs() - client_cpu0;
  PULSE_ASSIGN_OR_RETURN(NodeSample n1, SampleMemNodes(session, switch_address));
  r.ops = r.gets + r.puts;
  TrafficBetween(traffic0, SampleTraffic(*client, n1), r);
  r.throughput_ops = r.ops / r.seconds;
  r.latency_histogram = LatencyHistogram(latencies);
  r.latency = Summarize(std::move(latencies));
  r.client_cpu_us_per_op = static_cast<double>(client_cpu) / std::max<uint64_t>(r.ops, 1);
  r.mn_cpu_us_per_op = static_cast<double>(n1.cpu_us - n0.cpu_us) / std::max<uint64_t>(r.ops, 1);
  if (IsRingPath(path)) r.ring_node = RingNodeCounters(n0, n1);
  r.accesses_per_get = store->stats().accesses_per_get();
  r.accesses_per_put = r.puts > 0 ? store->stats().accesses_per_put() : l.load_put_accesses;
  r.ring_requests = client->counters().ring_requests - c0.ring_requests;
  r.ring_fallbacks = client->counters().ring_fallbacks - c0.ring_fallbacks;
  if (IsRingPath(path) && r.ring_requests == 0) {
    return Status::FailedPrecondition("bench kv: the ring path took no request (no ring opened?)");
  }
  return r;
}

// One path of pulse: its own client (request path forced) and store,
// loaded, then measured at saturation.
Result<KvPathResult> RunPath(const KvBenchOptions& o, const std::string& path, const std::string& switch_address,
                             cluster::ControlSession& session, KvBenchResult& total) {
  PULSE_ASSIGN_OR_RETURN(Loaded l, ConnectAndLoad(o, path, IsRingPath(path) ? RequestPath::kRing : RequestPath::kMessages,
                                                  switch_address));
  std::vector<uint64_t> version(o.items, 0);
  const double load_put_accesses = l.load_put_accesses;
  PULSE_ASSIGN_OR_RETURN(KvPathResult r, AtSaturation(o, [&](uint32_t level) {
                           return MeasurePath(o, path, l, version, level, session, switch_address);
                         }));
  total.accesses_per_get = r.accesses_per_get;
  if (r.puts > 0) {
    total.accesses_per_put = r.accesses_per_put;
    total.accesses_per_put_from = "run";
  } else if (total.accesses_per_put_from != "run") {
    total.accesses_per_put = load_put_accesses;
    total.accesses_per_put_from = "load";
  }
  return r;
}

// The HERD-like baselines: the same store (loaded by pulse), its GETs, PUTs
// and DELETEs run by the memory node's CPU as the native handlers
// kRpcKvGet/Put/Delete (Store::Runner), sent straight to the node
// (RpcPath::kDirect), measured as pulse's paths are.  `system` is rpc, or
// rpc-wimpy: the same handlers stretched to the memory node's emulated
// wimpy core (kRpcFlagWimpy, its --rpc-core-ghz; the SmartNIC-like
// baseline of seed 002 section V).
Result<KvPathResult> RunRpc(const KvBenchOptions& o, const std::string& system, const std::string& switch_address,
                            cluster::ControlSession& session) {
  PULSE_ASSIGN_OR_RETURN(Loaded l, ConnectAndLoad(o, system, RequestPath::kMessages, switch_address));
  RpcOptions ro;
  ro.path = RpcPath::kDirect;
  ro.wimpy = system == "rpc-wimpy";
  // PUT and DELETE write: never sent twice (rpc.h), so one attempt with
  // the store's own deadline.
  ro.max_attempts = 1;
  ro.request_timeout = l.store->options().timeout;
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<RpcClient> rpc, RpcClient::Create(l.client.get(), ro));
  l.store->SetRunner(rpc::KvStoreRunner(rpc.get()));
  std::vector<uint64_t> version(o.items, 0);
  return AtSaturation(o, [&](uint32_t level) { return MeasurePath(o, system, l, version, level, session, switch_address); });
}

}  // namespace

nlohmann::json KvBenchResult::ToJson(const KvBenchOptions& o) const {
  nlohmann::json j;
  j["config"] = {{"path", o.path}, {"system", o.system},           {"mix", o.mix == "get" || o.mix == "100/0" ? "100% GET" : "50% GET / 50% PUT"},
                 {"distribution", o.distribution == "zipf" ? "zipf 0.9" : "uniform"},
                 {"items", o.items},         {"item_bytes", 8 + (o.key_bytes + 7) / 8 * 8 + (o.value_bytes + 7) / 8 * 8},
                 {"concurrency", o.concurrency == 0 ? nlohmann::json("sweep 4..64, best") : nlohmann::json(o.concurrency)},
                 {"memory_nodes", o.memory_nodes},
                 {"seconds", o.seconds},     {"seed", o.seed},
                 {"ucx_tls", o.ucx_tls.empty() ? "(UCX's choice)" : o.ucx_tls}};
  j["accesses_per_get"] = accesses_per_get;
  j["accesses_per_put"] = accesses_per_put;
  j["accesses_per_put_from"] = accesses_per_put_from;
  nlohmann::json paths = nlohmann::json::object();
  for (const KvPathResult& p : this->paths) {
    paths[p.path] = {{"concurrency", p.concurrency},
                     {"sweep", p.sweep},
                     {"ops", p.ops},
                     {"gets", p.gets},
                     {"puts", p.puts},
                     {"seconds", p.seconds},
                     {"throughput_ops", p.throughput_ops},
                     {"p50_us", p.latency.p50_us},
                     {"p99_us", p.latency.p99_us},
                     {"mean_us", p.latency.mean_us},
                     {"mn_cpu_us_per_op", p.mn_cpu_us_per_op},
                     {"client_cpu_us_per_op", p.client_cpu_us_per_op},
                     {"latency_histogram_us", p.latency_histogram},
                     {"accesses_per_get", p.accesses_per_get},
                     {"accesses_per_put", p.accesses_per_put},
                     {"ring_requests", p.ring_requests},
                     {"ring_fallbacks", p.ring_fallbacks},
                     {"messages_per_request", p.messages_per_request},
                     {"one_sided_per_request", p.one_sided_per_request},
                     {"traffic", p.traffic},
                     {"verified", p.verified}};
    if (!p.ring_node.is_null()) paths[p.path]["ring_node"] = p.ring_node;
    const std::string name = p.path == "am" ? "message" : p.path == "ring-double" ? "ring_double" : p.path;
    j[name + "_mn_cpu_us_per_get"] = p.gets > 0 && p.puts == 0 ? nlohmann::json(p.mn_cpu_us_per_op) : nlohmann::json();
  }
  j["paths"] = paths;
  j["load_average_1m"] = load_average;
  return j;
}

Result<KvBenchResult> RunKvBench(const KvBenchOptions& asked) {
  KvBenchOptions o = asked;
  // The spelling of the mixes.
  if (o.mix == "100/0") o.mix = "get";
  if (o.mix == "50/50") o.mix = "50";
  PULSE_RETURN_IF_ERROR(CheckOptions(o));
  KvBenchResult res;
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) > 0) res.load_average = load[0];
  cluster::ClusterGuard guard;
  BenchClusterOptions c = BenchClusterOptionsFor("bench-kv", o);
  c.memory_nodes = o.memory_nodes;
  // Both paths' stores at once, slabs and buckets included, with room.
  const uint64_t store_bytes = o.items * (8 + o.key_bytes + o.value_bytes + 32) + (1 << 20);
  c.pool_mib = static_cast<uint32_t>(std::max<uint64_t>(64, 3 * store_bytes / o.memory_nodes / (1 << 20) + 32));
  PULSE_ASSIGN_OR_RETURN(std::string address, StartOrJoinBenchCluster(c, o.switch_address, &guard));
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<cluster::ControlSession> session, cluster::ControlSession::Create(o.ucx_tls));
  std::vector<std::string> paths;
  if (o.path == "ring" || o.path == "rings" || o.path == "both" || o.path == "all") paths.push_back("ring");
  if (o.path == "ring-double" || o.path == "rings" || o.path == "all") paths.push_back("ring-double");
  if (o.path == "am" || o.path == "both" || o.path == "all") paths.push_back("am");
  if (o.system == "rpc" || o.system == "rpc-wimpy") paths.clear();
  for (const std::string& p : paths) {
    PULSE_ASSIGN_OR_RETURN(KvPathResult r, RunPath(o, p, address, *session, res));
    res.paths.push_back(std::move(r));
  }
  std::vector<std::string> rpc_systems;
  if (o.system == "rpc" || o.system == "all") rpc_systems.push_back("rpc");
  if (o.system == "rpc-wimpy" || o.system == "all") rpc_systems.push_back("rpc-wimpy");
  for (const std::string& system : rpc_systems) {
    PULSE_ASSIGN_OR_RETURN(KvPathResult r, RunRpc(o, system, address, *session));
    if (res.accesses_per_put_from.empty()) {
      res.accesses_per_get = r.accesses_per_get;
      res.accesses_per_put = r.accesses_per_put;
      res.accesses_per_put_from = "load";
    }
    res.paths.push_back(std::move(r));
  }
  PULSE_RETURN_IF_ERROR(StopBenchCluster(guard));
  return res;
}

}  // namespace pulse::bench
