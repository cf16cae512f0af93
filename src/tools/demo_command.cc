// pulse demo: the main job's workload against a running cluster (`make demo`
// starts one with `pulse cluster up`).  Builds a chained hash table in far
// memory across every memory node, runs offloaded lookups with the Listing 4
// iterator, checks every answer and prints latency, throughput and the
// requests the switch forwarded between memory nodes.
//
// Layout (seed 001 Listing 4): an entry is 48 bytes, key@0, value@8,
// next@40.  The bucket array lives in far memory too, one segment per memory
// node; each bucket is a sentinel entry (key 0, never a real key) whose next
// is the chain's first entry, so the CPU node's init() only hashes the key to
// the bucket's address and the whole lookup runs on the memory nodes.
// Entries are spread over all memory nodes, so chains cross nodes and the
// switch forwards those lookups from node to node.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/traverse_bench.h"
#include "cluster/config.h"
#include "cluster/control_session.h"
#include "cluster/keys.h"
#include "pulse/assembler.h"
#include "pulse/client.h"
#include "tools/commands.h"
#include "tools/flag_checks.h"

namespace pulse::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kLookupProgram = R"(
.equ KEY_NOT_FOUND 0xffffffff
  LOAD data
  COMPARE sp[0], data[0]
  JUMP_EQ found
  COMPARE 0, data[40]
  JUMP_EQ missing
  MOVE cur_ptr, data[40]
  NEXT_ITER
missing:
  MOVE sp[8], KEY_NOT_FOUND
  RETURN
found:
  MOVE sp[8], data[8]
  RETURN
)";

constexpr uint64_t kEntryBytes = 48;
constexpr uint64_t kNotFound = 0xffffffff;
constexpr uint64_t kWriteChunk = 64 * 1024;

struct DemoArgs {
  std::string switch_address = "127.0.0.1:7100";
  std::string config;  // the cluster's description, for its secret; empty: `pulse cluster up`'s
  uint64_t keys = 100000;
  uint64_t buckets = 32768;
  double seconds = 3.0;       // per phase
  uint32_t depth = 32;        // lookups in flight in the throughput phase
  double hit_ratio = 0.8;
  uint32_t poll_window_us = 0;  // the client's, as config/local.toml's nodes
  bool json = false;
};

uint64_t ValueOf(uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) >> 33 | 1; }  // < 2^31, never kNotFound
uint64_t BucketOf(uint64_t key, uint64_t buckets) { return (key * 0xC2B2AE3D27D4EB4Full >> 17) % buckets; }

void Put64(std::vector<uint8_t>& image, uint64_t off, uint64_t v) { std::memcpy(image.data() + off, &v, 8); }

struct Table {
  uint32_t nodes = 0;
  std::vector<uint64_t> segment;  // far address of each node's bucket segment
  uint64_t per_segment = 0;
  uint64_t BucketAddress(uint64_t b) const { return segment[b % nodes] + (b / nodes) * kEntryBytes; }
};

// Allocates and writes the table; returns where its buckets are.
Result<Table> BuildTable(Client& client, const DemoArgs& a) {
  Table t;
  t.nodes = client.memory_nodes();
  t.per_segment = (a.buckets + t.nodes - 1) / t.nodes;
  std::mt19937_64 rng(2024);
  // Entry placement: a random node each, a slot in that node's entry array.
  std::vector<uint32_t> node_of(a.keys + 1);
  std::vector<uint64_t> slot_of(a.keys + 1), count(t.nodes, 0);
  for (uint64_t k = 1; k <= a.keys; ++k) {
    node_of[k] = static_cast<uint32_t>(rng() % t.nodes);
    slot_of[k] = count[node_of[k]]++;
  }
  std::vector<uint64_t> entries(t.nodes);
  for (uint32_t n = 0; n < t.nodes; ++n) {
    auto seg = client.Allocate(t.per_segment * kEntryBytes, n);
    if (!seg.ok()) return seg.status();
    t.segment.push_back(*seg);
    auto ent = client.Allocate(std::max<uint64_t>(1, count[n]) * kEntryBytes, n);
    if (!ent.ok()) return ent.status();
    entries[n] = *ent;
  }
  std::vector<std::vector<uint8_t>> bucket_image(t.nodes, std::vector<uint8_t>(t.per_segment * kEntryBytes, 0));
  std::vector<std::vector<uint8_t>> entry_image(t.nodes);
  for (uint32_t n = 0; n < t.nodes; ++n) entry_image[n].assign(count[n] * kEntryBytes, 0);
  // Push-front into each chain: the bucket's next, then the entry's next.
  for (uint64_t k = 1; k <= a.keys; ++k) {
    const uint64_t b = BucketOf(k, a.buckets);
    std::vector<uint8_t>& bimg = bucket_image[b % t.nodes];
    const uint64_t boff = (b / t.nodes) * kEntryBytes;
    uint64_t old_head = 0;
    std::memcpy(&old_head, bimg.data() + boff + 40, 8);
    std::vector<uint8_t>& eimg = entry_image[node_of[k]];
    const uint64_t eoff = slot_of[k] * kEntryBytes;
    Put64(eimg, eoff + 0, k);
    Put64(eimg, eoff + 8, ValueOf(k));
    Put64(eimg, eoff + 40, old_head);
    Put64(bimg, boff + 40, entries[node_of[k]] + eoff);
  }
  auto write = [&](uint64_t base, const std::vector<uint8_t>& img) -> Status {
    for (uint64_t off = 0; off < img.size(); off += kWriteChunk)
      PULSE_RETURN_IF_ERROR(client.Write(base + off, img.data() + off, std::min(kWriteChunk, img.size() - off)));
    return Status::Ok();
  };
  for (uint32_t n = 0; n < t.nodes; ++n) {
    PULSE_RETURN_IF_ERROR(write(t.segment[n], bucket_image[n]));
    PULSE_RETURN_IF_ERROR(write(entries[n], entry_image[n]));
  }
  return t;
}

struct Phase {
  std::string name;
  std::vector<double> latency_us;
  double seconds = 0;
  uint64_t forwards = 0;
  uint64_t hits = 0, misses = 0;
};

// Draws lookup keys: hits from [1, keys], misses above.
class KeyDrawer {
 public:
  explicit KeyDrawer(const DemoArgs& a) : a_(a), rng_(99) {}
  uint64_t Next() {
    if (std::uniform_real_distribution<double>(0, 1)(rng_) < a_.hit_ratio) return 1 + rng_() % a_.keys;
    return a_.keys + 1 + rng_() % a_.keys;
  }

 private:
  const DemoArgs& a_;
  std::mt19937_64 rng_;
};

std::vector<uint8_t> ScratchFor(uint64_t key) {
  std::vector<uint8_t> sp(16, 0);
  std::memcpy(sp.data(), &key, 8);
  return sp;
}

// Checks one answer; a wrong one ends the demo with an error.
Status Check(uint64_t key, const Result<TraversalResult>& r, const DemoArgs& a, Phase* phase) {
  if (!r.ok()) return Status::Unavailable(fmt::format("lookup of key {}: {}", key, r.status().ToString()));
  uint64_t got = 0;
  if (r->scratch.size() >= 16) std::memcpy(&got, r->scratch.data() + 8, 8);
  const bool hit = key <= a.keys;
  const uint64_t want = hit ? ValueOf(key) : kNotFound;
  if (r->status != TraversalStatus::kDone || got != want)
    return Status::Internal(fmt::format("lookup of key {}: status {}, value {:#x}; expected done, {:#x}", key,
                                        TraversalStatusName(r->status), got, want));
  ++(hit ? phase->hits : phase->misses);
  return Status::Ok();
}

Result<uint64_t> SwitchForwards(cluster::ControlSession& s, const std::string& address) {
  auto stats = s.Call(address, "stats", std::chrono::seconds(2));
  if (!stats.ok()) return stats.status();
  return (*stats)["counters"].value("forwards", uint64_t{0});
}

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One lookup at a time, for `seconds`.
Status RunSerial(Client& client, const ProgramRef& prog, const Table& t, const DemoArgs& a, Phase* phase) {
  KeyDrawer keys(a);
  TraverseOptions to;
  to.mode = ExecutionMode::kOffload;
  const auto start = Clock::now();
  while (Since(start) < a.seconds) {
    const uint64_t key = keys.Next();
    const auto t0 = Clock::now();
    auto r = client.Traverse(prog, t.BucketAddress(BucketOf(key, a.buckets)), ScratchFor(key), to);
    phase->latency_us.push_back(Since(t0) * 1e6);
    PULSE_RETURN_IF_ERROR(Check(key, r, a, phase));
  }
  phase->seconds = Since(start);
  return Status::Ok();
}

// `depth` lookups in flight; each completion starts the next until time is up.
Status RunPipelined(Client& client, const ProgramRef& prog, const Table& t, const DemoArgs& a, Phase* phase) {
  KeyDrawer keys(a);
  TraverseOptions to;
  to.mode = ExecutionMode::kOffload;
  Status error;
  const auto start = Clock::now();
  std::function<void()> submit = [&] {
    const uint64_t key = keys.Next();
    const auto t0 = Clock::now();
    client.TraverseAsync(prog, t.BucketAddress(BucketOf(key, a.buckets)), ScratchFor(key), to,
                         [&, key, t0](Result<TraversalResult> r) {
                           phase->latency_us.push_back(Since(t0) * 1e6);
                           Status s = Check(key, r, a, phase);
                           if (!s.ok() && error.ok()) error = s;
                           if (error.ok() && Since(start) < a.seconds) submit();
                         });
  };
  for (uint32_t i = 0; i < a.depth; ++i) submit();
  Status s = client.WaitAll(std::chrono::milliseconds(static_cast<int64_t>(a.seconds * 1000) + 10000));
  phase->seconds = Since(start);
  PULSE_RETURN_IF_ERROR(error);
  return s;
}

void RunDemo(const DemoArgs& a) {
  auto fail = [](const Status& s) {
    std::cerr << "pulse demo: " << s.ToString() << "\n";
    throw CLI::RuntimeError(1);
  };
  auto insns = Assemble(kLookupProgram);
  if (!insns.ok()) fail(insns.status());
  auto prog = VerifiedProgram::Create(std::move(*insns));
  if (!prog.ok()) fail(prog.status());
  // The cluster's nodes accept only holders of its secret (or a tenant's
  // key): take it from the config, as `pulse cluster status` does.
  auto config = cluster::LoadClusterConfigOrDefault(a.config);
  if (!config.ok()) fail(config.status());
  cluster::UseClusterSecret(*config);
  ClientOptions co;
  co.switch_address = a.switch_address;
  co.policy = AllocationPolicy::kPartitioned;
  co.worker.name = "demo";
  co.worker.poll_window_us = a.poll_window_us;
  auto client = Client::Connect(co);
  if (!client.ok()) fail(client.status());
  auto session = cluster::ControlSession::Create();
  if (!session.ok()) fail(session.status());

  std::cerr << fmt::format("[demo] building a hash table of {} keys in {} buckets over {} memory nodes\n", a.keys,
                           a.buckets, (*client)->memory_nodes());
  const auto build_start = Clock::now();
  auto table = BuildTable(**client, a);
  if (!table.ok()) fail(table.status());
  const double build_s = Since(build_start);

  std::vector<Phase> phases(2);
  phases[0].name = "1 in flight";
  phases[1].name = fmt::format("{} in flight", a.depth);
  for (size_t i = 0; i < phases.size(); ++i) {
    std::cerr << fmt::format("[demo] lookups, {}, {:.1f} s\n", phases[i].name, a.seconds);
    auto before = SwitchForwards(**session, a.switch_address);
    if (!before.ok()) fail(before.status());
    Status s = i == 0 ? RunSerial(**client, *prog, *table, a, &phases[i])
                      : RunPipelined(**client, *prog, *table, a, &phases[i]);
    if (!s.ok()) fail(s);
    auto after = SwitchForwards(**session, a.switch_address);
    if (!after.ok()) fail(after.status());
    phases[i].forwards = *after - *before;
  }

  nlohmann::json out = {{"keys", a.keys}, {"buckets", a.buckets}, {"memory_nodes", (*client)->memory_nodes()},
                        {"build_seconds", build_s}, {"phases", nlohmann::json::array()}};
  std::string text = fmt::format(
      "pulse demo: chained hash table in far memory (Listing 4 layout), {} keys, {} buckets, {} memory nodes\n"
      "every answer checked; built in {:.2f} s\n\n"
      "{:<14} {:>8} {:>9} {:>9} {:>9} {:>11} {:>10} {:>8}\n",
      a.keys, a.buckets, (*client)->memory_nodes(), build_s, "lookups", "count", "mean us", "p50 us", "p99 us",
      "lookups/s", "forwarded", "fwd/op");
  for (const Phase& p : phases) {
    const bench::LatencyStats s = bench::Summarize(p.latency_us);
    const double rate = static_cast<double>(s.count) / p.seconds;
    const double per = s.count ? static_cast<double>(p.forwards) / static_cast<double>(s.count) : 0;
    text += fmt::format("{:<14} {:>8} {:>9.1f} {:>9.1f} {:>9.1f} {:>11.0f} {:>10} {:>8.2f}\n", p.name, s.count,
                        s.mean_us, s.p50_us, s.p99_us, rate, p.forwards, per);
    out["phases"].push_back({{"name", p.name}, {"lookups", s.count}, {"hits", p.hits}, {"misses", p.misses},
                             {"mean_us", s.mean_us}, {"p50_us", s.p50_us}, {"p99_us", s.p99_us},
                             {"lookups_per_sec", rate}, {"switch_forwards", p.forwards}});
  }
  text += "\nforwarded: continuations the switch passed from one memory node to another\n";
  std::cout << (a.json ? out.dump(2) + "\n" : text) << std::flush;
}

}  // namespace

void AddDemoCommand(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Hash-table lookups offloaded to a running cluster (start one with `pulse cluster up`)");
  cmd->add_option("--switch", args->switch_address, "The cluster's switch")->capture_default_str();
  cmd->add_option("--config", args->config,
                  "Cluster description whose secret the client presents (default: the one of `pulse cluster up`)");
  cmd->add_option("--keys", args->keys, "Keys in the table")->capture_default_str()
      ->check(Within(1, 1 << 26));
  cmd->add_option("--buckets", args->buckets, "Buckets")->capture_default_str()
      ->check(Within(1, 1 << 26));
  cmd->add_option("--seconds", args->seconds, "Seconds per phase")->capture_default_str()
      ->check(Within(0.1, 600));
  cmd->add_option("--depth", args->depth, "Lookups in flight in the second phase")->capture_default_str()
      ->check(Within(1, 4096));
  cmd->add_option("--hit-ratio", args->hit_ratio, "Share of lookups for keys that exist")->capture_default_str()
      ->check(Within(0, 1));
  cmd->add_option("--poll-window-us", args->poll_window_us, "The client's adaptive polling window")->capture_default_str()
      ->check(Within(0, kMaxPollWindowUs));
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args] { RunDemo(*args); });
}

}  // namespace pulse::tools
