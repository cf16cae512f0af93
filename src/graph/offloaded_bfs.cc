#include "pulse/graph/offloaded_bfs.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

#include <fmt/format.h>

#include "graph/iterators/graph_bfs_scan.h"
#include "pulse/iterators/graph_bfs_scan.h"
#include "pulse/typed_traversal.h"

namespace pulse::graph {
namespace {

// Client::Write and Read move at most this much per call.
constexpr uint64_t kChunk = 1 << 20;

Status WriteFar(Client& client, uint64_t addr, const void* src, uint64_t bytes) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (uint64_t off = 0; off < bytes; off += kChunk)
    PULSE_RETURN_IF_ERROR(client.Write(addr + off, p + off, std::min(kChunk, bytes - off)));
  return Status::Ok();
}

// One scan still to send: a frontier vertex and the part of its edges left.
struct Scan {
  VertexId source;
  uint64_t cursor, end;
};

}  // namespace

Result<OffloadedBfs> OffloadedBfs::Upload(Client& client, const CsrGraph& g) {
  OffloadedBfs bfs(client, g);
  uint64_t n = g.num_vertices(), m = g.num_edges();
  PULSE_ASSIGN_OR_RETURN(bfs.edges_addr_, client.Allocate(std::max<uint64_t>(m, 1) * sizeof(VertexId)));
  PULSE_ASSIGN_OR_RETURN(bfs.parents_addr_, client.Allocate(std::max<uint64_t>(n, 1) * sizeof(VertexId)));
  PULSE_RETURN_IF_ERROR(WriteFar(client, bfs.edges_addr_, g.edges(), m * sizeof(VertexId)));
  return bfs;
}

Result<AppResult> OffloadedBfs::Run(VertexId root, uint32_t in_flight, std::chrono::milliseconds timeout) {
  const CsrGraph& g = *graph_;
  uint64_t n = g.num_vertices();
  if (root >= n) return Status::InvalidArgument(fmt::format("offloaded bfs: root {} is not a vertex (n = {})", root, n));
  PULSE_ASSIGN_OR_RETURN(ProgramRef program, EmbeddedProgram<iterators::graph_bfs_scan>("graph_bfs_scan"));
  {
    std::vector<VertexId> unvisited(std::min<uint64_t>(n, kChunk / sizeof(VertexId)), kNoVertex);
    for (uint64_t v = 0; v < n; v += unvisited.size()) {
      uint64_t k = std::min<uint64_t>(unvisited.size(), n - v);
      PULSE_RETURN_IF_ERROR(client_->Write(parents_addr_ + v * sizeof(VertexId), unvisited.data(), k * sizeof(VertexId)));
    }
    VertexId self = root;
    PULSE_RETURN_IF_ERROR(client_->Write(parents_addr_ + uint64_t{root} * sizeof(VertexId), &self, sizeof(self)));
  }
  AppResult r;
  r.app = App::kBfs;
  // Two scans of one level may both find v unvisited (both store a parent
  // of the same level, either is right): the CPU node keeps v once.
  std::vector<uint8_t> seen(n, 0);
  seen[root] = 1;
  std::vector<VertexId> frontier{root};
  TraverseOptions options;
  options.mode = ExecutionMode::kOffload;
  while (!frontier.empty()) {
    ++r.rounds;
    std::deque<Scan> scans;
    for (VertexId u : frontier)
      if (g.out_degree(u) > 0)
        scans.push_back({u, edges_addr_ + g.offsets()[u] * sizeof(VertexId), edges_addr_ + g.offsets()[u + 1] * sizeof(VertexId)});
    std::vector<VertexId> next;
    Status failure = Status::Ok();
    // Batches of `in_flight` scans, each waited for as a whole (bounded):
    // nothing polls in a loop.  A scan that filled its report is resumed
    // in a later batch from its cursor.
    while (!scans.empty() && failure.ok()) {
      uint32_t batch = 0;
      for (; batch < in_flight && !scans.empty(); ++batch) {
        Scan s = scans.front();
        scans.pop_front();
        pulse_graph_bfs_scan_state st{};
        st.source = s.source;
        st.cursor = s.cursor;
        st.end = s.end;
        st.parents = parents_addr_;
        std::vector<uint8_t> scratch(std::max<size_t>(sizeof(st), program->info().scratch_bytes), 0);
        std::memcpy(scratch.data(), &st, sizeof(st));
        ++stats_.traversals;
        client_->TraverseAsync(program, s.cursor, std::move(scratch), options, [&, s](Result<TraversalResult> done) {
          if (!done.ok()) {
            if (failure.ok()) failure = done.status();
            return;
          }
          if (done->status != TraversalStatus::kDone || done->scratch.size() < sizeof(pulse_graph_bfs_scan_state)) {
            if (failure.ok())
              failure = TraversalStatusError(done->status,
                                             fmt::format("offloaded bfs: the scan of vertex {} at {:#x}", s.source, done->cur_ptr));
            return;
          }
          pulse_graph_bfs_scan_state out;
          std::memcpy(&out, done->scratch.data(), sizeof(out));
          stats_.iterations += done->iterations;
          stats_.vertices_returned += out.count;
          for (uint64_t i = 0; i < out.count; ++i) {
            VertexId v = out.found[i];
            if (v < n && !seen[v]) {
              seen[v] = 1;
              next.push_back(v);
            }
          }
          if (out.cursor < out.end) scans.push_back({s.source, out.cursor, out.end});
        });
      }
      PULSE_RETURN_IF_ERROR(client_->WaitAll(timeout));
    }
    PULSE_RETURN_IF_ERROR(failure);
    frontier = std::move(next);
  }
  r.parents.resize(n);
  for (uint64_t v = 0; v < n; v += kChunk / sizeof(VertexId)) {
    uint64_t k = std::min<uint64_t>(kChunk / sizeof(VertexId), n - v);
    PULSE_RETURN_IF_ERROR(client_->Read(parents_addr_ + v * sizeof(VertexId), r.parents.data() + v, k * sizeof(VertexId)));
  }
  PULSE_ASSIGN_OR_RETURN(r.labels, BfsDepthsFromParents(r.parents, root));
  return r;
}

}  // namespace pulse::graph
