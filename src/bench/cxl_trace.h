// Trace capture for the CXL model (cxl_model.h): the far-memory accesses of
// the three pulse applications' operations, in order.
//
// Source: pulse's own reference interpreter.  The applications run
// unchanged on a real local cluster, through a system whose client executes
// every traversal at the CPU node (ExecutionMode::kCpuNode, no cache), so
// each iteration of each offloaded program (the map's chain walk, the
// WiredTiger scan, the BTrDB aggregate) is one InterpretTraversal window
// load, seen by a TraversalObserver (src/engine/traversal_observer.h); the
// application's own object reads and writes (AppSystem::ReadObject /
// WriteObject) are recorded as CPU-node accesses.  Each access carries the
// memory node the client places its address on (Client::NodeOf).
//
// Not recorded: one-sided reads and writes a data structure makes directly
// through its Client outside a traversal (e.g. the node writes of an
// insert); docs/cxl.md lists what the model leaves out.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "bench/cxl_model.h"
#include "engine/traversal_observer.h"
#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::bench {

// Records the accesses of one operation at a time.  Not thread-safe: use it
// on the thread that runs the operations.
class CxlRecorder : public TraversalObserver {
 public:
  // `client` (not owned, outlives the recorder) places addresses on nodes.
  explicit CxlRecorder(const Client* client) : client_(client) {}
  ~CxlRecorder() override;

  // Starts an operation: installs this recorder as the thread's traversal
  // observer.  The operation's traversal runs are numbered from 0.
  void BeginOp();
  // Ends it: removes the observer and returns the accesses recorded since
  // BeginOp.  An EndOp without BeginOp returns an empty operation.
  CxlOp EndOp();
  // A CPU-node access of the operation (ignored outside an operation).
  void CpuAccess(uint64_t addr, uint32_t bytes, bool write);

  void OnRun() override;
  void OnWindow(uint64_t addr, uint32_t len) override;
  void OnStore(uint64_t addr, uint32_t len) override;

 private:
  void Add(uint64_t addr, uint32_t bytes, bool write, bool traversal);

  const Client* client_;
  bool recording_ = false;
  TraversalObserver* previous_ = nullptr;
  uint32_t runs_ = 0;  // traversal runs begun in this operation
  CxlOp op_;
};

struct CxlCaptureOptions {
  std::string app = "webservice";  // webservice | wiredtiger | btrdb
  uint32_t memory_nodes = 4;       // the started cluster's memory nodes
  // Data-set size in `pulse bench app --size` units (users, records,
  // seconds of readings); 0: a quick default.
  uint64_t size = 0;
  uint32_t chain_length = 0;       // webservice: > 0 for the high-load-factor variant (bench app's flag)
  uint64_t ops = 2000;             // operations captured (after loading)
  uint64_t seed = 42;
  // Allocation granularity: small enough that the data spreads over every
  // memory node (the client's round robin places slab after slab).
  uint64_t slab_bytes = 64 * 1024;
  std::string binary, run_dir, ucx_tls;  // as BenchClusterOptions
  std::function<void(const std::string&)> progress;
};

// Starts a local cluster, loads `app`, runs `ops` operations (answers
// checked against the application's native computation where it has one),
// recording each, and stops the cluster.  Errors: InvalidArgument (unknown
// app, ops == 0, memory_nodes == 0), those of the cluster and the
// application, Internal for a wrong answer.
Result<CxlTrace> CaptureAppTrace(const CxlCaptureOptions& options);

}  // namespace pulse::bench
