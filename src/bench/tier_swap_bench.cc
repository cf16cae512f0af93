// The swap study of `pulse bench tier` (tier_swap_bench.h).
#include "bench/tier_swap_bench.h"

#include <chrono>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "bench/racked_cluster.h"
#include "pulse/apps/ycsb.h"
#include "pulse/client.h"

namespace pulse::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The bytes of object `k` after its `version`th write.
void Pattern(uint32_t k, uint64_t version, std::vector<uint8_t>* out) {
  for (size_t i = 0; i < out->size(); ++i) (*out)[i] = static_cast<uint8_t>(k * 131 + version * 17 + i);
}

// One distribution in a running cluster: allocates the objects in rack
// "b", writes them, then `ops` reads and writes chosen by `distribution`.
Result<TierSwapFigure> RunOne(const TierSwapOptions& o, bool swap, const std::string& distribution,
                              const std::string& switch_address, uint64_t seed) {
  TierSwapFigure f;
  f.swap = swap ? "on" : "off";
  f.distribution = distribution;
  ClientOptions co;
  co.switch_address = switch_address;
  co.policy = AllocationPolicy::kPartitioned;
  co.rack = "a";
  co.slab_bytes = o.page_bytes;  // a page per chunk below: pages hold nothing else
  co.hot_page_requests = swap;
  co.hotness.hot_threshold = o.hot_threshold;
  co.worker.name = fmt::format("bench-tier-swap-{}", distribution);
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Connect(co));
  // The objects' first writes below may make pages hot already: those
  // swaps count too.
  PULSE_ASSIGN_OR_RETURN(const nlohmann::json swaps_before, SwapCounters(o.ucx_tls, switch_address, /*drain=*/true));
  const uint32_t per_page = static_cast<uint32_t>(o.page_bytes / o.object_bytes);
  std::vector<uint64_t> pages((o.objects + per_page - 1) / per_page);
  for (uint64_t& p : pages) {
    PULSE_ASSIGN_OR_RETURN(p, client->Allocate(o.page_bytes, /*node=*/1));
  }
  auto addr = [&](uint32_t k) { return pages[k / per_page] + uint64_t{k % per_page} * o.object_bytes; };
  std::vector<uint64_t> version(o.objects, 0);
  std::vector<uint8_t> out(o.object_bytes), in(o.object_bytes);
  // One write per page (one access each: no page is hot before the
  // operations below).
  std::vector<uint8_t> page(o.page_bytes);
  for (uint32_t k = 0; k < o.objects; ++k) {
    Pattern(k, 0, &out);
    std::memcpy(page.data() + uint64_t{k % per_page} * o.object_bytes, out.data(), out.size());
    if ((k + 1) % per_page == 0 || k + 1 == o.objects)
      PULSE_RETURN_IF_ERROR(client->Write(pages[k / per_page], page.data(), uint64_t{k % per_page + 1} * o.object_bytes));
  }
  const ClientCounters c0 = client->counters();

  apps::ycsb::Random rng(seed);
  apps::ycsb::UniformGenerator uniform(0, o.objects - 1);
  apps::ycsb::ZipfianGenerator zipf(0, o.objects - 1);
  std::vector<double> reads, writes;
  reads.reserve(o.ops);
  writes.reserve(o.ops);
  const auto start = Clock::now();
  for (uint32_t i = 0; i < o.ops; ++i) {
    const uint32_t k = static_cast<uint32_t>(distribution == "zipfian" ? zipf.Next(rng) : uniform.Next(rng));
    const bool write = (rng.NextU64() & 1) != 0;
    const auto t0 = Clock::now();
    if (write) {
      Pattern(k, version[k] + 1, &out);
      PULSE_RETURN_IF_ERROR(client->Write(addr(k), out.data(), out.size()));
      ++version[k];
    } else {
      PULSE_RETURN_IF_ERROR(client->Read(addr(k), in.data(), in.size()));
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (write) {
      writes.push_back(us);
      continue;
    }
    reads.push_back(us);
    Pattern(k, version[k], &out);
    if (std::memcmp(in.data(), out.data(), out.size()) != 0)
      return Status::Internal(fmt::format("bench tier [swap {}, {}]: object {} read other bytes than its write {}",
                                          f.swap, distribution, k, version[k]));
    ++f.verified_reads;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const ClientCounters& c1 = client->counters();
  PULSE_ASSIGN_OR_RETURN(const nlohmann::json swaps_after, SwapCounters(o.ucx_tls, switch_address, /*drain=*/true));
  f.ops = o.ops;
  f.throughput_ops = seconds > 0 ? o.ops / seconds : 0;
  f.read = Summarize(std::move(reads));
  f.write = Summarize(std::move(writes));
  f.local_fraction =
      static_cast<double>((c1.rack_reads - c0.rack_reads) + (c1.rack_writes - c0.rack_writes)) / o.ops;
  f.swap_requests = c1.swap_requests;
  f.page_move_waits = c1.page_move_waits - c0.page_move_waits;
  f.swaps_finished = swaps_after.value("finished", uint64_t{0}) - swaps_before.value("finished", uint64_t{0});
  f.swap_outcomes = SwapOutcomesBetween(swaps_before, swaps_after);
  f.swaps_failed = swaps_after.value("failed", uint64_t{0}) - swaps_before.value("failed", uint64_t{0});
  if (f.swaps_failed > 0) f.last_failure = swaps_after.value("last_failure", nlohmann::json::object()).value("message", "");
  return f;
}

}  // namespace

Status CheckTierSwapOptions(const TierSwapOptions& o) {
  for (const std::string& s : o.swaps)
    if (s != "on" && s != "off") return Status::InvalidArgument("bench tier: --swap " + s + " is neither on nor off");
  for (const std::string& d : o.distributions)
    if (d != "uniform" && d != "zipfian")
      return Status::InvalidArgument("bench tier: --distribution " + d + " is neither uniform nor zipfian");
  PULSE_RETURN_IF_ERROR(CheckSwapFlags("bench tier", o.page_bytes, o.hot_threshold));
  if (o.object_bytes == 0 || o.object_bytes > o.page_bytes || o.page_bytes % o.object_bytes != 0)
    return Status::InvalidArgument(
        fmt::format("bench tier: --object-bytes {} must divide the page ({} bytes)", o.object_bytes, o.page_bytes));
  if (o.objects == 0 || o.ops == 0) return Status::InvalidArgument("bench tier: --objects and --swap-ops must be > 0");
  const uint64_t needed_mib = 2 * uint64_t{o.objects} * o.object_bytes * o.distributions.size() / (1 << 20) + 1;
  if (o.pool_mib != 0 && (o.pool_mib < 16 || o.pool_mib < needed_mib))
    return Status::InvalidArgument(fmt::format(
        "bench tier: --pool-mib {} is below 16 or the {} MiB the objects need in both racks", o.pool_mib, needed_mib));
  return Status::Ok();
}

Result<std::vector<TierSwapFigure>> RunTierSwapStudy(const TierSwapOptions& o) {
  PULSE_RETURN_IF_ERROR(CheckTierSwapOptions(o));
  std::vector<TierSwapFigure> figures;
  for (const std::string& swap : o.swaps) {
    BenchClusterOptions c = BenchClusterOptionsFor("bench-tier-swap", o);
    c.memory_nodes = 2;
    // Both racks' pools hold every object's page, and rack "a" a frame
    // for each besides.
    const uint64_t bytes = uint64_t{o.objects} * o.object_bytes * o.distributions.size();
    c.pool_mib = o.pool_mib != 0 ? o.pool_mib : static_cast<uint32_t>(std::max<uint64_t>(64, 2 * bytes / (1 << 20) + 16));
    RackTierOptions tier;
    tier.page_bytes = o.page_bytes;
    tier.swaps = swap == "on";
    PULSE_ASSIGN_OR_RETURN(RackedCluster racked, StartRackedBenchCluster(c, tier));
    for (size_t d = 0; d < o.distributions.size(); ++d) {
      if (o.progress)
        o.progress(fmt::format("swap {}, {}: {} reads and writes of {} objects of {} B in rack b", swap,
                               o.distributions[d], o.ops, o.objects, o.object_bytes));
      PULSE_ASSIGN_OR_RETURN(TierSwapFigure f,
                             RunOne(o, swap == "on", o.distributions[d], racked.switch_address, o.seed + d));
      if (o.progress)
        o.progress(fmt::format("swap {}, {}: {:.0f} ops/s, {:.0f} % in the rack, {} swaps ({} failed{}{})", swap,
                               o.distributions[d], f.throughput_ops, 100 * f.local_fraction, f.swaps_finished,
                               f.swaps_failed, f.last_failure.empty() ? "" : ": ", f.last_failure));
      figures.push_back(std::move(f));
    }
    PULSE_RETURN_IF_ERROR(StopBenchCluster(racked.guard));
  }
  return figures;
}

}  // namespace pulse::bench
