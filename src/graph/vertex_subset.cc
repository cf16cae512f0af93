#include "pulse/graph/vertex_subset.h"

namespace pulse::graph {

VertexSubset VertexSubset::Single(uint64_t n, VertexId v) { return FromSparse(n, {v}); }

VertexSubset VertexSubset::All(uint64_t n) { return FromDense(n, std::vector<uint8_t>(n, 1), n); }

VertexSubset VertexSubset::FromSparse(uint64_t n, std::vector<VertexId> ids) {
  VertexSubset s(n);
  s.count_ = ids.size();
  s.ids_ = std::move(ids);
  return s;
}

VertexSubset VertexSubset::FromDense(uint64_t n, std::vector<uint8_t> flags, uint64_t count) {
  VertexSubset s(n);
  s.dense_ = true;
  s.count_ = count;
  s.flags_ = std::move(flags);
  return s;
}

void VertexSubset::ToSparse() {
  if (!dense_) return;
  ids_.clear();
  ids_.reserve(count_);
  for (uint64_t v = 0; v < n_; ++v)
    if (flags_[v]) ids_.push_back(static_cast<VertexId>(v));
  flags_.clear();
  flags_.shrink_to_fit();
  dense_ = false;
}

void VertexSubset::ToDense() {
  if (dense_) return;
  flags_.assign(n_, 0);
  for (VertexId v : ids_) flags_[v] = 1;
  ids_.clear();
  ids_.shrink_to_fit();
  dense_ = true;
}

}  // namespace pulse::graph
