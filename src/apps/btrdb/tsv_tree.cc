// TsvTree: building the time-partitioned aggregate tree and running its
// offloaded aggregate (include/pulse/apps/btrdb.h).
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "apps/btrdb/iterators/tsv_nodes.h"
#include "ds/ds_common.h"
#include "pulse/apps/btrdb.h"
#include "pulse/iterators/tsv_aggregate.h"

namespace pulse::apps {
namespace {

using Node = pulse_tsv_node;
static_assert(sizeof(Node) <= 256, "a tree node fits one window");
constexpr uint64_t kNodeBytes = 256;
constexpr uint64_t kFanout = PULSE_TSV_FANOUT;
constexpr uint64_t kLeafValues = PULSE_TSV_LEAF_VALUES;
constexpr uint64_t kWriteChunk = 64 * 1024;

Result<ProgramRef> AggregateProgram() {
  static const Result<ProgramRef> program =
      LoadEmbeddedProgram(iterators::tsv_aggregate(), "tsv_aggregate");
  return program;
}

// A node being built: its image, the partition (memory node run) it goes
// to, its index there, and its subtree's aggregate.
struct Built {
  Node node;
  uint32_t partition = 0;
  uint64_t slot = 0;
  ds::Aggregate agg;
};

void Fold(ds::Aggregate& a, uint64_t sum, uint64_t mn, uint64_t mx, uint64_t count) {
  a.sum += sum;
  a.min = std::min(a.min, mn);
  a.max = std::max(a.max, mx);
  a.count += count;
}

std::vector<uint8_t> ScratchOf(uint64_t lo, uint64_t hi, uint32_t scratch_bytes) {
  pulse_tsv_agg_state st{lo, hi, 0, UINT32_MAX, 0, 0, 0, 0};
  std::vector<uint8_t> scratch(std::max<size_t>(sizeof st, scratch_bytes), 0);
  std::memcpy(scratch.data(), &st, sizeof st);
  return scratch;
}

Result<ds::Aggregate> AggregateOf(const Result<TraversalResult>& r, uint64_t lo, uint64_t hi) {
  if (!r.ok()) return r.status();
  // Formatted only on a fault: this runs once per request.
  if (r->status != TraversalStatus::kDone) {
    return TraversalStatusError(r->status, fmt::format("TsvTree::Aggregate [{}, {}]", lo, hi), r->fault_addr);
  }
  pulse_tsv_agg_state st;
  if (r->scratch.size() < sizeof st) return Status::Internal("TsvTree::Aggregate: short scratch pad");
  std::memcpy(&st, r->scratch.data(), sizeof st);
  ds::Aggregate a;
  a.count = st.count;
  a.sum = st.sum;
  if (a.count > 0) {
    a.min = st.min;
    a.max = st.max;
  }
  return a;
}

}  // namespace

ds::Aggregate NativeAggregate(const std::vector<uint32_t>& values, uint64_t lo, uint64_t hi) {
  ds::Aggregate a;
  for (uint64_t t = lo; t <= hi && t < values.size(); ++t) Fold(a, values[t], values[t], values[t], 1);
  return a;
}

Result<std::unique_ptr<TsvTree>> TsvTree::Build(Client* client, const std::vector<uint32_t>& values,
                                                std::optional<ExecutionMode> mode) {
  if (client == nullptr) return Status::InvalidArgument("TsvTree: no client");
  if (values.empty()) return Status::InvalidArgument("TsvTree: no readings");
  auto program = AggregateProgram();
  if (!program.ok()) return program.status();
  std::unique_ptr<TsvTree> tree(new TsvTree(client, mode));
  const uint32_t partitions = std::max<uint32_t>(1, client->memory_nodes());
  std::vector<uint64_t> per_partition(partitions, 0);

  // Leaves, in time order, split into one run per partition.
  std::vector<std::vector<Built>> levels(1);
  const uint64_t leaves = (values.size() + kLeafValues - 1) / kLeafValues;
  for (uint64_t i = 0; i < leaves; ++i) {
    Built b;
    std::memset(&b.node, 0, sizeof b.node);
    b.node.start = i * kLeafValues;
    b.node.span = 1;
    b.node.leaf = 1;
    const uint64_t n = std::min<uint64_t>(kLeafValues, values.size() - b.node.start);
    b.node.count = static_cast<uint16_t>(n);
    for (uint64_t k = 0; k < n; ++k) {
      const uint32_t v = values[b.node.start + k];
      b.node.u.value[k] = v;
      Fold(b.agg, v, v, v, 1);
    }
    b.partition = static_cast<uint32_t>(i * partitions / leaves);
    b.slot = per_partition[b.partition]++;
    levels.back().push_back(b);
  }
  // Inner levels until one root.  A child of level l spans span_l ticks.
  uint64_t span = kLeafValues;
  while (levels.back().size() > 1) {
    const std::vector<Built>& below = levels.back();
    std::vector<Built> level;
    for (uint64_t i = 0; i < below.size(); i += kFanout) {
      Built b;
      std::memset(&b.node, 0, sizeof b.node);
      b.node.start = below[i].node.start;
      b.node.span = static_cast<uint32_t>(span);
      b.node.count = static_cast<uint16_t>(std::min<uint64_t>(kFanout, below.size() - i));
      b.partition = below[i].partition;
      b.slot = per_partition[b.partition]++;
      level.push_back(b);
    }
    levels.push_back(std::move(level));
    span *= kFanout;
  }
  // One region per partition; then every address is known.
  std::vector<uint64_t> region(partitions, 0);
  for (uint32_t p = 0; p < partitions; ++p) {
    if (per_partition[p] == 0) continue;
    auto a = client->Allocate(per_partition[p] * kNodeBytes, p);
    if (!a.ok()) return a.status();
    region[p] = *a;
  }
  auto addr_of = [&](const Built& b) { return region[b.partition] + b.slot * kNodeBytes; };
  for (size_t l = 1; l < levels.size(); ++l) {
    for (uint64_t i = 0; i < levels[l].size(); ++i) {
      Built& b = levels[l][i];
      for (uint64_t k = 0; k < b.node.count; ++k) {
        const Built& c = levels[l - 1][i * kFanout + k];
        b.node.u.child[k] = pulse_tsv_child{addr_of(c), c.agg.sum, static_cast<uint32_t>(c.agg.min),
                                            static_cast<uint32_t>(c.agg.max), static_cast<uint32_t>(c.agg.count), 0};
        Fold(b.agg, c.agg.sum, c.agg.min, c.agg.max, c.agg.count);
      }
    }
  }
  std::vector<std::vector<uint8_t>> image(partitions);
  for (uint32_t p = 0; p < partitions; ++p) image[p].assign(per_partition[p] * kNodeBytes, 0);
  for (const auto& level : levels) {
    for (const Built& b : level) std::memcpy(image[b.partition].data() + b.slot * kNodeBytes, &b.node, sizeof b.node);
  }
  for (uint32_t p = 0; p < partitions; ++p) {
    for (uint64_t off = 0; off < image[p].size(); off += kWriteChunk) {
      PULSE_RETURN_IF_ERROR(client->Write(region[p] + off, image[p].data() + off,
                                          std::min<uint64_t>(kWriteChunk, image[p].size() - off)));
    }
    tree->nodes_ += per_partition[p];
  }
  tree->root_ = addr_of(levels.back().front());
  tree->ticks_ = values.size();
  tree->height_ = static_cast<uint32_t>(levels.size());
  return tree;
}

Result<ds::Aggregate> TsvTree::Aggregate(uint64_t lo, uint64_t hi, uint32_t* iterations) {
  if (lo > hi) return ds::Aggregate{};
  auto program = AggregateProgram();
  if (!program.ok()) return program.status();
  TraverseOptions options;
  options.mode = mode_;
  auto r = client_->Traverse(*program, root_, ScratchOf(lo, hi, (*program)->info().scratch_bytes), options);
  if (iterations != nullptr && r.ok()) *iterations = r->iterations;
  return AggregateOf(r, lo, hi);
}

void TsvTree::AggregateAsync(uint64_t lo, uint64_t hi, bool pulse_acc,
                             std::function<void(Result<ds::Aggregate>, uint32_t)> done) {
  auto program = AggregateProgram();
  if (!program.ok()) {
    done(program.status(), 0);
    return;
  }
  TraverseOptions options;
  options.mode = mode_;
  options.pulse_acc = pulse_acc;
  client_->TraverseAsync(*program, root_, ScratchOf(lo, hi, (*program)->info().scratch_bytes), options,
                         [lo, hi, done = std::move(done)](Result<TraversalResult> r) {
                           done(AggregateOf(r, lo, hi), r.ok() ? r->iterations : 0);
                         });
}

}  // namespace pulse::apps
