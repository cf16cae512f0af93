#include "bench/app_bench.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/app_driver.h"
#include "bench/app_systems.h"
#include "bench/bench_cluster.h"
#include "cluster/control_session.h"
#include "pulse/apps/btrdb.h"
#include "pulse/apps/webservice.h"
#include "pulse/apps/wiredtiger.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// Far bytes the application's data occupies, for the pool size and caches.
uint64_t WorkingSetBytes(const AppBenchOptions& o, uint64_t size) {
  if (o.app == "webservice") return size * (8192 + 32) + size * 8;
  if (o.app == "wiredtiger") return size * (256 + 64);
  return static_cast<uint64_t>(size * 120.0 * 4.6);  // btrdb: 256-byte leaves of 32 readings + inner nodes
}

uint64_t DefaultSize(const std::string& app) {
  if (app == "webservice") return 10000;  // 80 MB of objects
  if (app == "wiredtiger") return 20000;
  return 600;  // btrdb: 10 minutes of readings
}

// Counters of the cluster, read before and after the measured phase.
struct ClusterCounters {
  uint64_t forwards = 0;  // continuations between memory nodes: the switch's plus direct ones
  uint64_t iterations = 0;
  std::optional<uint64_t> cpu_us;
  // The memory nodes' outgoing traversal messages (responses, continuations,
  // to the switch): active messages sent and the messages they carried.
  uint64_t mn_messages = 0;
  uint64_t mn_carried = 0;
  // The memory nodes' per-leg time (stats' "legs_ns"), summed over them.
  std::map<std::string, uint64_t> legs_ns;
};

Result<std::vector<std::string>> MemNodeAddresses(cluster::ControlSession& s, const std::string& sw) {
  auto stats = s.Call(sw, "stats", std::chrono::seconds(2));
  if (!stats.ok()) return stats.status();
  std::vector<std::string> out;
  for (const json& n : (*stats)["memnodes"]) out.push_back(n.value("address", ""));
  return out;
}

Result<ClusterCounters> ReadCounters(cluster::ControlSession& s, const std::string& sw,
                                     const std::vector<std::string>& memnodes) {
  ClusterCounters c;
  auto stats = s.Call(sw, "stats", std::chrono::seconds(2));
  if (!stats.ok()) return stats.status();
  c.forwards = (*stats)["counters"].value("forwards", uint64_t{0});
  uint64_t cpu = 0;
  bool have_cpu = true;
  for (const std::string& a : memnodes) {
    auto m = s.Call(a, "stats", std::chrono::seconds(2));
    if (!m.ok()) return m.status();
    const json& counters = (*m)["counters"];
    // The rpc handlers' steps are iterations in the engine's unit: one far
    // object (node) visited each.
    c.iterations += counters.value("iterations", uint64_t{0});
    // Continuations sent node to node under direct routing cross nodes too.
    c.forwards += counters.value("direct_continuations", uint64_t{0});
    if (counters.contains("rpc")) c.iterations += counters["rpc"].value("steps", uint64_t{0});
    if (auto agg = counters.find("aggregation"); agg != counters.end() && agg->is_object()) {
      for (const char* way : {"responses", "continuations", "to_switch"}) {
        if (!agg->contains(way)) continue;
        c.mn_messages += (*agg)[way].value("messages", uint64_t{0});
        c.mn_carried += (*agg)[way].value("carried", uint64_t{0});
      }
    }
    if (auto legs = counters.find("legs_ns"); legs != counters.end() && legs->is_object())
      for (const auto& [leg, ns] : legs->items())
        if (ns.is_number_unsigned()) c.legs_ns[leg] += ns.get<uint64_t>();
    if (counters.contains("cpu_us")) {
      cpu += counters["cpu_us"].get<uint64_t>();
    } else {
      have_cpu = false;
    }
  }
  if (have_cpu) c.cpu_us = cpu;
  return c;
}

// RAPL package energy in microjoules, if this machine exposes it readably.
std::optional<uint64_t> RaplEnergyUj() {
  std::ifstream f("/sys/class/powercap/intel-rapl:0/energy_uj");
  uint64_t v = 0;
  if (f >> v) return v;
  return std::nullopt;
}

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

json OptionalJson(const std::optional<double>& v) { return v ? json(*v) : json(); }

// One closed-loop client: a system of its own (its own Client, which is
// single-threaded) over its own copy of the application's data, so lanes
// share nothing but the cluster.
struct Lane {
  std::unique_ptr<apps::AppSystem> system;
  std::unique_ptr<AppDriver> driver;
  ClientCounters cc0;
  net::Counters nc0;
  apps::AppSystemStats ss0;
  std::vector<double> latencies;
  uint64_t verified = 0;
  double seconds = 0;
  Status status;
};

// Runs `driver`'s next request, stamps its end into `*end` before the
// answer is checked (the check is the bench's work, not the system's), then
// checks it; returns whether it was checked.
Result<bool> TimedRequest(AppDriver& driver, Clock::time_point* end) {
  PULSE_RETURN_IF_ERROR(driver.Request());
  *end = Clock::now();
  return driver.CheckLast();
}

// Runs `lane`'s requests back to back until `seconds` have passed since t0.
void RunClosedLoop(Lane& lane, Clock::time_point t0, double seconds, bool progress) {
  auto last_progress = t0;
  while (SecondsSince(t0) < seconds) {
    const auto s = Clock::now();
    Clock::time_point e;
    auto checked = TimedRequest(*lane.driver, &e);
    if (!checked.ok()) {
      lane.status = checked.status();
      break;
    }
    lane.verified += *checked ? 1 : 0;
    lane.latencies.push_back(std::chrono::duration<double, std::micro>(e - s).count());
    if (progress && Clock::now() - last_progress > std::chrono::seconds(1)) {
      last_progress = Clock::now();
      fmt::print(stderr, "\r[bench app] closed loop {:.0f}/{:.0f} s, {} requests", SecondsSince(t0), seconds,
                 lane.latencies.size());
    }
  }
  lane.seconds = SecondsSince(t0);
}

}  // namespace

json AppBenchJson(const AppBenchOptions& o, const AppBenchResult& r) {
  const double tput = r.closed.seconds > 0 ? static_cast<double>(r.closed.ops) / r.closed.seconds : 0;
  json j = {
      {"app", o.app},
      {"system", o.system},
      {"memory_nodes", o.memory_nodes},
      {"pipelines", o.pipelines},
      {"engine", o.engine.empty() ? "default" : o.engine},
      {"throughput_ops", tput},
      {"lat_mean_us", r.closed.latency.mean_us},
      {"lat_p50_us", r.closed.latency.p50_us},
      {"lat_p99_us", r.closed.latency.p99_us},
      {"bytes_per_op", r.bytes_per_op},
      {"mn_cpu_us_per_op", OptionalJson(r.mn_cpu_us_per_op)},
      {"memnode_legs_us_per_op", r.memnode_leg_us_per_op},
      {"energy_uj_per_op", OptionalJson(r.energy_uj_per_op)},
      {"offload_fraction", r.offload_fraction},
      {"cross_node_per_op", r.cross_node_per_op},
      {"client_sleeps_per_op", r.client_sleeps_per_op},
      {"iterations_per_op", OptionalJson(r.iterations_per_op)},
      {"retransmissions_per_op", r.retransmissions_per_op},
      {"critical_path_messages_per_op", r.critical_path_messages_per_op},
      {"critical_path_bytes_per_op", r.critical_path_bytes_per_op},
      // A model, not a measurement (app_projection.h, docs/evaluation.md).
      {"projected_rack_us", OptionalJson(r.projected_rack_us)},
      {"fabric_one_way_us", o.fabric.one_way_us},
      {"fabric_gbps", o.fabric.gbps},
      {"routing", o.routing.empty() ? "default" : o.routing},
      {"requests_per_message", OptionalJson(r.requests_per_message)},
      {"responses_per_message", OptionalJson(r.responses_per_message)},
      {"ops", r.closed.ops},
      {"seconds", r.closed.seconds},
      {"concurrency", o.concurrency},
      {"verified", r.verified},
      {"load_seconds", r.load_seconds},
      {"size", r.load_ops},
      {"switch_address", r.switch_address},
      {"own_cluster", r.own_cluster},
  };
  if (o.app == "webservice") {
    j["workload"] = std::string(1, o.workload);
    j["distribution"] = o.distribution;
    j["chain_length"] = o.chain_length;
    j["insert_fraction"] = o.insert_fraction;
    j["offload_alloc"] = o.offload_alloc;
  }
  if (o.app == "wiredtiger") {
    j["scan_length"] = o.scan_length;
    j["allocation"] = o.allocation;
  }
  j["ucx_tls"] = o.ucx_tls;
  j["node_poll_window_us"] = o.node_poll_window_us;
  j["node_poll_when_core_idle"] = o.node_poll_when_core_idle;
  j["client_poll_when_core_idle"] = o.client_poll_when_core_idle;
  if (!r.extra.empty()) {  // empty: a result not (yet) measured
    const json extra = json::parse(r.extra);
    for (const auto& [k, v] : extra.items()) j[k] = v;
  }
  if (r.has_open) {
    j["open_loop"] = {{"rate", o.rate},
                      {"ops", r.open.ops},
                      {"lat_mean_us", r.open.latency.mean_us},
                      {"lat_p50_us", r.open.latency.p50_us},
                      {"lat_p99_us", r.open.latency.p99_us}};
  }
  return j;
}

Result<AppBenchResult> RunAppBench(const AppBenchOptions& o) {
  if (o.app != "webservice" && o.app != "wiredtiger" && o.app != "btrdb")
    return Status::InvalidArgument(fmt::format("bench app: unknown app '{}' (webservice, wiredtiger, btrdb)", o.app));
  if (o.memory_nodes < 1) return Status::InvalidArgument("bench app: --memory-nodes must be >= 1");
  if (o.concurrency < 1 || o.concurrency > 64)
    return Status::InvalidArgument(fmt::format("bench app: --concurrency {} (1 to 64 clients)", o.concurrency));
  if (o.seconds <= 0) return Status::InvalidArgument("bench app: --seconds must be > 0");
  if (o.allocation != "uniform" && o.allocation != "partitioned")
    return Status::InvalidArgument(fmt::format("bench app: --allocation '{}' (uniform or partitioned)", o.allocation));
  if (o.allocation == "partitioned" && (o.app != "wiredtiger" || o.memory_nodes < 2))
    return Status::InvalidArgument("bench app: --allocation partitioned is for wiredtiger on >= 2 memory nodes");
  if (!o.routing.empty() && o.routing != "direct" && o.routing != "switch")
    return Status::InvalidArgument(fmt::format("bench app: --routing '{}' (direct or switch)", o.routing));
  if (!(o.fabric.one_way_us >= 0) || !(o.fabric.gbps > 0))
    return Status::InvalidArgument(fmt::format("bench app: --fabric-one-way-us {} must be >= 0 and --fabric-gbps {} > 0",
                                               o.fabric.one_way_us, o.fabric.gbps));
  if (o.scan_length > apps::kWiredTigerMaxScan)
    return Status::InvalidArgument(
        fmt::format("bench app: --scan-length {} exceeds {}", o.scan_length, apps::kWiredTigerMaxScan));
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  const uint64_t size = o.size != 0 ? o.size : DefaultSize(o.app);
  const uint64_t working_set = WorkingSetBytes(o, size);
  AppBenchResult res;
  cluster::ClusterGuard guard;
  // A name of its own per run: runs of one process (bench suite) must not
  // share a cluster directory, or a later run's clean-up removes the logs of
  // a failed one.
  static std::atomic<uint32_t> runs{0};
  const uint32_t run = ++runs;
  BenchClusterOptions c = BenchClusterOptionsFor(run == 1 ? "bench-app" : fmt::format("bench-app{}", run), o);
  c.memory_nodes = o.memory_nodes;
  c.routing = o.routing;
  c.pipelines = o.pipelines;
  c.engine = o.engine;
  c.poll_window_us = o.node_poll_window_us;
  c.poll_when_core_idle = o.node_poll_when_core_idle;
  c.pool_mib = static_cast<uint32_t>(
      std::max<uint64_t>(64, 2 * working_set * o.concurrency / o.memory_nodes / (1 << 20) + 32));
  auto address = StartOrJoinBenchCluster(c, o.switch_address, &guard);
  if (!address.ok()) return address.status();
  res.switch_address = *address;
  res.own_cluster = guard.state() != nullptr;

  AppSystemConfig sc;
  sc.client.switch_address = res.switch_address;
  sc.client.worker.transports = o.ucx_tls;  // the client runs over the regime's transport too
  sc.client.worker.poll_window_us = o.client_poll_window_us;
  sc.client.worker.awaiting_poll_window_us = o.client_awaiting_poll_window_us;
  sc.client.worker.poll_when_core_idle = o.client_poll_when_core_idle;
  if (o.allocation == "partitioned") sc.client.policy = AllocationPolicy::kPartitioned;
  sc.mode = o.mode;
  sc.working_set_bytes = working_set;
  sc.memory_nodes = o.memory_nodes;
  sc.cache_fraction = o.cache_fraction;
  sc.cache_policy = o.cache_policy;
  sc.rpc_path = o.rpc_path;
  sc.rpc_core_ghz = o.rpc_core_ghz;

  say(fmt::format("loading {} ({} {}, ~{} KiB far) on {} memory node(s), system {}{}", o.app, size,
                  o.app == "btrdb" ? "s of readings" : o.app == "webservice" ? "users" : "records",
                  working_set >> 10, o.memory_nodes, o.system,
                  o.concurrency > 1 ? fmt::format(", {} clients with a copy each", o.concurrency) : ""));
  const auto load_start = Clock::now();
  std::vector<Lane> lanes(o.concurrency);
  for (uint32_t i = 0; i < o.concurrency; ++i) {
    sc.client.worker.name = i == 0 ? "bench-app" : fmt::format("bench-app{}", i);
    auto system = MakeAppSystem(o.system, sc);
    if (!system.ok()) return system.status();
    if ((*system)->client()->memory_nodes() < o.memory_nodes)
      return Status::InvalidArgument(fmt::format("bench app: the cluster at {} has {} memory node(s); asked for {}",
                                                 res.switch_address, (*system)->client()->memory_nodes(),
                                                 o.memory_nodes));
    auto driver = LoadApp(o, size, o.seed + i, system->get());
    if (!driver.ok()) return driver.status();
    lanes[i].system = std::move(*system);
    lanes[i].driver = std::move(*driver);
  }
  res.load_seconds = SecondsSince(load_start);
  res.load_ops = size * o.concurrency;

  for (Lane& lane : lanes) {
    for (uint32_t i = 0; i < o.warmup_ops; ++i) {
      Clock::time_point end;
      auto checked = TimedRequest(*lane.driver, &end);
      if (!checked.ok()) return checked.status();
      res.verified += *checked ? 1 : 0;
    }
  }

  auto session = cluster::ControlSession::Create(o.ucx_tls);
  if (!session.ok()) return session.status();
  auto memnodes = MemNodeAddresses(**session, res.switch_address);
  if (!memnodes.ok()) return memnodes.status();
  auto before = ReadCounters(**session, res.switch_address, *memnodes);
  if (!before.ok()) return before.status();
  for (Lane& lane : lanes) {
    lane.cc0 = lane.system->client()->counters();
    lane.nc0 = lane.system->client()->net_counters();
    lane.ss0 = lane.system->Stats();
  }
  const auto rapl0 = RaplEnergyUj();
  const bool tty = isatty(STDERR_FILENO) != 0;

  // Closed loop: each client issues one request after another for o.seconds.
  const auto t0 = Clock::now();
  if (lanes.size() == 1) {
    RunClosedLoop(lanes[0], t0, o.seconds, tty);
  } else {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < lanes.size(); ++i)
      threads.emplace_back(RunClosedLoop, std::ref(lanes[i]), t0, o.seconds, tty && i == 0);
    for (std::thread& t : threads) t.join();
  }
  if (tty) fmt::print(stderr, "\n");
  std::vector<double> lat;
  for (Lane& lane : lanes) {
    PULSE_RETURN_IF_ERROR(lane.status);
    res.verified += lane.verified;
    res.closed.seconds = std::max(res.closed.seconds, lane.seconds);
    lat.insert(lat.end(), lane.latencies.begin(), lane.latencies.end());
  }
  res.closed.ops = lat.size();
  res.closed.latency = Summarize(std::move(lat));

  const uint64_t ops = res.closed.ops;
  auto after = ReadCounters(**session, res.switch_address, *memnodes);
  if (!after.ok()) return after.status();
  const auto rapl1 = RaplEnergyUj();
  const double n = static_cast<double>(std::max<uint64_t>(ops, 1));
  // The clients' own counters, summed over the lanes' changes in the phase.
  uint64_t bytes = 0, traversals = 0, offloaded = 0, reissues = 0, retransmissions = 0;
  uint64_t path_messages = 0, path_bytes = 0, client_sleeps = 0;
  uint64_t request_messages = 0, requests_carried = 0;
  nlohmann::json system_stats = nlohmann::json::object();
  for (Lane& lane : lanes) {
    const ClientCounters& cc1 = lane.system->client()->counters();
    const net::Counters& nc1 = lane.system->client()->net_counters();
    bytes += (nc1.bytes_sent - lane.nc0.bytes_sent) + (nc1.bytes_received - lane.nc0.bytes_received) +
             (nc1.rma_bytes - lane.nc0.rma_bytes);
    traversals += cc1.traversals - lane.cc0.traversals;
    client_sleeps += nc1.sleeps - lane.nc0.sleeps;
    offloaded += cc1.offloaded - lane.cc0.offloaded;
    retransmissions += cc1.retransmissions - lane.cc0.retransmissions;
    // The critical path: offloaded traversals' legs (counted by the
    // messages themselves), a one-sided access a request and a response,
    // and what the system adds (an RPC's round trips).
    path_messages += (cc1.critical_path_messages - lane.cc0.critical_path_messages) +
                     2 * ((cc1.remote_reads - lane.cc0.remote_reads) + (cc1.remote_writes - lane.cc0.remote_writes));
    path_bytes += (cc1.critical_path_bytes - lane.cc0.critical_path_bytes) + (nc1.rma_bytes - lane.nc0.rma_bytes);
    request_messages += cc1.request_messages - lane.cc0.request_messages;
    requests_carried += cc1.requests_carried - lane.cc0.requests_carried;
    // The system's own figures (e.g. cache hits; RPC re-issues at node
    // boundaries, which are cross-node hops too).
    const apps::AppSystemStats ss1 = lane.system->Stats();
    reissues += (cc1.reissues - lane.cc0.reissues) + (ss1.reissues - lane.ss0.reissues);
    for (const auto& [name, value] : ss1.counters) system_stats[name] = system_stats.value(name, uint64_t{0}) + value;
    for (const auto& [name, value] : lane.ss0.counters) system_stats[name] = system_stats[name].get<uint64_t>() - value;
    for (const auto& [name, value] : ss1.settings) system_stats[name] = value;
  }
  auto system_counter = [&](const char* name) { return system_stats.value(name, uint64_t{0}); };
  path_messages += system_counter(kCriticalPathMessages);
  path_bytes += system_counter(kCriticalPathBytes);
  res.critical_path_messages_per_op = static_cast<double>(path_messages) / n;
  res.critical_path_bytes_per_op = static_cast<double>(path_bytes) / n;
  res.bytes_per_op = static_cast<double>(bytes) / n;
  if (after->cpu_us && before->cpu_us) res.mn_cpu_us_per_op = static_cast<double>(*after->cpu_us - *before->cpu_us) / n;
  for (const auto& [leg, ns] : after->legs_ns) {
    auto was = before->legs_ns.find(leg);
    const uint64_t start = was == before->legs_ns.end() ? 0 : was->second;
    if (ns >= start) res.memnode_leg_us_per_op[leg] = static_cast<double>(ns - start) / 1000.0 / n;
  }
  if (rapl0 && rapl1 && *rapl1 >= *rapl0) res.energy_uj_per_op = static_cast<double>(*rapl1 - *rapl0) / n;
  res.offload_fraction = traversals == 0 ? 0 : static_cast<double>(offloaded) / static_cast<double>(traversals);
  res.cross_node_per_op = static_cast<double>((after->forwards - before->forwards) + reissues) / n;
  res.client_sleeps_per_op = static_cast<double>(client_sleeps) / n;
  res.iterations_per_op = static_cast<double>(after->iterations - before->iterations) / n;
  res.retransmissions_per_op = static_cast<double>(retransmissions) / n;
  res.projected_rack_us = ProjectRackLatencyUs(o.fabric, res.critical_path_messages_per_op,
                                               res.critical_path_bytes_per_op, res.mn_cpu_us_per_op);
  if (request_messages > 0)
    res.requests_per_message = static_cast<double>(requests_carried) / static_cast<double>(request_messages);
  if (after->mn_messages > before->mn_messages)
    res.responses_per_message = static_cast<double>(after->mn_carried - before->mn_carried) /
                                static_cast<double>(after->mn_messages - before->mn_messages);

  // Open loop: Poisson arrivals at o.rate; latency counts from the arrival.
  if (o.rate > 0) {
    res.has_open = true;
    std::mt19937_64 rng(o.seed + 1);
    std::exponential_distribution<double> gap(o.rate);
    std::vector<double> olat;
    const auto start = Clock::now();
    double arrival = 0;
    while (arrival < o.seconds) {
      const auto due = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(arrival));
      if (Clock::now() < due) std::this_thread::sleep_until(due);
      Clock::time_point end;
      auto checked = TimedRequest(*lanes[0].driver, &end);
      if (!checked.ok()) return checked.status();
      olat.push_back(std::chrono::duration<double, std::micro>(end - due).count());
      res.verified += *checked ? 1 : 0;
      arrival += gap(rng);
    }
    res.open.seconds = SecondsSince(start);
    res.open.ops = olat.size();
    res.open.latency = Summarize(std::move(olat));
  }

  auto extra = lanes[0].driver->Extra();
  if (!extra.ok()) return extra.status();
  if (!system_stats.empty()) (*extra)["system_stats"] = std::move(system_stats);
  res.extra = extra->dump();
  lanes.clear();
  session->reset();
  PULSE_RETURN_IF_ERROR(StopBenchCluster(guard));
  return res;
}

}  // namespace pulse::bench
