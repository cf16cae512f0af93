#include "bench/app_projection.h"

namespace pulse::bench {

std::optional<double> ProjectRackLatencyUs(const FabricModel& fabric, double messages_per_op, double bytes_per_op,
                                           std::optional<double> mn_cpu_us_per_op) {
  if (!mn_cpu_us_per_op) return std::nullopt;
  const double wire_us = fabric.gbps > 0 ? bytes_per_op * 8 / (fabric.gbps * 1000) : 0;
  return messages_per_op * fabric.one_way_us + wire_us + *mn_cpu_us_per_op;
}

}  // namespace pulse::bench
