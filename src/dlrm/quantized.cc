#include "pulse/dlrm/quantized.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace pulse::dlrm {

std::string_view ReductionName(Reduction op) {
  switch (op) {
    case Reduction::kSum:
      return "sum";
    case Reduction::kMax:
      return "max";
    case Reduction::kMin:
      return "min";
  }
  return "?";
}

Result<Reduction> ParseReduction(std::string_view name) {
  for (Reduction op : {Reduction::kSum, Reduction::kMax, Reduction::kMin})
    if (ReductionName(op) == name) return op;
  return Status::InvalidArgument(fmt::format("dlrm: reduction '{}' (sum, max or min)", name));
}

QuantizedRow QuantizeRow(std::span<const float> row) {
  double max_abs = 0;
  for (float x : row) max_abs = std::max(max_abs, std::fabs(static_cast<double>(x)));
  const double unit = std::ldexp(1.0, static_cast<int>(kScaleShift));
  const double m = std::ceil(max_abs / 127.0 * unit);
  QuantizedRow q;
  q.scale = static_cast<uint32_t>(std::clamp(m, 1.0, static_cast<double>(std::numeric_limits<uint32_t>::max())));
  const double scale = static_cast<double>(q.scale) / unit;
  q.values.reserve(row.size());
  for (float x : row) q.values.push_back(static_cast<int8_t>(std::clamp(std::round(x / scale), -127.0, 127.0)));
  return q;
}

double ToReal(int64_t fixed) { return std::ldexp(static_cast<double>(fixed), -static_cast<int>(kScaleShift)); }

int64_t ReductionIdentity(Reduction op) {
  switch (op) {
    case Reduction::kMax:
      return std::numeric_limits<int64_t>::min();
    case Reduction::kMin:
      return std::numeric_limits<int64_t>::max();
    case Reduction::kSum:
      break;
  }
  return 0;
}

void FoldRow(Reduction op, uint32_t scale, std::span<const int8_t> values, std::span<int64_t> acc) {
  const int64_t m = scale;
  for (size_t j = 0; j < acc.size(); ++j) {
    const int64_t v = static_cast<int64_t>(values[j]) * m;
    if (op == Reduction::kSum) {
      acc[j] += v;
    } else if (op == Reduction::kMax) {
      acc[j] = std::max(acc[j], v);
    } else {
      acc[j] = std::min(acc[j], v);
    }
  }
}

void CombineAccumulators(Reduction op, std::span<const int64_t> part, std::span<int64_t> acc) {
  for (size_t j = 0; j < acc.size(); ++j) {
    if (op == Reduction::kSum) {
      acc[j] += part[j];
    } else if (op == Reduction::kMax) {
      acc[j] = std::max(acc[j], part[j]);
    } else {
      acc[j] = std::min(acc[j], part[j]);
    }
  }
}

Result<ReducedVector> ReferenceReduce(Reduction op, std::span<const QuantizedRow> rows, uint32_t dim,
                                      std::span<const uint64_t> indices) {
  ReducedVector acc(dim, indices.empty() ? 0 : ReductionIdentity(op));
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] >= rows.size())
      return Status::InvalidArgument(fmt::format("dlrm reference: index {} at position {} is out of range ({} rows)",
                                                 indices[k], k, rows.size()));
    FoldRow(op, rows[indices[k]].scale, rows[indices[k]].values, acc);
  }
  return acc;
}

}  // namespace pulse::dlrm
