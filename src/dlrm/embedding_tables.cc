#include "pulse/dlrm/embedding_tables.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "dlrm/iterators/dlrm_layout.h"
#include "pulse/iterators/dlrm_max.h"
#include "pulse/iterators/dlrm_min.h"
#include "pulse/iterators/dlrm_sum.h"
#include "pulse/typed_traversal.h"

namespace pulse::dlrm {
namespace {

static_assert(kLanesPerChunk == PULSE_DLRM_LANES && kScaleShift == PULSE_DLRM_SCALE_SHIFT);
static_assert(sizeof(pulse_dlrm_chunk) == 72);
constexpr uint64_t kChunkBytes = sizeof(pulse_dlrm_chunk);
// The state's bytes before the address list: what every request carries.
constexpr size_t kStateHeadBytes = offsetof(pulse_dlrm_state, addr);

uint32_t ChunksPerRow(uint32_t dim) { return (dim + kLanesPerChunk - 1) / kLanesPerChunk; }

Result<ProgramRef> ProgramFor(Reduction op) {
  switch (op) {
    case Reduction::kMax:
      return EmbeddedProgram<iterators::dlrm_max>("dlrm_max");
    case Reduction::kMin:
      return EmbeddedProgram<iterators::dlrm_min>("dlrm_min");
    case Reduction::kSum:
      break;
  }
  return EmbeddedProgram<iterators::dlrm_sum>("dlrm_sum");
}

Status CheckOptions(const EmbeddingOptions& o) {
  if (o.chunks_per_traversal < 1 || o.chunks_per_traversal > PULSE_DLRM_MAX_CHUNKS)
    return Status::InvalidArgument(
        fmt::format("dlrm: chunks_per_traversal {} (1 to {})", o.chunks_per_traversal, PULSE_DLRM_MAX_CHUNKS));
  return Status::Ok();
}

Status CheckLayout(std::span<const TableLayout> layout) {
  if (layout.empty()) return Status::InvalidArgument("dlrm: no tables");
  for (size_t t = 0; t < layout.size(); ++t) {
    if (layout[t].rows == 0) return Status::InvalidArgument(fmt::format("dlrm: table {} has 0 rows", t));
    if (layout[t].dim == 0) return Status::InvalidArgument(fmt::format("dlrm: table {} has dim 0", t));
  }
  return Status::Ok();
}

// Output vectors for the query: the identity of `op` for non-empty bags,
// zeros (the result of an empty bag) otherwise.
std::vector<ReducedVector> StartResults(const std::vector<TableLayout>& layout, const EmbeddingQuery& q, Reduction op) {
  std::vector<ReducedVector> out(layout.size());
  for (size_t t = 0; t < layout.size(); ++t)
    out[t].assign(layout[t].dim, q.indices[t].empty() ? 0 : ReductionIdentity(op));
  return out;
}

}  // namespace

uint64_t RowBytes(uint32_t dim) { return ChunksPerRow(dim) * kChunkBytes; }

Result<std::unique_ptr<EmbeddingTables>> EmbeddingTables::Create(Client* client, std::span<const TableLayout> shapes,
                                                                  const EmbeddingOptions& options) {
  PULSE_RETURN_IF_ERROR(CheckLayout(shapes));
  PULSE_RETURN_IF_ERROR(CheckOptions(options));
  std::vector<TableLayout> layout(shapes.begin(), shapes.end());
  for (TableLayout& t : layout) {
    PULSE_ASSIGN_OR_RETURN(t.base, client->Allocate(t.rows * RowBytes(t.dim)));
  }
  std::unique_ptr<EmbeddingTables> tables(new EmbeddingTables(client, std::move(layout), options));
  // Every row starts as zeros with scale 1.0, written in batches.
  for (uint32_t t = 0; t < tables->tables(); ++t) {
    const TableLayout& l = tables->layout_[t];
    constexpr uint64_t kBatch = 4096;
    std::vector<QuantizedRow> zero(std::min(kBatch, l.rows), QuantizedRow{1u << kScaleShift, std::vector<int8_t>(l.dim)});
    for (uint64_t r = 0; r < l.rows; r += kBatch) {
      const uint64_t n = std::min(kBatch, l.rows - r);
      PULSE_RETURN_IF_ERROR(tables->WriteRows(t, r, std::span<const QuantizedRow>(zero).first(n)));
    }
  }
  return tables;
}

Result<std::unique_ptr<EmbeddingTables>> EmbeddingTables::Attach(Client* client, std::vector<TableLayout> layout,
                                                                  const EmbeddingOptions& options) {
  PULSE_RETURN_IF_ERROR(CheckLayout(layout));
  PULSE_RETURN_IF_ERROR(CheckOptions(options));
  return std::unique_ptr<EmbeddingTables>(new EmbeddingTables(client, std::move(layout), options));
}

Status EmbeddingTables::WriteRows(uint32_t table, uint64_t first_row, std::span<const QuantizedRow> rows) {
  if (table >= layout_.size())
    return Status::InvalidArgument(fmt::format("dlrm: table {} (there are {})", table, layout_.size()));
  const TableLayout& l = layout_[table];
  if (first_row > l.rows || rows.size() > l.rows - first_row)
    return Status::InvalidArgument(fmt::format("dlrm: rows {}..{} of table {} are out of range ({} rows)", first_row,
                                               first_row + rows.size(), table, l.rows));
  const uint32_t chunks = ChunksPerRow(l.dim);
  std::vector<pulse_dlrm_chunk> bytes(rows.size() * chunks);
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].values.size() != l.dim)
      return Status::InvalidArgument(fmt::format("dlrm: row {} of table {} has {} values, dim is {}", first_row + r,
                                                 table, rows[r].values.size(), l.dim));
    for (uint32_t c = 0; c < chunks; ++c) {
      pulse_dlrm_chunk& chunk = bytes[r * chunks + c];
      chunk = {};
      chunk.scale = rows[r].scale;
      const uint32_t lanes = std::min(kLanesPerChunk, l.dim - c * kLanesPerChunk);
      std::memcpy(chunk.values, rows[r].values.data() + c * kLanesPerChunk, lanes);
    }
  }
  return client_->Write(l.base + first_row * RowBytes(l.dim), bytes.data(), bytes.size() * kChunkBytes);
}

Status EmbeddingTables::CheckQuery(const EmbeddingQuery& query) const {
  if (query.indices.size() != layout_.size())
    return Status::InvalidArgument(
        fmt::format("dlrm: query has {} bags, the model has {} tables", query.indices.size(), layout_.size()));
  for (size_t t = 0; t < layout_.size(); ++t) {
    const std::vector<uint64_t>& bag = query.indices[t];
    for (size_t k = 0; k < bag.size(); ++k)
      if (bag[k] >= layout_[t].rows)
        return Status::InvalidArgument(fmt::format("dlrm: index {} at position {} of table {} is out of range ({} rows)",
                                                   bag[k], k, t, layout_[t].rows));
  }
  return Status::Ok();
}

Result<std::vector<ReducedVector>> EmbeddingTables::Reduce(const EmbeddingQuery& query, Reduction op,
                                                           ReduceStats* stats) {
  PULSE_RETURN_IF_ERROR(CheckQuery(query));
  PULSE_ASSIGN_OR_RETURN(ProgramRef program, ProgramFor(op));
  // The callbacks share the results with this frame, so that one arriving
  // after a timeout writes into live memory.
  struct Pending {
    std::vector<ReducedVector> out;
    Status first_error = Status::Ok();
  };
  auto pending = std::make_shared<Pending>();
  pending->out = StartResults(layout_, query, op);
  TraverseOptions topts;
  topts.mode = options_.mode;
  // One traversal per (table, lane group, run of chunks_per_traversal
  // indices), all started before any is waited for.
  for (uint32_t t = 0; t < layout_.size(); ++t) {
    const TableLayout& l = layout_[t];
    const std::vector<uint64_t>& bag = query.indices[t];
    const uint64_t row_bytes = RowBytes(l.dim);
    for (uint32_t c = 0; c < ChunksPerRow(l.dim); ++c) {
      const uint32_t lanes = std::min(kLanesPerChunk, l.dim - c * kLanesPerChunk);
      for (size_t k = 0; k < bag.size(); k += options_.chunks_per_traversal) {
        const uint32_t n = static_cast<uint32_t>(std::min<size_t>(options_.chunks_per_traversal, bag.size() - k));
        pulse_dlrm_state st{};
        st.count = n;
        std::fill(std::begin(st.acc), std::end(st.acc), ReductionIdentity(op));
        for (uint32_t i = 0; i < n; ++i) st.addr[i] = l.base + bag[k + i] * row_bytes + c * kChunkBytes;
        // Only the addresses in use travel.
        std::vector<uint8_t> scratch(std::max<size_t>(kStateHeadBytes + n * sizeof(uint64_t), program->info().scratch_bytes));
        std::memcpy(scratch.data(), &st, kStateHeadBytes + n * sizeof(uint64_t));
        if (stats != nullptr) {
          stats->traversals += 1;
          stats->chunk_loads += n;
        }
        client_->TraverseAsync(
            program, st.addr[0], std::move(scratch), topts,
            [pending, op, t, c, lanes](Result<TraversalResult> r) {
              Status& first_error = pending->first_error;
              if (!first_error.ok()) return;
              if (!r.ok()) {
                first_error = r.status();
                return;
              }
              Status s = TraversalStatusError(r->status, fmt::format("dlrm {} of table {}", ReductionName(op), t),
                                              r->fault_addr, r->fault_pc);
              if (!s.ok()) {
                first_error = s;
                return;
              }
              if (r->scratch.size() < kStateHeadBytes) {
                first_error = Status::Internal(fmt::format("dlrm: table {}: scratch pad of {} bytes returned", t, r->scratch.size()));
                return;
              }
              int64_t acc[PULSE_DLRM_LANES];
              std::memcpy(acc, r->scratch.data() + offsetof(pulse_dlrm_state, acc), sizeof(acc));
              CombineAccumulators(op, std::span<const int64_t>(acc, lanes),
                                  std::span<int64_t>(pending->out[t]).subspan(c * kLanesPerChunk, lanes));
            });
      }
    }
  }
  PULSE_RETURN_IF_ERROR(client_->WaitAll(options_.timeout));
  PULSE_RETURN_IF_ERROR(pending->first_error);
  return std::move(pending->out);
}

Result<std::vector<ReducedVector>> EmbeddingTables::ReduceByGather(const EmbeddingQuery& query, Reduction op,
                                                                   ReduceStats* stats) {
  PULSE_RETURN_IF_ERROR(CheckQuery(query));
  std::vector<ReducedVector> out = StartResults(layout_, query, op);
  for (uint32_t t = 0; t < layout_.size(); ++t) {
    const TableLayout& l = layout_[t];
    const uint32_t chunks = ChunksPerRow(l.dim);
    // Each distinct row is read once per bag: a CPU node keeps what it read.
    std::unordered_map<uint64_t, std::vector<pulse_dlrm_chunk>> rows;
    for (uint64_t index : query.indices[t]) {
      auto [it, fresh] = rows.try_emplace(index);
      if (fresh) {
        it->second.resize(chunks);
        PULSE_RETURN_IF_ERROR(client_->Read(l.base + index * RowBytes(l.dim), it->second.data(), RowBytes(l.dim)));
        if (stats != nullptr) stats->row_reads += 1;
      }
      for (uint32_t c = 0; c < chunks; ++c) {
        const uint32_t lanes = std::min(kLanesPerChunk, l.dim - c * kLanesPerChunk);
        const pulse_dlrm_chunk& chunk = it->second[c];
        FoldRow(op, chunk.scale, std::span<const int8_t>(chunk.values, lanes),
                std::span<int64_t>(out[t]).subspan(c * kLanesPerChunk, lanes));
      }
    }
  }
  return out;
}

}  // namespace pulse::dlrm
