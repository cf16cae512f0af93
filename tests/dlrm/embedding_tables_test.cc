// The offloaded embedding reduction and the one-sided gather against the
// plain reference (pulse/dlrm/quantized.h) on a real rack of two memory
// nodes: random queries with a fixed seed, the edge cases, two tenants.
#include "pulse/dlrm/embedding_tables.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "support/ds_cluster.h"
#include "support/environment_snapshot.h"

namespace pulse::dlrm {
namespace {

using pulse::ds::testing::DsCluster;
using pulse::ds::testing::ScaledOps;

constexpr Reduction kOps[] = {Reduction::kSum, Reduction::kMax, Reduction::kMin};

// Far tables plus the local copy of their rows the reference reduces.
struct Model {
  std::unique_ptr<EmbeddingTables> far;
  std::vector<std::vector<QuantizedRow>> rows;  // [table][row]
};

Model MakeModel(Client* client, const std::vector<TableLayout>& shapes, uint64_t seed,
                const EmbeddingOptions& options = {}) {
  Model m;
  auto far = EmbeddingTables::Create(client, shapes, options);
  EXPECT_TRUE(far.ok()) << far.status().ToString();
  if (!far.ok()) return m;
  m.far = std::move(*far);
  std::mt19937_64 rng(seed);
  for (uint32_t t = 0; t < shapes.size(); ++t) {
    std::vector<QuantizedRow> rows(shapes[t].rows);
    for (QuantizedRow& r : rows) {
      r.scale = 1 + static_cast<uint32_t>(rng() % (1u << 30));
      for (uint32_t j = 0; j < shapes[t].dim; ++j) r.values.push_back(static_cast<int8_t>(rng()));
    }
    EXPECT_TRUE(m.far->WriteRows(t, 0, rows).ok());
    m.rows.push_back(std::move(rows));
  }
  return m;
}

std::vector<ReducedVector> Reference(const Model& m, const EmbeddingQuery& q, Reduction op) {
  std::vector<ReducedVector> out;
  for (size_t t = 0; t < m.rows.size(); ++t) {
    auto r = ReferenceReduce(op, m.rows[t], m.far->layout()[t].dim, q.indices[t]);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    out.push_back(r.ok() ? *r : ReducedVector{});
  }
  return out;
}

// Reduce and ReduceByGather both equal the reference.
void ExpectMatches(Model& m, const EmbeddingQuery& q, Reduction op, const std::string& what) {
  const std::vector<ReducedVector> want = Reference(m, q, op);
  auto got = m.far->Reduce(q, op);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
  EXPECT_EQ(*got, want) << what << " " << ReductionName(op) << " offloaded";
  auto gathered = m.far->ReduceByGather(q, op);
  ASSERT_TRUE(gathered.ok()) << what << ": " << gathered.status().ToString();
  EXPECT_EQ(*gathered, want) << what << " " << ReductionName(op) << " gathered";
}

// Tables of 64 lanes (one chunk), 100 (two, the second padded) and 16.
// A query of one bag per table, each of `min_bag` + rng() % `spread`
// random rows of its table.
EmbeddingQuery RandomQuery(const Model& m, std::mt19937_64& rng, uint64_t min_bag, uint64_t spread) {
  EmbeddingQuery q;
  for (const TableLayout& l : m.far->layout()) {
    std::vector<uint64_t> bag(min_bag + rng() % spread);
    for (uint64_t& x : bag) x = rng() % l.rows;
    q.indices.push_back(std::move(bag));
  }
  return q;
}

const std::vector<TableLayout> kShapes = {{0, 300, 64}, {0, 200, 100}, {0, 50, 16}};

TEST_F(DsCluster, DlrmRandomQueriesEqualTheReference) {
  for (uint32_t per_traversal : {1u, 16u, 64u}) {
    EmbeddingOptions options;
    options.chunks_per_traversal = per_traversal;
    // One chunk per traversal: up to 450 traversals a query, a window of 3
    // of them in flight (each completion starts the next).
    if (per_traversal == 1) options.max_traversals_in_flight = 3;
    Model m = MakeModel(client_.get(), kShapes, 5, options);
    ASSERT_NE(m.far, nullptr);
    std::mt19937_64 rng(1234 + per_traversal);
    for (uint64_t i = 0; i < ScaledOps(per_traversal == 16 ? 40 : 10); ++i) {
      // Bags empty, of one traversal, of several.
      ExpectMatches(m, RandomQuery(m, rng, 0, 150), kOps[i % 3], "query " + std::to_string(i));
    }
  }
  EXPECT_GT(client_->counters().offloaded, 0u);
}

// Issue 15: a reduction request (a scratch pad of 64 accumulators and the
// chunk list, over 512 bytes) does not fit a slot of the default ring and
// goes as a message there; the double-layer ring takes entries of any
// length, so with it every reduction traversal goes by ring (a client of
// its own; PULSE_REQUEST_PATH and PULSE_RING_LAYOUT, which override the
// options, are unset for it), and the answers still equal the reference.
TEST_F(DsCluster, DlrmRequestsGoByTheDoubleLayerRing) {
  pulse::testing::EnvironmentSnapshot env;
  unsetenv("PULSE_REQUEST_PATH");
  unsetenv("PULSE_RING_LAYOUT");
  ClientOptions o = RackClientOptions();
  o.request_path = RequestPath::kRing;
  o.ring_layout = RingLayout::kDoubleLayer;
  std::unique_ptr<Client> ring = ConnectClient(o);
  ASSERT_NE(ring, nullptr);
  EmbeddingOptions options;
  options.mode = ExecutionMode::kOffload;
  Model m = MakeModel(ring.get(), kShapes, 9, options);
  ASSERT_NE(m.far, nullptr);
  std::mt19937_64 rng(99);
  for (uint64_t i = 0; i < ScaledOps(12); ++i) {
    ExpectMatches(m, RandomQuery(m, rng, 1, 100), kOps[i % 3], "ring query " + std::to_string(i));
  }
  const ClientCounters& c = ring->counters();
  EXPECT_GT(c.offloaded, 0u);
  EXPECT_GE(c.ring_requests, c.offloaded) << "every reduction traversal's request by ring";
  EXPECT_EQ(c.ring_fallbacks, 0u) << "none too large for the double layer";
}

// The same programs run at the CPU node (the reference interpreter over
// remote reads) give the same answers.
TEST_F(DsCluster, DlrmProgramsAtTheCpuNodeEqualTheReference) {
  EmbeddingOptions options;
  options.mode = ExecutionMode::kCpuNode;
  Model m = MakeModel(client_.get(), kShapes, 21, options);
  ASSERT_NE(m.far, nullptr);
  std::mt19937_64 rng(77);
  for (uint64_t i = 0; i < ScaledOps(9); ++i) {
    ExpectMatches(m, RandomQuery(m, rng, 0, 40), kOps[i % 3], "cpu-node query " + std::to_string(i));
  }
  EXPECT_GT(client_->counters().executed_locally, 0u);
}

TEST_F(DsCluster, DlrmEdgeCases) {
  Model m = MakeModel(client_.get(), kShapes, 9);
  ASSERT_NE(m.far, nullptr);
  for (Reduction op : kOps) {
    ExpectMatches(m, EmbeddingQuery{{{7}, {0}, {3}}}, op, "one row");
    ExpectMatches(m, EmbeddingQuery{{{5, 5, 5, 5}, {1, 1}, {2, 3, 2}}}, op, "duplicates");
    ExpectMatches(m, EmbeddingQuery{{{299}, {199, 0, 199}, {49}}}, op, "last rows");
    ExpectMatches(m, EmbeddingQuery{{{}, {}, {}}}, op, "empty query");
    ExpectMatches(m, EmbeddingQuery{{{}, {4, 8}, {}}}, op, "empty bags");
  }
  // Duplicates count again in a sum.
  auto twice = m.far->Reduce(EmbeddingQuery{{{5, 5}, {}, {}}}, Reduction::kSum);
  ASSERT_TRUE(twice.ok());
  for (uint32_t j = 0; j < 64; ++j)
    EXPECT_EQ((*twice)[0][j], 2 * static_cast<int64_t>(m.rows[0][5].values[j]) * m.rows[0][5].scale);
  // An empty query is zeros of each table's dimension.
  auto empty = m.far->Reduce(EmbeddingQuery{{{}, {}, {}}}, Reduction::kMax);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)[1], ReducedVector(100, 0));
  // An index past the last row: a clear error naming it, on both paths.
  for (bool offloaded : {true, false}) {
    const EmbeddingQuery bad{{{1, 2}, {3, 200}, {}}};
    auto r = offloaded ? m.far->Reduce(bad, Reduction::kSum) : m.far->ReduceByGather(bad, Reduction::kSum);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("index 200"), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("table 1"), std::string::npos) << r.status().ToString();
  }
  // A query with the wrong number of bags.
  auto short_query = m.far->Reduce(EmbeddingQuery{{{1}}}, Reduction::kSum);
  EXPECT_EQ(short_query.status().code(), Status::Code::kInvalidArgument);
}

TEST_F(DsCluster, DlrmRowsWrittenLaterAreSeen) {
  Model m = MakeModel(client_.get(), {{0, 10, 64}}, 3);
  ASSERT_NE(m.far, nullptr);
  std::vector<float> real(64);
  for (int j = 0; j < 64; ++j) real[j] = static_cast<float>(j - 32) / 16.0f;
  m.rows[0][4] = QuantizeRow(real);
  ASSERT_TRUE(m.far->WriteRows(0, 4, std::span<const QuantizedRow>(&m.rows[0][4], 1)).ok());
  for (Reduction op : kOps) ExpectMatches(m, EmbeddingQuery{{{4, 4, 9}}}, op, "rewritten row");
  EXPECT_FALSE(m.far->WriteRows(0, 10, std::span<const QuantizedRow>(&m.rows[0][4], 1)).ok());
}

TEST_F(DsCluster, DlrmAnotherTenantsTablesFault) {
  Model m = MakeModel(client_.get(), kShapes, 13);
  ASSERT_NE(m.far, nullptr);
  ClientOptions other = RackClientOptions();
  other.tenant = 2;
  auto intruder = ConnectClient(other);
  ASSERT_NE(intruder, nullptr);
  // Tenant 2's own tables work...
  Model own = MakeModel(intruder.get(), {{0, 20, 64}}, 17);
  ASSERT_NE(own.far, nullptr);
  ExpectMatches(own, EmbeddingQuery{{{1, 19, 19}}}, Reduction::kSum, "tenant 2's own table");
  // ...tenant 1's layout does not: the engine refuses the loads.
  auto stolen = EmbeddingTables::Attach(intruder.get(), m.far->layout());
  ASSERT_TRUE(stolen.ok());
  const EmbeddingQuery q{{{1, 2, 3}, {}, {}}};
  auto r = (*stolen)->Reduce(q, Reduction::kSum);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kPermissionDenied) << r.status().ToString();
  auto g = (*stolen)->ReduceByGather(q, Reduction::kSum);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), Status::Code::kPermissionDenied) << g.status().ToString();
  // And tenant 1 still reads its own, also through a second client (Attach).
  auto same_tenant = ConnectClient(RackClientOptions());
  ASSERT_NE(same_tenant, nullptr);
  auto attached = EmbeddingTables::Attach(same_tenant.get(), m.far->layout());
  ASSERT_TRUE(attached.ok());
  auto ok = (*attached)->Reduce(q, Reduction::kSum);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, Reference(m, q, Reduction::kSum));
}

}  // namespace
}  // namespace pulse::dlrm
