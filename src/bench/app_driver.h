// The applications as `pulse bench` drives them: one request at a time,
// each answer checked against the application's native computation where
// the check is cheap.  Shared by `bench app` (src/bench/app_bench.cc) and
// the CXL trace capture (src/bench/cxl_trace.cc).
//
// Not thread-safe: a driver belongs to one closed-loop client.
#pragma once

#include <cstdint>
#include <memory>

#include <nlohmann/json.hpp>

#include "bench/app_bench.h"
#include "pulse/apps/app_system.h"
#include "pulse/status.h"

namespace pulse::bench {

// One request of an application: runs it and checks its answer where the
// check is cheap (returns whether it did).
class AppDriver {
 public:
  virtual ~AppDriver() = default;
  virtual Result<bool> Request() = 0;
  // Application-specific figures measured after the run (JSON object).
  virtual Result<nlohmann::json> Extra() { return nlohmann::json::object(); }
};

// Loads the application `o.app` (webservice, wiredtiger, btrdb) of `size`
// (users, records, seconds of readings) through `system`, which must outlive
// the driver, and returns its driver.  Uses o.workload, o.distribution,
// o.chain_length, o.insert_fraction, o.offload_alloc, o.allocation and
// o.scan_length.  Errors: InvalidArgument for an unknown app or
// distribution, and the application's own load errors.
Result<std::unique_ptr<AppDriver>> LoadApp(const AppBenchOptions& o, uint64_t size, uint64_t seed,
                                           apps::AppSystem* system);

}  // namespace pulse::bench
