#include "bench/rpc_bench.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/bench_cluster.h"
#include "cluster/control_session.h"
#include "cluster/launcher.h"
#include "pulse/client.h"
#include "pulse/ds/btree.h"
#include "pulse/ds/list.h"
#include "pulse/ds/unordered_map.h"
#include "pulse/rpc.h"
#include "pulse/rpc_ds.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;

enum System { kPulse = 0, kRpc = 1, kRpcWimpy = 2, kSystems = 3 };
constexpr const char* kSystemNames[kSystems] = {"pulse", "rpc", "rpc-wimpy"};

// What one operation reports: a digest of its answer (compared across
// systems) and, for RPCs, its re-issues and node time.
struct OpOutcome {
  uint64_t answer = 0;
  uint32_t crossings = 0;
  uint64_t node_ns = 0;
};

uint64_t Mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull; }
uint64_t Digest(const ds::Aggregate& a) { return Mix(Mix(Mix(Mix(0, a.sum), a.min), a.max), a.count); }

struct Operation {
  std::string name;
  std::function<uint64_t(std::mt19937_64&)> key;
  std::function<Result<OpOutcome>(System, uint64_t key)> run;
};

void Say(const RpcBenchOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

// Sums of the memory nodes' stats that the figures need.
struct NodeSample {
  double cpu_seconds = 0;
  uint64_t forwards = 0;  // the switch's
};

class Probe {
 public:
  Probe(cluster::ControlSession* session, const cluster::ClusterState& state) : session_(session) {
    for (const auto& n : state.nodes) (n.role == cluster::Role::kSwitch ? switch_ : memnodes_.emplace_back()) = n.address;
  }
  Result<NodeSample> Sample() {
    NodeSample s;
    for (const auto& address : memnodes_) {
      auto st = session_->Call(address, "stats", std::chrono::seconds(5));
      if (!st.ok()) return st.status();
      s.cpu_seconds += (*st)["counters"].value("cpu_seconds", 0.0);
    }
    auto sw = session_->Call(switch_, "stats", std::chrono::seconds(5));
    if (!sw.ok()) return sw.status();
    s.forwards = (*sw)["counters"].value("forwards", uint64_t{0});
    return s;
  }
  Result<std::vector<double>> HostGhz(double* core_ghz) {
    std::vector<double> out;
    for (const auto& address : memnodes_) {
      auto st = session_->Call(address, "stats", std::chrono::seconds(5));
      if (!st.ok()) return st.status();
      const auto& rpc = (*st)["counters"]["rpc"];
      out.push_back(rpc.value("host_ghz", 0.0));
      *core_ghz = rpc.value("core_ghz", 0.0);
    }
    return out;
  }

 private:
  cluster::ControlSession* session_;
  std::string switch_;
  std::vector<std::string> memnodes_;
};

}  // namespace

Result<RpcBenchResult> RunRpcBench(const RpcBenchOptions& o) {
  if (o.memory_nodes < 1 || o.rounds < 1 || o.samples < o.rounds || o.chain < 1 || o.map_keys < 1 ||
      o.tree_keys < 1 || o.list_length < 1)
    return Status::InvalidArgument("bench rpc: need memory_nodes, rounds, chain and sizes >= 1 and samples >= rounds");
  if (o.policy == AllocationPolicy::kPartitioned)
    return Status::InvalidArgument("bench rpc: the structures allocate without naming a node: use uniform or local-first");
  RpcBenchResult res;
  auto started = StartBenchCluster({.name = "bench-rpc",
                                    .binary = o.binary,
                                    .run_dir = o.run_dir,
                                    .ucx_tls = o.ucx_tls,
                                    .poll_window_us = o.poll_window_us,
                                    .busy_poll = false,
                                    .memory_nodes = o.memory_nodes,
                                    .pool_mib = 64,
                                    .progress = o.progress});
  if (!started.ok()) return started.status();
  const cluster::ClusterState state = *started;
  cluster::ClusterGuard guard(std::move(*started), std::chrono::milliseconds(3000));
  if (!o.ucx_tls.empty()) setenv("UCX_TLS", o.ucx_tls.c_str(), 1);
  const char* tls = std::getenv("UCX_TLS");
  res.transport = tls != nullptr ? tls : "";
  res.memory_nodes = o.memory_nodes;
  res.policy = o.policy == AllocationPolicy::kUniform ? "uniform" : "local-first";

  ClientOptions co;
  co.switch_address = state.switch_address;
  co.policy = o.policy;
  co.slab_bytes = 4096;
  co.worker.poll_window_us = o.poll_window_us ? o.poll_window_us : net::kDefaultPollWindowUs;
  co.worker.name = "bench-rpc";
  co.dispatch.mode = ExecutionMode::kOffload;
  auto client = Client::Connect(co);
  if (!client.ok()) return client.status();
  auto rpc = RpcClient::Create(client->get());
  if (!rpc.ok()) return rpc.status();
  auto session = cluster::ControlSession::Create();
  if (!session.ok()) return session.status();
  Probe probe(session->get(), state);
  auto ghz = probe.HostGhz(&res.core_ghz);
  if (!ghz.ok()) return ghz.status();
  res.host_ghz = *ghz;

  // The structures, with fixed seeds.
  Say(o, fmt::format("loading a hash table of {} keys (chains of ~{}), a B+tree of {} keys and a list of {}",
                     o.map_keys, o.chain, o.tree_keys, o.list_length));
  auto map = ds::UnorderedMap::Create(client->get(), {.buckets = std::max<uint64_t>(1, o.map_keys / o.chain),
                                                      .mode = ExecutionMode::kOffload});
  if (!map.ok()) return map.status();
  auto tree = ds::BTree::Create(client->get(), {.mode = ExecutionMode::kOffload});
  if (!tree.ok()) return tree.status();
  auto list = ds::List::Create(client->get(), {.mode = ExecutionMode::kOffload});
  if (!list.ok()) return list.status();
  std::mt19937_64 load_rng(1);
  std::vector<uint64_t> order(std::max(o.map_keys, o.tree_keys));
  for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), load_rng);
  for (uint64_t k : order) {
    if (k < o.map_keys) {
      auto r = (*map)->Insert(k, k * 2 + 1);
      if (!r.ok()) return r.status();
    }
    if (k < o.tree_keys) {
      auto r = (*tree)->Insert(k, k * 2 + 1);
      if (!r.ok()) return r.status();
    }
  }
  for (uint32_t i = 0; i < o.list_length; ++i) PULSE_RETURN_IF_ERROR((*list)->PushBack(load_rng() % 1000));

  RpcClient& rc = **rpc;
  auto call_options = [](System s) { return RpcCallOptions{.wimpy = s == kRpcWimpy}; };
  auto outcome = [](uint64_t answer, const RpcResult& info) {
    return OpOutcome{answer, info.node_crossings, info.node_ns};
  };
  std::vector<Operation> ops;
  ops.push_back({"umap_find", [&](std::mt19937_64& g) { return g() % o.map_keys; },
                 [&](System s, uint64_t key) -> Result<OpOutcome> {
                   RpcResult info;
                   auto r = s == kPulse ? (*map)->Find(key) : rpc::Find(rc, **map, key, call_options(s), &info);
                   if (!r.ok()) return r.status();
                   return outcome(r->value_or(~0ull), info);
                 }});
  ops.push_back({"btree_lower_bound", [&](std::mt19937_64& g) { return g() % (o.tree_keys + 10); },
                 [&](System s, uint64_t key) -> Result<OpOutcome> {
                   RpcResult info;
                   auto r = s == kPulse ? (*tree)->LowerBound(key)
                                        : rpc::LowerBound(rc, **tree, key, call_options(s), &info);
                   if (!r.ok()) return r.status();
                   return outcome(r->has_value() ? Mix((*r)->first, (*r)->second) : ~0ull, info);
                 }});
  ops.push_back({"btree_aggregate", [&](std::mt19937_64& g) { return g() % o.tree_keys; },
                 [&](System s, uint64_t key) -> Result<OpOutcome> {
                   RpcResult info;
                   const uint64_t hi = key + o.range_keys - 1;
                   auto r = s == kPulse ? (*tree)->AggregateRange(key, hi)
                                        : rpc::AggregateRange(rc, **tree, key, hi, call_options(s), &info);
                   if (!r.ok()) return r.status();
                   return outcome(Digest(*r), info);
                 }});
  ops.push_back({"list_aggregate", [&](std::mt19937_64& g) { return g() % 1000; },
                 [&](System s, uint64_t key) -> Result<OpOutcome> {
                   RpcResult info;
                   const uint64_t hi = key + 200;
                   auto r = s == kPulse ? (*list)->AggregateRange(key, hi)
                                        : rpc::AggregateRange(rc, **list, key, hi, call_options(s), &info);
                   if (!r.ok()) return r.status();
                   return outcome(Digest(*r), info);
                 }});
  if (!o.operations.empty()) {
    std::erase_if(ops, [&](const Operation& op) {
      return std::find(o.operations.begin(), o.operations.end(), op.name) == o.operations.end();
    });
    if (ops.empty()) return Status::InvalidArgument("bench rpc: no known operation selected");
  }

  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &res.load_average) != 1) res.load_average = 0;
    std::fclose(f);
  }
  struct Acc {
    std::vector<double> us;
    uint64_t ops = 0, crossings = 0, node_ns = 0;
    double cpu_seconds = 0;
  };
  std::vector<std::array<Acc, kSystems>> acc(ops.size());
  for (uint32_t round = 0; round < o.rounds; ++round) {
    const uint32_t n = o.samples / o.rounds + (round < o.samples % o.rounds ? 1 : 0);
    Say(o, fmt::format("round {}/{}: {} operations per figure", round + 1, o.rounds, n));
    for (size_t oi = 0; oi < ops.size(); ++oi) {
      std::mt19937_64 key_rng(1000 * round + oi);
      std::vector<uint64_t> keys(n);
      for (auto& k : keys) k = ops[oi].key(key_rng);
      std::vector<uint64_t> reference;
      System reference_system = kPulse;
      for (int t = 0; t < kSystems; ++t) {
        const System s = static_cast<System>((t + round + oi) % kSystems);  // rotate who goes first
        Acc& a = acc[oi][s];
        auto before = probe.Sample();
        if (!before.ok()) return before.status();
        std::vector<uint64_t> answers(n);
        for (uint32_t i = 0; i < n; ++i) {
          const auto t0 = Clock::now();
          auto r = ops[oi].run(s, keys[i]);
          const auto t1 = Clock::now();
          if (!r.ok())
            return Status::Internal(fmt::format("bench rpc: {} on {}: {}", ops[oi].name, kSystemNames[s],
                                                r.status().ToString()));
          a.us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
          a.crossings += r->crossings;
          a.node_ns += r->node_ns;
          answers[i] = r->answer;
        }
        auto after = probe.Sample();
        if (!after.ok()) return after.status();
        a.ops += n;
        a.cpu_seconds += after->cpu_seconds - before->cpu_seconds;
        if (s == kPulse) a.crossings += after->forwards - before->forwards;
        if (t == 0) {
          reference = std::move(answers);
          reference_system = s;
          continue;
        }
        for (uint32_t i = 0; i < n; ++i) {
          if (answers[i] != reference[i])
            return Status::Internal(fmt::format("bench rpc: {} of key {}: {} answered {:#x}, {} answered {:#x}",
                                                ops[oi].name, keys[i], kSystemNames[s], answers[i],
                                                kSystemNames[reference_system], reference[i]));
          ++res.verified;
        }
      }
    }
  }
  for (size_t oi = 0; oi < ops.size(); ++oi) {
    for (int s = 0; s < kSystems; ++s) {
      Acc& a = acc[oi][s];
      RpcBenchFigure f;
      f.operation = ops[oi].name;
      f.system = kSystemNames[s];
      const double n = static_cast<double>(std::max<uint64_t>(a.ops, 1));
      f.crossings_per_op = static_cast<double>(a.crossings) / n;
      f.node_cpu_us_per_op = a.cpu_seconds * 1e6 / n;
      f.node_exec_us_per_op = static_cast<double>(a.node_ns) / 1e3 / n;
      f.latency = Summarize(std::move(a.us));
      res.figures.push_back(std::move(f));
    }
  }
  return res;
}

}  // namespace pulse::bench
