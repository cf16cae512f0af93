// The applications as `pulse bench` drives them: one request at a time,
// each answer checked against the application's native computation where
// the check is cheap.  The check is a separate call so that the benches time
// the request alone: a native recomputation of the answer (a btrdb window
// folded again, a wiredtiger scan re-read from the local copy) is the
// bench's work, not the system's.  Shared by `bench app` (src/bench/app_bench.cc) and
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

// One request of an application at a time: Request() runs it and keeps its
// answer, CheckLast() checks that answer.
class AppDriver {
 public:
  virtual ~AppDriver() = default;
  // Runs the application's next request and keeps its answer for
  // CheckLast().  Errors: the system's, and Internal where the answer says
  // the request failed (a webservice user not found).
  virtual Status Request() = 0;
  // Checks the answer of the last Request() against the application's native
  // computation where the check is cheap; returns whether it checked.
  // Errors: Internal naming the request whose answer was wrong.  Call once
  // per successful Request().
  virtual Result<bool> CheckLast() = 0;
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
