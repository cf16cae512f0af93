#include "bench/ds_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <set>

#include <fmt/format.h>

#include "bench/bench_cluster.h"
#include "pulse/client.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// What one mode accumulates over the rounds.
struct ModeRun {
  ExecutionMode mode;
  std::vector<double> latency_us, per_round_rate;
  uint64_t lookups = 0, found = 0, iterations = 0, wire_bytes = 0, cross = 0, cache_hits = 0;
};

uint64_t WireBytes(const net::Counters& c) { return c.bytes_sent + c.bytes_received + c.rma_bytes; }

class StructureBench {
 public:
  StructureBench(const DsBenchOptions& o, DsBenchTarget* target, Client* client, cluster::ControlSession* session,
                 const std::string& switch_address)
      : o_(o), target_(target), client_(client), session_(session), switch_(switch_address), rng_(o.seed) {}

  // n lookups (after `warmup` unmeasured ones) in run.mode, counted into run.
  Status Batch(ModeRun& run, uint32_t n, uint32_t warmup) {
    for (uint32_t i = 0; i < warmup; ++i) PULSE_RETURN_IF_ERROR(One(run.mode, nullptr));
    auto forwards = SwitchForwards(*session_, switch_);
    if (!forwards.ok()) return forwards.status();
    const ClientCounters before = client_->counters();
    const uint64_t wire = WireBytes(client_->net_counters());
    const auto start = Clock::now();
    for (uint32_t i = 0; i < n; ++i) {
      bool found = false;
      const auto t0 = Clock::now();
      PULSE_RETURN_IF_ERROR(One(run.mode, &found));
      run.latency_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      run.found += found;
    }
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    const ClientCounters& after = client_->counters();
    run.per_round_rate.push_back(secs > 0 ? n / secs : 0);
    run.lookups += n;
    run.iterations += after.traversal_iterations - before.traversal_iterations;
    run.wire_bytes += WireBytes(client_->net_counters()) - wire;
    run.cache_hits += after.cache_hits - before.cache_hits;
    auto forwards_after = SwitchForwards(*session_, switch_);
    if (!forwards_after.ok()) return forwards_after.status();
    run.cross += (*forwards_after - *forwards) + (after.node_crossings - before.node_crossings);
    return Status::Ok();
  }

  uint64_t verified() const { return verified_; }

 private:
  // One lookup of a random key, checked: keys < o.keys were loaded.
  Status One(ExecutionMode mode, bool* found_out) {
    const uint64_t key = rng_() % (o_.keys + o_.keys / 10 + 1);
    auto found = target_->Lookup(key, mode);
    if (!found.ok()) return found.status();
    if (*found != (key < o_.keys))
      return Status::Internal(fmt::format("bench ds: {} lookup of key {} ({}) answered {}, expected {}",
                                          target_->name(), key,
                                          mode == ExecutionMode::kOffload ? "offloaded" : "CPU node",
                                          *found ? "found" : "absent", key < o_.keys ? "found" : "absent"));
    ++verified_;
    if (found_out != nullptr) *found_out = *found;
    return Status::Ok();
  }

  const DsBenchOptions& o_;
  DsBenchTarget* target_;
  Client* client_;
  cluster::ControlSession* session_;
  std::string switch_;
  std::mt19937_64 rng_;
  uint64_t verified_ = 0;
};

DsModeResult Finish(ModeRun& run) {
  DsModeResult r;
  const double n = std::max<double>(1, static_cast<double>(run.lookups));
  r.latency = Summarize(std::move(run.latency_us));
  r.lookups_per_sec = Median(run.per_round_rate);
  r.iterations_per_lookup = run.iterations / n;
  r.wire_bytes_per_lookup = run.wire_bytes / n;
  r.cross_node_per_lookup = run.cross / n;
  r.cache_hits_per_lookup = run.cache_hits / n;
  r.found_fraction = run.found / n;
  return r;
}

void Say(const DsBenchOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

}  // namespace

Result<DsBenchResult> RunDsBench(const DsBenchOptions& o, DsBenchTargets targets) {
  if (o.keys == 0 || o.rounds == 0 || o.lookups < o.rounds || o.memory_nodes == 0)
    return Status::InvalidArgument("bench ds: need keys >= 1, rounds >= 1, lookups >= rounds, memory-nodes >= 1");
  std::set<std::string> known;
  for (const auto& t : targets) known.insert(t->name());
  for (const auto& s : o.structures) {
    if (!known.count(s)) {
      std::string names;
      for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
      return Status::InvalidArgument(fmt::format("bench ds: unknown structure '{}' (known: {})", s, names));
    }
  }
  DsBenchResult res;
  cluster::ClusterGuard guard;
  BenchClusterOptions c = BenchClusterOptionsFor("bench-ds", o);
  c.memory_nodes = o.memory_nodes;
  auto address = StartOrJoinBenchCluster(c, o.switch_address, &guard);
  if (!address.ok()) return address.status();
  res.switch_address = *address;
  res.own_cluster = guard.state() != nullptr;
  auto session = cluster::ControlSession::Create();
  if (!session.ok()) return session.status();
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &res.load_average) != 1) res.load_average = 0;
    std::fclose(f);
  }

  for (auto& target : targets) {
    const std::string name = target->name();
    if (!o.structures.empty() && std::find(o.structures.begin(), o.structures.end(), name) == o.structures.end())
      continue;
    ClientOptions co;
    co.switch_address = res.switch_address;
    co.policy = EndsWith(name, "_partitioned") ? AllocationPolicy::kPartitioned : AllocationPolicy::kUniform;
    co.cache.bytes = o.cache_bytes;
    co.request_timeout = std::chrono::milliseconds(o.request_timeout_ms);
    co.worker.name = "bench-ds";
    auto client = Client::Connect(co);
    if (!client.ok()) return client.status();
    res.memory_nodes = (*client)->memory_nodes();
    DsStructureResult sr;
    sr.name = name;
    sr.keys = o.keys;
    Say(o, fmt::format("{}: loading {} keys", name, o.keys));
    const auto load_start = Clock::now();
    PULSE_RETURN_IF_ERROR(target->Load(client->get(), o.keys));
    sr.load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
    StructureBench bench(o, target.get(), client->get(), session->get(), res.switch_address);
    ModeRun offload{ExecutionMode::kOffload, {}, {}};
    ModeRun cpu{ExecutionMode::kCpuNode, {}, {}};
    for (uint32_t r = 0; r < o.rounds; ++r) {
      const uint32_t n = o.lookups / o.rounds + (r < o.lookups % o.rounds ? 1 : 0);
      Say(o, fmt::format("{}: round {}/{}: {} lookups offloaded, {} at the CPU node", name, r + 1, o.rounds, n, n));
      PULSE_RETURN_IF_ERROR(bench.Batch(offload, n, o.warmup));
      PULSE_RETURN_IF_ERROR(bench.Batch(cpu, n, o.warmup));
    }
    sr.offload = Finish(offload);
    sr.cpu_node = Finish(cpu);
    sr.verified = bench.verified();
    res.structures.push_back(std::move(sr));
    target.reset();  // before its client
  }
  session->reset();
  PULSE_RETURN_IF_ERROR(StopBenchCluster(guard));
  return res;
}

}  // namespace pulse::bench
