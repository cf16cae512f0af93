#include "compiler/abstract_state.h"

namespace pulse::compiler {

AbsValue JoinValue(const AbsValue& a, const AbsValue& b) {
  if (a == b) return a;
  if (a.kind == Kind::kUninit || b.kind == Kind::kUninit) return {Kind::kUninit, {}, false, 0};
  if (a.kind != b.kind) return {Kind::kConflict, {}, false, 0};
  AbsValue r{a.kind, Join(a.range, b.range), false, 0};
  auto aa = a.Anchor(), ba = b.Anchor();
  if (aa && ba && *aa == *ba) {
    r.has_anchor = true;
    r.anchor = *aa;
  }
  return r;
}

AbsState JoinState(const AbsState& a, const AbsState& b) {
  AbsState s;
  for (int i = 0; i < kBpfNumRegisters; ++i) s.r[i] = JoinValue(a.r[i], b.r[i]);
  for (const auto& [off, v] : a.slots) {
    auto it = b.slots.find(off);
    if (it == b.slots.end()) continue;
    AbsValue j = JoinValue(v, it->second);
    if (j.kind == Kind::kCtx || j.kind == Kind::kStack || j.kind == Kind::kScalar) s.slots[off] = j;
  }
  s.pointer_spills = a.pointer_spills;
  s.pointer_spills.insert(b.pointer_spills.begin(), b.pointer_spills.end());
  return s;
}

const char* PtrName(Kind k) { return k == Kind::kCtx ? "the context" : "the stack"; }

}  // namespace pulse::compiler
