#include "bench/engine_bench.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "pulse/assembler.h"
#include "pulse/engine.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kFarBase = uint64_t{1} << 40;  // where the list lives in far memory

// The list traversal the engine runs: follow data[0] for sp[0] hops.
constexpr const char* kChaseProgram = R"(
  LOAD data
  MOVE cur_ptr, data[0]
  SUB sp[0], 1
  COMPARE sp[0], 0
  JUMP_EQ done
  NEXT_ITER
done:
  RETURN
)";

struct List {
  uint8_t* base = nullptr;
  uint64_t bytes = 0;
  uint64_t nodes = 0;
  uint32_t node_bytes = 0;
  ~List() {
    if (base != nullptr) munmap(base, bytes);
  }
  uint8_t* Host(uint64_t far) const { return base + (far - kFarBase); }
  uint64_t Far(uint64_t index) const { return kFarBase + index * node_bytes; }
  uint64_t Next(uint64_t far) const {
    uint64_t n;
    std::memcpy(&n, Host(far), 8);
    return n;
  }
};

uint64_t HugePageBytes() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string key;
  uint64_t kb;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "AnonHugePages:") return kb * 1024;
  return 0;
}

// One random cycle through every node (Sattolo's algorithm), so every chase
// visits nodes in an order the hardware prefetcher cannot guess.
Status BuildList(List* list, const EngineBenchOptions& o) {
  list->node_bytes = o.node_bytes;
  list->nodes = static_cast<uint64_t>(o.size_gib * (1ull << 30)) / o.node_bytes;
  if (list->nodes < 2) return Status::InvalidArgument("--size-gib is too small for two nodes");
  list->bytes = list->nodes * o.node_bytes;
  void* p = mmap(nullptr, list->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return Status::ResourceExhausted(fmt::format("cannot map {} bytes for the list", list->bytes));
  madvise(p, list->bytes, MADV_HUGEPAGE);  // best effort: THP where the kernel allows
  list->base = static_cast<uint8_t*>(p);
  std::vector<uint32_t> order(list->nodes);
  for (uint64_t i = 0; i < list->nodes; ++i) order[i] = static_cast<uint32_t>(i);
  std::mt19937_64 rng(o.seed);
  for (uint64_t i = list->nodes - 1; i > 0; --i) {
    std::uniform_int_distribution<uint64_t> pick(0, i - 1);
    std::swap(order[i], order[pick(rng)]);
  }
  // order is now a single cycle: node i links to node order[i].
  for (uint64_t i = 0; i < list->nodes; ++i) {
    const uint64_t next = list->Far(order[i]);
    std::memcpy(list->base + i * o.node_bytes, &next, 8);
    std::memcpy(list->base + i * o.node_bytes + 8, &i, 8);  // a key, for realism
  }
  return Status::Ok();
}

// Runs `batch` until `seconds` have passed; returns hops per second.
template <typename Batch>
double Measure(double seconds, Batch batch) {
  const auto start = Clock::now();
  uint64_t hops = 0;
  double elapsed = 0;
  do {
    hops += batch();
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  return hops / elapsed;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

Result<EngineBenchResult> RunEngineBench(const EngineBenchOptions& o) {
  if (o.node_bytes < 16 || o.node_bytes % 8 != 0)
    return Status::InvalidArgument("--node-bytes must be a multiple of 8, at least 16");
  if (o.hops_per_request == 0) return Status::InvalidArgument("--hops must be positive");
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  EngineBenchResult r;
  List list;
  const auto t0 = Clock::now();
  say(fmt::format("building a {:.2f} GiB list of {}-byte nodes", o.size_gib, o.node_bytes));
  PULSE_RETURN_IF_ERROR(BuildList(&list, o));
  r.build_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.nodes = list.nodes;
  r.node_bytes = o.node_bytes;
  r.workspaces = o.workspaces;
  r.huge_page_bytes = HugePageBytes();

  auto insns = Assemble(kChaseProgram);
  if (!insns.ok()) return insns.status();
  auto program = VerifiedProgram::Create(std::move(*insns));
  if (!program.ok()) return program.status();
  r.instructions_per_iteration = (*program)->info().longest_path;
  r.window_bytes = (*program)->info().window_bytes;

  RangeTable table;
  PULSE_RETURN_IF_ERROR(table.Add(Range{kFarBase, list.bytes, list.base, kPermReadWrite, 1}));

  std::mt19937_64 rng(o.seed + 1);
  std::uniform_int_distribution<uint64_t> node(0, list.nodes - 1);
  const uint32_t hops = o.hops_per_request;

  // Native: one request at a time, run to completion (an RPC handler).
  auto native_batch = [&] {
    uint64_t p = list.Far(node(rng));
    for (uint32_t h = 0; h < hops; ++h) p = list.Next(p);
    asm volatile("" : : "r"(p));
    return uint64_t{hops};
  };

  // MLP limit: `workspaces` chains advanced round-robin with prefetch.
  auto mlp_batch = [&] {
    std::vector<uint64_t> cur(o.workspaces);
    for (auto& c : cur) c = list.Far(node(rng));
    for (uint32_t h = 0; h < hops; ++h) {
      for (auto& c : cur) {
        c = list.Next(c);
        __builtin_prefetch(list.Host(c));
      }
    }
    uint64_t sink = 0;
    for (auto c : cur) sink ^= c;
    asm volatile("" : : "r"(sink));
    return uint64_t{hops} * o.workspaces;
  };

  // Engine: keep every workspace busy with `hops`-long chases; check some
  // answers against the native walk.
  EngineOptions eo;
  eo.workspaces = o.workspaces;
  eo.max_iterations = hops + 1;
  Pipeline pipeline(&table, eo);
  uint64_t engine_hops = 0;
  Status check = Status::Ok();
  auto make_request_with = [&](std::mt19937_64& gen) {
    TraversalRequest req;
    req.program = *program;
    req.tenant = 1;
    req.state.cur_ptr = list.Far(node(gen));
    req.id = req.state.cur_ptr;
    req.state.scratch.assign(16, 0);
    std::memcpy(req.state.scratch.data(), &hops, 4);
    return req;
  };
  auto make_request = [&] {
    TraversalRequest req;
    req.program = *program;
    req.tenant = 1;
    req.state.cur_ptr = list.Far(node(rng));
    req.id = req.state.cur_ptr;  // remember the start for checking
    req.state.scratch.assign(16, 0);
    std::memcpy(req.state.scratch.data(), &hops, 4);
    return req;
  };
  CompletionFn done = [&](TraversalRequest&& req, const TraversalOutcome& out) {
    engine_hops += out.iterations;
    if (out.status != TraversalStatus::kDone) {
      check = Status::Internal(fmt::format("engine traversal ended with {}", TraversalStatusName(out.status)));
    } else if (r.checked_requests < 64) {
      uint64_t p = req.id;
      for (uint32_t h = 0; h < hops; ++h) p = list.Next(p);
      if (p != req.state.cur_ptr)
        check = Status::Internal(fmt::format("engine ended at {:#x}, native walk at {:#x}", req.state.cur_ptr, p));
      ++r.checked_requests;
    }
  };
  auto engine_batch = [&] {
    const uint64_t before = engine_hops;
    for (int k = 0; k < 4; ++k) {
      while (pipeline.HasFreeWorkspace()) pipeline.Admit(make_request());
      pipeline.Run(done, uint64_t{hops} * o.workspaces / 4);
    }
    return engine_hops - before;
  };

  std::vector<double> native, mlp, engine;
  for (uint32_t round = 0; round < std::max<uint32_t>(o.rounds, 1); ++round) {
    say(fmt::format("round {}/{}: native, interleaved limit, engine", round + 1, o.rounds));
    native.push_back(Measure(o.seconds, native_batch));
    mlp.push_back(Measure(o.seconds, mlp_batch));
    engine.push_back(Measure(o.seconds, engine_batch));
    if (!check.ok()) return check;
  }
  pipeline.Run(done);  // drain
  if (!check.ok()) return check;

  // Several pipelines, one thread each, over the same list (the memory
  // node's configuration with P memory pipelines).
  r.pipelines = std::max<uint32_t>(o.pipelines, 1);
  if (r.pipelines > 1) {
    say(fmt::format("{} pipelines on {} threads", r.pipelines, r.pipelines));
    std::vector<uint64_t> hops_done(r.pipelines, 0);
    std::vector<std::thread> threads;
    const auto start = Clock::now();
    for (uint32_t t = 0; t < r.pipelines; ++t) {
      threads.emplace_back([&, t] {
        Pipeline p(&table, eo);
        std::mt19937_64 trng(o.seed + 100 + t);
        CompletionFn count = [&](TraversalRequest&&, const TraversalOutcome& out) { hops_done[t] += out.iterations; };
        while (std::chrono::duration<double>(Clock::now() - start).count() < o.seconds) {
          while (p.HasFreeWorkspace()) {
            TraversalRequest req = make_request_with(trng);
            p.Admit(std::move(req));
          }
          p.Run(count, uint64_t{hops} * o.workspaces / 4);
        }
        p.Run(count);
      });
    }
    for (auto& th : threads) th.join();
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    uint64_t total = 0;
    for (uint64_t h : hops_done) total += h;
    r.engine_all_pipelines_hops_per_sec = total / elapsed;
  }
  r.native_hops_per_sec = Median(native);
  r.mlp_limit_hops_per_sec = Median(mlp);
  r.engine_hops_per_sec = Median(engine);
  return r;
}

}  // namespace pulse::bench
