// Port files: how a node started on port 0 tells its launcher the port; the
// owned child processes of the test harness (ChildProcess); the command line
// and environment the launcher gives a node.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cluster/launcher.h"
#include "cluster/process.h"

namespace pulse::cluster {
namespace {

std::string TempPath(const char* tag) { return "/tmp/pulse-port-file-" + std::to_string(getpid()) + "-" + tag; }

TEST(PortFile, WhatIsWrittenIsRead) {
  const std::string path = TempPath("roundtrip");
  ASSERT_TRUE(WritePortFile(path, 41234).ok());
  auto port = ReadPortFile(path);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_EQ(*port, 41234);
  ASSERT_TRUE(WritePortFile(path, 7100).ok());  // replaces, never appends
  EXPECT_EQ(*ReadPortFile(path), 7100);
  std::remove(path.c_str());
}

TEST(PortFile, MissingIsNotFoundAndGarbageNamesTheFile) {
  const std::string path = TempPath("bad");
  std::remove(path.c_str());
  EXPECT_EQ(ReadPortFile(path).status().code(), Status::Code::kNotFound);
  for (const char* text : {"", "port\n", "0\n", "70000\n"}) {
    std::ofstream(path, std::ios::trunc) << text;
    auto port = ReadPortFile(path);
    ASSERT_FALSE(port.ok()) << "'" << text << "' read as " << *port;
    EXPECT_EQ(port.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(port.status().message().find(path), std::string::npos) << port.status().message();
  }
  std::remove(path.c_str());
}

TEST(PortFile, UnwritableDirectoryIsAnError) {
  EXPECT_FALSE(WritePortFile("/nonexistent-dir-for-pulse/port", 1).ok());
}

using namespace std::chrono_literals;

// A shell child whose output goes to a log of its own.
Result<ChildProcess> Shell(const std::string& script, const char* tag) {
  SpawnOptions so;
  so.argv = {"/bin/sh", "-c", script};
  so.log_path = TempPath(tag);
  so.die_with_parent = true;
  so.parent_death_signal = SIGKILL;
  return ChildProcess::Start(so);
}

TEST(ChildProcess, WaitGivesTheExitStatusOrMinusOneWhileItRuns) {
  auto p = Shell("read never", "wait");  // stdin is /dev/null: read fails, exit 1
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(ChildProcess::ExitCode(p->Wait(10s)), 1);
  auto sleeper = Shell("exec sleep 100", "sleeper");
  ASSERT_TRUE(sleeper.ok());
  EXPECT_EQ(sleeper->Wait(0ms), -1);
  EXPECT_EQ(sleeper->Wait(50ms), -1);
  EXPECT_FALSE(sleeper->Exited());
  sleeper->Signal(SIGTERM);
  const int status = sleeper->Wait(10s);
  ASSERT_NE(status, -1);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_EQ(ChildProcess::ExitCode(status), -1);
  std::remove(p->log_path().c_str());
  std::remove(sleeper->log_path().c_str());
}

TEST(ChildProcess, DestroyingItKillsTheProcess) {
  ProcessId id;
  std::string log;
  {
    auto p = Shell("exec sleep 100", "killed");
    ASSERT_TRUE(p.ok());
    id = p->id();
    log = p->log_path();
    EXPECT_TRUE(IsRunning(id));
    EXPECT_GE(p->CpuSeconds(), 0);
  }
  EXPECT_FALSE(IsRunning(id));
  std::remove(log.c_str());
}

TEST(ChildProcess, WaitForLogSeesALineOrTheExit) {
  auto p = Shell("echo starting; echo 'ready at 7' >&2; exec sleep 100", "log");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->WaitForLog("ready at 7", 10s)) << p->Log();
  EXPECT_NE(p->Log().find("starting"), std::string::npos) << "stdout goes to the log too";
  auto quitter = Shell("echo bye", "quit");
  ASSERT_TRUE(quitter.ok());
  EXPECT_FALSE(quitter->WaitForLog("never printed", 10s));  // returns at the exit, not the deadline
  EXPECT_TRUE(quitter->Exited());
  std::remove(p->log_path().c_str());
  std::remove(quitter->log_path().c_str());
}

TEST(WaitForPortFile, NamesTheNodeThatEndedWithoutOne) {
  auto p = Shell("echo 'cannot listen' >&2; exit 3", "noport");
  ASSERT_TRUE(p.ok());
  const std::string port_file = TempPath("noport.port");
  std::remove(port_file.c_str());
  auto port = WaitForPortFile(p->id(), "memnode-4", port_file, p->log_path(), 10s);
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(port.status().message().find("memnode-4 exited with status 3"), std::string::npos)
      << port.status().message();
  EXPECT_NE(port.status().message().find("cannot listen"), std::string::npos) << port.status().message();
  std::remove(p->log_path().c_str());
}

TEST(WaitForPortFile, ReadsThePortOnceWrittenAndTimesOut) {
  const std::string port_file = TempPath("late.port");
  std::remove(port_file.c_str());
  auto p = Shell("sleep 0.2; echo 4321 > " + port_file + ".tmp; mv " + port_file + ".tmp " + port_file +
                     "; exec sleep 100",
                 "late");
  ASSERT_TRUE(p.ok());
  auto port = WaitForPortFile(p->id(), "switch", port_file, p->log_path(), 10s);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_EQ(*port, 4321);
  std::remove(port_file.c_str());
  auto t = WaitForPortFile(p->id(), "switch", port_file, p->log_path(), 30ms);
  EXPECT_EQ(t.status().code(), Status::Code::kTimeout);
  std::remove(p->log_path().c_str());
}

TEST(NodeSpawnOptions, ExtraFlagsAndEnvironmentOfOneNode) {
  ClusterConfig c = LocalClusterConfig("opts", 2, 8, "/tmp/pulse-opts-test");
  c.binary = "/bin/true";
  c.env.emplace_back("SHARED", "1");
  c.memnodes[1].extra_args = {"--program-cache-entries", "1"};
  c.memnodes[1].env.emplace_back("PULSE_NET_FAULTS", "loss=0.1");
  auto a = NodeSpawnOptions(c, c.memnodes[0]);
  auto b = NodeSpawnOptions(c, c.memnodes[1]);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->argv.front(), "/bin/true");
  EXPECT_EQ(b->argv[b->argv.size() - 2], "--program-cache-entries");
  EXPECT_EQ(b->argv.back(), "1");
  auto has = [](const SpawnOptions& so, const std::string& k, const std::string& v) {
    return std::count(so.env.begin(), so.env.end(), std::make_pair(k, v)) == 1;
  };
  EXPECT_TRUE(has(*a, "SHARED", "1") && has(*b, "SHARED", "1"));
  EXPECT_FALSE(has(*a, "PULSE_NET_FAULTS", "loss=0.1"));
  EXPECT_TRUE(has(*b, "PULSE_NET_FAULTS", "loss=0.1"));
  // Port 0: the node reports its port in the file the launcher waits on.
  auto flag = std::find(a->argv.begin(), a->argv.end(), "--port-file");
  ASSERT_NE(flag, a->argv.end());
  EXPECT_EQ(*(flag + 1), PortFileOf(c, c.memnodes[0]));
  EXPECT_EQ(a->log_path, "/tmp/pulse-opts-test/opts-" + std::to_string(getpid()) + "/memnode-0.log");
}

}  // namespace
}  // namespace pulse::cluster
