// The ring layouts under a mixed fast/slow load (ring_bench.h).
#include "bench/ring_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <future>
#include <memory>
#include <random>
#include <thread>
#include <unordered_map>

#include "net/ring_client.h"
#include "net/ring_host.h"
#include "pulse/net.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr uint64_t kWarmupEntries = 1000;
constexpr auto kLayoutDeadline = 120s;

net::WorkerOptions WorkerFor(const RingBenchOptions& o, const char* name) {
  net::WorkerOptions w;
  w.insecure = true;  // both ends are this process: nobody else is told the port
  w.transports = o.transports;
  w.name = name;
  w.poll_mode = net::PollMode::kBusy;
  return w;
}

// The memory node's side: a RingHost on its own thread that answers fast
// entries as it takes them and slow ones slow_us later.
class SlowHost {
 public:
  explicit SlowHost(const RingBenchOptions& o) : slow_(std::chrono::microseconds(o.slow_us)) {
    std::promise<Result<uint16_t>> started;
    std::future<Result<uint16_t>> port = started.get_future();
    thread_ = std::thread([this, o, &started] { Run(o, started); });
    port_ = port.get();
  }
  ~SlowHost() {
    stop_.store(true);
    thread_.join();
  }
  const Result<uint16_t>& port() const { return port_; }

 private:
  struct Due {
    uint32_t ring;
    uint64_t seq;
    Clock::time_point at;
  };

  void Run(const RingBenchOptions& o, std::promise<Result<uint16_t>>& started) {
    Result<std::unique_ptr<net::Worker>> w = net::Worker::Create(WorkerFor(o, "bench-ring-host"));
    if (!w.ok()) return started.set_value(w.status());
    std::unique_ptr<net::Worker> worker = std::move(w).value();
    Result<uint16_t> port = worker->Listen("127.0.0.1", 0);
    if (!port.ok()) return started.set_value(port.status());
    net::ring::RingHost* self = nullptr;
    std::deque<Due> due;  // in order of `at`: every slow entry waits as long
    Result<std::unique_ptr<net::ring::RingHost>> h =
        net::ring::RingHost::Create(worker.get(), {}, [&](const net::ring::RingHost::Request& r) {
          if (!r.payload.empty() && r.payload[0] == 1) {
            due.push_back(Due{r.ring, r.seq, Clock::now() + slow_});
            return;
          }
          (void)self->Respond(r.ring, r.seq, Status::Ok(), r.payload.first(std::min<size_t>(8, r.payload.size())));
        });
    if (!h.ok()) return started.set_value(h.status());
    std::unique_ptr<net::ring::RingHost> host = std::move(h).value();
    self = host.get();
    worker->SetDisconnectHandler([self](net::EndpointId ep, const Status&) { self->Close(ep); });
    started.set_value(*port);
    while (!stop_.load(std::memory_order_relaxed)) {
      worker->Progress();
      host->Poll();
      const Clock::time_point now = Clock::now();
      while (!due.empty() && due.front().at <= now) {
        (void)host->Respond(due.front().ring, due.front().seq, Status::Ok(), {});
        due.pop_front();
      }
      if (host->MaySleep()) {
        (void)worker->WaitForEvent(due.empty() ? now + 1ms : std::min(due.front().at, now + 1ms));
      }
    }
    host.reset();
  }

  std::chrono::microseconds slow_;
  std::atomic<bool> stop_{false};
  Result<uint16_t> port_ = Status::Internal("not started");
  std::thread thread_;
};

RingLatency Summary(std::vector<double> us) {
  RingLatency l;
  l.count = us.size();
  if (us.empty()) return l;
  std::sort(us.begin(), us.end());
  auto at = [&us](double q) { return us[std::min(us.size() - 1, static_cast<size_t>(q * us.size()))]; };
  l.p50_us = at(0.5);
  l.p99_us = at(0.99);
  l.p999_us = at(0.999);
  l.max_us = us.back();
  return l;
}

Result<RingLayoutResult> RunLayout(const RingBenchOptions& o, net::ring::Layout layout) {
  SlowHost host(o);
  PULSE_RETURN_IF_ERROR(host.port().status());
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<net::Worker> worker, net::Worker::Create(WorkerFor(o, "bench-ring-client")));
  PULSE_ASSIGN_OR_RETURN(net::EndpointId ep, worker->Connect("127.0.0.1", *host.port(), 10s));
  net::ring::RingClientOptions ro;
  ro.geometry = net::ring::MakeGeometry(layout, o.slots, o.slot_bytes);
  ro.require_native_rma = false;
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<net::ring::RingClient> ring, net::ring::RingClient::Open(worker.get(), ep, ro));

  RingLayoutResult r;
  r.layout = net::ring::LayoutName(layout);
  r.one_sided = ring->native_rma();
  r.ring_bytes = ro.geometry.ring_bytes();
  struct Posted {
    Clock::time_point wanted;
    bool slow;
    bool measured;
    bool waited = false;  // a post of it was refused
  };
  std::unordered_map<uint64_t, Posted> posted;
  std::vector<double> fast_us, slow_us;
  std::mt19937_64 rng(o.seed);
  std::bernoulli_distribution slow_pick(o.slow_fraction);
  std::vector<uint8_t> payload(o.payload_bytes, 0);
  const uint64_t total = kWarmupEntries + o.entries;
  uint64_t next = 0;  // entries posted so far
  std::optional<Posted> waiting;  // the entry the client wants to post, since when
  Clock::time_point t0{}, last_say = Clock::now();
  const Clock::time_point deadline = Clock::now() + kLayoutDeadline;
  uint64_t answered = 0;
  const net::ring::RingClientCounters c0 = ring->counters();
  while (answered < total) {
    if (Clock::now() > deadline) {
      return Status::Timeout(fmt::format("bench ring ({}): {} of {} entries answered in {} s", r.layout, answered, total,
                                         kLayoutDeadline.count()));
    }
    while (next < total && ring->in_flight() < o.in_flight) {
      if (!waiting.has_value()) {
        if (next == kWarmupEntries) t0 = Clock::now();
        waiting = Posted{Clock::now(), slow_pick(rng), next >= kWarmupEntries};
      }
      payload[0] = waiting->slow ? 1 : 0;
      Result<uint64_t> seq = ring->Post(payload);
      if (!seq.ok()) {
        if (seq.status().code() != Status::Code::kResourceExhausted) return seq.status();
        if (!waiting->waited && waiting->measured) ++r.entries_waited;
        waiting->waited = true;
        break;  // no credit or room: wait for answers, the entry keeps its time
      }
      posted.emplace(*seq, *waiting);
      waiting.reset();
      ++next;
    }
    worker->Progress();
    Status failed = Status::Ok();
    answered += ring->Poll([&](uint64_t seq, const Status& s, std::span<const uint8_t>) {
      if (!s.ok()) failed = s;
      auto it = posted.find(seq);
      if (it == posted.end()) return;
      if (it->second.measured) {
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - it->second.wanted).count();
        (it->second.slow ? slow_us : fast_us).push_back(us);
      }
      posted.erase(it);
    });
    PULSE_RETURN_IF_ERROR(failed);
    if (o.progress && Clock::now() - last_say > 2s) {
      last_say = Clock::now();
      o.progress(fmt::format("{}: {} of {} entries", r.layout, answered, total));
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.entries_per_s = o.entries / std::max(r.seconds, 1e-9);
  r.fast = Summary(std::move(fast_us));
  r.slow = Summary(std::move(slow_us));
  r.refused_full = ring->counters().refused_full - c0.refused_full;
  r.refused_space = ring->counters().refused_space - c0.refused_space;
  ring.reset();
  worker.reset();
  return r;
}

nlohmann::json LatencyJson(const RingLatency& l) {
  return {{"count", l.count}, {"p50_us", l.p50_us}, {"p99_us", l.p99_us}, {"p999_us", l.p999_us}, {"max_us", l.max_us}};
}

}  // namespace

Result<RingBenchResult> RunRingBench(const RingBenchOptions& o) {
  std::vector<net::ring::Layout> layouts;
  for (const std::string& name : o.layouts) {
    PULSE_ASSIGN_OR_RETURN(net::ring::Layout l, net::ring::ParseLayout(name));
    layouts.push_back(l);
  }
  if (layouts.empty()) return Status::InvalidArgument("bench ring: no layout to run");
  if (!(o.slow_fraction >= 0 && o.slow_fraction <= 1)) {
    return Status::InvalidArgument(fmt::format("bench ring: --slow-fraction {} not in [0, 1]", o.slow_fraction));
  }
  if (o.payload_bytes == 0 || o.payload_bytes + net::ring::kHeaderBytes + net::ring::kTrailerBytes > o.slot_bytes) {
    return Status::InvalidArgument(fmt::format("bench ring: --payload {} must be in [1, slot bytes {} - 32]",
                                               o.payload_bytes, o.slot_bytes));
  }
  if (o.in_flight == 0) return Status::InvalidArgument("bench ring: --in-flight is 0");
  PULSE_RETURN_IF_ERROR(net::ring::MakeGeometry(net::ring::Layout::kDoubleLayer, o.slots, o.slot_bytes).Validate());
  RingBenchResult res;
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) > 0) res.load_average = load[0];
  for (net::ring::Layout l : layouts) {
    if (o.progress) o.progress(fmt::format("layout {}", net::ring::LayoutName(l)));
    PULSE_ASSIGN_OR_RETURN(RingLayoutResult r, RunLayout(o, l));
    res.layouts.push_back(std::move(r));
  }
  return res;
}

nlohmann::json RingBenchResult::ToJson(const RingBenchOptions& o) const {
  nlohmann::json j;
  j["config"] = {{"slots", o.slots},         {"slot_bytes", o.slot_bytes},       {"payload_bytes", o.payload_bytes},
                 {"in_flight", o.in_flight}, {"slow_fraction", o.slow_fraction}, {"slow_us", o.slow_us},
                 {"entries", o.entries},     {"seed", o.seed},
                 {"transports", o.transports.empty() ? "(UCX's choice)" : o.transports}};
  j["load_average_1m"] = load_average;
  nlohmann::json out = nlohmann::json::object();
  for (const RingLayoutResult& r : layouts) {
    out[r.layout] = {{"one_sided", r.one_sided},       {"seconds", r.seconds},
                     {"entries_per_s", r.entries_per_s}, {"fast", LatencyJson(r.fast)},
                     {"slow", LatencyJson(r.slow)},     {"refused_full", r.refused_full},
                     {"refused_space", r.refused_space}, {"entries_waited", r.entries_waited},
                     {"ring_bytes", r.ring_bytes}};
  }
  j["layouts"] = out;
  return j;
}

}  // namespace pulse::bench
