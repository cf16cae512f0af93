// Reading and writing graphs.  Two formats:
//   Ligra's AdjacencyGraph text: the line "AdjacencyGraph", then n, m, the
//     n offsets and the m edge targets, one number per line (any
//     whitespace is accepted between numbers).  Symmetry is not recorded:
//     the reader is told (Ligra's -s).
//   pulse's binary CSR: a 48-byte header (magic "PULSECSR", version 1,
//     flags with bit 0 = symmetric, n, m, 16 reserved bytes; little-endian)
//     then n + 1 uint64 offsets and m uint32 edge targets.
// Readers stream the file straight into arrays of the given ArraySpace
// (no copy of the whole graph in local memory) and check what they read:
// the header's sizes against the file's size before allocating anything,
// then the offsets and edges (CsrGraph::FromArrays).
//
// Thread-safety: the functions share no state.
#pragma once

#include <string>

#include "pulse/graph/array_space.h"
#include "pulse/graph/csr_graph.h"
#include "pulse/status.h"

namespace pulse::graph {

// Reads an AdjacencyGraph text file.  Errors: NotFound/IoError for the
// file; InvalidArgument naming the file and what is wrong (header, a count
// the file cannot hold, a non-number, a bad offset or edge, trailing
// data); those of the space.
Result<CsrGraph> ReadAdjacencyGraph(const std::string& path, bool symmetric, ArraySpace& space);
// Writes `g`'s out-edges as AdjacencyGraph text.  Errors: IoError.
Status WriteAdjacencyGraph(const CsrGraph& g, const std::string& path);

// Reads a binary CSR file (its symmetric flag decides symmetry).  Errors as
// ReadAdjacencyGraph; the file's size must be exactly what its header says.
Result<CsrGraph> ReadBinaryGraph(const std::string& path, ArraySpace& space);
// Writes `g` as a binary CSR file.  Errors: IoError.
Status WriteBinaryGraph(const CsrGraph& g, const std::string& path);

// Reads either format, told apart by the first bytes; `symmetric` applies
// to the text format only.
Result<CsrGraph> LoadGraph(const std::string& path, bool symmetric, ArraySpace& space);

}  // namespace pulse::graph
