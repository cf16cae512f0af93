// Emulating a wimpy SmartNIC core (`rpc-wimpy`) on the memory node's host
// core.  CHASE ran its RPC-on-a-wimpy-core baseline by down-clocking a core
// to 1.0 GHz; here the handler runs at full speed and is then stretched:
//
//   1. Calibration (once, at memory-node start): the host's clock rate is
//      measured with a chain of dependent register adds (one add per cycle
//      on x86-64 and AArch64 cores; not add-immediate, which some cores fold
//      at renaming), best of several runs so that a preemption only makes a
//      run slower, never the estimate higher.
//      host_ghz = adds / ns.  /proc/cpuinfo's "cpu MHz" is logged beside it
//      but not used: in VMs it is the nominal rate, not the running one.
//   2. Per request: the handler's own time t (steady_clock around the call)
//      is measured; the node then busy-waits until t * host_ghz / core_ghz
//      has passed since the handler started, where core_ghz is the
//      memory node's --rpc-core-ghz (default 1.0).  Only a request that asks
//      for it (kRpcFlagWimpy) is slowed; nothing spins when idle.
//
// Caveat: the whole handler time is scaled, memory stalls included, which a
// down-clocked core would not stretch (DRAM does not slow down with the
// core).  For pointer chasing, which is mostly stalls, this over-states the
// slowdown: the emulated core is a lower bound on a real 1 GHz core's speed.
#pragma once

#include <chrono>
#include <cstdint>

namespace pulse::rpc {

// The host core's clock rate in GHz measured with a dependent-add chain
// (about `budget` of work in all).  Thread-safe.
double MeasureHostGhz(std::chrono::microseconds budget = std::chrono::microseconds(20000));

// /proc/cpuinfo's first "cpu MHz" in GHz, or 0 if there is none.
double CpuinfoGhz();

// Busy-waits until `until`.  Used only while serving a request.
void SpinUntil(std::chrono::steady_clock::time_point until);

}  // namespace pulse::rpc
