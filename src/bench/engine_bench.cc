#include "bench/engine_bench.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "engine/jit.h"
#include "pulse/assembler.h"
#include "pulse/engine.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kFarBase = uint64_t{1} << 40;  // where the structure lives in far memory

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

// Hash-chain find: nodes are {next, key}; sp[0] is the key, sp[8] the
// answer (the node's far address, 0 when absent).
constexpr const char* kHashFindProgram = R"(
  LOAD data, 16
  COMPARE data[8], sp[0]
  JUMP_EQ found
  COMPARE data[0], 0
  JUMP_EQ missing
  MOVE cur_ptr, data[0]
  NEXT_ITER
found:
  MOVE sp[8], cur_ptr
  RETURN
missing:
  MOVE sp[8], 0
  RETURN
)";

// B+tree nodes (256 bytes): u64 is_leaf, u64 count, u64 keys[15] (sorted;
// in an inner node key i is the largest key under child i), u64 children[15].
constexpr uint32_t kFanout = 15;
constexpr uint32_t kKeysAt = 16, kChildrenAt = 16 + 8 * kFanout;

// B+tree lower_bound: the first key >= sp[0] into sp[8], sp[16] = 1; or
// sp[16] = 0 when every key is smaller.  No backward jumps: the scan of a
// node is unrolled.
std::string BtreeLowerBoundProgram() {
  std::string s = "LOAD data, 256\n";
  for (uint32_t i = 0; i < kFanout; ++i) {
    s += fmt::format("COMPARE data[8], {}\nJUMP_LEU missing\nCOMPARE data[{}], sp[0]\nJUMP_GEU at{}\n", i,
                     kKeysAt + 8 * i, i);
  }
  s += "JUMP missing\n";
  for (uint32_t i = 0; i < kFanout; ++i) {
    s += fmt::format("at{}:\nCOMPARE data[0], 0\nJUMP_NE leaf{}\nMOVE cur_ptr, data[{}]\nNEXT_ITER\n", i, i,
                     kChildrenAt + 8 * i);
    s += fmt::format("leaf{}:\nMOVE sp[8], data[{}]\nMOVE sp[16], 1\nRETURN\n", i, kKeysAt + 8 * i);
  }
  s += "missing:\nMOVE sp[16], 0\nRETURN\n";
  return s;
}

struct Arena {
  uint8_t* base = nullptr;
  uint64_t bytes = 0;
  uint64_t nodes = 0;
  uint32_t node_bytes = 0;
  std::vector<uint32_t> order;  // a random cycle over the node slots
  ~Arena() {
    if (base != nullptr) munmap(base, bytes);
  }
  uint8_t* Host(uint64_t far) const { return base + (far - kFarBase); }
  uint64_t Far(uint64_t slot) const { return kFarBase + slot * node_bytes; }
  uint64_t Word(uint64_t far, uint32_t off) const {
    uint64_t v;
    std::memcpy(&v, Host(far) + off, 8);
    return v;
  }
  void Put(uint64_t far, uint32_t off, uint64_t v) { std::memcpy(Host(far) + off, &v, 8); }
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

// Maps the arena and draws one random cycle through every slot (Sattolo's
// algorithm), so traversals visit nodes in an order the hardware
// prefetcher cannot guess.
Status MapArena(Arena* a, double size_gib, uint32_t node_bytes, uint64_t seed) {
  a->node_bytes = node_bytes;
  a->nodes = static_cast<uint64_t>(size_gib * (1ull << 30)) / node_bytes;
  if (a->nodes < 2) return Status::InvalidArgument("--size-gib is too small for two nodes");
  a->bytes = a->nodes * node_bytes;
  void* p = mmap(nullptr, a->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return Status::ResourceExhausted(fmt::format("cannot map {} bytes for the structure", a->bytes));
  madvise(p, a->bytes, MADV_HUGEPAGE);  // best effort: THP where the kernel allows
  a->base = static_cast<uint8_t*>(p);
  a->order.resize(a->nodes);
  for (uint64_t i = 0; i < a->nodes; ++i) a->order[i] = static_cast<uint32_t>(i);
  std::mt19937_64 rng(seed);
  for (uint64_t i = a->nodes - 1; i > 0; --i) {
    std::uniform_int_distribution<uint64_t> pick(0, i - 1);
    std::swap(a->order[i], a->order[pick(rng)]);
  }
  return Status::Ok();
}

// What a benchmark program needs: requests, the native traversal that
// answers the same query, and the check of an engine answer.
struct Workload {
  std::string text;
  // A request (id: what the check needs) and, for the native side, the
  // number of hops it walks.
  std::function<TraversalRequest(std::mt19937_64&)> make;
  // Runs one query natively; returns hops.
  std::function<uint64_t(std::mt19937_64&)> native;
  // Compares an engine answer with the native traversal.
  std::function<Status(const TraversalRequest&, const TraversalOutcome&)> check;
};

TraversalRequest Request(uint64_t cur_ptr, uint64_t id, size_t scratch_bytes) {
  TraversalRequest req;
  req.tenant = 1;
  req.state.cur_ptr = cur_ptr;
  req.id = id;
  req.state.scratch.assign(scratch_bytes, 0);
  return req;
}

uint64_t SpWord(const TraversalState& s, size_t off) {
  uint64_t v;
  std::memcpy(&v, s.scratch.data() + off, 8);
  return v;
}

// The list: node i links to node order[i]; a walk is `hops` hops long.
Workload ListWorkload(Arena* a, uint32_t hops) {
  for (uint64_t i = 0; i < a->nodes; ++i) {
    a->Put(a->Far(i), 0, a->Far(a->order[i]));
    a->Put(a->Far(i), 8, i);  // a key, for realism
  }
  Workload w;
  w.text = kChaseProgram;
  w.make = [a, hops](std::mt19937_64& rng) {
    const uint64_t start = a->Far(rng() % a->nodes);
    TraversalRequest req = Request(start, start, 16);
    std::memcpy(req.state.scratch.data(), &hops, 4);
    return req;
  };
  w.native = [a, hops](std::mt19937_64& rng) {
    uint64_t p = a->Far(rng() % a->nodes);
    for (uint32_t h = 0; h < hops; ++h) p = a->Word(p, 0);
    asm volatile("" : : "r"(p));
    return uint64_t{hops};
  };
  w.check = [a, hops](const TraversalRequest& req, const TraversalOutcome&) {
    uint64_t p = req.id;
    for (uint32_t h = 0; h < hops; ++h) p = a->Word(p, 0);
    if (p != req.state.cur_ptr)
      return Status::Internal(fmt::format("engine ended at {:#x}, native walk at {:#x}", req.state.cur_ptr, p));
    return Status::Ok();
  };
  return w;
}

// Hash chains of 8: key k lives in bucket k % buckets, at chain position
// k / buckets; the client knows the bucket heads.
Workload HashWorkload(Arena* a) {
  const uint64_t buckets = std::max<uint64_t>(a->nodes / 8, 1);
  auto key_of = [](uint64_t k) { return k * 0x9E3779B97F4A7C15ull; };  // a bijection: keys are distinct
  auto node_of = [a](uint64_t k) { return a->Far(a->order[k]); };
  for (uint64_t k = 0; k < a->nodes; ++k) {
    a->Put(node_of(k), 0, k + buckets < a->nodes ? node_of(k + buckets) : 0);
    a->Put(node_of(k), 8, key_of(k));
  }
  Workload w;
  w.text = kHashFindProgram;
  w.make = [a, buckets, key_of, node_of](std::mt19937_64& rng) {
    const uint64_t k = rng() % a->nodes;
    TraversalRequest req = Request(node_of(k % buckets), k, 16);
    const uint64_t key = key_of(k);
    std::memcpy(req.state.scratch.data(), &key, 8);
    return req;
  };
  w.native = [a, buckets, key_of, node_of](std::mt19937_64& rng) {
    const uint64_t k = rng() % a->nodes;
    const uint64_t key = key_of(k);
    uint64_t p = node_of(k % buckets), hops = 1;
    while (a->Word(p, 8) != key && a->Word(p, 0) != 0) p = a->Word(p, 0), ++hops;
    asm volatile("" : : "r"(p));
    return hops;
  };
  w.check = [node_of](const TraversalRequest& req, const TraversalOutcome&) {
    if (SpWord(req.state, 8) != node_of(req.id))
      return Status::Internal(fmt::format("hash find of key #{} answered {:#x}, native {:#x}", req.id,
                                          SpWord(req.state, 8), node_of(req.id)));
    return Status::Ok();
  };
  return w;
}

// A B+tree over every slot: full leaves of keys 2, 4, 6, ..., inner levels
// above them, the root last.
struct Btree {
  uint64_t root = 0;
  uint64_t max_key = 0;
  uint32_t depth = 0;
};

Btree BuildBtree(Arena* a) {
  Btree t;
  uint64_t next_slot = 0;
  auto take = [&] { return a->Far(a->order[next_slot++]); };
  // Leaves use ~14/15 of the slots; every inner level 1/15 of the one below.
  uint64_t leaves = std::max<uint64_t>(a->nodes * (kFanout - 1) / kFanout, 1);
  std::vector<std::pair<uint64_t, uint64_t>> level;  // (node, largest key under it)
  uint64_t key = 0;
  for (uint64_t l = 0; l < leaves && next_slot < a->nodes; ++l) {
    const uint64_t n = take();
    a->Put(n, 0, 1);
    a->Put(n, 8, kFanout);
    for (uint32_t i = 0; i < kFanout; ++i) a->Put(n, kKeysAt + 8 * i, key += 2);
    level.push_back({n, key});
  }
  t.max_key = key;
  t.depth = 1;
  while (level.size() > 1) {
    std::vector<std::pair<uint64_t, uint64_t>> up;
    for (size_t i = 0; i < level.size(); i += kFanout) {
      const uint64_t n = next_slot < a->nodes ? take() : 0;
      if (n == 0) break;  // out of slots: the tree is smaller than planned
      const uint32_t count = static_cast<uint32_t>(std::min<size_t>(kFanout, level.size() - i));
      a->Put(n, 0, 0);
      a->Put(n, 8, count);
      for (uint32_t c = 0; c < count; ++c) {
        a->Put(n, kKeysAt + 8 * c, level[i + c].second);
        a->Put(n, kChildrenAt + 8 * c, level[i + c].first);
      }
      up.push_back({n, level[i + count - 1].second});
    }
    if (up.empty()) break;
    level = std::move(up);
    ++t.depth;
  }
  t.root = level.front().first;
  t.max_key = level.front().second;
  return t;
}

// Native lower_bound: (found, key, hops).
struct Found {
  bool found;
  uint64_t key;
  uint64_t hops;
};
Found NativeLowerBound(const Arena& a, uint64_t root, uint64_t target) {
  uint64_t p = root, hops = 0;
  for (;;) {
    ++hops;
    const uint64_t count = a.Word(p, 8);
    uint32_t i = 0;
    while (i < count && a.Word(p, kKeysAt + 8 * i) < target) ++i;
    if (i == count) return {false, 0, hops};
    if (a.Word(p, 0) != 0) return {true, a.Word(p, kKeysAt + 8 * i), hops};
    p = a.Word(p, kChildrenAt + 8 * i);
  }
}

Workload BtreeWorkload(Arena* a, Btree* tree) {
  *tree = BuildBtree(a);
  const Btree t = *tree;
  Workload w;
  w.text = BtreeLowerBoundProgram();
  w.make = [t](std::mt19937_64& rng) {
    const uint64_t target = rng() % (t.max_key + 2);
    TraversalRequest req = Request(t.root, target, 24);
    std::memcpy(req.state.scratch.data(), &target, 8);
    return req;
  };
  w.native = [a, t](std::mt19937_64& rng) {
    const Found f = NativeLowerBound(*a, t.root, rng() % (t.max_key + 2));
    asm volatile("" : : "r"(f.key));
    return f.hops;
  };
  w.check = [a, t](const TraversalRequest& req, const TraversalOutcome&) {
    const Found f = NativeLowerBound(*a, t.root, req.id);
    const bool found = SpWord(req.state, 16) != 0;
    if (found != f.found || (found && SpWord(req.state, 8) != f.key))
      return Status::Internal(fmt::format("lower_bound({}) answered ({}, {}), native ({}, {})", req.id, found,
                                          SpWord(req.state, 8), f.found, f.key));
    return Status::Ok();
  };
  return w;
}

// How long each measurement runs, and by which clock.
struct Timing {
  double seconds = 1;
  bool thread_cpu = false;  // the measuring thread's CPU time instead of wall time
};

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs `batch` until `t.seconds` have passed; returns hops per second.
template <typename Batch>
double Measure(const Timing& t, Batch batch) {
  const auto start = Clock::now();
  const double cpu_start = t.thread_cpu ? ThreadCpuSeconds() : 0;
  uint64_t hops = 0;
  double elapsed = 0;
  do {
    hops += batch();
    elapsed = t.thread_cpu ? ThreadCpuSeconds() - cpu_start
                           : std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < t.seconds);
  return hops / elapsed;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The MLP limit: `chains` list walks advanced round-robin with prefetch.
double MeasureMlpLimit(const Arena& a, uint32_t chains, uint32_t hops, const Timing& timing, std::mt19937_64& rng) {
  return Measure(timing, [&] {
    std::vector<uint64_t> cur(chains);
    for (auto& c : cur) c = a.Far(rng() % a.nodes);
    for (uint32_t h = 0; h < hops; ++h) {
      for (auto& c : cur) {
        c = a.Word(c, 0);
        __builtin_prefetch(a.Host(c));
      }
    }
    uint64_t sink = 0;
    for (auto c : cur) sink ^= c;
    asm volatile("" : : "r"(sink));
    return uint64_t{hops} * chains;
  });
}

// One pipeline kept full for `timing`: every completion admits a new
// request.  Checks the first answers against the native traversal.
struct EngineRun {
  double hops_per_sec = 0;
  uint64_t requests = 0;
  uint64_t iterations = 0;
  uint32_t active_workspaces = 0;  // the active set the pipeline ran
};

Result<EngineRun> MeasureEngine(const RangeTable& table, const ProgramRef& program, const Workload& w,
                                EngineKind kind, uint32_t workspaces, uint32_t active_workspaces,
                                uint32_t max_iterations, const Timing& timing, uint64_t seed, uint64_t* checked) {
  EngineOptions eo;
  eo.engine = kind;
  eo.workspaces = workspaces;
  eo.active_workspaces = active_workspaces;
  eo.max_iterations = max_iterations;
  Pipeline pipeline(&table, eo);
  std::mt19937_64 rng(seed);
  bool admitting = true;
  Status check = Status::Ok();
  EngineRun run;
  run.active_workspaces = pipeline.active_limit();
  auto make = [&] {
    TraversalRequest req = w.make(rng);
    req.program = program;
    return req;
  };
  CompletionFn done = [&](TraversalRequest&& req, const TraversalOutcome& out) {
    run.iterations += out.iterations;
    ++run.requests;
    if (out.status != TraversalStatus::kDone) {
      check = Status::Internal(fmt::format("engine traversal ended with {}", TraversalStatusName(out.status)));
    } else if (*checked < 64 && check.ok()) {
      check = w.check(req, out);
      ++*checked;
    }
    if (admitting) pipeline.Admit(make());
  };
  while (pipeline.HasFreeWorkspace()) pipeline.Admit(make());
  run.hops_per_sec = Measure(timing, [&] { return pipeline.Run(done, uint64_t{workspaces} * 256); });
  admitting = false;
  pipeline.Run(done);
  PULSE_RETURN_IF_ERROR(check);
  return run;
}

uint32_t NoStore(engine::Frame*, uint64_t, uint64_t, uint32_t) { return 0; }
uint32_t NoAlloc(engine::Frame*, uint64_t, uint32_t) { return 0; }

// Mean time to generate the program's code (0 where there is no backend).
double JitCompileMicros(const VerifiedProgram& program) {
  if (!engine::JitAvailable()) return 0;
  constexpr int kCompiles = 200;
  const auto t0 = Clock::now();
  for (int i = 0; i < kCompiles; ++i) {
    auto code = engine::JitProgram::Compile(program, engine::JitHooks{&NoStore, &NoAlloc});
    if (!code.ok()) return 0;
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kCompiles;
}

}  // namespace

Result<EngineBenchResult> RunEngineBench(const EngineBenchOptions& o) {
  if (o.node_bytes < 16 || o.node_bytes % 8 != 0)
    return Status::InvalidArgument("--node-bytes must be a multiple of 8, at least 16");
  if (o.hops_per_request == 0) return Status::InvalidArgument("--hops must be positive");
  if (o.program != "list" && o.program != "hash" && o.program != "btree")
    return Status::InvalidArgument(fmt::format("--program: '{}' is not list, hash or btree", o.program));
  std::vector<uint32_t> counts = o.sweep.empty() ? std::vector<uint32_t>{o.workspaces} : o.sweep;
  for (uint32_t c : counts)
    if (c == 0) return Status::InvalidArgument("--sweep: workspace counts must be positive");
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  EngineBenchResult r;
  r.program = o.program;
  Arena arena;
  const uint32_t node_bytes = o.program == "btree" ? 256 : o.node_bytes;
  const auto t0 = Clock::now();
  say(fmt::format("building a {:.2f} GiB {} of {}-byte nodes", o.size_gib, o.program, node_bytes));
  PULSE_RETURN_IF_ERROR(MapArena(&arena, o.size_gib, node_bytes, o.seed));
  Btree tree;
  Workload w = o.program == "list"   ? ListWorkload(&arena, o.hops_per_request)
               : o.program == "hash" ? HashWorkload(&arena)
                                     : BtreeWorkload(&arena, &tree);
  r.build_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.nodes = arena.nodes;
  r.node_bytes = node_bytes;
  r.huge_page_bytes = HugePageBytes();

  auto insns = Assemble(w.text);
  if (!insns.ok()) return insns.status();
  auto program = VerifiedProgram::Create(std::move(*insns));
  if (!program.ok()) return program.status();
  r.instructions_per_iteration = (*program)->info().longest_path;
  r.window_bytes = (*program)->info().window_bytes;
  r.jit_compile_us = JitCompileMicros(**program);
  const EngineKind kind = o.engine == EngineKind::kJit && engine::JitAvailable() ? EngineKind::kJit
                                                                                 : EngineKind::kInterpreter;
  r.engine = std::string(EngineKindName(kind));

  RangeTable table;
  PULSE_RETURN_IF_ERROR(table.Add(Range{kFarBase, arena.bytes, arena.base, kPermReadWrite, 1}));
  const uint32_t max_iterations = o.hops_per_request + 64;
  std::mt19937_64 rng(o.seed + 1);

  const bool list = o.program == "list";
  const Timing timing{o.seconds, o.thread_cpu_clock};
  std::vector<double> native;
  std::vector<std::vector<double>> engine(counts.size()), mlp(counts.size()), interp(counts.size());
  std::vector<uint32_t> engine_active(counts.size()), interp_active(counts.size());  // as the pipelines ran
  const bool with_interp = kind == EngineKind::kJit && o.compare_interpreter;
  uint64_t requests = 0, iterations = 0;
  for (uint32_t round = 0; round < std::max<uint32_t>(o.rounds, 1); ++round) {
    say(fmt::format("round {}/{}: native, then at each of {} workspace counts{} {}{}", round + 1, o.rounds,
                    counts.size(), list ? " the interleaved limit," : "", r.engine,
                    with_interp ? " and the interpreter" : ""));
    native.push_back(Measure(timing, [&] { return w.native(rng); }));
    for (size_t c = 0; c < counts.size(); ++c) {
      if (list) mlp[c].push_back(MeasureMlpLimit(arena, counts[c], o.hops_per_request, timing, rng));
      PULSE_ASSIGN_OR_RETURN(EngineRun run,
                             MeasureEngine(table, *program, w, kind, counts[c], o.active_workspaces, max_iterations,
                                           timing, o.seed + 7 * round + c, &r.checked_requests));
      engine[c].push_back(run.hops_per_sec);
      engine_active[c] = run.active_workspaces;
      requests += run.requests;
      iterations += run.iterations;
      if (with_interp) {
        PULSE_ASSIGN_OR_RETURN(EngineRun i,
                               MeasureEngine(table, *program, w, EngineKind::kInterpreter, counts[c],
                                             o.active_workspaces, max_iterations, timing,
                                             o.seed + 1000 + 7 * round + c, &r.checked_requests));
        interp[c].push_back(i.hops_per_sec);
        interp_active[c] = i.active_workspaces;
      }
    }
  }
  r.native_hops_per_sec = Median(native);
  size_t best = 0, best_mlp = 0;
  for (size_t c = 0; c < counts.size(); ++c) {
    EngineSweepPoint p;
    p.workspaces = counts[c];
    p.active_workspaces = engine_active[c];
    p.interpreter_active_workspaces = interp_active[c];
    p.engine_hops_per_sec = Median(engine[c]);
    p.mlp_limit_hops_per_sec = list ? Median(mlp[c]) : 0;
    p.interpreter_hops_per_sec = with_interp ? Median(interp[c]) : 0;
    r.interpreter_hops_per_sec = std::max(r.interpreter_hops_per_sec, p.interpreter_hops_per_sec);
    r.sweep.push_back(p);
    if (p.engine_hops_per_sec > r.sweep[best].engine_hops_per_sec) best = c;
    if (p.mlp_limit_hops_per_sec > r.sweep[best_mlp].mlp_limit_hops_per_sec) best_mlp = c;
  }
  r.workspaces = r.sweep[best].workspaces;
  r.engine_hops_per_sec = r.sweep[best].engine_hops_per_sec;
  r.mlp_limit_workspaces = r.sweep[best_mlp].workspaces;
  r.mlp_limit_hops_per_sec = r.sweep[best_mlp].mlp_limit_hops_per_sec;
  r.ns_per_iteration = r.engine_hops_per_sec > 0 ? 1e9 / r.engine_hops_per_sec : 0;
  r.hops_per_request = requests > 0 ? static_cast<double>(iterations) / requests : 0;

  // Several pipelines, one thread each, over the same structure (the memory
  // node's configuration with P memory pipelines), at the best count.
  r.pipelines = std::max<uint32_t>(o.pipelines, 1);
  if (r.pipelines > 1) {
    say(fmt::format("{} pipelines on {} threads", r.pipelines, r.pipelines));
    std::vector<double> per_thread(r.pipelines, 0);
    std::vector<Status> status(r.pipelines, Status::Ok());
    std::vector<uint64_t> checked(r.pipelines, 64);  // checked above already
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < r.pipelines; ++t) {
      threads.emplace_back([&, t] {
        auto run = MeasureEngine(table, *program, w, kind, r.workspaces, o.active_workspaces, max_iterations,
                                 timing, o.seed + 100 + t, &checked[t]);
        if (run.ok()) {
          per_thread[t] = run->hops_per_sec;
        } else {
          status[t] = run.status();
        }
      });
    }
    for (auto& th : threads) th.join();
    for (const Status& s : status) PULSE_RETURN_IF_ERROR(s);
    for (double h : per_thread) r.engine_all_pipelines_hops_per_sec += h;
  }
  return r;
}

}  // namespace pulse::bench
