#include "bench/tier_locks_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "bench/racked_cluster.h"
#include "pulse/client.h"
#include "pulse/ds/lock.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double LoadAverage() {
  double load[3] = {0, 0, 0};
  return getloadavg(load, 3) > 0 ? load[0] : 0;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Side {
  std::unique_ptr<Client> client;
  std::unique_ptr<ds::FarLock> lock;
};

// Times `holds` holds of `writes` writes of `size` bytes; writes per second.
// *last is the address and value of the last write.
Result<double> TimeHolds(Side& side, const TierLocksBenchOptions& o, uint64_t region, uint32_t size,
                         std::mt19937_64& rng, uint64_t* last_addr, uint8_t* last_value) {
  std::vector<uint8_t> bytes(size);
  const uint64_t slots = (o.region_bytes - size) / 8 + 1;
  const auto t0 = Clock::now();
  for (uint32_t h = 0; h < o.holds; ++h) {
    PULSE_RETURN_IF_ERROR(side.lock->LockExclusive(30s));
    for (uint32_t w = 0; w < o.writes_per_hold; ++w) {
      const uint64_t addr = region + (rng() % slots) * 8;
      const uint8_t value = static_cast<uint8_t>(rng() | 1);
      std::memset(bytes.data(), value, size);
      PULSE_RETURN_IF_ERROR(side.client->Write(addr, bytes.data(), size));
      *last_addr = addr;
      *last_value = value;
    }
    PULSE_RETURN_IF_ERROR(side.lock->Unlock());
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return static_cast<double>(o.holds) * o.writes_per_hold / s;
}

}  // namespace

Result<TierLocksBenchResult> RunTierLocksBench(const TierLocksBenchOptions& o) {
  if (o.sizes.empty() || o.runs == 0 || o.holds == 0 || o.writes_per_hold == 0)
    return Status::InvalidArgument("bench tier-locks: need sizes, runs, holds and writes per hold >= 1");
  for (uint32_t s : o.sizes)
    if (s == 0 || s > o.region_bytes)
      return Status::InvalidArgument(fmt::format("bench tier-locks: size {} is not in [1, region bytes]", s));
  BenchClusterOptions c = BenchClusterOptionsFor("bench-tier-locks", o);
  c.memory_nodes = 2;
  PULSE_ASSIGN_OR_RETURN(RackedCluster racked, StartRackedBenchCluster(c));
  TierLocksBenchResult res;
  res.transport = racked.transport;

  Side sides[2];  // [0]: write buffer on, [1]: off
  for (int i = 0; i < 2; ++i) {
    ClientOptions co;
    co.switch_address = racked.switch_address;
    co.policy = AllocationPolicy::kPartitioned;
    co.rack = RackName(0);
    co.worker.name = i == 0 ? "bench-tier-locks-buffered" : "bench-tier-locks-unbuffered";
    co.lock_tier.write_buffer = i == 0;
    co.lock_tier.page_cache = false;  // writes only
    PULSE_ASSIGN_OR_RETURN(sides[i].client, Client::Connect(co));
  }
  // The region and the locks in rack "b": every write crosses the fabric.
  PULSE_ASSIGN_OR_RETURN(uint64_t region, sides[0].client->Allocate(o.region_bytes, 1));
  for (Side& s : sides) {
    PULSE_ASSIGN_OR_RETURN(uint64_t lock_addr, s.client->Allocate(8, 1));
    s.lock = ds::FarLock::Attach(s.client.get(), lock_addr);
  }
  res.load_average_before = LoadAverage();
  std::mt19937_64 rng(20261124);
  for (uint32_t size : o.sizes) res.figures.push_back(TierLocksFigure{.bytes = size});
  for (uint32_t run = 0; run < o.runs; ++run) {
    for (TierLocksFigure& f : res.figures) {
      if (o.progress)
        o.progress(fmt::format("run {}/{}, {} B: {} holds of {} writes per side", run + 1, o.runs, f.bytes, o.holds,
                               o.writes_per_hold));
      for (int k = 0; k < 2; ++k) {
        const int i = (run + k) % 2;  // alternate which side goes first
        uint64_t addr = 0;
        uint8_t value = 0;
        PULSE_ASSIGN_OR_RETURN(double ops, TimeHolds(sides[i], o, region, f.bytes, rng, &addr, &value));
        (i == 0 ? f.buffered_ops_s : f.unbuffered_ops_s).push_back(ops);
        // The other side sees the last write once the lock is released.
        std::vector<uint8_t> back(f.bytes);
        PULSE_RETURN_IF_ERROR(sides[1 - i].client->Read(addr, back.data(), back.size()));
        if (std::count(back.begin(), back.end(), value) != static_cast<long>(back.size()))
          return Status::Internal(fmt::format("bench tier-locks: {} B at {:#x} read back other bytes than written", f.bytes, addr));
        ++res.verified;
      }
    }
  }
  for (TierLocksFigure& f : res.figures) {
    f.buffered_median = Median(f.buffered_ops_s);
    f.unbuffered_median = Median(f.unbuffered_ops_s);
    f.speedup = f.unbuffered_median > 0 ? f.buffered_median / f.unbuffered_median : 0;
  }
  res.load_average_after = LoadAverage();
  const ClientCounters& k = sides[0].client->counters();
  res.buffered_writes = k.lock_buffered_writes;
  res.flushes = k.lock_buffer_flushes;
  res.flush_writes = k.lock_buffer_flush_writes;
  for (Side& s : sides) {
    s.lock.reset();
    s.client.reset();
  }
  PULSE_RETURN_IF_ERROR(StopBenchCluster(racked.guard));
  return res;
}

nlohmann::json TierLocksBenchResult::ToJson() const {
  nlohmann::json figs = nlohmann::json::array();
  for (const TierLocksFigure& f : figures)
    figs.push_back({{"bytes", f.bytes},
                    {"buffered_ops_s", f.buffered_ops_s},
                    {"unbuffered_ops_s", f.unbuffered_ops_s},
                    {"buffered_median_ops_s", f.buffered_median},
                    {"unbuffered_median_ops_s", f.unbuffered_median},
                    {"speedup", f.speedup}});
  return {{"figures", figs},
          {"verified_read_backs", verified},
          {"buffered_writes", buffered_writes},
          {"flushes", flushes},
          {"flush_writes", flush_writes},
          {"ucx_tls", transport},
          {"load_average_1m_before", load_average_before},
          {"load_average_1m_after", load_average_after}};
}

}  // namespace pulse::bench
