// The installed package as a user sees it: the compiler and assembler
// (pulse::compiler, pulse::core), an iterator of the user's own embedded at
// build time, and the shared node layout it walks.  The chain lives in local
// memory registered as one far range; chain_find runs on the interpreter (the
// engine's specification) and each answer is checked against a plain search.
// With PULSE_CLUSTER=host:port it also builds the chain in a running
// cluster's far memory and checks RunTypedTraversal's answers the same way.
#include <pulse/assembler.h>
#include <pulse/client.h>
#include <pulse/program.h>
#include <pulse/traversal.h>
#include <pulse/typed_traversal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "chain_nodes.h"
#include "pulse/iterators/chain_find.h"

namespace {

constexpr uint64_t kBase = 0x100000;
constexpr int kNodes = 50;

uint64_t KeyOf(int i) { return 7 * static_cast<uint64_t>(i) + 3; }

// The plain reference: the value of the first node with `key`, if any.
std::optional<uint64_t> Reference(const std::vector<chain_node>& nodes, uint64_t key) {
  for (const chain_node& n : nodes)
    if (n.key == key) return n.value;
  return std::nullopt;
}

bool Same(const char* where, uint64_t key, const chain_find_state& st, std::optional<uint64_t> want) {
  if (st.found == (want ? 1u : 0u) && (!want || st.value == *want)) return true;
  std::fprintf(stderr, "%s: key %llu: found %llu value %llu, expected %s\n", where, (unsigned long long)key,
               (unsigned long long)st.found, (unsigned long long)st.value, want ? "found" : "absent");
  return false;
}

int RunLocally(const pulse::ProgramRef& program, std::vector<chain_node> nodes) {
  for (int i = 0; i < kNodes; ++i)
    nodes[i].next = i + 1 < kNodes ? kBase + (i + 1) * sizeof(chain_node) : 0;
  pulse::RangeTable table;
  pulse::Range range;
  range.base = kBase;
  range.length = nodes.size() * sizeof(chain_node);
  range.host = reinterpret_cast<uint8_t*>(nodes.data());
  if (!table.Add(range).ok()) return 10;
  for (uint64_t key : {KeyOf(0), KeyOf(17), KeyOf(kNodes - 1), uint64_t{5}}) {
    chain_find_state st{.key = key, .found = 9, .value = 0};
    pulse::TraversalState state;
    state.cur_ptr = kBase;
    state.scratch.assign(program->info().scratch_bytes, 0);
    std::memcpy(state.scratch.data(), &st, sizeof(st));
    pulse::TraversalOutcome out = pulse::InterpretTraversal(*program, table, 0, 1000, &state);
    if (out.status != pulse::TraversalStatus::kDone) return 11;
    std::memcpy(&st, state.scratch.data(), sizeof(st));
    if (!Same("interpreter", key, st, Reference(nodes, key))) return 12;
  }
  return 0;
}

int RunOnCluster(const std::string& address, const pulse::ProgramRef& program, const std::vector<chain_node>& model) {
  pulse::ClientOptions options;
  options.switch_address = address;
  auto client = pulse::Client::Connect(options);
  if (!client.ok()) {
    std::fprintf(stderr, "connect: %s\n", client.status().ToString().c_str());
    return 20;
  }
  std::vector<uint64_t> addr(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    auto a = (*client)->Allocate(sizeof(chain_node));
    if (!a.ok()) return 21;
    addr[i] = *a;
  }
  for (int i = 0; i < kNodes; ++i) {
    chain_node n = model[i];
    n.next = i + 1 < kNodes ? addr[i + 1] : 0;
    if (!(*client)->Write(addr[i], &n, sizeof(n)).ok()) return 22;
  }
  for (uint64_t key : {KeyOf(0), KeyOf(17), KeyOf(kNodes - 1), uint64_t{5}}) {
    auto st = pulse::RunTypedTraversal(**client, program, addr[0], chain_find_state{.key = key}, {}, "chain_find");
    if (!st.ok()) {
      std::fprintf(stderr, "chain_find: %s\n", st.status().ToString().c_str());
      return 23;
    }
    if (!Same("cluster", key, *st, Reference(model, key))) return 24;
  }
  return 0;
}

}  // namespace

int main() {
  auto insns = pulse::Assemble("LOAD data\nMOVE sp[0], data[0]\nRETURN");
  if (!insns.ok()) return 1;
  auto p = pulse::VerifiedProgram::Create(*insns);
  if (!p.ok() || (*p)->info().window_bytes != 8) return 2;

  pulse::Result<pulse::ProgramRef> find = pulse::EmbeddedProgram<pulse::iterators::chain_find>("chain_find");
  if (!find.ok()) {
    std::fprintf(stderr, "%s\n", find.status().ToString().c_str());
    return 3;
  }
  std::vector<chain_node> nodes(kNodes);
  for (int i = 0; i < kNodes; ++i) nodes[i] = chain_node{KeyOf(i), 1000 + static_cast<uint64_t>(i), 0};
  if (int rc = RunLocally(*find, nodes); rc != 0) return rc;
  std::printf("chain_find: %d nodes, interpreter agrees with the reference\n", kNodes);
  if (const char* cluster = std::getenv("PULSE_CLUSTER"); cluster != nullptr && *cluster != '\0') {
    if (int rc = RunOnCluster(cluster, *find, nodes); rc != 0) return rc;
    std::printf("chain_find: RunTypedTraversal on %s agrees with the reference\n", cluster);
  }
  return 0;
}
