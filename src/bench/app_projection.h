// The rack projection of `pulse bench app` and `pulse bench suite`: a model,
// not a measurement.  It prices an operation's critical path (the messages
// and bytes the bench counts per operation) on a rack fabric with stated
// parameters, plus the memory-node CPU time the bench measured:
//
//   projected_us = messages * one_way_us + bytes * 8 / (gbps * 1000) + mn_cpu_us
//
// docs/evaluation.md ("Critical path and the rack projection") gives the
// formula, the defaults' sources and what the model leaves out.  Stateless.
#pragma once

#include <optional>

namespace pulse::bench {

// The fabric the projection prices.  Defaults: the papers' RDMA rack.
// one_way_us: half of the 5 us low end of the "5 - 10 us network latency"
// one cross-node step adds (seed 001 section 7; 000 section 6), a step of
// RPC being a reply and a re-issue, and pulse's in-network forwarding
// saving "half a network round-trip".  gbps: the 100 Gbps ConnectX-5 NICs
// and FPGA ports of both papers' setups (001 section 7, 000 section 6).
struct FabricModel {
  double one_way_us = 2.5;
  double gbps = 100;
};

// The projected latency of one operation in microseconds, or nullopt when
// the memory-node time was not measured (mn_cpu_us_per_op absent).
std::optional<double> ProjectRackLatencyUs(const FabricModel& fabric, double messages_per_op, double bytes_per_op,
                                           std::optional<double> mn_cpu_us_per_op);

}  // namespace pulse::bench
