// A fixture for tests of the client library and what is built on it (data
// structures, applications, benchmarks): a LocalRack with two memory nodes
// and a connected client whose small slabs make structures span both nodes.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "pulse/client.h"
#include "support/local_rack.h"

namespace pulse::ds::testing {

// The number of operations a randomized test runs: `n` scaled by
// $PULSE_TEST_SCALE (default 1; sanitizer builds run a fraction), at least 1.
inline uint64_t ScaledOps(uint64_t n) {
  const char* env = std::getenv("PULSE_TEST_SCALE");
  const double scale = env != nullptr ? std::atof(env) : 1.0;
  const double scaled = static_cast<double>(n) * (scale > 0 ? scale : 1.0);
  return scaled < 1 ? 1 : static_cast<uint64_t>(scaled);
}

// Offload forced on, forced off, and decided by the dispatch engine: every
// read operation is run in each and the answers must match (each other and
// the std:: counterpart).
inline constexpr ExecutionMode kModes[] = {ExecutionMode::kOffload, ExecutionMode::kCpuNode,
                                           ExecutionMode::kAuto};

class DsCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    pulse::testing::SetUcxTestEnvironment();
    if (Racked()) {
      // Two racks (docs/racks.md): memory node 0 is rack "a"'s pool, node 1
      // rack "b"'s; clients join the rack $PULSE_RACK names (ctest Racks.*).
      ASSERT_TRUE(rack_.StartSwitch());
      for (uint32_t n = 0; n < 2; ++n) rack_.StartMemNode(n, 16, {"--rack", n == 0 ? "a" : "b", "--rack-tenants", "1"});
      ASSERT_TRUE(rack_.Join(2));
    } else {
      ASSERT_TRUE(rack_.Start(2, /*pool_mib=*/16));
    }
    auto c = Client::Connect(RackClientOptions());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
    ASSERT_EQ(client_->memory_nodes(), 2u);
  }
  // Options of a client of the rack: small slabs, so structures cross
  // memory nodes.
  ClientOptions RackClientOptions() const {
    ClientOptions options;
    options.switch_address = rack_.switch_address();
    options.slab_bytes = 4096;
    options.request_timeout = std::chrono::milliseconds(1000);
    return options;
  }
  // Another CPU node of the rack (nullptr after a test failure).
  std::unique_ptr<Client> ConnectClient(const ClientOptions& options) {
    auto c = Client::Connect(options);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }
  // Both execution paths were used and some traversals crossed nodes (and,
  // on two racks, the rack tier served some reads).
  void ExpectBothPathsUsed() {
    EXPECT_GT(client_->counters().offloaded, 0u);
    EXPECT_GT(client_->counters().executed_locally, 0u);
    EXPECT_GT(rack_.Continuations(), 0u) << "should cross memory nodes";
    if (Racked()) {
      EXPECT_GT(client_->counters().rack_reads, 0u) << "rack a's objects are read by loads";
    }
  }
  // $PULSE_RACK is set: the memory nodes run as two racks.
  static bool Racked() {
    const char* rack = std::getenv("PULSE_RACK");
    return rack != nullptr && *rack != '\0';
  }
  pulse::testing::LocalRack rack_;
  std::unique_ptr<Client> client_;
};

}  // namespace pulse::ds::testing
