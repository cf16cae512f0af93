#include "bench/tier_bench.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "bench/bench_cluster.h"
#include "pulse/client.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;

void Say(const TierBenchOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

double LoadAverage() {
  double load = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = 0;
    std::fclose(f);
  }
  return load;
}

// Times `n` operations of `op`; the samples in microseconds.
template <typename Op>
Status Time(uint32_t n, std::vector<double>* us, Op op) {
  for (uint32_t i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    Status s = op(i);
    const auto t1 = Clock::now();
    if (!s.ok()) return s;
    if (us != nullptr) us->push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return Status::Ok();
}

TierFigure Figure(uint32_t bytes, const char* tier, const char* op, std::vector<double> us) {
  TierFigure f{.bytes = bytes, .tier = tier, .operation = op};
  double total = 0;
  for (double x : us) total += x;
  f.latency = Summarize(std::move(us));
  f.throughput_mib_s = total > 0 ? (static_cast<double>(bytes) * static_cast<double>(f.latency.count)) /
                                       (total / 1e6) / (1 << 20)
                                 : 0;
  return f;
}

}  // namespace

Result<TierBenchResult> RunTierBench(const TierBenchOptions& o) {
  if (o.sizes.empty() || o.samples == 0) return Status::InvalidArgument("bench tier: need sizes and samples >= 1");
  for (uint32_t s : o.sizes)
    if (s == 0 || s > (16u << 20)) return Status::InvalidArgument(fmt::format("bench tier: size {} is not in [1, 16 MiB]", s));
  TierBenchResult res;
  BenchClusterOptions c = BenchClusterOptionsFor("bench-tier", o);
  c.memory_nodes = 2;
  if (c.ucx_tls.empty()) c.ucx_tls = "tcp";  // racks share no memory over UCX
  cluster::ClusterConfig config = BenchClusterConfig(c);
  const char* racks[] = {"a", "b"};
  for (size_t i = 0; i < config.memnodes.size() && i < 2; ++i) {
    config.memnodes[i].rack = racks[i];
    config.memnodes[i].rack_tenants = {1};
  }
  PULSE_RETURN_IF_ERROR(cluster::ValidateClusterConfig(config));
  cluster::LaunchOptions lo;
  lo.die_with_parent = true;
  lo.progress = o.progress;
  auto started = cluster::StartCluster(config, lo);
  if (!started.ok()) return started.status();
  const std::string address = started->switch_address;
  cluster::ClusterGuard guard(std::move(*started), std::chrono::milliseconds(3000));
  cluster::ApplyTransportEnvironment(config);  // the CPU node speaks what the nodes speak
  res.transport = config.ucx_tls;

  ClientOptions co;
  co.switch_address = address;
  co.policy = AllocationPolicy::kPartitioned;
  co.rack = "a";
  co.worker.name = "bench-tier";
  auto connected = Client::Connect(co);
  if (!connected.ok()) return connected.status();
  Client& client = **connected;

  res.load_average = LoadAverage();
  uint32_t largest = 0;
  for (uint32_t s : o.sizes) largest = std::max(largest, s);
  uint64_t far[2];
  for (uint32_t node = 0; node < 2; ++node) {
    auto a = client.Allocate((largest + 7) / 8 * 8, node);
    if (!a.ok()) return a.status();
    far[node] = *a;
  }
  std::vector<uint8_t> out(largest), in(largest);
  uint64_t messages_local = 0;
  for (uint32_t size : o.sizes) {
    Say(o, fmt::format("size {} B: {} reads and writes per tier", size, o.samples));
    std::vector<double> us[2][2];  // [tier][read=0 / write=1]
    for (uint32_t node = 0; node < 2; ++node) {
      for (uint32_t i = 0; i < size; ++i) out[i] = static_cast<uint8_t>(i * 31 + size + node);
      PULSE_RETURN_IF_ERROR(client.Write(far[node], out.data(), size));
      PULSE_RETURN_IF_ERROR(Time(o.warmup, nullptr, [&](uint32_t) { return client.Read(far[node], in.data(), size); }));
    }
    // Interleaved: tier a, tier b, in rounds of 100.
    for (uint32_t done = 0; done < o.samples;) {
      const uint32_t n = std::min<uint32_t>(100, o.samples - done);
      for (uint32_t node = 0; node < 2; ++node) {
        for (uint32_t i = 0; i < size; ++i) out[i] = static_cast<uint8_t>(i * 31 + size + node + done);
        const uint64_t m0 = client.net_counters().messages_sent;
        PULSE_RETURN_IF_ERROR(Time(n, &us[node][1], [&](uint32_t) { return client.Write(far[node], out.data(), size); }));
        PULSE_RETURN_IF_ERROR(Time(n, &us[node][0], [&](uint32_t) { return client.Read(far[node], in.data(), size); }));
        if (node == 0) messages_local += client.net_counters().messages_sent - m0;
        if (std::memcmp(in.data(), out.data(), size) != 0)
          return Status::Internal(fmt::format("bench tier: rack {} read other bytes than written ({} B)", racks[node], size));
        res.verified_reads += n;
      }
      done += n;
    }
    for (uint32_t node = 0; node < 2; ++node) {
      const char* tier = node == 0 ? "local_rack" : "remote_rack";
      res.figures.push_back(Figure(size, tier, "read", std::move(us[node][0])));
      res.figures.push_back(Figure(size, tier, "write", std::move(us[node][1])));
    }
  }
  const ClientCounters& k = client.counters();
  res.rack_reads = k.rack_reads;
  res.rack_writes = k.rack_writes;
  res.remote_reads = k.remote_reads;
  res.remote_writes = k.remote_writes;
  res.messages_sent = messages_local;
  if (k.rack_reads == 0)
    return Status::FailedPrecondition("bench tier: the rack tier served no read (was the pool offered and mapped?)");
  connected->reset();
  PULSE_RETURN_IF_ERROR(StopBenchCluster(guard));
  return res;
}

}  // namespace pulse::bench
