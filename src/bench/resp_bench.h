// `pulse bench resp`: redis-benchmark (GET and SET, N requests, C
// connections, without and with pipelining) against `pulse kv serve` and
// against a redis-server on the same machine, side by side in one run:
// requests/s and p50/p99 latency for each, and pulse's share of Redis's
// throughput.  Clients nobody here wrote measure pulse.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pulse/status.h"

namespace pulse::bench {

struct RespBenchOptions {
  std::string switch_address;  // empty: start a local cluster (2 memory nodes)
  std::string binary;          // the pulse executable (empty: this one)
  std::string run_dir;         // logs of a started cluster
  std::string ucx_tls;
  uint64_t requests = 20000;   // redis-benchmark -n, per test
  uint32_t clients = 50;       // -c
  uint32_t keyspace = 10000;   // -r: random keys key:000000000000 .. (keyspace - 1)
  std::vector<uint32_t> pipelines = {1, 16};  // -P values
  std::string tests = "set,get";              // -t
  uint32_t value_bytes = 3;    // -d
  std::function<void(const std::string&)> progress;
};

// Errors: NotFound if redis-benchmark or redis-server is missing (they come
// from scripts/setup.sh); IoError/Unavailable when a server does not start;
// Internal if redis-benchmark fails or reports errors.
Result<nlohmann::json> RunRespBench(const RespBenchOptions& options);

}  // namespace pulse::bench
