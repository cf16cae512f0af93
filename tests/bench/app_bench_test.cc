// `pulse bench app` with several closed-loop clients: each client loads its
// own copy of the data and every btrdb answer is checked against the native
// aggregate, so a lane that mixed up systems, data or counters fails here.
#include "bench/app_bench.h"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "support/ds_cluster.h"

namespace pulse::bench {
namespace {

AppBenchOptions SmallBtrdb(const std::string& name) {
  AppBenchOptions o;
  o.app = "btrdb";
  o.system = "pulse";
  o.memory_nodes = 2;
  o.binary = PULSE_BINARY;
  o.run_dir = (std::filesystem::path(::testing::TempDir()) / fmt::format("{}-{}", name, getpid())).string();
  o.size = 120;  // two minutes of readings
  o.seconds = 0.3;
  o.warmup_ops = 5;
  o.mode = ExecutionMode::kOffload;  // as the command runs it: iterations happen on the memory nodes
  return o;
}

TEST(AppBench, SeveralClientsEachServeTheirOwnCopy) {
  AppBenchOptions o = SmallBtrdb("app-bench-clients");
  o.concurrency = 3;
  auto r = RunAppBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->load_ops, 3 * o.size);
  EXPECT_GT(r->closed.ops, 0u);
  // btrdb checks every answer: the warm-up of each client plus every measured request.
  EXPECT_EQ(r->verified, 3 * o.warmup_ops + r->closed.ops);
  ASSERT_TRUE(r->iterations_per_op.has_value());
  EXPECT_GT(*r->iterations_per_op, 0);
  EXPECT_GT(r->bytes_per_op, 0);
  std::filesystem::remove_all(o.run_dir);
}

// The rpc system's handlers walk the same tree nodes the pulse iterator
// does, so its iterations per operation (handler steps) are of the same size.
TEST(AppBench, RpcIterationsCountTheNodesItsHandlersVisit) {
  AppBenchOptions o = SmallBtrdb("app-bench-rpc-iterations");
  auto pulse = RunAppBench(o);
  ASSERT_TRUE(pulse.ok()) << pulse.status().ToString();
  o.system = "rpc";
  auto rpc = RunAppBench(o);
  ASSERT_TRUE(rpc.ok()) << rpc.status().ToString();
  ASSERT_TRUE(pulse->iterations_per_op.has_value() && rpc->iterations_per_op.has_value());
  ASSERT_GT(*pulse->iterations_per_op, 0);
  const double ratio = *rpc->iterations_per_op / *pulse->iterations_per_op;
  EXPECT_GT(ratio, 0.5) << "rpc " << *rpc->iterations_per_op << " vs pulse " << *pulse->iterations_per_op;
  EXPECT_LT(ratio, 2.0) << "rpc " << *rpc->iterations_per_op << " vs pulse " << *pulse->iterations_per_op;
  std::filesystem::remove_all(o.run_dir);
}

TEST(AppBench, RejectsAConcurrencyOutOfRange) {
  AppBenchOptions o = SmallBtrdb("app-bench-bad");
  o.concurrency = 0;
  auto r = RunAppBench(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("--concurrency 0"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace pulse::bench
