// A per-thread observer of the reference interpreter's far accesses: the
// trace capture of the CXL model (src/bench/cxl_trace.h) sees every window a
// CPU-node traversal loads and every STORE it makes, in order.
//
// Zero cost when off: InterpretTraversal reads the thread's observer once
// per call and, without one, runs exactly as before.  The memory-node
// engine (Pipeline) is not observed.
#pragma once

#include <cstdint>

namespace pulse {

// Thread-compatible: called on the thread that installed it.
class TraversalObserver {
 public:
  virtual ~TraversalObserver() = default;
  // An InterpretTraversal call starts: the windows and STOREs until the next
  // call belong to this run (one request, were it offloaded).
  virtual void OnRun() = 0;
  // A window [addr, addr+len) was read: one iteration's dependent load
  // (the next iteration's address may depend on it).  Only successful reads.
  virtual void OnWindow(uint64_t addr, uint32_t len) = 0;
  // A STORE of len bytes at addr took effect.
  virtual void OnStore(uint64_t addr, uint32_t len) = 0;
};

// Installs `observer` (not owned; nullptr removes it) for InterpretTraversal
// calls on the calling thread.  Returns the observer it replaces.
TraversalObserver* SetThreadTraversalObserver(TraversalObserver* observer);

}  // namespace pulse
