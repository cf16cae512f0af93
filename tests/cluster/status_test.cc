// `pulse cluster status`'s far-memory lines from hand-built stats answers:
// each memory node's memory-agent traffic by class (docs/farmem_agent.md),
// the offload agent's caches, and no line for a node without the counters.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cluster/status.h"

namespace pulse::cluster {
namespace {

using nlohmann::json;

NodeProcess Node(Role role, std::string name) {
  NodeProcess n;
  n.role = role;
  n.name = std::move(name);
  return n;
}

NodeProcess MemNode(uint32_t id) {
  NodeProcess n = Node(Role::kMemNode, "memnode-" + std::to_string(id));
  n.node = id;
  return n;
}

NodeStatus Answering(const NodeProcess* node, json counters) {
  NodeStatus s;
  s.node = node;
  s.running = s.answering = true;
  s.stats = {{"counters", std::move(counters)}};
  return s;
}

// The memory agent's counters as `stats` reports them (memory_agent.cc),
// each class a different size so that a swapped figure shows.
json FarmemCounters() {
  return json{{"farmem",
               {{"on_demand_ops", 48}, {"on_demand_bytes", 3ull << 20},
                {"prefetch_ops", 5}, {"prefetch_bytes", 5ull << 20},
                {"write_back_ops", 1}, {"write_back_bytes", 1536},
                {"static_load_ops", 7168}, {"static_load_bytes", 7ull << 30},
                {"preload_ops", 1}, {"preload_bytes", 2ull << 20}, {"preload_file_bytes", 0}}}};
}

TEST(FarmemLine, AMemoryNodeShowsItsBytesByClass) {
  EXPECT_EQ(FarmemLine(MemNode(1), FarmemCounters()),
            "  memnode-1 far memory: on-demand 3.0 MiB, prefetch 5.0 MiB, write-back 1.5 KiB, static load 7.0 GiB, "
            "preload 2.0 MiB\n");
}

TEST(FarmemLine, ClassesWithoutTrafficShowZero) {
  json c = FarmemCounters();
  for (const char* key : {"on_demand_bytes", "prefetch_bytes", "static_load_bytes", "preload_bytes"}) c["farmem"][key] = 0;
  EXPECT_EQ(FarmemLine(MemNode(0), c),
            "  memnode-0 far memory: on-demand 0 B, prefetch 0 B, write-back 1.5 KiB, static load 0 B, preload 0 B\n");
}

TEST(FarmemLine, NoLineWithoutTheCountersOrTraffic) {
  // A node without the memory agent (no `farmem` counters), one whose memory
  // agent moved nothing yet, and a switch.
  EXPECT_EQ(FarmemLine(MemNode(0), json{{"requests", 12}}), "");
  json idle = FarmemCounters();
  for (json& value : idle["farmem"]) value = 0;
  EXPECT_EQ(FarmemLine(MemNode(0), idle), "");
  EXPECT_EQ(FarmemLine(Node(Role::kSwitch, "switch"), json::object()), "");
  EXPECT_EQ(FarmemLine(MemNode(0), json()), "") << "a node that answered without counters";
}

TEST(FarmemLine, TheOffloadAgentShowsItsPagesAndCaches) {
  const json c = {{"host_pages_read", 2048}, {"host_pages_written", 512}, {"static_hits", 300},
                  {"dynamic_hits", 1700},    {"dynamic_hit_rate", 0.934}, {"batches", 77},
                  {"cpu_seconds", 1.26}};
  EXPECT_EQ(FarmemLine(Node(Role::kAgent, "agent"), c),
            "  agent: 2048 host pages read, 512 written; static hits 300, dynamic hits 1700 (93%), 77 batches, "
            "1.3 CPU s\n");
}

// In the table: a far-memory line under each memory node with traffic, none
// under the one without, nor under a node that does not answer (whatever
// its last stats held).
TEST(FarmemLine, TheStatusTableHasALinePerMemoryNodeWithTraffic) {
  ClusterState state;
  state.name = "test";
  state.nodes = {MemNode(0), MemNode(1), MemNode(2)};
  std::vector<NodeStatus> nodes = {Answering(&state.nodes[0], FarmemCounters()),
                                   Answering(&state.nodes[1], json{{"requests", 3}}),
                                   Answering(&state.nodes[2], FarmemCounters())};
  nodes[2].answering = false;  // running, but its stats did not come
  nodes[2].error = "no answer";
  const std::string table = StatusTable(state, nodes);
  EXPECT_NE(table.find("  memnode-0 far memory: on-demand 3.0 MiB"), std::string::npos) << table;
  EXPECT_EQ(table.find("memnode-1 far memory"), std::string::npos) << table;
  EXPECT_EQ(table.find("memnode-2 far memory"), std::string::npos) << table;
}

// The request-path lines (docs/ring.md): the summary, then one line per
// connection with a ring, naming its CPU node when the node knows it.
TEST(RequestPathLine, SummarisesTheRingsAndListsEachConnectionWithOne) {
  const NodeProcess node = MemNode(1);
  json ring = {{"rings", 2},          {"rings_native", 1}, {"rings_double_layer", 1}, {"connections", 5},
               {"entries", 40},       {"malformed", 3},    {"sleeps", 7},             {"wakes", 6},
               {"by_connection", {{"4", {{"answers", "one-sided puts"}, {"layout", "slots"}, {"cpu_node", 2}}},
                                  {"9", {{"answers", "pulse messages"}, {"layout", "double"}}}}}};
  EXPECT_EQ(RequestPathLine(node, {{"ring", ring}}),
            "  memnode-1 request path: ring on 2 of 5 connections (1 by one-sided puts, 1 by pulse messages; 1 "
            "double-layer), messages on the rest; 40 ring entries, 3 malformed, 7 sleeps, 6 wake-ups\n"
            "    connection 4 (CPU node 2): ring, slots layout, answers by one-sided puts\n"
            "    connection 9: ring, double layout, answers by pulse messages\n");
}

TEST(RequestPathLine, NothingWithoutRingStatsOrForOtherRoles) {
  EXPECT_EQ(RequestPathLine(MemNode(0), {{"requests", 3}}), "");
  EXPECT_EQ(RequestPathLine(Node(Role::kSwitch, "switch"), {{"ring", {{"rings", 1}}}}), "");
  // A node from before per-connection stats: the summary alone.
  const std::string old = RequestPathLine(MemNode(0), {{"ring", {{"rings", 0}, {"connections", 2}}}});
  EXPECT_NE(old.find("ring on 0 of 2 connections"), std::string::npos) << old;
  EXPECT_EQ(old.find("    connection"), std::string::npos) << old;
}

}  // namespace
}  // namespace pulse::cluster
