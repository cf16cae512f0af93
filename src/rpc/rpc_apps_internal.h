// The time-series aggregate's state as the CPU node starts and reads it,
// shared by rpc::TsvAggregate and the cache-rpc system (which runs the
// cached upper tree itself and calls kRpcTsvAggregate for the rest).
#pragma once

#include <cstdint>

#include "pulse/ds/aggregate.h"
#include "rpc/handlers/app_states.h"

namespace pulse::rpc {

// The initial state of a query over ticks [lo, hi] (as the pulse
// iterator's scratch pad starts: min UINT32_MAX).
inline TsvAggregateState TsvQueryState(uint64_t lo, uint64_t hi) {
  TsvAggregateState st{};
  st.agg.lo = lo;
  st.agg.hi = hi;
  st.agg.min = UINT32_MAX;
  return st;
}

// The answer in a finished state (min/max as ds::Aggregate has them when
// nothing was counted).
inline ds::Aggregate TsvAnswerOf(const pulse_tsv_agg_state& st) {
  return st.count == 0 ? ds::Aggregate{.sum = st.sum} : ds::Aggregate{st.sum, st.min, st.max, st.count};
}

}  // namespace pulse::rpc
