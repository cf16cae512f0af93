// Quantized embedding rows and the plain reduction every result of
// pulse::dlrm is defined by (seed 002 IV-C, DLRM embedding reduction).
//
// The numeric contract.  clang's BPF target has no floating point, so rows
// are stored quantized (symmetric, per row, int8, as quantized DLRM
// inference stores them) and reduced in integers:
//   - a row is D int8 values q[j] and one scale s > 0 held as an unsigned
//     32-bit fixed-point number m = round(s * 2^kScaleShift);
//   - the row's value j is exactly q[j] * m * 2^-kScaleShift;
//   - a reduction of the rows r in a bag is, per dimension j, the exact
//     integer sum / max / min over r of q_r[j] * m_r (int64: |q * m| < 2^39,
//     so a sum of up to 2^24 rows cannot overflow), in units of
//     2^-kScaleShift.  The per-row scale is applied near memory, as an integer
//     multiply, so max and min are those of the rows' real values.
//   - the float result is that integer times 2^-kScaleShift, computed at the
//     CPU node (ToReal: one rounding, exact while |sum| < 2^53).  A mean is
//     the sum divided by the bag's size there.
//   - an empty bag reduces to zeros, for every operator (as PyTorch's
//     EmbeddingBag does).
// So offloaded and local reductions agree bit for bit, whatever the order.
//
// Thread-safety: plain functions and values; no shared state.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "pulse/status.h"

namespace pulse::dlrm {

// Fraction bits of a row's fixed-point scale (and of every reduced value).
inline constexpr uint32_t kScaleShift = 24;
// A row is stored and loaded in chunks of this many lanes (one window each).
inline constexpr uint32_t kLanesPerChunk = 64;

enum class Reduction { kSum, kMax, kMin };

// "sum", "max", "min".
std::string_view ReductionName(Reduction op);
// The inverse of ReductionName; InvalidArgument naming `name` otherwise.
Result<Reduction> ParseReduction(std::string_view name);

// One quantized row: values[j] * scale * 2^-kScaleShift.
struct QuantizedRow {
  uint32_t scale = 1u << kScaleShift;  // 1.0
  std::vector<int8_t> values;
};

// Symmetric quantization of a float row: scale = max|x| / 127 (rounded up to
// the fixed point, at least 1 unit), q = round(x / scale) clamped to
// [-127, 127].  An all-zero row gets the smallest scale.  The scale's range
// is m < 2^32, i.e. s < 256: a row with max|x| above 127 * 256 saturates.
QuantizedRow QuantizeRow(std::span<const float> row);

// A reduced value in units of 2^-kScaleShift as a double.
double ToReal(int64_t fixed);

// A reduced bag: one value per dimension, in units of 2^-kScaleShift.
using ReducedVector = std::vector<int64_t>;

// The accumulator every lane starts from: 0 (sum), INT64_MIN (max),
// INT64_MAX (min).
int64_t ReductionIdentity(Reduction op);
// Folds one row (its scale and values[0, acc.size())) into acc.
void FoldRow(Reduction op, uint32_t scale, std::span<const int8_t> values, std::span<int64_t> acc);
// Folds the partial accumulators `part` into acc (sum adds, max/min keep
// the larger/smaller): reductions of disjoint parts of a bag combine.
void CombineAccumulators(Reduction op, std::span<const int64_t> part, std::span<int64_t> acc);

// The plain reference: reduces rows[indices[k]] of one table (every row of
// `rows` has `dim` values) with `op`.  An empty bag gives `dim` zeros.
// InvalidArgument naming the index and its position when an index is not
// below rows.size().
Result<ReducedVector> ReferenceReduce(Reduction op, std::span<const QuantizedRow> rows, uint32_t dim,
                                      std::span<const uint64_t> indices);

}  // namespace pulse::dlrm
