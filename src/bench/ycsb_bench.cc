// `pulse bench ycsb` (ycsb_bench.h).
#include "bench/ycsb_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "bench/bench_cluster.h"
#include "bench/racked_cluster.h"
#include "bench/ycsb_paging.h"
#include "kv/iterators/kv_layout.h"
#include "pulse/client.h"
#include "pulse/iterators/kv_get.h"
#include "pulse/kv/store.h"
#include "pulse/rpc.h"
#include "pulse/rpc_kv.h"
#include "pulse/rpc_rrpc.h"
#include "pulse/traversal.h"
#include "pulse/typed_traversal.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kGateTimeout = std::chrono::minutes(10);

bool HasWrites(char workload) { return workload != 'C' && workload != 'c'; }
bool HasInserts(char workload) { return workload == 'D' || workload == 'd'; }
// The largest value kv::Store holds in its item (a 128-byte window).
uint32_t MaxItemValueBytes(uint32_t key_bytes) { return PULSE_KV_WINDOW_WORDS * 8 - 8 - (key_bytes + 7) / 8 * 8; }
bool UsesRrpc(const YcsbBenchOptions& o, const std::string& system) {
  return system == "object-rpc" && o.rrpc_threshold.has_value();
}
// The tiered system with RRPC for other racks' buckets (item mode).
bool UsesTieredRrpc(const YcsbBenchOptions& o, const std::string& system) { return system == "tiered" && o.tiered_rrpc; }

// The clients' hot pages: with swaps, seed 004's hotness with the bench's
// H_p; without, no counting and no requests.  Either way a client's slabs
// are whole pages: a slab straddling pages could not move, and pages
// shared by clients of both racks would move back and forth between them.
void SetSwapOptions(const YcsbBenchOptions& o, ClientOptions* co) {
  co->hot_page_requests = o.swap;
  co->hotness.hot_threshold = o.hot_threshold;
  co->slab_bytes = o.page_bytes;
}

kv::StoreOptions StoreOptionsFor(const YcsbBenchOptions& o, const std::string& system) {
  kv::StoreOptions so;
  so.key_bytes = o.workload.key_bytes;
  so.value_bytes = UsesRrpc(o, system) ? sizeof(uint64_t) : o.workload.value_bytes;
  so.expected_items = o.workload.records;
  if (system == "all-local") so.partitions = 1;  // partition 0 on memory node 0: rack "a"
  return so;
}


// The store's far bytes (buckets at 75% slot occupancy, items), as
// kv::Store sizes them: what the paging cache is a fraction of.
uint64_t StoreBytes(const YcsbWorkloadOptions& w) {
  const uint64_t item = 8 * (1 + (w.key_bytes + 7) / 8 + (w.value_bytes + 7) / 8);
  const uint64_t buckets = w.records * 4 / 3 / PULSE_KV_SLOTS + 1;
  return buckets * PULSE_KV_WINDOW_WORDS * 8 + w.records * item;
}

// The paging cache's pages: a fraction of the store's bytes.
uint64_t PageCachePages(const YcsbBenchOptions& o) {
  return std::max<uint64_t>(1, static_cast<uint64_t>(o.page_cache_ratio * static_cast<double>(StoreBytes(o.workload))) /
                                   PageCacheMemory::kPageBytes);
}

// All clients start measuring together: each arrives once; waits time out.
class Gate {
 public:
  explicit Gate(uint32_t n) : left_(n) {}
  bool ArriveAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--left_ == 0) cv_.notify_all();
    return cv_.wait_for(lock, kGateTimeout, [&] { return left_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint32_t left_;
};

struct Shared {
  const YcsbBenchOptions* o = nullptr;
  std::string system;
  std::string switch_address;
  uint64_t ops_per_client = 0;
  Gate* gate = nullptr;
  std::atomic<uint64_t> done_ops{0};
  std::atomic<uint32_t> loaded{0};
};

// What one client measured.
struct ClientRun {
  Status status;
  uint64_t reads = 0, updates = 0, inserts = 0, rmws = 0, verified = 0;
  std::vector<double> latencies_us;
  Clock::time_point start{}, end{};
  uint64_t messages = 0, rma_ops = 0, traversals = 0, offloaded = 0, local = 0;
  uint64_t cache_hits = 0, cache_misses = 0, uncached = 0;
  uint64_t rrpc_inline = 0, rrpc_address = 0, rrpc_cached = 0, rrpc_stale = 0;
  uint64_t buffered_writes = 0;
  uint64_t swap_requests = 0, page_move_waits = 0;
};

// One client's view of its store for the run: the operations as each system
// performs them.
class ClientKv {
 public:
  // `rack_node`: with tiered RRPC, the memory node of the client's rack
  // (GETs of other nodes' buckets go by RRPC); else nullopt.
  ClientKv(const Shared& s, kv::Store* store, RpcClient* rpc, RrpcKv* rrpc, std::optional<uint32_t> rack_node,
           PageCacheMemory* pages, ProgramRef get)
      : s_(s), store_(store), rpc_(rpc), rrpc_(rrpc), rack_node_(rack_node), pages_(pages), get_(std::move(get)) {}

  Result<std::optional<std::string>> Read(const std::string& key) {
    if (rrpc_ != nullptr && rack_node_.has_value()) {
      PULSE_ASSIGN_OR_RETURN(kv::Store::GetRequest req, store_->MakeGetRequest(key));
      if (rpc_->client()->NodeOf(req.start) != rack_node_) return rrpc_->Get(key);
      return store_->Get(key);
    }
    if (rrpc_ != nullptr) return rrpc_->Get(key);
    if (s_.system == "object-rpc") return RpcGet(key);
    if (s_.system == "paging") {
      PULSE_ASSIGN_OR_RETURN(std::vector<uint8_t> state, PagedGet(key));
      return store_->GetAnswer(state);
    }
    return store_->Get(key);
  }
  // Overwrites a present key (update, the write of a read-modify-write) or
  // inserts a new one (tiered and all-local only).
  Status Write(const std::string& key, const std::string& value) {
    if (s_.system != "paging") return store_->Put(key, value);
    PULSE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, PagedGet(key));
    pulse_kv_state state;
    std::memcpy(&state, bytes.data(), sizeof(state));
    if (state.outcome != PULSE_KV_HIT) return Status::NotFound("bench ycsb [paging]: update of an absent key " + key);
    // The item: a header word, the key (key_words), the value; the value's
    // length stays the same, so only its bytes change.
    const uint64_t value_at = state.item + 8 * (1 + state.key_words);
    return pages_->Write(value_at, value.data(), value.size());
  }

 private:
  Result<std::optional<std::string>> RpcGet(const std::string& key) {
    PULSE_ASSIGN_OR_RETURN(kv::Store::GetRequest req, store_->MakeGetRequest(key));
    PULSE_ASSIGN_OR_RETURN(RpcResult r, rpc_->Call(kRpcKvGet, req.start, req.state));
    if (r.status != TraversalStatus::kDone) return TraversalStatusError(r.status, "bench ycsb [object-rpc] GET", r.fault_addr);
    return store_->GetAnswer(r.state);
  }
  // The GET program run at the CPU node by the reference interpreter, each
  // window through the page cache.
  Result<std::vector<uint8_t>> PagedGet(const std::string& key) {
    PULSE_ASSIGN_OR_RETURN(kv::Store::GetRequest req, store_->MakeGetRequest(key));
    TraversalState state;
    state.cur_ptr = req.start;
    state.scratch = std::move(req.state);
    state.scratch.resize(std::max<size_t>(state.scratch.size(), get_->info().scratch_bytes), 0);
    const TraversalOutcome out = InterpretTraversal(*get_, *pages_, 4096, &state);
    if (out.status != TraversalStatus::kDone) return TraversalStatusError(out.status, "bench ycsb [paging] GET", out.fault_addr);
    state.scratch.resize(sizeof(pulse_kv_state));
    return std::move(state.scratch);
  }

  const Shared& s_;
  kv::Store* store_;
  RpcClient* rpc_;
  RrpcKv* rrpc_;
  std::optional<uint32_t> rack_node_;
  PageCacheMemory* pages_;
  ProgramRef get_;
};

// RRPC objects for keys [start, end): each on the memory node of its key's
// bucket (so the GET's handler finds it there), one allocation and one write
// per node; the store's values name them (RrpcObjectRef).
Result<std::vector<std::pair<std::string, std::string>>> PlaceObjects(Client* client, const kv::Store& store,
                                                                      const YcsbWorkloadOptions& w, uint64_t start,
                                                                      uint64_t end) {
  std::map<uint32_t, std::vector<uint64_t>> by_node;
  for (uint64_t k = start; k < end; ++k) {
    PULSE_ASSIGN_OR_RETURN(kv::Store::GetRequest req, store.MakeGetRequest(YcsbKey(k, w.key_bytes)));
    by_node[client->NodeOf(req.start).value_or(0)].push_back(k);
  }
  const uint64_t object_bytes = (sizeof(RrpcObjectHeader) + w.value_bytes + 7) / 8 * 8;
  std::vector<std::pair<std::string, std::string>> refs;
  for (const auto& [node, keys] : by_node) {
    PULSE_ASSIGN_OR_RETURN(uint64_t base, client->Allocate(object_bytes * keys.size(), node));
    std::vector<uint8_t> image(object_bytes * keys.size(), 0);
    for (size_t i = 0; i < keys.size(); ++i) {
      const std::string key = YcsbKey(keys[i], w.key_bytes);
      const std::vector<uint8_t> one = RrpcObjectImage(key, YcsbValue(keys[i], 0, w.value_bytes));
      std::copy(one.begin(), one.end(), image.begin() + static_cast<ptrdiff_t>(i * object_bytes));
      refs.emplace_back(key, RrpcObjectRef(base + i * object_bytes));
    }
    PULSE_RETURN_IF_ERROR(client->Write(base, image.data(), image.size()));
  }
  return refs;
}

Status LoadStore(const Shared& s, Client* client, kv::Store& store, uint32_t index) {
  const YcsbWorkloadOptions& w = s.o->workload;
  const uint64_t chunk = 1000;
  for (uint64_t start = 0; start < w.records; start += chunk) {
    std::vector<std::pair<std::string, std::string>> batch;
    if (UsesRrpc(*s.o, s.system)) {
      PULSE_ASSIGN_OR_RETURN(batch, PlaceObjects(client, store, w, start, std::min(w.records, start + chunk)));
    } else {
      for (uint64_t k = start; k < std::min(w.records, start + chunk); ++k)
        batch.emplace_back(YcsbKey(k, w.key_bytes), YcsbValue(k, 0, w.value_bytes));
    }
    for (const Status& st : store.PutBatch(batch)) {
      if (!st.ok()) return Status::FromCode(st.code(), fmt::format("bench ycsb: client {} loading: {}", index, st.message()));
    }
  }
  return Status::Ok();
}

// One client thread: connect, load, wait for the others, warm up, measure.
void RunClient(Shared& s, uint32_t index, const std::string& rack, ClientRun* out) {
  const YcsbBenchOptions& o = *s.o;
  bool arrived = false;
  auto arrive = [&] {
    if (!arrived && !s.gate->ArriveAndWait() && out->status.ok())
      out->status = Status::Timeout("bench ycsb: clients did not all finish loading in time");
    arrived = true;
  };
  auto body = [&]() -> Status {
    ClientOptions co;
    co.switch_address = s.switch_address;
    co.rack = rack;
    co.policy = AllocationPolicy::kPartitioned;
    co.request_path = RequestPath::kMessages;
    co.lock_tier.write_buffer = o.tiered_write_buffer;
    co.worker.name = fmt::format("bench-ycsb-{}-{}", s.system, index);
    SetSwapOptions(o, &co);
    PULSE_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Connect(co));
    PULSE_ASSIGN_OR_RETURN(std::unique_ptr<kv::Store> store,
                           kv::Store::Create(client.get(), StoreOptionsFor(o, s.system)));
    PULSE_RETURN_IF_ERROR(LoadStore(s, client.get(), *store, index));
    std::unique_ptr<PageCacheMemory> pages;  // empty at first: far memory holds the store
    if (s.system == "paging") pages = std::make_unique<PageCacheMemory>(client.get(), PageCachePages(o));
    std::unique_ptr<RpcClient> rpc;
    if (s.system == "object-rpc" || UsesTieredRrpc(o, s.system)) {
      RpcOptions ro;
      ro.path = RpcPath::kDirect;
      if (s.system == "object-rpc" && HasWrites(o.workload.workload)) {
        // PUTs run the native kv_put handler, which writes: never
        // retransmitted (pulse/rpc_kv.h), so one attempt with a long wait.
        ro.max_attempts = 1;
        ro.request_timeout = std::chrono::seconds(30);
      }
      PULSE_ASSIGN_OR_RETURN(rpc, RpcClient::Create(client.get(), ro));
      // object-rpc's writes (and inserts) as RPCs too; the load above ran
      // as offloaded programs.
      if (s.system == "object-rpc" && !UsesRrpc(o, s.system)) store->SetRunner(rpc::KvStoreRunner(rpc.get()));
    }
    std::unique_ptr<RrpcKv> rrpc;
    std::optional<uint32_t> rack_node;
    if (UsesRrpc(o, s.system) || UsesTieredRrpc(o, s.system)) {
      RrpcOptions rro;
      rro.inline_threshold = o.rrpc_threshold.value_or(rro.inline_threshold);
      rro.cache_addresses = o.rrpc_cache;
      rro.values_are_objects = UsesRrpc(o, s.system);
      PULSE_ASSIGN_OR_RETURN(rrpc, RrpcKv::Create(rpc.get(), store.get(), rro));
      if (UsesTieredRrpc(o, s.system)) rack_node = static_cast<uint32_t>(rack.at(0) - 'a');  // RackName(i): node i
    }
    PULSE_ASSIGN_OR_RETURN(ProgramRef get, EmbeddedProgram<iterators::kv_get>("kv_get"));
    ClientKv kv(s, store.get(), rpc.get(), rrpc.get(), rack_node, pages.get(), get);
    PULSE_ASSIGN_OR_RETURN(std::unique_ptr<YcsbStream> stream, YcsbStream::Create(o.workload, index));
    std::vector<uint64_t> version(o.workload.records, 0);  // of each key this client wrote
    s.loaded.fetch_add(1);
    arrive();
    PULSE_RETURN_IF_ERROR(out->status);

    auto read_checked = [&](uint64_t k) -> Status {
      const std::string key = YcsbKey(k, o.workload.key_bytes);
      PULSE_ASSIGN_OR_RETURN(std::optional<std::string> v, kv.Read(key));
      if (!v.has_value() || *v != YcsbValue(k, version[k], o.workload.value_bytes))
        return Status::Internal(fmt::format("bench ycsb [{}]: client {} read key {} ({}) and found {} instead of version {}",
                                            s.system, index, k, key, v ? "another value" : "nothing", version[k]));
      ++out->verified;
      return Status::Ok();
    };
    auto write = [&](uint64_t k) -> Status {
      const uint64_t v = version[k] + 1;
      PULSE_RETURN_IF_ERROR(kv.Write(YcsbKey(k, o.workload.key_bytes), YcsbValue(k, v, o.workload.value_bytes)));
      version[k] = v;
      return Status::Ok();
    };
    auto one = [&](bool measured) -> Status {
      const YcsbOp op = stream->Next();
      switch (op.kind) {
        case YcsbOpKind::kRead:
          if (measured) ++out->reads;
          return read_checked(op.keynum);
        case YcsbOpKind::kUpdate:
          if (measured) ++out->updates;
          return write(op.keynum);
        case YcsbOpKind::kReadModifyWrite:
          if (measured) ++out->rmws;
          PULSE_RETURN_IF_ERROR(read_checked(op.keynum));
          return write(op.keynum);
        case YcsbOpKind::kInsert: {
          if (measured) ++out->inserts;
          if (op.keynum != version.size())
            return Status::Internal(fmt::format("bench ycsb: insert of key number {} after {}", op.keynum, version.size()));
          PULSE_RETURN_IF_ERROR(kv.Write(YcsbKey(op.keynum, o.workload.key_bytes),
                                         YcsbValue(op.keynum, 0, o.workload.value_bytes)));
          version.push_back(0);
          stream->Acknowledge(op.keynum);
          return Status::Ok();
        }
      }
      return Status::Internal("bench ycsb: unknown operation");
    };
    for (uint64_t i = 0; i < o.warmup; ++i) PULSE_RETURN_IF_ERROR(one(false));

    const net::Counters n0 = client->net_counters();
    const ClientCounters c0 = client->counters();
    const PageCacheCounters p0 = pages ? pages->counters() : PageCacheCounters{};
    const RrpcCounters r0 = rrpc ? rrpc->counters() : RrpcCounters{};
    out->latencies_us.reserve(s.ops_per_client);
    out->start = Clock::now();
    for (uint64_t i = 0; i < s.ops_per_client; ++i) {
      const auto t0 = Clock::now();
      PULSE_RETURN_IF_ERROR(one(true));
      out->latencies_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      s.done_ops.fetch_add(1, std::memory_order_relaxed);
    }
    out->end = Clock::now();
    const net::Counters& n1 = client->net_counters();
    const ClientCounters& c1 = client->counters();
    if (pages) {
      out->cache_hits = pages->counters().hits - p0.hits;
      out->cache_misses = pages->counters().faults + pages->counters().uncached - p0.faults - p0.uncached;
      out->uncached = pages->counters().uncached - p0.uncached;
    }
    if (rrpc) {
      out->rrpc_inline = rrpc->counters().inline_replies - r0.inline_replies;
      out->rrpc_address = rrpc->counters().address_replies - r0.address_replies;
      out->rrpc_cached = rrpc->counters().cached_reads - r0.cached_reads;
      out->rrpc_stale = rrpc->counters().stale_refused - r0.stale_refused;
    }
    out->buffered_writes = c1.lock_buffered_writes - c0.lock_buffered_writes;
    out->swap_requests = c1.swap_requests;  // the whole run's: pages move while loading too
    out->page_move_waits = c1.page_move_waits;
    out->messages = n1.messages_sent - n0.messages_sent;
    out->rma_ops = n1.rma_ops - n0.rma_ops;
    out->traversals = c1.traversals - c0.traversals;
    out->offloaded = c1.offloaded - c0.offloaded;
    out->local = rack.empty() ? 0 : (c1.executed_locally - c0.executed_locally);
    rrpc.reset();
    rpc.reset();
    store.reset();
    return Status::Ok();
  };
  Status st = body();
  if (!st.ok() && out->status.ok()) out->status = st;
  arrive();  // a client that failed before the gate still lets the others go
}

Result<YcsbSystemResult> RunSystem(const YcsbBenchOptions& o, const std::string& system,
                                   const std::string& switch_address) {
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  const uint32_t n = o.racks * o.clients;
  Gate gate(n);
  Shared s;
  s.o = &o;
  s.system = system;
  s.switch_address = switch_address;
  s.ops_per_client = (o.ops + n - 1) / n;
  s.gate = &gate;
  PULSE_ASSIGN_OR_RETURN(const nlohmann::json swaps_before, SwapCounters(o.ucx_tls, switch_address, /*drain=*/false));
  std::vector<ClientRun> runs(n);
  std::vector<std::thread> threads;
  say(fmt::format("[{}] {} clients ({} per rack) loading {} records each", system, n, o.clients, o.workload.records));
  for (uint32_t i = 0; i < n; ++i) {
    std::string rack;
    if (system == "tiered") rack = RackName(i % o.racks);
    if (system == "all-local") rack = RackName(0);
    threads.emplace_back([&s, &runs, i, rack] { RunClient(s, i, rack, &runs[i]); });
  }
  // Progress until every client has measured its share.
  const uint64_t total = s.ops_per_client * n;
  std::atomic<bool> joined{false};
  std::thread progress([&] {
    std::mutex m;
    std::condition_variable cv;
    std::unique_lock<std::mutex> lock(m);
    while (!joined.load()) {
      cv.wait_for(lock, std::chrono::seconds(2));
      if (joined.load()) break;
      if (s.loaded.load() < n)
        say(fmt::format("[{}] {} of {} clients loaded", system, s.loaded.load(), n));
      else
        say(fmt::format("[{}] {} of {} operations", system, s.done_ops.load(), total));
    }
  });
  for (std::thread& t : threads) t.join();
  joined = true;
  progress.join();

  YcsbSystemResult r;
  r.system = system;
  r.clients = n;
  std::vector<double> all;
  Clock::time_point first = Clock::time_point::max(), last = Clock::time_point::min();
  uint64_t messages = 0, rma = 0, traversals = 0, offloaded = 0, local = 0, hits = 0, misses = 0, uncached = 0;
  uint64_t rrpc_inline = 0, rrpc_address = 0, rrpc_cached = 0, buffered = 0;
  for (ClientRun& c : runs) {
    PULSE_RETURN_IF_ERROR(c.status);
    r.reads += c.reads;
    r.updates += c.updates;
    r.inserts += c.inserts;
    r.read_modify_writes += c.rmws;
    r.verified_reads += c.verified;
    first = std::min(first, c.start);
    last = std::max(last, c.end);
    messages += c.messages;
    rma += c.rma_ops;
    traversals += c.traversals;
    offloaded += c.offloaded;
    local += c.local;
    hits += c.cache_hits;
    misses += c.cache_misses;
    uncached += c.uncached;
    rrpc_inline += c.rrpc_inline;
    rrpc_address += c.rrpc_address;
    rrpc_cached += c.rrpc_cached;
    buffered += c.buffered_writes;
    r.swap_requests += c.swap_requests;
    r.page_move_waits += c.page_move_waits;
    r.rrpc_stale += c.rrpc_stale;
    all.insert(all.end(), c.latencies_us.begin(), c.latencies_us.end());
  }
  r.ops = all.size();
  r.seconds = std::chrono::duration<double>(last - first).count();
  r.throughput_ops = r.seconds > 0 ? static_cast<double>(r.ops) / r.seconds : 0;
  r.latency = Summarize(std::move(all));
  const double ops = std::max<double>(1, static_cast<double>(r.ops));
  r.messages_per_op = static_cast<double>(messages) / ops;
  r.one_sided_per_op = static_cast<double>(rma) / ops;
  r.offloaded_per_op = static_cast<double>(offloaded) / ops;
  // Store operations: traversals, plus (tiered RRPC) the GETs RRPC served.
  const uint64_t store_ops = traversals + (UsesTieredRrpc(o, system) ? rrpc_inline + rrpc_address + rrpc_cached : 0);
  r.local_rack_fraction = store_ops == 0 ? 0 : static_cast<double>(local) / static_cast<double>(store_ops);
  r.page_uncached_per_op = static_cast<double>(uncached) / ops;
  r.rrpc_inline_per_op = static_cast<double>(rrpc_inline) / ops;
  r.rrpc_address_per_op = static_cast<double>(rrpc_address) / ops;
  r.rrpc_cached_per_op = static_cast<double>(rrpc_cached) / ops;
  r.lock_buffered_writes_per_op = static_cast<double>(buffered) / ops;
  r.page_cache_hit_ratio = hits + misses == 0 ? 0 : static_cast<double>(hits) / static_cast<double>(hits + misses);
  if (system == "paging") r.page_cache_bytes = PageCachePages(o) * PageCacheMemory::kPageBytes;
  // The swaps the run asked for are counted once they end.
  PULSE_ASSIGN_OR_RETURN(const nlohmann::json swaps_after, SwapCounters(o.ucx_tls, switch_address, /*drain=*/true));
  r.swaps_finished = swaps_after.value("finished", uint64_t{0}) - swaps_before.value("finished", uint64_t{0});
  r.swap_outcomes = SwapOutcomesBetween(swaps_before, swaps_after);
  say(fmt::format("[{}] {:.0f} ops/s, p50 {:.1f} us, p99 {:.1f} us", system, r.throughput_ops, r.latency.p50_us,
                  r.latency.p99_us));
  return r;
}

}  // namespace

Status CheckYcsbBenchOptions(const YcsbBenchOptions& o) {
  PULSE_RETURN_IF_ERROR(CheckYcsbWorkloadOptions(o.workload));
  if (o.systems.empty()) return Status::InvalidArgument("bench ycsb: --system names no system");
  for (const std::string& sys : o.systems) {
    if (sys != "tiered" && sys != "all-local" && sys != "object-rpc" && sys != "paging")
      return Status::InvalidArgument("bench ycsb: --system " + sys + " is none of tiered, all-local, object-rpc, paging");
    if (UsesRrpc(o, sys) && HasWrites(o.workload.workload))
      return Status::FailedPrecondition(fmt::format(
          "bench ycsb: --system object-rpc with --rrpc-threshold runs GET-only workloads (C): its values are RRPC "
          "objects, which no handler writes, and workload {} writes", o.workload.workload));
    if (sys == "paging" && HasInserts(o.workload.workload))
      return Status::FailedPrecondition("bench ycsb: --system paging updates in place and cannot insert (workload D)");
  }
  if (o.workload.value_bytes > MaxItemValueBytes(o.workload.key_bytes))
    for (const std::string& sys : o.systems)
      if (!UsesRrpc(o, sys))
        return Status::InvalidArgument(fmt::format(
            "bench ycsb: --value-bytes {} does not fit a kv::Store item (at most {} with --key-bytes {}); larger "
            "values need --system object-rpc with --rrpc-threshold (they are stored as RRPC objects)",
            o.workload.value_bytes, MaxItemValueBytes(o.workload.key_bytes), o.workload.key_bytes));
  PULSE_RETURN_IF_ERROR(CheckSwapFlags("bench ycsb", o.page_bytes, o.hot_threshold));
  if (o.swap && o.tiered_rrpc)
    return Status::FailedPrecondition(
        "bench ycsb: tiered RRPC does not run with swaps: an RPC to the node a page left is answered as an invalid "
        "pointer, not sent after the page (docs/ycsb.md)");
  if (o.racks < 1 || o.racks > 26) return Status::InvalidArgument(fmt::format("bench ycsb: --racks {} is not in 1..26", o.racks));
  if (o.clients == 0) return Status::InvalidArgument("bench ycsb: --clients must be > 0");
  if (o.ops == 0) return Status::InvalidArgument("bench ycsb: --ops must be > 0");
  if (!(o.page_cache_ratio > 0 && o.page_cache_ratio <= 1))
    return Status::InvalidArgument("bench ycsb: --page-cache-ratio must be in (0, 1]");
  return Status::Ok();
}

Result<YcsbBenchResult> RunYcsbBench(const YcsbBenchOptions& o) {
  PULSE_RETURN_IF_ERROR(CheckYcsbBenchOptions(o));
  BenchClusterOptions c = BenchClusterOptionsFor("bench-ycsb", o);
  c.memory_nodes = o.racks;
  c.pool_mib = o.pool_mib;
  RackTierOptions tier;
  tier.page_bytes = o.page_bytes;
  tier.swaps = o.swap;
  PULSE_ASSIGN_OR_RETURN(RackedCluster racked, StartRackedBenchCluster(c, tier));
  const std::string address = racked.switch_address;
  cluster::ClusterGuard& guard = racked.guard;
  YcsbBenchResult res;
  res.transport = racked.transport;
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) > 0) res.load_average = load[0];
  for (const std::string& sys : o.systems) {
    PULSE_ASSIGN_OR_RETURN(YcsbSystemResult r, RunSystem(o, sys, address));
    res.systems.push_back(std::move(r));
  }
  PULSE_RETURN_IF_ERROR(StopBenchCluster(guard));
  return res;
}

nlohmann::json YcsbBenchResult::ToJson(const YcsbBenchOptions& o) const {
  nlohmann::json systems_json = nlohmann::json::array();
  for (const YcsbSystemResult& r : systems) {
    nlohmann::json j = {{"system", r.system},
                        {"clients", r.clients},
                        {"ops", r.ops},
                        {"reads", r.reads},
                        {"updates", r.updates},
                        {"inserts", r.inserts},
                        {"read_modify_writes", r.read_modify_writes},
                        {"verified_reads", r.verified_reads},
                        {"seconds", r.seconds},
                        {"throughput_ops", r.throughput_ops},
                        {"p50_us", r.latency.p50_us},
                        {"p99_us", r.latency.p99_us},
                        {"mean_us", r.latency.mean_us},
                        {"messages_per_op", r.messages_per_op},
                        {"one_sided_per_op", r.one_sided_per_op},
                        {"offloaded_per_op", r.offloaded_per_op},
                        {"local_rack_fraction", r.local_rack_fraction}};
    if (r.system == "paging") {
      j["page_cache_hit_ratio"] = r.page_cache_hit_ratio;
      j["page_cache_bytes"] = r.page_cache_bytes;
      j["page_uncached_per_op"] = r.page_uncached_per_op;
    }
    if (r.system == "tiered" || r.system == "all-local") {
      j["swap_requests"] = r.swap_requests;
      j["page_move_waits"] = r.page_move_waits;
      j["swaps_finished"] = r.swaps_finished;
      j["swap_outcomes"] = r.swap_outcomes;
    }
    if (r.system == "tiered") {
      j["write_buffer"] = o.tiered_write_buffer;
      j["lock_buffered_writes_per_op"] = r.lock_buffered_writes_per_op;
      j["rrpc"] = o.tiered_rrpc;
    }
    if (UsesRrpc(o, r.system) || UsesTieredRrpc(o, r.system)) {
      j["rrpc_inline_per_op"] = r.rrpc_inline_per_op;
      j["rrpc_address_per_op"] = r.rrpc_address_per_op;
      j["rrpc_cached_per_op"] = r.rrpc_cached_per_op;
      j["rrpc_stale"] = r.rrpc_stale;
    }
    systems_json.push_back(std::move(j));
  }
  const char w = o.workload.workload;
  return {{"workload", std::string(1, w)},
          {"distribution", HasInserts(w) ? std::string("latest") : o.workload.distribution},
          {"records", o.workload.records},
          {"item_bytes", 8 + (o.workload.key_bytes + 7) / 8 * 8 + (o.workload.value_bytes + 7) / 8 * 8},
          {"racks", o.racks},
          {"clients_per_rack", o.clients},
          {"value_bytes", o.workload.value_bytes},
          {"rrpc_threshold", o.rrpc_threshold ? nlohmann::json(*o.rrpc_threshold) : nlohmann::json("off")},
          {"rrpc_address_cache", o.rrpc_cache},
          {"swap", o.swap ? "on" : "off"},
          {"hot_threshold", o.hot_threshold},
          {"page_bytes", o.page_bytes},
          {"systems", systems_json},
          {"ucx_tls", transport},
          {"load_average_1m", load_average}};
}

}  // namespace pulse::bench
