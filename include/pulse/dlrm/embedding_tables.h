// Embedding tables in far memory and the embedding reduction of DLRM
// inference (seed 002 IV-C): a query is a bag of row indices per table; each
// bag is reduced (sum, max or min, per dimension) near memory by an offloaded
// traversal, with many row loads of one query in flight at once.
//
// Data layout (docs/dlrm.md): a table is one far allocation of rows x
// ceil(dim / 64) chunks of 72 bytes; a chunk holds the row's fixed-point
// scale and 64 int8 values (pulse/dlrm/quantized.h has the numeric
// contract).  Reduce splits each bag into lane groups (64 dimensions each)
// and lists of at most `chunks_per_traversal` chunk addresses; each list is
// one traversal of the program `dlrm_sum`/`dlrm_max`/`dlrm_min`, which folds
// one chunk per iteration into 64 int64 accumulators in its scratch pad and
// jumps to the next address of the list.  Up to `max_traversals_in_flight`
// traversals of a query run at once (each completion starts the next), so
// the memory node's engine interleaves their loads; the CPU node combines
// the partial accumulators.
//
// Protection is the memory node's: a traversal may load only its tenant's
// ranges, so a layout naming another tenant's memory (Attach) gets
// PermissionDenied from the engine, never the bytes.
//
// Thread-safety: an EmbeddingTables is used by one thread, the thread of the
// Client it was made with (which it does not own and which must outlive it).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "pulse/client.h"
#include "pulse/dlrm/quantized.h"
#include "pulse/status.h"

namespace pulse::dlrm {

// Where a table lives: what another CPU node of the same tenant needs to
// reduce over it (Attach).
struct TableLayout {
  uint64_t base = 0;  // far address of row 0
  uint64_t rows = 0;
  uint32_t dim = 64;
};

struct EmbeddingOptions {
  // Chunk addresses one traversal walks (1..64).  Smaller: more traversals,
  // so more row loads in flight per query; larger: fewer messages.
  uint32_t chunks_per_traversal = 16;
  // Traversals of one query in flight at once (>= 1); each completion starts
  // the next.  Bounded because every traversal is one message each way and
  // the shared-memory transport's receive FIFO holds 64 (UCX_MM_FIFO_SIZE):
  // past it the memory node spins on sends it cannot complete
  // (docs/dlrm.md, "Figures").
  uint32_t max_traversals_in_flight = 32;
  // Where the reduction traversals run (kOffload by default: the point of
  // the component; kCpuNode runs the same program here over remote reads).
  ExecutionMode mode = ExecutionMode::kOffload;
  // How long Reduce waits for a query's traversals.
  std::chrono::milliseconds timeout{10000};
};

// A query: indices[t] is the bag of rows of table t (duplicates count
// again; empty bags allowed).  One bag per table.
struct EmbeddingQuery {
  std::vector<std::vector<uint64_t>> indices;
};

// What one query cost, added to by Reduce and ReduceByGather.
struct ReduceStats {
  uint64_t chunk_loads = 0;  // 72-byte chunks loaded near memory (Reduce)
  uint64_t traversals = 0;   // traversals started (Reduce)
  uint64_t row_reads = 0;    // Client::Read calls, one per distinct row of a bag (ReduceByGather)
};

class EmbeddingTables {
 public:
  // Allocates one far table per entry of `shapes` (its rows and dim; base
  // ignored), all rows zero with scale 1.0, through `client` (the tables
  // belong to its session).  Errors: InvalidArgument (no table, 0 rows,
  // dim 0, options out of range), those of Client::Allocate / Write.
  static Result<std::unique_ptr<EmbeddingTables>> Create(Client* client, std::span<const TableLayout> shapes,
                                                         const EmbeddingOptions& options = {});
  // Tables another client of this tenant created (their layout()).  Nothing
  // is checked here: a base that is not this tenant's memory makes Reduce
  // fail with PermissionDenied (the engine's protection fault) and
  // ReduceByGather with the read's error.  InvalidArgument for a malformed
  // layout or options.
  static Result<std::unique_ptr<EmbeddingTables>> Attach(Client* client, std::vector<TableLayout> layout,
                                                         const EmbeddingOptions& options = {});

  const std::vector<TableLayout>& layout() const { return layout_; }
  size_t tables() const { return layout_.size(); }

  // Writes rows first_row.. of `table`.  Errors: InvalidArgument (table or a
  // row out of range, a row whose values are not dim long), those of
  // Client::Write.
  Status WriteRows(uint32_t table, uint64_t first_row, std::span<const QuantizedRow> rows);

  // The offloaded reduction: one ReducedVector (dim values) per table.
  // Errors: InvalidArgument naming the table, position and index of an
  // index out of range, or a query with the wrong number of bags (nothing is
  // sent then); PermissionDenied (a table in memory this tenant does not
  // own) and the other statuses of a traversal that did not end (naming the
  // table); Timeout after options.timeout.  `stats`, if given, is added to.
  Result<std::vector<ReducedVector>> Reduce(const EmbeddingQuery& query, Reduction op, ReduceStats* stats = nullptr);

  // The baseline: the CPU node reads every distinct row of each bag with
  // one one-sided Client::Read and reduces here (FoldRow).  Same answers
  // and argument errors as Reduce; read errors as Client::Read's.
  Result<std::vector<ReducedVector>> ReduceByGather(const EmbeddingQuery& query, Reduction op,
                                                    ReduceStats* stats = nullptr);

 private:
  EmbeddingTables(Client* client, std::vector<TableLayout> layout, const EmbeddingOptions& options)
      : client_(client), layout_(std::move(layout)), options_(options) {}
  Status CheckQuery(const EmbeddingQuery& query) const;

  Client* client_;
  std::vector<TableLayout> layout_;
  EmbeddingOptions options_;
};

// Bytes of one row of dimension `dim` in far memory.
uint64_t RowBytes(uint32_t dim);

}  // namespace pulse::dlrm
