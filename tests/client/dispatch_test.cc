// The dispatch engine's offload rule: offload iff t_i * N < eta * t_d.
#include <gtest/gtest.h>

#include "pulse/client.h"

namespace pulse {
namespace {

TEST(DispatchPolicy, OffloadFlipsWhenEtaChanges) {
  DispatchPolicy p;
  p.t_i_ns = 2.0;
  p.t_d_ns = 100.0;
  // A 75-instruction iteration costs 150 ns of logic against a 100 ns load.
  p.eta = 1.0;
  EXPECT_FALSE(p.ShouldOffload(75));
  p.eta = 1.6;
  EXPECT_TRUE(p.ShouldOffload(75));
  p.eta = 1.5;  // strict inequality: equal cost is not offloaded
  EXPECT_FALSE(p.ShouldOffload(75));
  EXPECT_TRUE(p.ShouldOffload(74));
}

TEST(DispatchPolicy, ForcedModesIgnoreTheCostModel) {
  DispatchPolicy p;
  p.t_i_ns = 1000;
  p.t_d_ns = 1;
  p.mode = ExecutionMode::kOffload;
  EXPECT_TRUE(p.ShouldOffload(1000));
  p.mode = ExecutionMode::kCpuNode;
  p.t_i_ns = 0.001;
  EXPECT_FALSE(p.ShouldOffload(1));
}

}  // namespace
}  // namespace pulse
