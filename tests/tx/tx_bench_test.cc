// pulse bench tx end to end at a tiny scale: both systems and two shapes
// on a chain of three memory nodes it starts.  Every read is verified,
// and the per-transaction figures it reports follow from what each system
// must do: pulse-chain sends one request carrying the reads (no one-sided
// read), HyperLoop-like reads each value one-sidedly at the tail and sends
// one request per write; replicas forward and acknowledge by ring or by
// message as asked; logs are synced only when asked.  Bad options are
// refused before anything starts, naming the option.
#include "bench/tx_bench.h"

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "support/local_rack.h"

namespace pulse::bench {
namespace {

TxBenchOptions TinyRun() {
  TxBenchOptions o;
  o.shapes = "0,1;4,2";
  o.value_bytes = {64};
  o.keys = 256;
  o.seconds = 0.3;
  o.binary = PULSE_BINARY;
  o.progress = [](const std::string& line) { std::cerr << "[bench tx] " << line << std::endl; };
  return o;
}

TEST(TxBench, EachSystemDoesWhatItsDesignSaysPerTransaction) {
  pulse::testing::SetUcxTestEnvironment();
  TxBenchOptions o = TinyRun();
  auto r = RunTxBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Per value size, each shape with pulse-chain first, then HyperLoop-like.
  ASSERT_EQ(r->runs.size(), 4u);
  const char* order[][3] = {{"pulse-chain", "0", "1"}, {"hyperloop", "0", "1"}, {"pulse-chain", "4", "2"},
                            {"hyperloop", "4", "2"}};
  const nlohmann::json j = r->ToJson(o);
  ASSERT_EQ(j["runs"].size(), 4u);
  for (size_t i = 0; i < r->runs.size(); ++i) {
    const TxRunResult& run = r->runs[i];
    SCOPED_TRACE(run.system + " (" + std::to_string(run.reads) + "," + std::to_string(run.writes) + ")");
    EXPECT_EQ(run.system, order[i][0]);
    EXPECT_EQ(run.reads, std::stoul(order[i][1]));
    EXPECT_EQ(run.writes, std::stoul(order[i][2]));
    ASSERT_GT(run.transactions, 0u);
    // Every read of the measured phase checked against the last value written.
    EXPECT_EQ(run.verified, run.transactions * run.reads);
    const double reads = run.reads, writes = run.writes;
    if (run.system == "pulse-chain") {
      // The reads travel inside the one request: nothing read one-sidedly;
      // a request and its answer.
      EXPECT_DOUBLE_EQ(run.one_sided_per_tx, run.ring_writes_per_tx);
      EXPECT_GE(run.messages_per_tx, 2.0);
    } else {
      // One one-sided read per read, a request and an answer per write.
      EXPECT_NEAR(run.one_sided_per_tx - run.ring_writes_per_tx, reads, 1e-9);
      EXPECT_GE(run.messages_per_tx, 2.0 * writes);
    }
    // Replicas forward down and acknowledge up by ring (this host has
    // one-sided puts): at most one of each per hop and write request.
    const double requests = run.system == "pulse-chain" ? 1.0 : writes;
    EXPECT_GT(run.ring_writes_per_tx, 0.0);
    EXPECT_LE(run.ring_writes_per_tx, 2.0 * (o.memory_nodes - 1) * requests + 1e-9);
    // fdatasync by default, once per group commit at most per replica.
    EXPECT_GT(run.log_syncs_per_tx, 0.0);
    EXPECT_LE(run.log_syncs_per_tx, o.memory_nodes * requests + 1e-9);
    // The JSON says the same.
    const nlohmann::json& jr = j["runs"][i];
    EXPECT_EQ(jr["transactions"].get<uint64_t>(), run.transactions);
    EXPECT_EQ(jr["verified_reads"].get<uint64_t>(), run.verified);
    EXPECT_DOUBLE_EQ(jr["one_sided_per_tx"].get<double>(), run.one_sided_per_tx);
    EXPECT_DOUBLE_EQ(jr["messages_per_tx"].get<double>(), run.messages_per_tx);
    EXPECT_GT(jr["p99_us"].get<double>(), 0.0);
    EXPECT_LE(jr["p50_us"].get<double>(), jr["p99_us"].get<double>());
  }
  // One comparison per shape, each naming its target and whether it was met.
  ASSERT_EQ(j["targets"].size(), 2u);
  for (const nlohmann::json& t : j["targets"]) {
    EXPECT_TRUE(t.contains("target") && t.contains("met")) << t.dump();
    EXPECT_GT(t["mean_ratio"].get<double>(), 0.0) << t.dump();
  }
}

TEST(TxBench, ReplicasByMessageAndUnsyncedLogsShowInTheFigures) {
  pulse::testing::SetUcxTestEnvironment();
  TxBenchOptions o = TinyRun();
  o.system = "pulse-chain";
  o.shapes = "4,2";
  o.replica_path = "am";
  o.log_sync = "none";
  auto r = RunTxBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->runs.size(), 1u);
  const TxRunResult& run = r->runs[0];
  ASSERT_GT(run.transactions, 0u);
  EXPECT_EQ(run.verified, 4 * run.transactions);
  EXPECT_EQ(run.ring_writes_per_tx, 0.0);
  EXPECT_EQ(run.one_sided_per_tx, 0.0);
  // The request, its answer, and each hop's forward as a message.
  EXPECT_GE(run.messages_per_tx, 2.0 + (o.memory_nodes - 1));
  EXPECT_EQ(run.log_syncs_per_tx, 0.0);
  EXPECT_EQ(r->ToJson(o)["config"]["durability"].get<std::string>().rfind("log appended to the page cache", 0), 0u);
}

TEST(TxBench, BadOptionsAreRefusedNamingTheOption) {
  struct Case {
    const char* option;
    std::function<void(TxBenchOptions&)> set;
  } cases[] = {
      {"--system", [](TxBenchOptions& o) { o.system = "paxos"; }},
      {"--shapes", [](TxBenchOptions& o) { o.shapes = "4"; }},
      {"--shapes", [](TxBenchOptions& o) { o.shapes = "0,0"; }},
      {"--shapes", [](TxBenchOptions& o) { o.shapes = "4,2;65,1"; }},
      {"--value-bytes", [](TxBenchOptions& o) { o.value_bytes = {0}; }},
      {"--value-bytes", [](TxBenchOptions& o) { o.value_bytes = {4097}; }},
      {"--keys", [](TxBenchOptions& o) { o.keys = 5; }},
      {"--log-sync", [](TxBenchOptions& o) { o.log_sync = "fsync"; }},
      {"--replica-path", [](TxBenchOptions& o) { o.replica_path = "rdma"; }},
      {"--memory-nodes", [](TxBenchOptions& o) { o.memory_nodes = 0; }},
  };
  for (const Case& c : cases) {
    TxBenchOptions o = TinyRun();
    c.set(o);
    auto r = RunTxBench(o);
    ASSERT_FALSE(r.ok()) << c.option;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.option), std::string::npos) << r.status().ToString();
  }
}

}  // namespace
}  // namespace pulse::bench
