// The offload agent's logic against a model of far memory (a plain map of
// chunks that applies operations in the order they are submitted, as a
// memory node does, and hands results back when the test says): data
// through every path equals a plain reference byte for byte; the dynamic
// cache and prefetcher hit and load exactly what a simple model of them
// predicts for a scripted sequence; aggregation turns a burst of requests
// into fewer operations (counted); the static cache loads a read-only region
// once and serves every later page (hits counted); the adaptive switch
// follows a scripted hit rate; a second writer is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "agent/adaptive_switch.h"
#include "agent/agent_core.h"
#include "agent/dynamic_cache.h"
#include "agent/recent_list.h"

namespace pulse::agent {
namespace {

constexpr uint32_t kPage = 64 << 10;
constexpr uint64_t kEntry = 1 << 20;

// Far memory as a map of allocations.
class ModelForwarder final : public Forwarder {
 public:
  void Submit(std::vector<ForwardOp> ops) override {
    for (ForwardOp& op : ops) {
      ForwardResult r{op.tag, Status::Ok(), 0, {}};
      switch (op.kind) {
        case ForwardOp::Kind::kAllocate:
          r.value = next_;
          memory_[next_] = std::vector<uint8_t>(op.bytes, 0xEE);  // not zero: preload must clear it
          next_ += op.bytes + (1 << 20);
          break;
        case ForwardOp::Kind::kPreload:
          std::fill_n(At(op.addr), op.bytes, 0);
          break;
        case ForwardOp::Kind::kRead:
          r.data.assign(At(op.addr), At(op.addr) + op.bytes);
          break;
        case ForwardOp::Kind::kWrite:
          std::copy(op.data.begin(), op.data.end(), At(op.addr));
          break;
        case ForwardOp::Kind::kFree:
          memory_.erase(op.addr);
          break;
      }
      if (stamp) r.taken = r.completed = std::chrono::steady_clock::now();
      op.data.clear();
      log.push_back(op);
      held.push_back(std::move(r));
    }
  }
  // Hands every held result to the core (in a shuffled order if `rng`), and
  // lets it issue more, until nothing is outstanding.
  void Drain(AgentCore& core, std::mt19937_64* rng = nullptr) {
    for (;;) {
      core.Flush();
      if (held.empty()) return;
      std::vector<ForwardResult> now(std::make_move_iterator(held.begin()), std::make_move_iterator(held.end()));
      held.clear();
      if (rng != nullptr) std::shuffle(now.begin(), now.end(), *rng);
      for (ForwardResult& r : now) core.OnResult(std::move(r));
    }
  }
  size_t Count(ForwardOp::Kind kind, PageClass cls) const {
    return std::count_if(log.begin(), log.end(), [&](const ForwardOp& o) { return o.kind == kind && o.cls == cls; });
  }
  uint64_t base_of_first_region() const { return uint64_t{1} << 40; }

  std::vector<ForwardOp> log;
  std::deque<ForwardResult> held;
  bool stamp = false;  // stamp results as a forwarding thread does

 private:
  uint8_t* At(uint64_t addr) {
    auto it = memory_.upper_bound(addr);
    --it;
    return it->second.data() + (addr - it->first);
  }
  std::map<uint64_t, std::vector<uint8_t>> memory_;
  uint64_t next_ = uint64_t{1} << 40;
};

// A core, its model far memory, and the replies it sent.
struct Harness {
  explicit Harness(AgentOptions o)
      : core(o, &far, [this](uint64_t host, AgentReply a) { replies[a.request_id] = std::move(a); }) {}

  uint64_t Send(AgentRequest q, uint64_t host = 1) {
    q.request_id = next_id++;
    core.OnRequest(host, std::move(q));
    return next_id - 1;
  }
  AgentReply Take(uint64_t id) {
    EXPECT_TRUE(replies.count(id)) << "no reply to request " << id;
    AgentReply a = std::move(replies[id]);
    replies.erase(id);
    return a;
  }
  Result<uint64_t> Create(const std::string& name, uint64_t bytes, bool read_only = false, uint64_t host = 1) {
    AgentRequest q;
    q.op = farmem::AgentOp::kCreateRegion;
    q.name = name;
    q.bytes = bytes;
    q.read_only = read_only;
    const uint64_t id = Send(q, host);
    far.Drain(core);
    AgentReply a = Take(id);
    if (!a.status.ok()) return a.status;
    return a.value;
  }
  uint64_t ReadAsync(uint64_t region, uint64_t first, uint32_t count, uint64_t host = 1) {
    AgentRequest q;
    q.op = farmem::AgentOp::kReadPages;
    q.region = region;
    q.first = first;
    q.count = count;
    q.page_bytes = kPage;
    return Send(q, host);
  }
  uint64_t WriteAsync(uint64_t region, uint64_t first, std::vector<uint8_t> data) {
    AgentRequest q;
    q.op = farmem::AgentOp::kWritePages;
    q.region = region;
    q.first = first;
    q.count = static_cast<uint32_t>(data.size() / kPage);
    q.page_bytes = kPage;
    q.data = std::move(data);
    return Send(q);
  }
  Status Simple(farmem::AgentOp op, uint64_t region) {
    AgentRequest q;
    q.op = op;
    q.region = region;
    const uint64_t id = Send(q);
    far.Drain(core);
    return Take(id).status;
  }

  ModelForwarder far;
  AgentCore core;
  std::map<uint64_t, AgentReply> replies;
  uint64_t next_id = 1;
};

// Page `p`'s contents in the tests' pattern (version v).
std::vector<uint8_t> PagePattern(uint64_t p, uint32_t v = 1) {
  std::vector<uint8_t> b(kPage);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>((p * 131 + i * 7 + v * 29) >> (i % 3));
  return b;
}

AgentOptions Plain() {
  AgentOptions o;
  o.static_cache = false;
  o.dynamic_cache = false;
  return o;
}

// A dynamic cache of `entries` that prefetches the entry after a scanned
// one, without the adaptive switch.
AgentOptions Prefetching(uint64_t entries) {
  AgentOptions o = Plain();
  o.dynamic_cache = true;
  o.prefetch = true;
  o.adaptive = false;
  o.prefetch_entries = 1;
  o.dynamic_cache_bytes = entries * kEntry;
  return o;
}

TEST(AgentCore, RandomReadsAndWritesMatchAPlainReferenceInEveryMode) {
  struct Mode {
    const char* name;
    AgentOptions options;
  };
  AgentOptions all;
  all.adaptive = false;
  all.dynamic_cache_bytes = 4 * kEntry;  // small: evictions happen
  all.chunk_bytes = 4 * kEntry;          // regions of several chunks
  AgentOptions small_ops = all;
  small_ops.max_op_bytes = 3 * kPage;
  const Mode modes[] = {{"proxy", ProxyAgentOptions(all)}, {"agent", all}, {"small ops", small_ops}};
  for (const Mode& m : modes) {
    SCOPED_TRACE(m.name);
    Harness h(m.options);
    constexpr uint64_t kPages = 160;  // 10 MB: several entries, three chunks
    auto id = h.Create("data", kPages * kPage);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    std::vector<uint8_t> ref(kPages * kPage, 0);
    std::mt19937_64 rng(42);
    for (int round = 0; round < 60; ++round) {
      // A burst of writes and reads to random runs of pages, answered in a
      // shuffled order (reads of a burst never overlap its writes: the host
      // agent does not read a page while it writes it back).
      struct Planned {
        bool write;
        uint64_t first;
        uint32_t count;
      };
      std::vector<Planned> plan;
      std::set<uint64_t> written;
      for (int k = 0; k < 6; ++k) {
        Planned p{rng() % 2 == 0, rng() % (kPages - 4), static_cast<uint32_t>(1 + rng() % 4)};
        if (p.write)
          for (uint32_t i = 0; i < p.count; ++i) written.insert(p.first + i);
        plan.push_back(p);
      }
      std::vector<std::pair<uint64_t, std::pair<uint64_t, uint32_t>>> reads;
      for (const Planned& p : plan) {
        if (p.write) {
          std::vector<uint8_t> data;
          for (uint32_t i = 0; i < p.count; ++i) {
            auto page = PagePattern(p.first + i, static_cast<uint32_t>(round));
            data.insert(data.end(), page.begin(), page.end());
          }
          std::copy(data.begin(), data.end(), ref.begin() + p.first * kPage);
          h.WriteAsync(*id, p.first, std::move(data));
          continue;
        }
        bool clash = false;
        for (uint32_t i = 0; i < p.count; ++i) clash |= written.count(p.first + i) != 0;
        if (!clash) reads.push_back({h.ReadAsync(*id, p.first, p.count), {p.first, p.count}});
      }
      const std::vector<uint8_t>& before = ref;
      h.far.Drain(h.core, &rng);
      for (auto& [req, range] : reads) {
        AgentReply a = h.Take(req);
        ASSERT_TRUE(a.status.ok()) << a.status.ToString();
        ASSERT_EQ(a.data.size(), uint64_t{range.second} * kPage);
        ASSERT_TRUE(std::equal(a.data.begin(), a.data.end(), before.begin() + range.first * kPage))
            << "round " << round << " pages [" << range.first << ", +" << range.second << ")";
      }
      for (auto it = h.replies.begin(); it != h.replies.end();) {  // the writes' acks
        ASSERT_TRUE(it->second.status.ok()) << it->second.status.ToString();
        it = h.replies.erase(it);
      }
    }
    // Everything read back at the end, one page at a time.
    for (uint64_t p = 0; p < kPages; ++p) {
      const uint64_t req = h.ReadAsync(*id, p, 1);
      h.far.Drain(h.core);
      AgentReply a = h.Take(req);
      ASSERT_TRUE(a.status.ok());
      ASSERT_TRUE(std::equal(a.data.begin(), a.data.end(), ref.begin() + p * kPage)) << "page " << p;
    }
  }
}

// The dynamic cache and prefetcher against a model: an entry is cached once
// it was the entry of a missed page or the entry after any requested page's
// (prefetch_entries = 1); a page hits iff its entry is cached.
TEST(AgentCore, DynamicCacheAndPrefetchMatchTheModel) {
  AgentOptions o = Prefetching(64);  // no evictions
  Harness h(o);
  constexpr uint64_t kEntries = 16, kPagesPerEntry = kEntry / kPage, kPages = kEntries * kPagesPerEntry;
  auto id = h.Create("edges", kPages * kPage);
  ASSERT_TRUE(id.ok());
  for (uint64_t p = 0; p < kPages; ++p) {
    h.WriteAsync(*id, p, PagePattern(p));
    h.far.Drain(h.core);
  }
  h.replies.clear();
  const uint64_t prefetch_ops_before = h.far.Count(ForwardOp::Kind::kRead, PageClass::kPrefetch);
  // A scripted sequence: a scan, strided reads, random jumps.
  std::vector<uint64_t> pages;
  for (uint64_t p = 0; p < 40; ++p) pages.push_back(p);
  for (uint64_t p = 100; p < kPages; p += 9) pages.push_back(p);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 60; ++i) pages.push_back(rng() % kPages);

  // The model: a miss loads its page's entry; a page that continues a
  // forward scan (one of the 8 pages requested before it lies less than an
  // entry before it) also loads the entry after its own.
  std::set<uint64_t> model;
  std::deque<uint64_t> last8;
  std::vector<uint64_t> expected_prefetches;
  uint64_t expected_hits = 0, expected_misses = 0;
  for (uint64_t p : pages) {
    const uint64_t e = p / kPagesPerEntry;
    const bool hit = model.count(e) != 0;
    (hit ? expected_hits : expected_misses) += 1;
    const bool stream = std::any_of(last8.begin(), last8.end(), [&](uint64_t q) { return q < p && p - q <= kPagesPerEntry; });
    last8.push_front(p);
    if (last8.size() > 8) last8.pop_back();
    std::vector<uint64_t> loads;
    if (!hit) loads.push_back(e);
    if (stream && e + 1 < kEntries) loads.push_back(e + 1);
    for (uint64_t l : loads)
      if (model.insert(l).second) expected_prefetches.push_back(l);

    const uint64_t hits_before = h.core.counters().dynamic_hits;
    const uint64_t req = h.ReadAsync(*id, p, 1);
    h.far.Drain(h.core);
    AgentReply a = h.Take(req);
    ASSERT_TRUE(a.status.ok());
    ASSERT_EQ(a.data, PagePattern(p)) << "page " << p;
    EXPECT_EQ(h.core.counters().dynamic_hits - hits_before, hit ? 1u : 0u) << "page " << p;
  }
  EXPECT_EQ(h.core.counters().dynamic_hits, expected_hits);
  EXPECT_EQ(h.core.counters().dynamic_misses, expected_misses);
  std::vector<uint64_t> prefetched;
  for (const ForwardOp& op : h.far.log)
    if (op.kind == ForwardOp::Kind::kRead && op.cls == PageClass::kPrefetch) {
      EXPECT_EQ(op.bytes, kEntry);
      prefetched.push_back((op.addr - h.far.base_of_first_region()) / kEntry);
    }
  prefetched.erase(prefetched.begin(), prefetched.begin() + static_cast<long>(prefetch_ops_before));
  EXPECT_EQ(prefetched, expected_prefetches);
  EXPECT_EQ(h.core.counters().prefetches, expected_prefetches.size());
}

// A scan whose pages all hit leaves nothing queued, yet the prefetcher must
// read its pages off the recent list and load the next entry (before, the
// request thread slept until some other work woke it, and a scan missed at
// every entry).  Once the list is read there is no work: nothing spins.
TEST(AgentCore, HitsAloneWakeThePrefetcher) {
  AgentOptions o = Plain();
  o.dynamic_cache = true;
  o.adaptive = false;
  o.dynamic_cache_bytes = 16 * kEntry;
  Harness h(o);
  constexpr uint64_t kPagesPerEntry = kEntry / kPage;
  auto id = h.Create("scan", 8 * kEntry);
  ASSERT_TRUE(id.ok());
  const uint64_t first = h.ReadAsync(*id, 0, 1);  // a miss: entry 0 on demand and its fill
  h.far.Drain(h.core);
  ASSERT_TRUE(h.Take(first).status.ok());
  EXPECT_EQ(h.core.counters().prefetches, 1u) << "the missed page's entry (no scan yet)";
  EXPECT_FALSE(h.core.has_work());
  const uint64_t second = h.ReadAsync(*id, 1, 1);  // a hit that continues the scan
  ASSERT_TRUE(h.Take(second).status.ok()) << "served from the cache inside the call";
  EXPECT_EQ(h.core.counters().dynamic_hits, 1u);
  EXPECT_TRUE(h.core.has_work()) << "the recent list has a page the prefetcher has not read";
  h.core.Flush();
  EXPECT_EQ(h.core.counters().prefetches, 2u);
  ASSERT_EQ(h.far.held.size(), 1u);
  EXPECT_EQ(h.far.log.back().cls, PageClass::kPrefetch);
  EXPECT_EQ((h.far.log.back().addr - h.far.base_of_first_region()) / kEntry, 1u) << "the entry after the scan's";
  EXPECT_FALSE(h.core.has_work()) << "list read, fill in flight: nothing to do until it lands";
  h.far.Drain(h.core);
  const uint64_t third = h.ReadAsync(*id, kPagesPerEntry, 1);
  ASSERT_TRUE(h.Take(third).status.ok());
  EXPECT_EQ(h.core.counters().dynamic_hits, 2u) << "entry 1 was loaded ahead of the scan";
}

// A memory operation's time is split at the forwarding thread only for
// results that thread stamped: every read and write once, nothing else.
TEST(AgentCore, StampedResultsSplitEachReadAndWriteOnce) {
  Harness h(Plain());
  auto id = h.Create("split", 4 * kPage);
  ASSERT_TRUE(id.ok());
  h.WriteAsync(*id, 0, PagePattern(0));
  h.far.Drain(h.core);
  EXPECT_EQ(h.core.counters().forward_timed, 0u) << "unstamped results are not split";
  h.far.stamp = true;
  const uint64_t ops_before = h.core.counters().memory_ops;
  h.WriteAsync(*id, 1, PagePattern(1));
  h.ReadAsync(*id, 0, 2);
  h.far.Drain(h.core);
  EXPECT_EQ(h.core.counters().forward_timed, h.core.counters().memory_ops - ops_before);
  EXPECT_EQ(h.core.Stats()["forward_timed"], h.core.counters().forward_timed);
}

TEST(AgentCore, AggregationTurnsABurstIntoFewerOperations) {
  for (bool aggregate : {true, false}) {
    SCOPED_TRACE(aggregate ? "aggregation" : "none");
    AgentOptions o = Plain();
    o.aggregation = aggregate;
    Harness h(o);
    auto id = h.Create("burst", 4 * kEntry);
    ASSERT_TRUE(id.ok());
    const size_t writes_before = h.far.Count(ForwardOp::Kind::kWrite, PageClass::kWriteBack);
    // Sixteen write-backs of adjacent pages, queued together.
    for (uint64_t p = 16; p < 32; ++p) h.WriteAsync(*id, p, PagePattern(p));
    h.far.Drain(h.core);
    h.replies.clear();
    EXPECT_EQ(h.far.Count(ForwardOp::Kind::kWrite, PageClass::kWriteBack) - writes_before, aggregate ? 1u : 16u);
    // Sixteen reads of those pages, and the same page from a second host.
    std::vector<uint64_t> reqs;
    for (uint64_t p = 16; p < 32; ++p) reqs.push_back(h.ReadAsync(*id, p, 1));
    const uint64_t twin = h.ReadAsync(*id, 20, 1, /*host=*/2);
    h.far.Drain(h.core);
    EXPECT_EQ(h.far.Count(ForwardOp::Kind::kRead, PageClass::kOnDemand), aggregate ? 1u : 17u);
    for (uint64_t p = 16; p < 32; ++p) EXPECT_EQ(h.Take(reqs[p - 16]).data, PagePattern(p)) << "page " << p;
    EXPECT_EQ(h.Take(twin).data, PagePattern(20));
    EXPECT_EQ(h.core.counters().forwarded_requests, 16u + 17u);
    EXPECT_EQ(h.core.counters().memory_ops, aggregate ? 2u : 33u);
  }
}

TEST(AgentCore, WithoutAsyncForwardingOneOperationIsInFlight) {
  for (bool async : {true, false}) {
    AgentOptions o = Plain();
    o.aggregation = false;
    o.async_forwarding = async;
    Harness h(o);
    auto id = h.Create("window", 4 * kEntry);
    ASSERT_TRUE(id.ok());
    for (uint64_t p = 0; p < 20; ++p) h.ReadAsync(*id, p, 1);
    h.core.Flush();
    EXPECT_EQ(h.core.in_flight(), async ? 20u : 1u);
    h.far.Drain(h.core);
    EXPECT_EQ(h.replies.size(), 20u);
    EXPECT_EQ(h.core.counters().max_in_flight_seen, async ? 20u : 1u);
  }
}

TEST(AgentCore, StaticCacheLoadsAReadOnlyRegionOnceAndCountsEveryHit) {
  AgentOptions o = Plain();
  o.static_cache = true;
  o.static_cache_bytes = 4 * kEntry;
  Harness h(o);
  auto id = h.Create("vertices", 2 * kEntry);
  ASSERT_TRUE(id.ok());
  constexpr uint64_t kPages = 2 * kEntry / kPage;
  for (uint64_t p = 0; p < kPages; ++p) h.WriteAsync(*id, p, PagePattern(p));
  h.far.Drain(h.core);
  h.replies.clear();
  ASSERT_TRUE(h.Simple(farmem::AgentOp::kMarkReadOnly, *id).ok());
  EXPECT_EQ(h.far.Count(ForwardOp::Kind::kRead, PageClass::kStaticLoad), 2u);  // 1 MB operations
  EXPECT_EQ(h.core.counters().static_regions, 1u);
  const size_t ops_before = h.far.log.size();
  for (int pass = 0; pass < 3; ++pass)
    for (uint64_t p = 0; p < kPages; ++p) {
      const uint64_t req = h.ReadAsync(*id, p, 1);
      h.far.Drain(h.core);
      ASSERT_EQ(h.Take(req).data, PagePattern(p));
    }
  EXPECT_EQ(h.far.log.size(), ops_before) << "served from the agent: nothing reaches far memory";
  EXPECT_EQ(h.core.counters().static_hits, 3 * kPages);
  // Read-only now: a write-back is refused.
  const uint64_t w = h.WriteAsync(*id, 0, PagePattern(0, 9));
  EXPECT_EQ(h.Take(w).status.code(), Status::Code::kFailedPrecondition);
}

TEST(AgentCore, StaticCacheSkipsARegionOverItsBudget) {
  AgentOptions o = Plain();
  o.static_cache = true;
  o.static_cache_bytes = kEntry;
  Harness h(o);
  auto id = h.Create("big", 2 * kEntry);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(h.Simple(farmem::AgentOp::kMarkReadOnly, *id).ok());
  EXPECT_EQ(h.far.Count(ForwardOp::Kind::kRead, PageClass::kStaticLoad), 0u);
  const uint64_t req = h.ReadAsync(*id, 3, 1);
  h.far.Drain(h.core);
  EXPECT_TRUE(h.Take(req).status.ok());
  EXPECT_EQ(h.core.counters().static_hits, 0u);
}

TEST(AgentCore, AWriteThatMeetsAFillingEntryIsNotLost) {
  AgentOptions o = Plain();
  o.dynamic_cache = true;
  o.adaptive = false;
  Harness h(o);
  auto id = h.Create("patch", 2 * kEntry);
  ASSERT_TRUE(id.ok());
  const uint64_t r0 = h.ReadAsync(*id, 0, 1);  // miss: on demand + fill of entry 0, held
  h.core.Flush();
  ASSERT_FALSE(h.far.held.empty());
  // The fill has read the old page 1 (the model applies at submit); the
  // write-back of page 1 comes before the fill's result.
  const uint64_t w = h.WriteAsync(*id, 1, PagePattern(1, 5));
  h.far.Drain(h.core);
  EXPECT_TRUE(h.Take(r0).status.ok());
  EXPECT_TRUE(h.Take(w).status.ok());
  const uint64_t hits = h.core.counters().dynamic_hits;
  const uint64_t r1 = h.ReadAsync(*id, 1, 1);
  h.far.Drain(h.core);
  EXPECT_EQ(h.core.counters().dynamic_hits, hits + 1);
  EXPECT_EQ(h.Take(r1).data, PagePattern(1, 5));
}

TEST(AgentCore, OneWriterPerRegionAndReadOnlySharing) {
  Harness h(Plain());
  auto id = h.Create("graph", kEntry, /*read_only=*/false, /*host=*/1);
  ASSERT_TRUE(id.ok());
  auto second = h.Create("graph", kEntry, /*read_only=*/false, /*host=*/2);
  EXPECT_EQ(second.status().code(), Status::Code::kAlreadyExists);
  EXPECT_NE(second.status().message().find("'graph'"), std::string::npos) << second.status().message();
  auto reader = h.Create("graph", kEntry, /*read_only=*/true, /*host=*/2);
  EXPECT_EQ(reader.status().code(), Status::Code::kFailedPrecondition) << "not read-only yet";
  ASSERT_TRUE(h.Simple(farmem::AgentOp::kMarkReadOnly, *id).ok());
  EXPECT_EQ(h.Create("graph", 2 * kEntry, /*read_only=*/true, /*host=*/2).status().code(),
            Status::Code::kInvalidArgument) << "larger than the region";
  reader = h.Create("graph", kEntry, /*read_only=*/true, /*host=*/2);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(*reader, *id);
  EXPECT_EQ(h.Create("nothing", kEntry, /*read_only=*/true, /*host=*/2).status().code(), Status::Code::kNotFound)
      << "no region of that name to attach";
  // The writer's process goes away; the reader keeps the region.
  h.core.OnHostGone(1);
  h.far.Drain(h.core);
  const uint64_t req = h.ReadAsync(*id, 0, 1, /*host=*/2);
  h.far.Drain(h.core);
  EXPECT_TRUE(h.Take(req).status.ok());
  h.core.OnHostGone(2);
  h.far.Drain(h.core);
  EXPECT_EQ(h.far.Count(ForwardOp::Kind::kFree, PageClass::kOnDemand), 1u);
  auto again = h.Create("graph", kEntry);
  EXPECT_TRUE(again.ok()) << "the name is free once every opener left";
  auto replaced = h.Create("graph", 2 * kEntry);
  ASSERT_TRUE(replaced.ok()) << "its writer may replace it";
  EXPECT_NE(*replaced, *again);
}

TEST(AgentCore, BadRequestsGetErrorsNamingTheRegion) {
  Harness h(Plain());
  auto id = h.Create("small", kEntry);
  ASSERT_TRUE(id.ok());
  const uint64_t past = h.ReadAsync(*id, kEntry / kPage, 1);
  AgentReply a = h.Take(past);
  EXPECT_EQ(a.status.code(), Status::Code::kOutOfRange);
  EXPECT_NE(a.status.message().find("'small'"), std::string::npos) << a.status.message();
  const uint64_t none = h.ReadAsync(*id + 7, 0, 1);
  EXPECT_EQ(h.Take(none).status.code(), Status::Code::kNotFound);
}

TEST(AgentCore, RepliesToAcceptedRequestsCarryTheirArrivalStamp) {
  Harness h(Plain());
  auto id = h.Create("stamped", kEntry);
  ASSERT_TRUE(id.ok());
  const uint64_t before = farmem::AgentClockNanos();
  const uint64_t read = h.ReadAsync(*id, 0, 1);
  h.far.Drain(h.core);
  AgentReply a = h.Take(read);
  ASSERT_TRUE(a.status.ok()) << a.status.ToString();
  EXPECT_GE(a.stamps.received_ns, before) << "the core stamps a read when it takes it";
  EXPECT_LE(a.stamps.received_ns, farmem::AgentClockNanos());
  EXPECT_EQ(a.stamps.replied_ns, 0u) << "the server stamps the reply as it sends it";
  const uint64_t refused = h.ReadAsync(*id, kEntry / kPage, 1);  // past the region
  AgentReply r = h.Take(refused);
  EXPECT_EQ(r.status.code(), Status::Code::kOutOfRange);
  EXPECT_EQ(r.stamps.received_ns, 0u) << "a refusal is not timed";
}

// The switch itself with a scripted hit rate: windows of 10 lookups.
TEST(AdaptiveSwitch, FollowsAScriptedHitRate) {
  AdaptiveSwitch s(0.5, 10, true);
  auto window = [&](int hits) {
    bool flipped = false;
    for (int i = 0; i < 10; ++i) flipped |= s.Record(i < hits);
    return flipped;
  };
  EXPECT_TRUE(s.on());
  EXPECT_FALSE(window(9));  // 90%: stays on
  EXPECT_TRUE(s.on());
  EXPECT_FALSE(window(5));  // exactly the threshold: on
  EXPECT_TRUE(window(4));   // 40%: off
  EXPECT_FALSE(s.on());
  EXPECT_DOUBLE_EQ(s.last_rate(), 0.4);
  EXPECT_FALSE(window(3));  // predicted 30%: stays off
  EXPECT_TRUE(window(6));   // predicted 60%: on again
  EXPECT_TRUE(s.on());
  EXPECT_EQ(s.turned_off(), 1u);
  EXPECT_EQ(s.turned_on(), 1u);
  EXPECT_EQ(s.windows(), 5u);
  AdaptiveSwitch fixed(0.5, 10, /*adaptive=*/false);
  for (int i = 0; i < 30; ++i) fixed.Record(false);
  EXPECT_TRUE(fixed.on());
}

TEST(AdaptiveSwitch, ThresholdIsTheBandwidthRatio) {
  EXPECT_DOUBLE_EQ(HitRateThreshold(1, 2), 0.5);
  EXPECT_NEAR(HitRateThreshold(1, 3), 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(HitRateThreshold(5, 2), 1.0);
  EXPECT_DOUBLE_EQ(HitRateThreshold(0, 2), 0.5);
}

// In the agent: random reads over a small cache switch it off; a scan
// switches it back on (its prediction from the recent list passes).
// A dynamic cache of `entries` with the adaptive switch deciding every 64
// lookups at 50%.
AgentOptions Adaptive(uint64_t entries) {
  AgentOptions o = Plain();
  o.dynamic_cache = true;
  o.adaptive = true;
  o.adaptive_window = 64;
  o.hit_rate_threshold = 0.5;
  o.dynamic_cache_bytes = entries * kEntry;
  return o;
}

TEST(AgentCore, DynamicCacheSwitchesOffOnRandomReadsAndBackOnForAScan) {
  Harness h(Adaptive(2));
  constexpr uint64_t kPages = 64 * kEntry / kPage;
  auto id = h.Create("random", kPages * kPage);
  ASSERT_TRUE(id.ok());
  std::mt19937_64 rng(9);
  for (int i = 0; i < 256 && h.core.dynamic_on(); ++i) {
    h.ReadAsync(*id, rng() % kPages, 1);
    h.far.Drain(h.core);
  }
  EXPECT_FALSE(h.core.dynamic_on());
  EXPECT_EQ(h.core.adaptive_switch().turned_off(), 1u);
  EXPECT_LT(h.core.adaptive_switch().last_rate(), 0.5);
  const uint64_t prefetches = h.core.counters().prefetches;
  for (uint64_t p = 0; p < 256 && !h.core.dynamic_on(); ++p) {
    h.ReadAsync(*id, p, 1);
    h.far.Drain(h.core);
    if (!h.core.dynamic_on()) ASSERT_EQ(h.core.counters().prefetches, prefetches) << "no prefetch while off";
  }
  EXPECT_TRUE(h.core.dynamic_on());
  EXPECT_EQ(h.core.adaptive_switch().turned_on(), 1u);
}

// Eviction against a model: a scan through a region while two vertex-data
// entries are looked up between its pages (a graph application's pull
// round).  The cache holds those two, the entry scanned, the one before it
// and the one prefetched after it; the entries of the last 32 requested
// pages are spared, so each prefetch evicts the entry two before the scan,
// the only one not in use, and after the first touches every lookup hits.
// Plain random eviction over the five threw out a vertex entry on most runs.
TEST(AgentCore, EvictionSparesTheEntriesInUse) {
  AgentOptions o = Prefetching(5);
  constexpr uint64_t kPagesPerEntry = kEntry / kPage, kEntries = 16;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    o.seed = seed;
    Harness h(o);
    auto edges = h.Create("edges", kEntries * kEntry);
    auto vertices = h.Create("vertices", 2 * kEntry);
    ASSERT_TRUE(edges.ok() && vertices.ok());
    for (uint64_t p = 0; p < kEntries * kPagesPerEntry; ++p) {
      h.WriteAsync(*edges, p, PagePattern(p));
      h.far.Drain(h.core);
    }
    for (uint64_t p : {uint64_t{3}, kPagesPerEntry + 5}) {
      h.WriteAsync(*vertices, p, PagePattern(1000 + p));
      h.far.Drain(h.core);
    }
    h.replies.clear();
    auto read = [&](uint64_t region, uint64_t page, uint64_t pattern) {
      const uint64_t req = h.ReadAsync(region, page, 1);
      h.far.Drain(h.core);
      AgentReply a = h.Take(req);
      ASSERT_TRUE(a.status.ok());
      ASSERT_EQ(a.data, PagePattern(pattern)) << "page " << page;
    };
    for (uint64_t p = 0; p < kEntries * kPagesPerEntry; ++p) {
      read(*vertices, 3, 1003);
      read(*edges, p, p);
      read(*vertices, kPagesPerEntry + 5, 1000 + kPagesPerEntry + 5);
    }
    const AgentCounters& c = h.core.counters();
    EXPECT_EQ(c.dynamic_misses, 3u) << "seed " << seed << ": only the first touches of the vertex entries and the scan";
    EXPECT_EQ(c.dynamic_misses_evicted, 0u) << "seed " << seed;
    EXPECT_EQ(c.dynamic_hits, 3 * kEntries * kPagesPerEntry - 3);
    EXPECT_EQ(h.core.dynamic_cache().evictions(), kEntries - 3) << "one per prefetch once full";
    EXPECT_EQ(h.core.dynamic_cache().evicted_unused(), 0u) << "every prefetched entry was used";
  }
}

// The adaptive switch against CC's pattern: a scan (dense rounds) keeps the
// cache on; random pages over a region four times the cache (sparse rounds)
// switch it off within two windows, and it stays off: its prediction counts
// only the entries the cache could hold (8 of 32), where the recent list's
// 128 random pages touch nearly all of them.  A scan turns it back on.
// Every lookup is counted once: a hit, a miss, or a lookup while off.
TEST(AgentCore, RandomPagesKeepTheSwitchOffAndEveryLookupIsCounted) {
  const AgentOptions o = Adaptive(8);
  Harness h(o);
  constexpr uint64_t kPages = 32 * kEntry / kPage;
  auto id = h.Create("edges", kPages * kPage);
  ASSERT_TRUE(id.ok());
  uint64_t lookups = 0;
  auto read = [&](uint64_t page) {
    const uint64_t req = h.ReadAsync(*id, page, 1);
    h.far.Drain(h.core);
    ASSERT_TRUE(h.Take(req).status.ok());
    ++lookups;
  };
  for (uint64_t p = 0; p < kPages; ++p) read(p);
  EXPECT_TRUE(h.core.dynamic_on());
  EXPECT_EQ(h.core.adaptive_switch().turned_off(), 0u);
  const uint64_t counted_after_scan = h.core.counters().dynamic_hits + h.core.counters().dynamic_misses;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 2048; ++i) read(rng() % kPages);
  EXPECT_FALSE(h.core.dynamic_on());
  EXPECT_EQ(h.core.adaptive_switch().turned_off(), 1u);
  EXPECT_EQ(h.core.adaptive_switch().turned_on(), 0u) << "random pages must not predict hits";
  const AgentCounters& c = h.core.counters();
  EXPECT_LE(c.dynamic_hits + c.dynamic_misses - counted_after_scan, 2 * o.adaptive_window);
  EXPECT_EQ(c.dynamic_hits + c.dynamic_misses + c.dynamic_lookups_off, lookups);
  for (uint64_t p = 0; p < kPages && !h.core.dynamic_on(); ++p) read(p);
  EXPECT_TRUE(h.core.dynamic_on()) << "a scan predicts hits";
  EXPECT_EQ(c.dynamic_hits + c.dynamic_misses + c.dynamic_lookups_off, lookups);
}

TEST(DynamicCache, EvictionSparesWhatTheCallerNamesWhileItCan) {
  DynamicCache c(3, 16, 1);
  for (uint64_t e = 0; e < 3; ++e) c.Filled(c.Insert({1, e}), std::vector<uint8_t>(16, 1));
  auto in_use = [](const CacheKey& k) { return k.entry == 0 || k.entry == 2; };
  for (uint64_t e = 3; e < 10; ++e) {
    ASSERT_NE(c.Insert({1, e}, in_use), nullptr);
    c.Filled(c.Find({1, e}), std::vector<uint8_t>(16, 1));
    EXPECT_NE(c.Find({1, 0}), nullptr) << "spared";
    EXPECT_NE(c.Find({1, 2}), nullptr) << "spared";
    EXPECT_EQ(c.Find({1, e == 3 ? 1 : e - 1}), nullptr) << "the one entry not named went";
  }
  // Every unpinned entry named: one of them goes all the same.
  ASSERT_NE(c.Insert({2, 0}, [](const CacheKey&) { return true; }), nullptr);
  EXPECT_EQ(c.size(), 3u);
}

TEST(DynamicCache, EvictsOnlyUnpinnedEntries) {
  DynamicCache c(2, 16, 1);
  CacheEntry* a = c.Insert({1, 0});
  CacheEntry* b = c.Insert({1, 1});
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(c.Insert({1, 2}), nullptr) << "both filling: pinned";
  c.Filled(c.Find({1, 1}), std::vector<uint8_t>(16, 7));
  c.Find({1, 1})->waiters.push_back({});
  EXPECT_EQ(c.Insert({1, 2}), nullptr) << "a waiter pins a ready entry";
  c.Find({1, 1})->waiters.clear();
  ASSERT_NE(c.Insert({1, 2}), nullptr);
  EXPECT_EQ(c.Find({1, 1}), nullptr) << "the only unpinned entry went";
  EXPECT_NE(c.Find({1, 0}), nullptr);
  EXPECT_EQ(c.evictions(), 1u);
  EXPECT_EQ(c.size(), 2u);
}

// The diagnostics behind the CC analysis (docs/farmem_agent.md): a miss on
// an evicted entry is told from a first touch, and an entry evicted before
// any lookup found it is counted.
TEST(DynamicCache, RemembersEvictedEntriesAndCountsTheUnused) {
  DynamicCache c(1, 16, 1);
  CacheEntry* a = c.Insert({1, 0});
  c.Filled(a, std::vector<uint8_t>(16, 1));
  a->lookups = 3;
  ASSERT_NE(c.Insert({1, 1}), nullptr);  // evicts {1,0}, which was used
  EXPECT_TRUE(c.WasEvicted({1, 0}));
  EXPECT_FALSE(c.WasEvicted({1, 1}));
  EXPECT_EQ(c.evicted_unused(), 0u);
  c.Filled(c.Find({1, 1}), std::vector<uint8_t>(16, 2));
  ASSERT_NE(c.Insert({1, 0}), nullptr);  // evicts {1,1}, never looked up
  EXPECT_EQ(c.evicted_unused(), 1u);
  EXPECT_FALSE(c.WasEvicted({1, 0})) << "cached again";
  EXPECT_TRUE(c.WasEvicted({1, 1}));
  c.ForgetEvicted(1);
  EXPECT_FALSE(c.WasEvicted({1, 1})) << "the region is gone";
}

TEST(RecentList, KeepsTheLastPagesAndCountsWhatTheReaderLost) {
  RecentList r(4);
  for (uint64_t i = 0; i < 6; ++i) r.Push({1, i * kPage, false});
  std::vector<uint64_t> seen;
  while (auto p = r.Next()) seen.push_back(p->offset / kPage);
  EXPECT_EQ(seen, (std::vector<uint64_t>{2, 3, 4, 5}));
  EXPECT_EQ(r.lost(), 2u);
  std::vector<uint64_t> newest;
  r.ForEach([&](const RecentPage& p) { newest.push_back(p.offset / kPage); });
  EXPECT_EQ(newest, (std::vector<uint64_t>{5, 4, 3, 2}));
}

}  // namespace
}  // namespace pulse::agent
