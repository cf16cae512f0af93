// pulse bench kv end to end at a tiny scale, over the ring path and the
// active-message path: every GET verified, and the messages and one-sided
// operations per request it reports are its counter deltas over the
// requests and add up to what each path must have done (a ring entry is
// written with its tail and answered in the client's ring; a message
// request puts nothing into a ring).
#include "bench/kv_bench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "pulse/message_batch.h"
#include "support/local_rack.h"

namespace pulse::bench {
namespace {

KvBenchOptions TinyRun() {
  KvBenchOptions o;
  o.path = "both";
  o.items = 2000;
  o.concurrency = 8;
  o.seconds = 0.3;
  o.binary = PULSE_BINARY;
  o.progress = [](const std::string& line) { std::cerr << "[bench kv] " << line << std::endl; };
  return o;
}

uint64_t Count(const nlohmann::json& traffic, const char* key) { return traffic.at(key).get<uint64_t>(); }

TEST(KvBench, ReportsMessagesAndOneSidedOperationsPerRequestOfEachPath) {
  pulse::testing::SetUcxTestEnvironment();
  for (const char* mix : {"get", "50"}) {
    KvBenchOptions o = TinyRun();
    o.mix = mix;
    auto r = RunKvBench(o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->paths.size(), 2u);
    const nlohmann::json j = r->ToJson(o);
    for (const KvPathResult& p : r->paths) {
      SCOPED_TRACE(std::string(mix) + " " + p.path);
      ASSERT_GT(p.ops, 0u);
      EXPECT_EQ(p.verified, p.gets);
      const nlohmann::json& jp = j["paths"][p.path];
      ASSERT_TRUE(jp.contains("messages_per_request") && jp.contains("one_sided_per_request")) << jp.dump();
      EXPECT_DOUBLE_EQ(jp["messages_per_request"].get<double>(), p.messages_per_request);
      EXPECT_DOUBLE_EQ(jp["one_sided_per_request"].get<double>(), p.one_sided_per_request);
      ASSERT_EQ(p.sweep.size(), 1u);
      EXPECT_DOUBLE_EQ(p.sweep[0]["messages_per_request"].get<double>(), p.messages_per_request);
      // The figures are the deltas over the requests, nothing else.
      const nlohmann::json& t = jp["traffic"];
      const double ops = static_cast<double>(p.ops);
      EXPECT_DOUBLE_EQ(p.messages_per_request, (Count(t, "messages_sent") + Count(t, "messages_received")) / ops)
          << t.dump();
      EXPECT_DOUBLE_EQ(p.one_sided_per_request,
                       (Count(t, "client_rma_ops") + Count(t, "client_ring_stores") + Count(t, "node_ring_writes")) / ops)
          << t.dump();
      if (p.path == "am") {
        // Requests out and answers back as messages; no ring written.
        EXPECT_EQ(p.ring_requests, 0u);
        EXPECT_GT(Count(t, "messages_sent"), 0u) << t.dump();
        EXPECT_GT(Count(t, "messages_received"), 0u) << t.dump();
        EXPECT_EQ(Count(t, "client_ring_stores"), 0u) << t.dump();
        EXPECT_EQ(Count(t, "node_ring_writes"), 0u) << t.dump();
        // A message carries at most the client's batch limit of requests.
        auto limits = BatchLimitsFromEnvironment(BatchLimits{});
        ASSERT_TRUE(limits.ok()) << limits.status().ToString();
        const uint64_t per_message = std::max<uint32_t>(1, limits->Clamped().max_messages);
        EXPECT_GE(Count(t, "messages_sent") * per_message, p.ops) << t.dump();
      } else {
        ASSERT_EQ(p.path, "ring");
        ASSERT_GT(p.ring_requests, 0u);
        // Each entry: written and its tail moved by the client (stores
        // where the ring is mapped here, else puts), answered by the node
        // in the client's response ring.
        EXPECT_GE(Count(t, "client_rma_ops") + Count(t, "client_ring_stores"), 2 * p.ring_requests) << t.dump();
        EXPECT_GE(Count(t, "node_ring_writes"), p.ring_requests) << t.dump();
        EXPECT_GE(p.one_sided_per_request, 3.0 * static_cast<double>(p.ring_requests) / ops);
        EXPECT_GT(p.one_sided_per_request, 0.0);
      }
    }
  }
}

}  // namespace
}  // namespace pulse::bench
