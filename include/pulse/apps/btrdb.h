// The BTrDB-like time-series application (TSV, seed 000 section 6, seed 001
// section 7): a time-partitioned tree over one channel of micro-PMU
// readings (pulse/apps/upmu.h) whose inner nodes keep per-child aggregates,
// and queries computing the sum, average, minimum or maximum over windows
// of 7.5, 15, 30 or 60 seconds.
//
// TsvTree: every node is 256 bytes (src/apps/btrdb/iterators/tsv_nodes.h):
// leaves hold 32 consecutive readings (encoded as uint32, see
// UpmuGenerator::Encode), inner nodes 7 children with each child's
// sum/min/max/count.  The tree is built bottom-up at the CPU node and
// time-partitioned: the leaves are split into one contiguous run per memory
// node in time order, and an inner node lives on the memory node of its
// first child, so a query crosses memory nodes at most once.  Aggregate()
// is the iterator compiled from C (src/apps/btrdb/iterators/
// tsv_aggregate.c), which uses the stored aggregate of every child the
// window covers fully and descends only at the window's two edges.
//
// Thread-safety: not thread-safe.  Destroying a tree does not free its far
// memory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "pulse/apps/app_system.h"
#include "pulse/apps/upmu.h"
#include "pulse/client.h"
#include "pulse/ds/aggregate.h"
#include "pulse/program.h"
#include "pulse/status.h"

namespace pulse::apps {

class TsvTree {
 public:
  // Writes the tree of `values` (values[t] is the reading at tick t) into
  // far memory.  `client` must outlive the tree.  Errors: InvalidArgument
  // (no values), those of Allocate/Write.
  static Result<std::unique_ptr<TsvTree>> Build(Client* client, const std::vector<uint32_t>& values,
                                                std::optional<ExecutionMode> mode = std::nullopt);

  // sum/min/max/count of the readings with ticks in [lo, hi] (the pulse
  // iterator, run where the client's dispatch policy or the tree's mode
  // says).  `iterations`, if given, receives the traversal's iteration count.
  Result<ds::Aggregate> Aggregate(uint64_t lo, uint64_t hi, uint32_t* iterations = nullptr);
  // The same without waiting: `done` runs inside a later Client::Poll /
  // WaitAll, with the aggregate and the iteration count.
  void AggregateAsync(uint64_t lo, uint64_t hi, bool pulse_acc,
                      std::function<void(Result<ds::Aggregate>, uint32_t iterations)> done);

  Client* client() const { return client_; }
  uint64_t root() const { return root_; }
  uint64_t ticks() const { return ticks_; }
  uint32_t height() const { return height_; }  // 1: the root is a leaf
  uint64_t nodes() const { return nodes_; }
  std::optional<ExecutionMode> mode() const { return mode_; }
  void set_mode(std::optional<ExecutionMode> mode) { mode_ = mode; }

 private:
  TsvTree(Client* client, std::optional<ExecutionMode> mode) : client_(client), mode_(mode) {}
  Client* client_;
  std::optional<ExecutionMode> mode_;
  uint64_t root_ = 0, ticks_ = 0, nodes_ = 0;
  uint32_t height_ = 0;
};

// sum/min/max/count of values[lo..hi] computed here: the reference.
ds::Aggregate NativeAggregate(const std::vector<uint32_t>& values, uint64_t lo, uint64_t hi);

enum class TsvStat { kSum, kAverage, kMin, kMax };
const char* TsvStatName(TsvStat s);

// One query: a statistic over the ticks [lo, hi].
struct TsvQuery {
  TsvStat stat = TsvStat::kSum;
  uint64_t lo = 0, hi = 0;
  double window_seconds = 0;
};
// The statistic of an aggregate (average: sum / count; 0 when empty).
double TsvAnswer(TsvStat stat, const ds::Aggregate& a);

struct BtrdbOptions {
  double seconds = 600;  // recorded time: 120 readings per second
  UpmuChannel channel = UpmuChannel::kL1Mag;
  uint64_t seed = 42;
};

// The application: loads the readings through an AppSystem and answers
// queries through its TsvAggregate.
class Btrdb {
 public:
  static constexpr double kWindowsSeconds[4] = {7.5, 15, 30, 60};
  // Generates the readings (fixed seed) and builds the tree with
  // system->client().  Errors: InvalidArgument (recording shorter than the
  // longest window), those of TsvTree::Build.
  static Result<std::unique_ptr<Btrdb>> Load(AppSystem* system, const BtrdbOptions& options,
                                             std::optional<ExecutionMode> mode = std::nullopt);
  // A random query: one of the four windows and statistics, uniformly, at a
  // uniformly random position.
  TsvQuery NextQuery(std::mt19937_64& rng) const;
  // The query's answer through the system.
  Result<double> Run(const TsvQuery& q);
  // The same answer computed here from the readings.
  double Native(const TsvQuery& q) const { return TsvAnswer(q.stat, NativeAggregate(values_, q.lo, q.hi)); }

  TsvTree& tree() { return *tree_; }
  const std::vector<uint32_t>& values() const { return values_; }

 private:
  Btrdb() = default;
  AppSystem* system_ = nullptr;
  std::vector<uint32_t> values_;
  std::unique_ptr<TsvTree> tree_;
};

}  // namespace pulse::apps
