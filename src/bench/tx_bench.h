// `pulse bench tx`: chain-replicated transactions (pulse::tx::Chain,
// docs/tx.md; seed 002 IV-B) against the HyperLoop-like baseline on the
// same chain, replicas and durable logs, on a local cluster it starts (or
// one it joins).  For each system, shape (reads, writes) and value size:
// throughput, mean/p50/p99 latency per transaction, memory-node CPU per
// transaction (the nodes' cpu_us over the measured phase), one-sided
// operations and messages per transaction, log syncs per transaction and
// their cost.  Transactions are issued one at a time by one client, as in
// the paper's latency comparison; every read is checked against the
// values the run wrote.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/traverse_bench.h"
#include "pulse/status.h"

namespace pulse::bench {

struct TxBenchOptions {
  std::string system = "all";        // pulse-chain | hyperloop | all
  std::string shapes = "0,1;4,2";     // (reads,writes) pairs, ';'-separated
  std::vector<uint32_t> value_bytes = {64, 1024};
  uint32_t memory_nodes = 3;          // the chain: nodes 0 (head) .. n-1 (tail)
  uint64_t keys = 4096;               // value slots in the region
  double seconds = 2;                 // measured phase per configuration
  uint64_t seed = 42;
  // fdatasync (the replicas' default: one per group commit) | none (page
  // cache only, as the papers' NVM: the protocol without the disk); the
  // started nodes get it as $PULSE_TX_LOG_SYNC.
  std::string log_sync = "fdatasync";
  // How replicas send each other forwards and acknowledgements: auto (into
  // the other's ring where the transport has one-sided puts) | am
  // (messages); started nodes get it as $PULSE_TX_REPLICA_PATH.
  std::string replica_path = "auto";
  std::string switch_address;         // join this cluster; empty: start one
  std::string run_dir, ucx_tls, binary;
  std::function<void(const std::string&)> progress;
};

struct TxRunResult {
  std::string system;
  uint32_t reads = 0, writes = 0, value_bytes = 0;
  uint64_t transactions = 0;
  double seconds = 0, throughput_tx = 0;
  LatencyStats latency;
  double mn_cpu_us_per_tx = 0;
  // One-sided operations: the client's reads at the tail, and the
  // forwards and acknowledgements replicas wrote into each other's rings
  // (ring_writes_per_tx: an entry and its tail, counted once; docs/tx.md
  // "Transport").  Messages: the client's requests, and what replicas sent
  // as messages (forwards, acknowledgements, answers).
  double one_sided_per_tx = 0;
  double ring_writes_per_tx = 0;
  double messages_per_tx = 0;
  double log_syncs_per_tx = 0, log_sync_us_per_tx = 0;
  uint64_t verified = 0;              // reads checked against the values written
  // Where the time went, per memory node of the chain ("node<i>") and
  // stage (queue, locks, sync, downstream, head: docs/tx.md "Where the time
  // goes"): count, mean_us, p50_us, p99_us over the measured phase.
  nlohmann::json stages = nlohmann::json::object();
};

struct TxBenchResult {
  std::vector<TxRunResult> runs;
  double load_average = 0;
  nlohmann::json ToJson(const TxBenchOptions& o) const;
};

// Errors: InvalidArgument naming a bad option; the cluster's and the
// chain's errors; Internal if a read returns a value other than the one
// last written.
Result<TxBenchResult> RunTxBench(const TxBenchOptions& options);

}  // namespace pulse::bench
