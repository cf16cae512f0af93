#include "bench/dlrm_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "bench/bench_cluster.h"
#include "cluster/control_session.h"
#include "pulse/apps/ycsb.h"
#include "pulse/client.h"
#include "pulse/dlrm/embedding_tables.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using Rows = std::vector<std::vector<dlrm::QuantizedRow>>;  // [table][row]

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Synthetic queries: `lookups` indices per table, Zipf (YCSB's generator,
// row 0 the hottest) or uniform over the rows.
class QueryGenerator {
 public:
  QueryGenerator(const DlrmBenchOptions& o, double zetan, uint64_t seed)
      : o_(o), rng_(seed), zipf_(0, o.rows - 1, apps::ycsb::ZipfianGenerator::kZipfianConstant, zetan),
        uniform_(0, o.rows - 1) {}
  dlrm::EmbeddingQuery Next() {
    dlrm::EmbeddingQuery q;
    q.indices.resize(o_.tables);
    for (auto& bag : q.indices) {
      bag.resize(o_.lookups);
      for (uint64_t& x : bag) x = o_.distribution == "zipf" ? zipf_.Next(rng_) : uniform_.Next(rng_);
    }
    return q;
  }

 private:
  const DlrmBenchOptions& o_;
  apps::ycsb::Random rng_;
  apps::ycsb::ZipfianGenerator zipf_;
  apps::ycsb::UniformGenerator uniform_;
};

// Random float rows, quantized: the model's local copy (the reference's).
Rows MakeRows(const DlrmBenchOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> x(0.0f, 0.5f);
  Rows rows(o.tables);
  std::vector<float> real(o.dim);
  for (auto& table : rows) {
    table.reserve(o.rows);
    for (uint64_t r = 0; r < o.rows; ++r) {
      for (float& v : real) v = x(rng);
      table.push_back(dlrm::QuantizeRow(real));
    }
  }
  return rows;
}

// The memory nodes' CPU time and engine iterations so far.
struct MemNodeTotals {
  std::optional<uint64_t> cpu_us;
  uint64_t iterations = 0;
};

Result<MemNodeTotals> ReadMemNodeTotals(cluster::ControlSession& s, const std::string& switch_address) {
  auto stats = s.Call(switch_address, "stats", std::chrono::seconds(2));
  if (!stats.ok()) return stats.status();
  MemNodeTotals t;
  uint64_t cpu = 0;
  bool have_cpu = true;
  for (const json& n : (*stats)["memnodes"]) {
    auto m = s.Call(n.value("address", ""), "stats", std::chrono::seconds(2));
    if (!m.ok()) return m.status();
    const json& c = (*m)["counters"];
    t.iterations += c.value("iterations", uint64_t{0});
    if (c.contains("cpu_us")) {
      cpu += c["cpu_us"].get<uint64_t>();
    } else {
      have_cpu = false;
    }
  }
  if (have_cpu) t.cpu_us = cpu;
  return t;
}

// One closed-loop client: its own Client over the shared tables.
struct Lane {
  std::unique_ptr<Client> client;
  std::unique_ptr<dlrm::EmbeddingTables> tables;
  // Per measured phase:
  std::vector<double> latencies;
  dlrm::ReduceStats stats;
  uint64_t verified = 0, mismatches = 0;
  std::string first_mismatch;
  Status status;
};

void RunLane(Lane& lane, bool offload, const DlrmBenchOptions& o, dlrm::Reduction op, const Rows& rows, double zetan,
             uint64_t seed, uint32_t warmup, Clock::time_point t0, bool progress) {
  QueryGenerator gen(o, zetan, seed);
  auto last_progress = Clock::now();
  for (uint64_t i = 0; warmup > 0 ? i < warmup : SecondsSince(t0) < o.seconds; ++i) {
    const dlrm::EmbeddingQuery q = gen.Next();
    const auto s = Clock::now();
    auto r = offload ? lane.tables->Reduce(q, op, warmup > 0 ? nullptr : &lane.stats)
                     : lane.tables->ReduceByGather(q, op, warmup > 0 ? nullptr : &lane.stats);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - s).count();
    if (!r.ok()) {
      lane.status = r.status();
      return;
    }
    if (warmup == 0) lane.latencies.push_back(us);
    // Every answer against the reference (outside the timed call).
    bool same = r->size() == o.tables;
    for (uint32_t t = 0; same && t < o.tables; ++t) {
      auto want = dlrm::ReferenceReduce(op, rows[t], o.dim, q.indices[t]);
      same = want.ok() && *want == (*r)[t];
      if (!same && lane.first_mismatch.empty())
        lane.first_mismatch = fmt::format("{}: query {} table {} differs from the reference", offload ? "offload" : "gather", i, t);
    }
    (same ? lane.verified : lane.mismatches) += 1;
    if (progress && warmup == 0 && Clock::now() - last_progress > std::chrono::seconds(1)) {
      last_progress = Clock::now();
      o.progress(fmt::format("{} {:.0f}/{:.0f} s, {} queries (client 0)", offload ? "offload" : "gather",
                             SecondsSince(t0), o.seconds, lane.latencies.size()));
    }
  }
}

Status CheckOptions(const DlrmBenchOptions& o) {
  if (o.tables < 1 || o.tables > 1024) return Status::InvalidArgument(fmt::format("bench dlrm: --tables {} (1 to 1024)", o.tables));
  if (o.rows < 1) return Status::InvalidArgument("bench dlrm: --rows must be >= 1");
  if (o.dim < 1 || o.dim > 4096) return Status::InvalidArgument(fmt::format("bench dlrm: --dim {} (1 to 4096)", o.dim));
  if (o.lookups < 1) return Status::InvalidArgument("bench dlrm: --lookups must be >= 1");
  if (o.distribution != "zipf" && o.distribution != "uniform")
    return Status::InvalidArgument(fmt::format("bench dlrm: --distribution '{}' (zipf or uniform)", o.distribution));
  if (o.concurrency < 1 || o.concurrency > 64)
    return Status::InvalidArgument(fmt::format("bench dlrm: --concurrency {} (1 to 64 clients)", o.concurrency));
  if (o.seconds <= 0) return Status::InvalidArgument("bench dlrm: --seconds must be > 0");
  if (o.memory_nodes < 1) return Status::InvalidArgument("bench dlrm: --memory-nodes must be >= 1");
  return dlrm::ParseReduction(o.reduction).status();
}

}  // namespace

Result<DlrmBenchResult> RunDlrmBench(const DlrmBenchOptions& o) {
  PULSE_RETURN_IF_ERROR(CheckOptions(o));
  PULSE_ASSIGN_OR_RETURN(const dlrm::Reduction op, dlrm::ParseReduction(o.reduction));
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  DlrmBenchResult res;
  const uint64_t far_bytes = uint64_t{o.tables} * o.rows * dlrm::RowBytes(o.dim);
  cluster::ClusterGuard guard;
  BenchClusterOptions c = BenchClusterOptionsFor("bench-dlrm", o);
  c.memory_nodes = o.memory_nodes;
  c.pool_mib = static_cast<uint32_t>(std::max<uint64_t>(64, 2 * far_bytes / o.memory_nodes / (1 << 20) + 32));
  PULSE_ASSIGN_OR_RETURN(res.switch_address, StartOrJoinBenchCluster(c, o.switch_address, &guard));
  res.own_cluster = guard.state() != nullptr;

  say(fmt::format("loading {} tables x {} rows x dim {} (int8 rows, ~{} MiB far) on {} memory node(s); synthetic "
                  "{} indices, {} per table per query",
                  o.tables, o.rows, o.dim, far_bytes >> 20, o.memory_nodes, o.distribution, o.lookups));
  const auto load_start = Clock::now();
  const Rows rows = MakeRows(o);
  dlrm::EmbeddingOptions eo;
  eo.chunks_per_traversal = o.chunks_per_traversal;
  eo.max_traversals_in_flight = o.max_in_flight;
  std::vector<Lane> lanes(o.concurrency);
  for (uint32_t i = 0; i < o.concurrency; ++i) {
    ClientOptions co;
    co.switch_address = res.switch_address;
    co.worker.transports = o.ucx_tls;
    co.worker.name = i == 0 ? "bench-dlrm" : fmt::format("bench-dlrm{}", i);
    PULSE_ASSIGN_OR_RETURN(lanes[i].client, Client::Connect(co));
    if (lanes[i].client->memory_nodes() < o.memory_nodes)
      return Status::InvalidArgument(fmt::format("bench dlrm: the cluster at {} has {} memory node(s); asked for {}",
                                                 res.switch_address, lanes[i].client->memory_nodes(), o.memory_nodes));
    if (i == 0) {
      std::vector<dlrm::TableLayout> shapes(o.tables, dlrm::TableLayout{0, o.rows, o.dim});
      PULSE_ASSIGN_OR_RETURN(lanes[0].tables, dlrm::EmbeddingTables::Create(lanes[0].client.get(), shapes, eo));
      constexpr uint64_t kBatch = 4096;
      for (uint32_t t = 0; t < o.tables; ++t)
        for (uint64_t r = 0; r < o.rows; r += kBatch)
          PULSE_RETURN_IF_ERROR(lanes[0].tables->WriteRows(
              t, r, std::span<const dlrm::QuantizedRow>(rows[t]).subspan(r, std::min(kBatch, o.rows - r))));
    } else {
      // The other clients reduce over the same tables (one tenant).
      PULSE_ASSIGN_OR_RETURN(lanes[i].tables,
                             dlrm::EmbeddingTables::Attach(lanes[i].client.get(), lanes[0].tables->layout(), eo));
    }
  }
  res.load_seconds = SecondsSince(load_start);
  const double zetan =
      apps::ycsb::ZipfianGenerator::Zeta(o.rows, apps::ycsb::ZipfianGenerator::kZipfianConstant);

  PULSE_ASSIGN_OR_RETURN(auto session, cluster::ControlSession::Create(o.ucx_tls));
  for (bool offload : {true, false}) {
    const std::string name = offload ? "offload" : "gather";
    // The same queries for both systems: lane i's generator starts from seed + i.
    for (uint32_t i = 0; i < o.concurrency; ++i) {
      Lane& lane = lanes[i];
      lane.latencies.clear();
      lane.stats = {};
      lane.verified = lane.mismatches = 0;
      RunLane(lane, offload, o, op, rows, zetan, o.seed + 1000 + i, std::max<uint32_t>(o.warmup_queries, 1),
              Clock::now(), false);
      PULSE_RETURN_IF_ERROR(lane.status);
    }
    PULSE_ASSIGN_OR_RETURN(const MemNodeTotals before, ReadMemNodeTotals(*session, res.switch_address));
    std::vector<net::Counters> nc0;
    std::vector<ClientCounters> cc0;
    for (Lane& lane : lanes) {
      nc0.push_back(lane.client->net_counters());
      cc0.push_back(lane.client->counters());
    }
    say(fmt::format("{}: {} client(s) for {:.1f} s", name, o.concurrency, o.seconds));
    const auto t0 = Clock::now();
    std::vector<std::thread> threads;
    for (uint32_t i = 0; i < o.concurrency; ++i)
      threads.emplace_back(RunLane, std::ref(lanes[i]), offload, std::cref(o), op, std::cref(rows), zetan,
                           o.seed + i, 0u, t0, i == 0 && o.progress != nullptr);
    for (std::thread& t : threads) t.join();
    DlrmSystemResult s;
    s.system = name;
    s.seconds = SecondsSince(t0);
    PULSE_ASSIGN_OR_RETURN(const MemNodeTotals after, ReadMemNodeTotals(*session, res.switch_address));
    std::vector<double> lat;
    dlrm::ReduceStats stats;
    uint64_t messages = 0, rma_ops = 0, bytes = 0, retransmissions = 0;
    for (uint32_t i = 0; i < o.concurrency; ++i) {
      Lane& lane = lanes[i];
      PULSE_RETURN_IF_ERROR(lane.status);
      lat.insert(lat.end(), lane.latencies.begin(), lane.latencies.end());
      stats.chunk_loads += lane.stats.chunk_loads;
      stats.traversals += lane.stats.traversals;
      stats.row_reads += lane.stats.row_reads;
      s.verified += lane.verified;
      s.mismatches += lane.mismatches;
      if (s.first_mismatch.empty()) s.first_mismatch = lane.first_mismatch;
      const net::Counters& nc1 = lane.client->net_counters();
      messages += nc1.messages_sent - nc0[i].messages_sent;
      rma_ops += nc1.rma_ops - nc0[i].rma_ops;
      retransmissions += (lane.client->counters().retransmissions - cc0[i].retransmissions) +
                         (nc1.rma_retransmissions - nc0[i].rma_retransmissions);
      bytes += (nc1.bytes_sent - nc0[i].bytes_sent) + (nc1.bytes_received - nc0[i].bytes_received) +
               (nc1.rma_bytes - nc0[i].rma_bytes);
    }
    s.queries = lat.size();
    s.latency = Summarize(std::move(lat));
    const double n = static_cast<double>(std::max<uint64_t>(s.queries, 1));
    s.throughput_qps = static_cast<double>(s.queries) / s.seconds;
    if (before.cpu_us && after.cpu_us) s.mn_cpu_us_per_query = static_cast<double>(*after.cpu_us - *before.cpu_us) / n;
    s.rows_loaded_per_query = static_cast<double>(offload ? stats.chunk_loads : stats.row_reads) / n;
    s.traversals_per_query = static_cast<double>(stats.traversals) / n;
    s.mn_iterations_per_query = static_cast<double>(after.iterations - before.iterations) / n;
    s.messages_per_query = static_cast<double>(messages) / n;
    s.one_sided_ops_per_query = static_cast<double>(rma_ops) / n;
    s.bytes_per_query = static_cast<double>(bytes) / n;
    s.retransmissions_per_query = static_cast<double>(retransmissions) / n;
    say(fmt::format("{}: {:.0f} queries/s, p50 {:.0f} us, p99 {:.0f} us, {} verified, {} mismatches", name,
                    s.throughput_qps, s.latency.p50_us, s.latency.p99_us, s.verified, s.mismatches));
    res.systems.push_back(std::move(s));
  }
  lanes.clear();
  session.reset();
  PULSE_RETURN_IF_ERROR(StopBenchCluster(guard));
  return res;
}

uint64_t DlrmMismatches(const DlrmBenchResult& r) {
  uint64_t n = 0;
  for (const DlrmSystemResult& s : r.systems) n += s.mismatches;
  return n;
}

json DlrmBenchJson(const DlrmBenchOptions& o, const DlrmBenchResult& r) {
  auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(); };
  json systems = json::object();
  for (const DlrmSystemResult& s : r.systems) {
    systems[s.system] = {
        {"throughput_qps", s.throughput_qps},
        {"lat_mean_us", s.latency.mean_us},
        {"lat_p50_us", s.latency.p50_us},
        {"lat_p99_us", s.latency.p99_us},
        {"mn_cpu_us_per_query", optional(s.mn_cpu_us_per_query)},
        {"rows_loaded_per_query", s.rows_loaded_per_query},
        {"traversals_per_query", s.traversals_per_query},
        {"mn_iterations_per_query", s.mn_iterations_per_query},
        {"messages_per_query", s.messages_per_query},
        {"one_sided_ops_per_query", s.one_sided_ops_per_query},
        {"bytes_per_query", s.bytes_per_query},
        {"retransmissions_per_query", s.retransmissions_per_query},
        {"queries", s.queries},
        {"seconds", s.seconds},
        {"verified", s.verified},
        {"mismatches", s.mismatches},
    };
    if (!s.first_mismatch.empty()) systems[s.system]["first_mismatch"] = s.first_mismatch;
  }
  json j = {
      {"tables", o.tables},
      {"rows", o.rows},
      {"dim", o.dim},
      {"lookups_per_table", o.lookups},
      {"distribution", o.distribution == "zipf" ? "zipf 0.99 (synthetic)" : "uniform (synthetic)"},
      {"reduction", o.reduction},
      {"row_format", "int8, per-row fixed-point scale (2^-24 units)"},
      {"concurrency", o.concurrency},
      {"chunks_per_traversal", o.chunks_per_traversal},
      {"max_in_flight", o.max_in_flight},
      {"memory_nodes", o.memory_nodes},
      {"seed", o.seed},
      {"load_seconds", r.load_seconds},
      {"switch_address", r.switch_address},
      {"own_cluster", r.own_cluster},
      {"ucx_tls", o.ucx_tls},
      {"systems", systems},
  };
  if (r.systems.size() == 2 && r.systems[1].throughput_qps > 0)
    j["offload_over_gather_throughput"] = r.systems[0].throughput_qps / r.systems[1].throughput_qps;
  j["all_verified"] = DlrmMismatches(r) == 0;
  return j;
}

}  // namespace pulse::bench
