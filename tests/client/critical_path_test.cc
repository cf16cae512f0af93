// Critical-path accounting against real processes: a traversal over a list
// whose nodes alternate between two memory nodes travels a known number of
// messages (TraversalMessage::legs, counted by the memory nodes, the switch
// and the client), in whichever routing the rack runs (direct by default;
// scripts/routing_tests.sh runs this with PULSE_ROUTING=switch), with pulse's
// node-to-node continuations and with pulse-acc's returns to the CPU node.
#include <gtest/gtest.h>

#include <cstring>

#include <fmt/format.h>

#include "pulse/assembler.h"
#include "pulse/client.h"
#include "pulse/protocol.h"
#include "engine/sum_list_program.h"
#include "support/local_rack.h"

namespace pulse {
namespace {

using namespace std::chrono_literals;
using testing::LocalRack;

class CriticalPath : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::SetUcxTestEnvironment();
    ASSERT_TRUE(rack_.Start(2, /*pool_mib=*/8));
    direct_ = rack_.Routing() == "direct";
    ClientOptions o;
    o.switch_address = fmt::format("127.0.0.1:{}", rack_.switch_port());
    o.policy = AllocationPolicy::kPartitioned;
    auto c = Client::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
    auto insns = Assemble(testing::kSumListProgram);
    ASSERT_TRUE(insns.ok()) << insns.status().ToString();
    auto p = VerifiedProgram::Create(std::move(*insns));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    program_ = *p;
  }
  // A list of `length` nodes on memory nodes 0, 1, 0, 1, ...: length - 1
  // crossings.  Returns its head.
  uint64_t AlternatingList(uint32_t length) {
    uint64_t next = 0;
    for (uint32_t i = length; i-- > 0;) {
      auto a = client_->Allocate(16, i % 2);
      EXPECT_TRUE(a.ok()) << a.status().ToString();
      if (!a.ok()) return 0;
      const uint64_t node[2] = {next, 1};  // {next, value}: the sum counts the nodes
      EXPECT_TRUE(client_->Write(*a, node, sizeof node).ok());
      next = *a;
    }
    return next;
  }
  // Runs the count over the list at `head` and returns the critical-path
  // messages and bytes it added to the client's counters.
  std::pair<uint64_t, uint64_t> Count(uint64_t head, uint32_t length, bool pulse_acc) {
    TraverseOptions o;
    o.mode = ExecutionMode::kOffload;
    o.pulse_acc = pulse_acc;
    const ClientCounters before = client_->counters();
    auto r = client_->Traverse(program_, head, std::vector<uint8_t>(8, 0), o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) {
      EXPECT_EQ(r->status, TraversalStatus::kDone);
      uint64_t counted = 0;
      std::memcpy(&counted, r->scratch.data(), 8);
      EXPECT_EQ(counted, length);
      EXPECT_EQ(r->retransmissions, 0u) << "a re-send would not be on the counted path";
    }
    const ClientCounters& after = client_->counters();
    return {after.critical_path_messages - before.critical_path_messages,
            after.critical_path_bytes - before.critical_path_bytes};
  }

  LocalRack rack_;
  bool direct_ = true;
  std::unique_ptr<Client> client_;
  ProgramRef program_;
};

TEST_F(CriticalPath, PulseCountsTheRequestEachContinuationAndTheResponse) {
  constexpr uint32_t kLength = 6;  // 5 crossings
  const uint64_t head = AlternatingList(kLength);
  ASSERT_NE(head, 0u);
  // Request, 5 continuations memory node to memory node, response; through
  // the switch each of them is two messages.
  const uint64_t want = (kLength + 1) * (direct_ ? 1 : 2);
  for (int round = 0; round < 2; ++round) {  // with the code attached, then by hash
    SCOPED_TRACE(round);
    auto [messages, bytes] = Count(head, kLength, /*pulse_acc=*/false);
    EXPECT_EQ(messages, want) << "routing " << rack_.Routing();
    // Scratch pads travel without their zero tail: the request's 8-byte
    // count is all zero (no scratch bytes sent), every later message carries
    // the count's one nonzero byte (the list has fewer than 256 nodes).
    if (round == 1) {  // by hash: no program in any message
      EXPECT_EQ(bytes, kMessageHeaderBytes + (messages - 1) * (kMessageHeaderBytes + 1));
    } else {
      EXPECT_GT(bytes, kMessageHeaderBytes + (messages - 1) * (kMessageHeaderBytes + 1));
    }
  }
}

TEST_F(CriticalPath, PulseAccCountsAReturnAndAReissuePerCrossing) {
  constexpr uint32_t kLength = 4;  // 3 crossings: 4 round trips from the CPU node
  const uint64_t head = AlternatingList(kLength);
  ASSERT_NE(head, 0u);
  const uint64_t want = 2 * kLength * (direct_ ? 1 : 2);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    auto [messages, bytes] = Count(head, kLength, /*pulse_acc=*/true);
    EXPECT_EQ(messages, want) << "routing " << rack_.Routing();
    EXPECT_GE(bytes, messages * kMessageHeaderBytes);
  }
}

TEST_F(CriticalPath, OneNodeIsOneRoundTrip) {
  auto a = client_->Allocate(16, 0);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const uint64_t node[2] = {0, 1};
  ASSERT_TRUE(client_->Write(*a, node, sizeof node).ok());
  auto [messages, bytes] = Count(*a, 1, /*pulse_acc=*/false);
  EXPECT_EQ(messages, direct_ ? 2u : 4u);
  EXPECT_GT(bytes, 0u);
}

}  // namespace
}  // namespace pulse
