// `pulse bench tier`: the rack tier (docs/racks.md) against the fabric, in
// one run.  Starts a local cluster of two racks (memory node 0 = rack "a",
// memory node 1 = rack "b", transports without shared memory: tcp unless
// --ucx-tls says otherwise) and a CPU node of rack "a"; for each size it
// times Client::Read and Client::Write of one allocation in rack "a" (loads
// and stores through the mapped pool) and one in rack "b" (one-sided
// operations over the fabric), interleaved, and checks every read's bytes.
// Latency per operation and throughput (bytes / summed operation time) by
// size and tier.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/traverse_bench.h"  // LatencyStats
#include "pulse/status.h"

namespace pulse::bench {

struct TierBenchOptions {
  std::string binary;   // the pulse executable for the nodes (empty: this one)
  std::string run_dir;  // logs (empty: $PULSE_RUN_DIR, else "run")
  std::string ucx_tls;  // transports of nodes and client (empty: "tcp")
  std::vector<uint32_t> sizes = {64, 256, 1024, 4096, 16384, 65536};
  uint32_t samples = 2000;  // measured operations per size, tier and direction
  uint32_t warmup = 100;
  std::function<void(const std::string&)> progress;
};

// One size, one tier, one direction.
struct TierFigure {
  uint32_t bytes = 0;
  std::string tier;       // "local_rack" | "remote_rack"
  std::string operation;  // "read" | "write"
  LatencyStats latency;
  double throughput_mib_s = 0;
};

struct TierBenchResult {
  std::vector<TierFigure> figures;
  uint64_t verified_reads = 0;  // reads whose bytes were checked
  uint64_t rack_reads = 0, rack_writes = 0;     // client counters after the run
  uint64_t remote_reads = 0, remote_writes = 0;
  uint64_t messages_sent = 0;                   // by the client's worker during the local-rack operations
  std::string transport;
  double load_average = 0;
};

// Errors: the cluster could not be started, an operation failed, a read
// returned other bytes than written (Internal), or the rack tier did not
// serve the local-rack operations (FailedPrecondition).
Result<TierBenchResult> RunTierBench(const TierBenchOptions& options);

}  // namespace pulse::bench
