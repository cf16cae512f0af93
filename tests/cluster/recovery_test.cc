// `pulse cluster up | restart | down | pools | clean` after failures, run as
// a user runs them (the pulse binary, a TOML file) against real node
// processes: a dead node is restarted on its pool with its data; `up` does
// not take another process answering on a node's port for the node; `down`
// keeps the pool of a node restarted by hand; orphaned pools are listed and
// removed.
//
// $PULSE_RECOVERY_TEST_BINARY replaces the pulse binary the commands run
// (e.g. an older build, to see these tests fail there).
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cluster/config.h"
#include "cluster/launcher.h"
#include "cluster/pools.h"
#include "cluster/process.h"
#include "pulse/client.h"
#include "support/environment_snapshot.h"

namespace pulse::cluster {
namespace {

using namespace std::chrono_literals;

std::string Binary() {
  const char* b = std::getenv("PULSE_RECOVERY_TEST_BINARY");
  return b != nullptr && *b != '\0' ? b : PULSE_BINARY;
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

class RecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/pulse-recovery-test.XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
    name_ = fmt::format("rec{}", getpid());
    WriteConfig(0);
  }

  void TearDown() override {
    Pulse({"cluster", "down"});
    for (const std::string& pool : pools_) shm_unlink(pool.c_str());  // a test that failed half-way
    if (HasFailure())
      std::cerr << "logs kept in " << dir_ << "\n";
    else
      std::filesystem::remove_all(dir_);
  }

  // A config of a switch on `switch_port` (0: any) and memory nodes 0 and 1.
  void WriteConfig(uint16_t switch_port) {
    config_ = dir_ + "/cluster.toml";
    std::ofstream(config_, std::ios::trunc) << fmt::format(R"([cluster]
name = "{}"
run_dir = "{}/run"
start_timeout_ms = 60000
stop_timeout_ms = 5000
[poll]
window_us = 0
[switch]
port = {}
[[memnode]]
port = 0
pool_mib = 8
[[memnode]]
port = 0
pool_mib = 8
)",
                                                           name_, dir_, switch_port);
  }

  // Runs `pulse <args> --config <config>`; waits for it (bounded).
  CommandResult Pulse(std::vector<std::string> args) {
    SpawnOptions so;
    so.argv = {Binary()};
    so.argv.insert(so.argv.end(), args.begin(), args.end());
    so.argv.insert(so.argv.end(), {"--config", config_});
    so.log_path = fmt::format("{}/command-{}.txt", dir_, ++commands_);
    auto child = ChildProcess::Start(so);
    EXPECT_TRUE(child.ok()) << child.status().ToString();
    if (!child.ok()) return {};
    const int status = child->Wait(120s);
    CommandResult r{ChildProcess::ExitCode(status), child->Log()};
    std::cerr << "$ pulse";
    for (const auto& a : args) std::cerr << " " << a;
    std::cerr << "  -> exit " << r.exit_code << "\n" << r.output;
    return r;
  }

  ClusterState State() {
    auto config = LoadClusterConfig(config_);
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    auto state = ReadState(config->StateFile());
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    if (!state.ok()) return {};
    for (const auto& n : state->nodes)
      if (!n.shm_name.empty()) pools_.push_back(n.shm_name);
    return *state;
  }

  const NodeProcess& Node(const ClusterState& s, const std::string& name) {
    for (const auto& n : s.nodes)
      if (n.name == name) return n;
    ADD_FAILURE() << "no node " << name;
    static NodeProcess none;
    return none;
  }

  void Kill(const NodeProcess& n) {
    ASSERT_TRUE(SignalProcess(n.process, SIGKILL)) << n.name << " does not run";
    ASSERT_TRUE(WaitForExit(n.process, 30s).has_value()) << n.name << " survived SIGKILL";
  }

  // A client of the cluster that places allocations on the node it names.
  std::unique_ptr<Client> Connect() {
    auto config = LoadClusterConfig(config_);
    EXPECT_TRUE(config.ok());
    ApplyTransportEnvironment(*config);
    ClientOptions o;
    o.switch_address = State().switch_address;
    o.policy = AllocationPolicy::kPartitioned;
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Connect() makes this process speak the cluster's secret; the next
  // test's commands would inherit it and refuse their own cluster.
  pulse::testing::EnvironmentSnapshot environment_;
  std::string dir_, name_, config_;
  std::vector<std::string> pools_;
  int commands_ = 0;
};

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_F(RecoveryTest, UpAfterANodeDiedPointsAtRestartWhichBringsItBackWithItsData) {
  ASSERT_EQ(Pulse({"cluster", "up"}).exit_code, 0);
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  const std::string text = "kept across a crash and a `pulse cluster restart`";
  auto far = client->Allocate(64, 1);
  ASSERT_TRUE(far.ok()) << far.status().ToString();
  ASSERT_TRUE(client->Write(*far, text.data(), text.size()).ok());

  const ClusterState before = State();
  Kill(Node(before, "memnode-1"));
  const CommandResult up = Pulse({"cluster", "up"});
  EXPECT_EQ(up.exit_code, 1);
  EXPECT_TRUE(Contains(up.output, "memnode-1")) << "up does not say which node died";
  EXPECT_TRUE(Contains(up.output, "pulse cluster restart")) << "up does not point at restart";
  EXPECT_FALSE(Contains(up.output, "already running"));

  const CommandResult restart = Pulse({"cluster", "restart"});
  ASSERT_EQ(restart.exit_code, 0);
  const ClusterState after = State();
  EXPECT_NE(Node(after, "memnode-1").process.pid, Node(before, "memnode-1").process.pid);
  EXPECT_EQ(Node(after, "memnode-1").address, Node(before, "memnode-1").address);
  EXPECT_EQ(Node(after, "memnode-1").shm_name, Node(before, "memnode-1").shm_name);
  for (const char* live : {"switch", "memnode-0"})
    EXPECT_EQ(Node(after, live).process.pid, Node(before, live).process.pid) << live << " was not left alone";
  EXPECT_TRUE(IsRunning(Node(after, "memnode-1").process));

  // The client learns on its first call that its connection to the node
  // broke, and reconnects on a later one (include/pulse/client.h).
  std::string read(text.size(), '\0');
  Status s = Status::Unavailable("not read");
  for (int attempt = 0; attempt < 5 && !s.ok(); ++attempt) s = client->Read(*far, read.data(), read.size());
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(read, text) << "the restarted node lost its data";

  // Nothing dead: restart changes nothing.  The switch too comes back.
  const CommandResult again = Pulse({"cluster", "restart", "memnode-1"});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_TRUE(Contains(again.output, "left alone"));
  EXPECT_EQ(State().nodes[2].process.pid, after.nodes[2].process.pid);
  Kill(Node(after, "switch"));
  ASSERT_EQ(Pulse({"cluster", "restart", "switch"}).exit_code, 0);
  EXPECT_EQ(Pulse({"cluster", "status"}).exit_code, 0) << "the switch does not see both memory nodes again";
  EXPECT_TRUE(Pulse({"cluster", "restart", "memnode-7"}).exit_code != 0);
}

TEST_F(RecoveryTest, AnotherProcessOnTheSwitchPortIsNotTakenForTheSwitch) {
  // A switch of nobody's cluster holds a port; the config names that port.
  SpawnOptions so;
  // (--insecure: it has no secret, being of no cluster.)
  so.argv = {PULSE_BINARY, "switch", "--insecure", "--listen", "127.0.0.1:0", "--port-file", dir_ + "/stranger.port"};
  so.log_path = dir_ + "/stranger.log";
  so.die_with_parent = true;
  auto stranger = ChildProcess::Start(so);
  ASSERT_TRUE(stranger.ok()) << stranger.status().ToString();
  auto port = WaitForPortFile(stranger->id(), "stranger", dir_ + "/stranger.port", so.log_path, 30s);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  WriteConfig(*port);

  const CommandResult up = Pulse({"cluster", "up"});
  EXPECT_NE(up.exit_code, 0) << "up reported a cluster whose switch is another process";
  EXPECT_TRUE(Contains(up.output, fmt::format("127.0.0.1:{}", *port))) << "the message does not name the address";
  // Either the switch up started cannot take the port (pulse's listener does
  // not share it) and up reports that process's exit, or it started and up
  // saw another instance answer there; never success.
  EXPECT_TRUE(Contains(up.output, "another process answers") || Contains(up.output, "address in use"))
      << up.output;
  EXPECT_FALSE(stranger->Exited()) << "up stopped a process it did not start";
  auto config = LoadClusterConfig(config_);
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(std::filesystem::exists(config->StateFile())) << "a state file names processes that are gone";
}

TEST_F(RecoveryTest, DownKeepsThePoolOfANodeRestartedByHandAndCleanRemovesOrphans) {
  ASSERT_EQ(Pulse({"cluster", "up"}).exit_code, 0);
  const ClusterState state = State();
  const NodeProcess& m1 = Node(state, "memnode-1");
  // Its command line, to start it again by hand as an operator would.
  std::ifstream cmdline(fmt::format("/proc/{}/cmdline", m1.process.pid));
  std::vector<std::string> argv;
  for (std::string arg; std::getline(cmdline, arg, '\0');) argv.push_back(arg);
  ASSERT_GT(argv.size(), 2u);
  // And its environment, which names the cluster's secret.
  std::ifstream environ(fmt::format("/proc/{}/environ", m1.process.pid));
  std::vector<std::pair<std::string, std::string>> env;
  for (std::string var; std::getline(environ, var, '\0');)
    if (const size_t eq = var.find('='); eq != std::string::npos && var.rfind("PULSE_", 0) == 0)
      env.emplace_back(var.substr(0, eq), var.substr(eq + 1));
  Kill(m1);

  SpawnOptions so;
  so.argv = argv;
  so.env = env;
  so.log_path = dir_ + "/by-hand.log";
  so.die_with_parent = true;
  auto by_hand = ChildProcess::Start(so);
  ASSERT_TRUE(by_hand.ok());
  ASSERT_TRUE(by_hand->WaitForLog("registered with the switch", 60s)) << by_hand->Log();
  EXPECT_TRUE(PoolUseOf(m1.shm_name).in_use);

  const CommandResult restart = Pulse({"cluster", "restart"});
  EXPECT_NE(restart.exit_code, 0) << "restart started a second node on a pool in use";
  EXPECT_TRUE(Contains(restart.output, fmt::format("in use by pid {}", by_hand->pid())));

  const CommandResult down = Pulse({"cluster", "down"});
  EXPECT_EQ(down.exit_code, 0);
  EXPECT_TRUE(Contains(down.output, "kept"));
  EXPECT_TRUE(PoolUseOf(m1.shm_name).exists) << "down removed the pool a live node serves";
  EXPECT_FALSE(PoolUseOf(Node(state, "memnode-0").shm_name).exists) << "down left a pool of its own behind";
  EXPECT_FALSE(by_hand->Exited());

  // The node dies too: its pool is nobody's now.
  by_hand->Kill();
  const CommandResult pools = Pulse({"cluster", "pools"});
  EXPECT_TRUE(Contains(pools.output, m1.shm_name + " ")) << "pools does not list it";
  EXPECT_TRUE(Contains(pools.output, "orphaned"));
  const CommandResult clean = Pulse({"cluster", "clean"});
  EXPECT_EQ(clean.exit_code, 0);
  EXPECT_TRUE(Contains(clean.output, "removed " + m1.shm_name));
  EXPECT_FALSE(PoolUseOf(m1.shm_name).exists) << "clean left the orphaned pool";
}

TEST_F(RecoveryTest, WhenEveryNodeDiedUpRefusesRestartRevivesAndDownRemovesThePools) {
  ASSERT_EQ(Pulse({"cluster", "up"}).exit_code, 0);
  const ClusterState state = State();
  for (const auto& n : state.nodes) Kill(n);
  const CommandResult up = Pulse({"cluster", "up"});
  EXPECT_NE(up.exit_code, 0) << "up forgot a dead cluster whose pools hold data";
  EXPECT_TRUE(Contains(up.output, Node(state, "memnode-0").shm_name));
  EXPECT_TRUE(Contains(up.output, "pulse cluster restart"));
  ASSERT_EQ(Pulse({"cluster", "restart"}).exit_code, 0);
  EXPECT_EQ(Pulse({"cluster", "status"}).exit_code, 0);
  for (const auto& n : State().nodes) Kill(n);
  EXPECT_EQ(Pulse({"cluster", "down"}).exit_code, 0);
  for (const auto& n : state.nodes)
    if (!n.shm_name.empty()) EXPECT_FALSE(PoolUseOf(n.shm_name).exists) << n.shm_name << " left behind";
  EXPECT_EQ(Pulse({"cluster", "up"}).exit_code, 0) << "up after down";
}

}  // namespace
}  // namespace pulse::cluster
