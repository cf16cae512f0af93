#include "engine/access.h"
#include "rpc/rpc_handler.h"

namespace pulse::rpc {

RpcMemory::RpcMemory(const RangeTable& table, TenantId tenant, uint64_t span_base, uint64_t span_size,
                     uint32_t max_steps)
    : table_(table), tenant_(tenant), span_base_(span_base), span_size_(span_size), max_steps_(max_steps) {}

const uint8_t* RpcMemory::Read(uint64_t addr, uint64_t len) {
  if (steps_ >= max_steps_) {
    stop_ = {TraversalStatus::kContinue, addr, 0};
    return nullptr;
  }
  const Range* range = last_ != nullptr && last_->Contains(addr) ? last_ : table_.Find(addr);
  // Not in a local range: another node's (re-issue there), or nobody's.
  const TraversalStatus not_found =
      addr - span_base_ < span_size_ ? TraversalStatus::kFaultInvalidPointer : TraversalStatus::kNotLocal;
  const TraversalStatus st = CheckAccess(range, tenant_, kPermRead, addr, len, not_found);
  if (st != TraversalStatus::kDone) {
    stop_ = {st, addr, addr};
    if (st == TraversalStatus::kNotLocal) stop_.fault_addr = 0;
    return nullptr;
  }
  last_ = range;
  ++steps_;
  return range->Translate(addr);
}

uint8_t* RpcMemory::Write(uint64_t addr, uint64_t len) {
  const Range* range = last_ != nullptr && last_->Contains(addr) ? last_ : table_.Find(addr);
  const TraversalStatus not_found =
      addr - span_base_ < span_size_ ? TraversalStatus::kFaultInvalidPointer : TraversalStatus::kNotLocal;
  const TraversalStatus st = CheckAccess(range, tenant_, kPermWrite, addr, len, not_found);
  if (st != TraversalStatus::kDone) {
    stop_ = {st, addr, st == TraversalStatus::kNotLocal ? 0 : addr};
    return nullptr;
  }
  last_ = range;
  return range->Translate(addr);
}

}  // namespace pulse::rpc
