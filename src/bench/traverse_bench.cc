#include "bench/traverse_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "bench/bench_cluster.h"
#include "pulse/assembler.h"
#include "pulse/client.h"

namespace pulse::bench {

using Clock = std::chrono::steady_clock;

nlohmann::json LatencyJson(const LatencyStats& s) {
  return {{"count", s.count}, {"mean_us", s.mean_us}, {"p50_us", s.p50_us},
          {"p99_us", s.p99_us}, {"min_us", s.min_us}, {"max_us", s.max_us}};
}

LatencyStats Summarize(std::vector<double> us) {
  LatencyStats s;
  s.count = us.size();
  if (us.empty()) return s;
  std::sort(us.begin(), us.end());
  s.mean_us = std::accumulate(us.begin(), us.end(), 0.0) / static_cast<double>(us.size());
  auto pct = [&](double p) { return us[std::min(us.size() - 1, static_cast<size_t>(p * static_cast<double>(us.size())))]; };
  s.p50_us = pct(0.50);
  s.p99_us = pct(0.99);
  s.min_us = us.front();
  s.max_us = us.back();
  return s;
}

namespace {

// A list node: value@0, next@8 (0 ends the list).  Each iteration adds the
// value to sp[0] and counts itself in sp[8].
constexpr const char* kListProgram = R"(
  LOAD data, 16
  ADD sp[0], data[0]
  ADD sp[8], 1
  COMPARE data[8], 0
  JUMP_EQ end
  MOVE cur_ptr, data[8]
  NEXT_ITER
end:
  RETURN
)";

// One iteration: the value at cur_ptr into sp[0].
constexpr const char* kOneIterationProgram = R"(
  LOAD data, 8
  MOVE sp[0], data[0]
  RETURN
)";

Result<ProgramRef> Build(const char* text) {
  auto insns = Assemble(text);
  if (!insns.ok()) return insns.status();
  auto p = VerifiedProgram::Create(std::move(*insns));
  if (!p.ok()) return p.status();
  return ProgramRef(std::move(*p));
}

struct List {
  uint64_t head = 0;
  uint64_t sum = 0;
};

double MicrosSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

uint64_t U64At(const std::vector<uint8_t>& v, size_t off) {
  uint64_t x = 0;
  if (v.size() >= off + 8) std::memcpy(&x, v.data() + off, 8);
  return x;
}

// The benchmark proper, against a running cluster.
class Bench {
 public:
  Bench(const TraverseBenchOptions& o, Client* client) : o_(o), client_(client) {}

  Status Setup() {
    auto list = Build(kListProgram);
    if (!list.ok()) return list.status();
    list_program_ = *list;
    auto one = Build(kOneIterationProgram);
    if (!one.ok()) return one.status();
    one_program_ = *one;
    // Lists: node i lives on memory node (i / hops_per_node) % 2.
    std::mt19937_64 rng(7);
    for (uint32_t l = 0; l < o_.lists; ++l) {
      std::vector<uint64_t> addr(o_.hops);
      for (uint32_t i = 0; i < o_.hops; ++i) {
        auto a = client_->Allocate(16, (i / o_.hops_per_node) % 2);
        if (!a.ok()) return a.status();
        addr[i] = *a;
      }
      List list;
      list.head = addr[0];
      for (uint32_t i = 0; i < o_.hops; ++i) {
        const uint64_t node[2] = {rng() >> 40, i + 1 < o_.hops ? addr[i + 1] : 0};
        list.sum += node[0];
        PULSE_RETURN_IF_ERROR(client_->Write(addr[i], node, sizeof node));
      }
      lists_.push_back(list);
    }
    // The value of the first node of list 0, for the one-iteration check.
    uint64_t first[2];
    PULSE_RETURN_IF_ERROR(client_->Read(lists_[0].head, first, sizeof first));
    first_value_ = first[0];
    return Status::Ok();
  }

  Status Ping(std::vector<double>* out, uint32_t n, uint32_t warmup) {
    for (uint32_t i = 0; i < warmup + n; ++i) {
      const auto t0 = Clock::now();
      Status s = client_->Ping(lists_[0].head);
      const double us = MicrosSince(t0);
      if (!s.ok()) return Status::Unavailable("raw_rtt: " + s.ToString());
      if (i >= warmup) out->push_back(us);
    }
    return Status::Ok();
  }

  Status OneIteration(std::vector<double>* out, uint32_t n, uint32_t warmup) {
    TraverseOptions to;
    to.mode = ExecutionMode::kOffload;
    for (uint32_t i = 0; i < warmup + n; ++i) {
      const auto t0 = Clock::now();
      auto r = client_->Traverse(one_program_, lists_[0].head, std::vector<uint8_t>(8, 0), to);
      const double us = MicrosSince(t0);
      if (!r.ok()) return Status::Unavailable("offload_rtt: " + r.status().ToString());
      if (r->status != TraversalStatus::kDone || U64At(r->scratch, 0) != first_value_ || r->iterations != 1)
        return Status::Internal(fmt::format("offload_rtt: wrong answer: status {}, value {}, iterations {} "
                                            "(expected done, {}, 1)",
                                            TraversalStatusName(r->status), U64At(r->scratch, 0), r->iterations,
                                            first_value_));
      ++verified_;
      if (i >= warmup) out->push_back(us);
    }
    return Status::Ok();
  }

  Status Lists(bool acc, std::vector<double>* out, uint32_t n, uint32_t warmup) {
    const char* mode = acc ? "pulse-acc" : "pulse";
    TraverseOptions to;
    to.mode = ExecutionMode::kOffload;
    to.pulse_acc = acc;
    to.max_iterations = std::max<uint32_t>(1024, o_.hops + 1);
    for (uint32_t i = 0; i < warmup + n; ++i) {
      const List& list = lists_[next_list_++ % lists_.size()];
      const auto t0 = Clock::now();
      auto r = client_->Traverse(list_program_, list.head, std::vector<uint8_t>(16, 0), to);
      const double us = MicrosSince(t0);
      if (!r.ok()) return Status::Unavailable(fmt::format("{}: {}", mode, r.status().ToString()));
      if (r->status != TraversalStatus::kDone || U64At(r->scratch, 0) != list.sum || U64At(r->scratch, 8) != o_.hops)
        return Status::Internal(fmt::format(
            "{}: wrong answer for the list at {:#x}: status {}, sum {}, hops {} (expected done, {}, {})", mode,
            list.head, TraversalStatusName(r->status), U64At(r->scratch, 0), U64At(r->scratch, 8), list.sum,
            o_.hops));
      ++verified_;
      if (!acc) ++pulse_traversals_;
      if (i >= warmup) out->push_back(us);
    }
    return Status::Ok();
  }

  uint64_t verified() const { return verified_; }
  uint64_t pulse_traversals() const { return pulse_traversals_; }

 private:
  const TraverseBenchOptions& o_;
  Client* client_;
  ProgramRef list_program_, one_program_;
  std::vector<List> lists_;
  uint64_t first_value_ = 0;
  size_t next_list_ = 0;
  uint64_t verified_ = 0;
  uint64_t pulse_traversals_ = 0;
};

void Say(const TraverseBenchOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

}  // namespace

Result<TraverseBenchResult> RunTraverseBench(const TraverseBenchOptions& o) {
  if (o.hops < 2 || o.hops_per_node < 1 || o.lists < 1 || o.rounds < 1 || o.samples < o.rounds)
    return Status::InvalidArgument("bench traverse: need hops >= 2, hops_per_node >= 1, lists >= 1, "
                                   "rounds >= 1 and samples >= rounds");
  TraverseBenchResult res;
  cluster::ClusterGuard guard;
  // A two-memory-node cluster on this host, on free ports (or the given switch).
  BenchClusterOptions c = BenchClusterOptionsFor("bench-traverse", o);
  c.poll_window_us = o.poll_window_us;
  c.poll_when_core_idle = o.poll_when_core_idle;
  c.busy_poll = o.busy_poll;
  auto address = StartOrJoinBenchCluster(c, o.switch_address, &guard);
  if (!address.ok()) return address.status();
  res.switch_address = *address;
  res.own_cluster = guard.state() != nullptr;
  const char* tls = std::getenv("UCX_TLS");
  res.transport = tls != nullptr ? tls : "";

  ClientOptions co;
  co.switch_address = res.switch_address;
  co.policy = AllocationPolicy::kPartitioned;
  co.worker.poll_mode = o.busy_poll ? net::PollMode::kBusy : net::PollMode::kAdaptive;
  co.worker.poll_window_us = o.poll_window_us;
  co.worker.poll_when_core_idle = o.poll_when_core_idle;
  co.worker.name = "bench-traverse";
  auto client = Client::Connect(co);
  if (!client.ok()) return client.status();
  if ((*client)->memory_nodes() < 2)
    return Status::InvalidArgument(fmt::format("bench traverse: the cluster at {} has {} memory node(s); need 2",
                                               res.switch_address, (*client)->memory_nodes()));
  res.memory_nodes = 2;
  res.hops = o.hops;
  res.hops_per_node = o.hops_per_node;
  res.lists = o.lists;
  res.node_crossings = (o.hops - 1) / o.hops_per_node;

  Bench bench(o, client->get());
  Say(o, fmt::format("building {} lists of {} nodes (memory node changes every {} hops)", o.lists, o.hops,
                     o.hops_per_node));
  PULSE_RETURN_IF_ERROR(bench.Setup());
  auto session = cluster::ControlSession::Create();
  if (!session.ok()) return session.status();
  auto forwards_before = SwitchForwards(**session, res.switch_address);
  if (!forwards_before.ok()) return forwards_before.status();
  auto continuations_before = Continuations(**session, res.switch_address);
  if (!continuations_before.ok()) return continuations_before.status();
  const ClientCounters before = (*client)->counters();
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &res.load_average) != 1) res.load_average = 0;
    std::fclose(f);
  }

  std::vector<double> raw, one, pulse, acc;
  for (uint32_t r = 0; r < o.rounds; ++r) {
    const uint32_t n = o.samples / o.rounds + (r < o.samples % o.rounds ? 1 : 0);
    Say(o, fmt::format("round {}/{}: {} requests per figure", r + 1, o.rounds, n));
    PULSE_RETURN_IF_ERROR(bench.Ping(&raw, n, o.warmup));
    PULSE_RETURN_IF_ERROR(bench.OneIteration(&one, n, o.warmup));
    PULSE_RETURN_IF_ERROR(bench.Lists(false, &pulse, n, o.warmup));
    PULSE_RETURN_IF_ERROR(bench.Lists(true, &acc, n, o.warmup));
  }
  auto forwards_after = SwitchForwards(**session, res.switch_address);
  if (!forwards_after.ok()) return forwards_after.status();
  auto continuations_after = Continuations(**session, res.switch_address);
  if (!continuations_after.ok()) return continuations_after.status();
  const ClientCounters& after = (*client)->counters();

  res.raw_rtt = Summarize(std::move(raw));
  res.offload_rtt = Summarize(std::move(one));
  res.pulse = Summarize(std::move(pulse));
  res.pulse_acc = Summarize(std::move(acc));
  res.verified = bench.verified();
  res.switch_forwards = *forwards_after - *forwards_before;
  res.continuations = *continuations_after - *continuations_before;
  res.expected_forwards = bench.pulse_traversals() * res.node_crossings;
  res.client_reissues = after.reissues - before.reissues;
  res.retransmissions = after.retransmissions - before.retransmissions;
  session->reset();
  client->reset();
  PULSE_RETURN_IF_ERROR(StopBenchCluster(guard));
  return res;
}

}  // namespace pulse::bench
