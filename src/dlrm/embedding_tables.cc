#include "pulse/dlrm/embedding_tables.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
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
  if (o.max_traversals_in_flight < 1)
    return Status::InvalidArgument("dlrm: max_traversals_in_flight must be >= 1");
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
  // One traversal per (table, lane group, run of chunks_per_traversal
  // indices).  Up to max_traversals_in_flight are started at once; each
  // completion starts the next, so the memory node always has that many row
  // loads of the query in flight.
  struct Traversal {
    uint32_t table, lane_group, lanes;
    std::vector<uint8_t> scratch;
    uint64_t cur_ptr;
  };
  // Shared with the callbacks, so that one arriving after a timeout finds
  // live memory (and starts nothing more).
  struct Pending {
    std::vector<ReducedVector> out;
    std::vector<Traversal> todo;
    size_t started = 0, finished = 0;
    Status first_error = Status::Ok();
    bool abandoned = false;
    std::function<void()> start_next;
  };
  auto pending = std::make_shared<Pending>();
  pending->out = StartResults(layout_, query, op);
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
        const size_t used = kStateHeadBytes + n * sizeof(uint64_t);
        std::vector<uint8_t> scratch(std::max<size_t>(used, program->info().scratch_bytes));
        std::memcpy(scratch.data(), &st, used);
        pending->todo.push_back(Traversal{t, c, lanes, std::move(scratch), st.addr[0]});
        if (stats != nullptr) {
          stats->traversals += 1;
          stats->chunk_loads += n;
        }
      }
    }
  }
  TraverseOptions topts;
  topts.mode = options_.mode;
  Pending* p = pending.get();  // the callbacks hold `pending`; start_next only runs while they do
  p->start_next = [p, client = client_, program, topts, op, weak = std::weak_ptr<Pending>(pending)] {
    if (p->abandoned || p->started == p->todo.size()) return;
    Traversal& tr = p->todo[p->started++];
    const uint32_t t = tr.table, c = tr.lane_group, lanes = tr.lanes;
    client->TraverseAsync(program, tr.cur_ptr, std::move(tr.scratch), topts,
                          [pending = weak.lock(), op, t, c, lanes](Result<TraversalResult> r) {
                            pending->finished += 1;
                            Status& first_error = pending->first_error;
                            if (first_error.ok()) {
                              if (!r.ok()) {
                                first_error = r.status();
                              } else if (Status s = TraversalStatusError(
                                             r->status, fmt::format("dlrm {} of table {}", ReductionName(op), t),
                                             r->fault_addr, r->fault_pc);
                                         !s.ok()) {
                                first_error = s;
                              } else if (r->scratch.size() < kStateHeadBytes) {
                                first_error = Status::Internal(
                                    fmt::format("dlrm: table {}: scratch pad of {} bytes returned", t, r->scratch.size()));
                              } else {
                                int64_t acc[PULSE_DLRM_LANES];
                                std::memcpy(acc, r->scratch.data() + offsetof(pulse_dlrm_state, acc), sizeof(acc));
                                CombineAccumulators(op, std::span<const int64_t>(acc, lanes),
                                                    std::span<int64_t>(pending->out[t]).subspan(c * kLanesPerChunk, lanes));
                              }
                            }
                            if (!first_error.ok()) pending->abandoned = true;  // start nothing more
                            pending->start_next();
                          });
  };
  const size_t window = std::min<size_t>(options_.max_traversals_in_flight, p->todo.size());
  for (size_t i = 0; i < window; ++i) p->start_next();
  // WaitAll returns when nothing is pending; a callback may have started
  // more in between, so wait until every started traversal has finished.
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  while (p->finished < p->started) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    Status waited = left.count() > 0 ? client_->WaitAll(left) : Status::Timeout("dlrm: reduction timed out");
    if (!waited.ok()) {
      p->abandoned = true;
      return waited;
    }
  }
  p->start_next = nullptr;  // it holds a copy of the program and the client; nothing runs it now
  PULSE_RETURN_IF_ERROR(p->first_error);
  return std::move(p->out);
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
