// `pulse memnode` as a real process: control operations, one-sided access to
// its shared-memory pool, clean shutdown, idle CPU use, bad flags, and a
// STORE-bearing request retransmitted across a crash and restart.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "protocol/control_reply.h"
#include "pulse/assembler.h"
#include "pulse/program.h"
#include "support/local_rack.h"

namespace pulse::testing {
namespace {

TEST(MemNodeProcess, HelloAllocAndFree) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  MemNodeView& v = rack.view(0);
  EXPECT_EQ(v.base, FarBase(0));
  EXPECT_EQ(v.size, 8u << 20);

  json a = rack.Alloc(0, 100);
  ASSERT_TRUE(a.value("ok", false)) << a.dump();
  EXPECT_EQ(a["base"].get<uint64_t>(), FarBase(0));
  EXPECT_EQ(a["length"], 64 * 1024);  // the default granularity
  json b = rack.Alloc(0, 64 * 1024 + 1, /*tenant=*/2, "r");
  ASSERT_TRUE(b.value("ok", false)) << b.dump();
  EXPECT_EQ(b["base"].get<uint64_t>(), FarBase(0) + 64 * 1024);
  EXPECT_EQ(b["length"], 128 * 1024);

  // Only the owner frees.
  json f = rack.cpu().Call(v.ep, {{"op", "free"}, {"base", a["base"]}, {"tenant", 2}});
  EXPECT_FALSE(f.value("ok", true));
  EXPECT_EQ(f.value("error", ""), fmt::format("free: the range at {:#x} belongs to tenant 1, not 2", FarBase(0)));
  EXPECT_EQ(ControlReplyStatus(f).code(), Status::Code::kPermissionDenied) << f.dump();
  f = rack.cpu().Call(v.ep, {{"op", "free"}, {"base", a["base"]}, {"tenant", 1}});
  EXPECT_TRUE(f.value("ok", false)) << f.dump();
  f = rack.cpu().Call(v.ep, {{"op", "free"}, {"base", a["base"]}, {"tenant", 1}});
  EXPECT_FALSE(f.value("ok", true));
  EXPECT_NE(f.value("error", "").find("no allocation starts at"), std::string::npos) << f.dump();
  EXPECT_EQ(ControlReplyStatus(f).code(), Status::Code::kNotFound) << f.dump();

  json s = rack.MemNodeStats(0);
  EXPECT_EQ(s["counters"]["pool_used"], 128 * 1024) << s.dump();
  EXPECT_EQ(s["counters"]["allocations"], 1);
}

TEST(MemNodeProcess, AllocErrorsNameTheField) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  const net::EndpointId ep = rack.view(0).ep;
  json r = rack.Alloc(0, 0);
  EXPECT_EQ(r.value("error", ""), "alloc: bytes must be positive") << r.dump();
  EXPECT_EQ(ControlReplyStatus(r).code(), Status::Code::kInvalidArgument) << r.dump();
  r = rack.cpu().Call(ep, {{"op", "alloc"}, {"bytes", -5}, {"tenant", 1}});
  EXPECT_EQ(r.value("error", ""), "alloc: bytes must be positive") << r.dump();
  r = rack.Alloc(0, 9u << 20);
  EXPECT_EQ(r.value("error", ""), "alloc: pool exhausted (asked 9437184, largest free 8388608)") << r.dump();
  EXPECT_EQ(ControlReplyStatus(r).code(), Status::Code::kResourceExhausted) << r.dump();
  r = rack.cpu().Call(ep, {{"op", "alloc"}, {"bytes", 10}});
  EXPECT_EQ(r.value("error", ""), "alloc: tenant is missing") << r.dump();
  r = rack.Alloc(0, 10, 1, "x");
  EXPECT_EQ(r.value("error", ""), "alloc: perms must be \"rw\" or \"r\"") << r.dump();
  r = rack.cpu().Call(ep, {{"op", "dance"}});
  EXPECT_EQ(r.value("error", ""), "control: unknown op 'dance'") << r.dump();
  // Not JSON at all: still answered.
  std::string junk = "{nope";
  ASSERT_TRUE(rack.cpu()
                  .worker()
                  .Send(ep, kAmControl, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(junk.data()), junk.size()))
                  .ok());
  json s = rack.MemNodeStats(0);
  EXPECT_EQ(s["counters"]["control_errors"], 7) << s.dump();
}

TEST(MemNodeProcess, OneSidedWritesLandInTheNamedPool) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  json a = rack.Alloc(0, 4096);
  ASSERT_TRUE(a.value("ok", false)) << a.dump();
  const uint64_t base = a["base"].get<uint64_t>();
  const char text[] = "pulse far memory";
  ASSERT_TRUE(rack.Put(0, base + 100, text, sizeof(text)).ok());
  char back[sizeof(text)] = {};
  ASSERT_TRUE(rack.Get(0, base + 100, back, sizeof(back)).ok());
  EXPECT_STREQ(back, text);

  // The pool is a named shared-memory object another process can map.
  int fd = shm_open(rack.shm_name(0).c_str(), O_RDONLY, 0);
  ASSERT_GE(fd, 0) << rack.shm_name(0);
  void* p = mmap(nullptr, 8u << 20, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_EQ(std::memcmp(static_cast<uint8_t*>(p) + (base - FarBase(0)) + 100, text, sizeof(text)), 0);
  munmap(p, 8u << 20);
}

TEST(MemNodeProcess, FreedBytesAreZeroForTheNextTenant) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  json a = rack.Alloc(0, 4096, 1);
  ASSERT_TRUE(a.value("ok", false));
  const uint64_t base = a["base"].get<uint64_t>();
  std::vector<uint8_t> secret(4096, 0xab);
  ASSERT_TRUE(rack.Put(0, base, secret.data(), secret.size()).ok());
  json f = rack.cpu().Call(rack.view(0).ep, {{"op", "free"}, {"base", base}, {"tenant", 1}});
  ASSERT_TRUE(f.value("ok", false)) << f.dump();
  json b = rack.Alloc(0, 4096, 2);
  ASSERT_EQ(b["base"].get<uint64_t>(), base);
  std::vector<uint8_t> seen(4096, 1);
  ASSERT_TRUE(rack.Get(0, base, seen.data(), seen.size(), /*tenant=*/2).ok());
  EXPECT_EQ(seen, std::vector<uint8_t>(4096, 0));
}

TEST(MemNodeProcess, OneSidedAccessReachesOnlyTheTenantsOwnAllocations) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  // No key for the whole pool: hello hands out none.
  json hello = rack.cpu().Call(rack.view(0).ep, {{"op", "hello"}});
  ASSERT_TRUE(hello.value("ok", false)) << hello.dump();
  EXPECT_FALSE(hello.contains("rkey")) << hello.dump();
  json a = rack.Alloc(0, 4096, 1);
  ASSERT_TRUE(a.value("ok", false)) << a.dump();
  const uint64_t base = a["base"].get<uint64_t>();
  std::vector<uint8_t> secret(4096, 0xab);
  ASSERT_TRUE(rack.Put(0, base, secret.data(), secret.size(), 1).ok());
  // Tenant 2 gets no key to tenant 1's allocation, so neither reads nor writes.
  std::vector<uint8_t> seen(4096, 0);
  EXPECT_EQ(rack.Get(0, base, seen.data(), seen.size(), 2).code(), Status::Code::kPermissionDenied);
  EXPECT_EQ(seen, std::vector<uint8_t>(4096, 0));
  EXPECT_EQ(rack.Put(0, base, seen.data(), seen.size(), 2).code(), Status::Code::kPermissionDenied);
  // Nor does anyone to memory that is no allocation.
  EXPECT_EQ(rack.Get(0, base + (1 << 20), seen.data(), 8, 1).code(), Status::Code::kNotFound);
  // The key of an allocation reaches that allocation only.
  auto key = rack.KeyFor(0, base, 1);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->key.size(), 64u * 1024);
  ASSERT_TRUE(rack.Get(0, base, seen.data(), seen.size(), 1).ok());
  EXPECT_EQ(seen, secret);
}

TEST(MemNodeProcess, ShutdownOpExitsZeroAndUnlinksThePool) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  json r = rack.cpu().Call(rack.view(0).ep, {{"op", "shutdown"}});
  EXPECT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_EQ(NodeProcess::ExitCode(rack.memnode(0).Wait(10s)), 0) << rack.memnode(0).Log();
  EXPECT_LT(shm_open(rack.shm_name(0).c_str(), O_RDONLY, 0), 0) << "pool not unlinked";
  // The switch saw it go.
  json s = rack.WaitForSwitchStats([](const json& c) { return c["memnodes_alive"] == 0; });
  EXPECT_EQ(s["counters"]["memnodes_alive"], 0) << s.dump();
}

TEST(MemNodeProcess, SigtermAndSigintExitZeroAndUnlinkThePool) {
  LocalRack rack;
  ASSERT_TRUE(rack.StartSwitch());
  rack.StartMemNode(0);
  rack.StartMemNode(1);
  ASSERT_TRUE(rack.Join(2));
  rack.memnode(0).Signal(SIGTERM);
  rack.memnode(1).Signal(SIGINT);
  for (uint32_t n = 0; n < 2; ++n) {
    EXPECT_EQ(NodeProcess::ExitCode(rack.memnode(n).Wait(10s)), 0) << rack.memnode(n).Log();
    EXPECT_LT(shm_open(rack.shm_name(n).c_str(), O_RDONLY, 0), 0) << "pool not unlinked";
    EXPECT_NE(rack.memnode(n).Log().find("shutting down"), std::string::npos) << rack.memnode(n).Log();
  }
}

TEST(MemNodeProcess, IdleNodeUsesAlmostNoCpu) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  ASSERT_TRUE(rack.Alloc(0, 4096).value("ok", false));  // some traffic first
  // Let the adaptive poll window after that traffic run out.
  rack.cpu().Pump(50ms);
  const double mem0 = rack.memnode(0).CpuSeconds();
  const double sw0 = rack.switch_process().CpuSeconds();
  const auto t0 = Clock::now();
  rack.cpu().Pump(2s);  // the test's own worker sleeps too
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const double mem_share = (rack.memnode(0).CpuSeconds() - mem0) / seconds;
  const double sw_share = (rack.switch_process().CpuSeconds() - sw0) / seconds;
  RecordProperty("memnode_idle_cpu_percent", std::to_string(mem_share * 100));
  RecordProperty("switch_idle_cpu_percent", std::to_string(sw_share * 100));
  std::printf("idle CPU: memnode %.2f%%, switch %.2f%%\n", mem_share * 100, sw_share * 100);
  EXPECT_LT(mem_share, 0.02);
  EXPECT_LT(sw_share, 0.02);
}

TEST(MemNodeProcess, UnreachableSwitchIsAClearError) {
  LocalRack rack;  // no switch started: nothing listens on its port
  const uint16_t port = static_cast<uint16_t>(15000 + RandomNumber() % 17000);
  NodeProcess node({"memnode", "--node", "0", "--pool-mib", "4", "--switch", fmt::format("127.0.0.1:{}", port),
                    "--connect-timeout-s", "1", "--shm-name", rack.shm_name(0)});
  const int status = node.Wait(15s);
  EXPECT_EQ(NodeProcess::ExitCode(status), 1) << node.Log();
  EXPECT_NE(node.Log().find(fmt::format("cannot reach the switch at 127.0.0.1:{} within 1000 ms", port)),
            std::string::npos)
      << node.Log();
  EXPECT_LT(shm_open(rack.shm_name(0).c_str(), O_RDONLY, 0), 0) << "pool not unlinked";
}

TEST(MemNodeProcess, BadFlagsAreNamed) {
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{"memnode", "--node", "0", "--pool-mib", "4", "--bogus"}, "--bogus"},
      {{"memnode", "--pool-mib", "4"}, "--node"},
      {{"memnode", "--node", "0"}, "--pool-mib"},
      {{"memnode", "--node", "0", "--pool-mib", "0"}, "--pool-mib"},
      {{"memnode", "--node", "0", "--pool-mib", "4", "--granularity-kib", "6"}, "--granularity-kib"},
      {{"memnode", "--node", "0", "--pool-mib", "1", "--granularity-kib", "2048"}, "--granularity-kib"},
      {{"memnode", "--node", "0", "--pool-mib", "4", "--switch", "host-without-port"}, "--switch"},
      {{"memnode", "--node", "0", "--pool-mib", "4", "--shm-name", "a/b"}, "--shm-name"},
      {{"memnode", "--node", "0", "--pool-mib", "4", "--workspaces", "0"}, "--workspaces"},
      {{"memnode", "--node", "0", "--pool-mib", "4", "--pipelines", "0"},
       "--pipelines: expected a whole number of pipelines in [1, 64], got '0'"},
      {{"memnode", "--node", "0", "--pool-mib", "4", "--pipelines", "abc"},
       "--pipelines: expected a whole number of pipelines in [1, 64], got 'abc'"},
  };
  for (const Case& c : cases) {
    NodeProcess p(c.args);
    const int status = p.Wait(10s);
    EXPECT_NE(NodeProcess::ExitCode(status), 0) << c.expect;
    EXPECT_NE(p.Log().find(c.expect), std::string::npos) << c.expect << ": " << p.Log();
  }
}

TEST(MemNodeProcess, HelpExplainsEveryFlag) {
  // --help prints on stdout, which NodeProcess discards: capture with a pipe.
  std::string out;
  FILE* f = popen((std::string(PULSE_BINARY) + " memnode --help").c_str(), "r");
  ASSERT_NE(f, nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(f), 0);
  for (const char* flag : {"--node", "--listen", "--switch", "--pool-mib", "--granularity-kib", "--workspaces",
                           "--max-iterations", "--poll-window-us", "--busy-poll", "--shm-name", "--log-level",
                           "--advertise", "--connect-timeout-s", "--pipelines"})
    EXPECT_NE(out.find(flag), std::string::npos) << flag << " missing in:\n" << out;
}

TEST(MemNodeProcess, StoreRetransmittedAcrossACrashAndRestartIsAnsweredNotRunAgain) {
  LocalRack rack;
  ASSERT_TRUE(rack.Start(1));
  auto insns = Assemble("LOAD data\nMOVE r1, cur_ptr\nADD sp[0], data[0]\nADD sp[0], 1\nSTORE [r1], sp[0]\nRETURN");
  ASSERT_TRUE(insns.ok()) << insns.status().ToString();
  auto program = VerifiedProgram::Create(std::move(*insns));
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  json a = rack.Alloc(0, 4096);
  ASSERT_TRUE(a.value("ok", false)) << a.dump();
  const uint64_t cell = a["base"].get<uint64_t>();
  auto request = [&](uint64_t counter) {
    TraversalMessage m;
    m.request_id = MakeRequestId(rack.cpu_node(), counter);
    m.cpu_node = rack.cpu_node();
    m.tenant = 1;
    m.program_hash = (*program)->hash();
    m.program = (*program)->encoded();
    m.cur_ptr = cell;
    m.scratch.assign(8, 0);
    m.max_iterations = 10;
    return m;
  };
  auto answer = [&](const TraversalMessage& m) -> Result<TraversalMessage> {
    PULSE_RETURN_IF_ERROR(rack.cpu().SendTraversal(rack.switch_ep(), m));
    return rack.cpu().WaitResponse(m.request_id);
  };
  auto cell_value = [&] {
    uint64_t v = 0;
    EXPECT_TRUE(rack.Get(0, cell, &v, 8).ok());
    return v;
  };
  const TraversalMessage first = request(1);
  auto r = answer(first);  // it ran; suppose this answer was lost in the crash
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->status, TraversalStatus::kDone) << TraversalStatusName(r->status);
  EXPECT_EQ(cell_value(), 1u);

  rack.memnode(0).Signal(SIGKILL);
  ASSERT_NE(rack.memnode(0).Wait(10s), -1);
  rack.ForgetMemNode(0);
  rack.StartMemNode(0);
  ASSERT_TRUE(rack.Join(1));
  EXPECT_NE(rack.memnode(0).Log().find("1 STORE-bearing requests recorded"), std::string::npos)
      << rack.memnode(0).Log();

  r = answer(first);  // the CPU node's retransmission reaches the new process
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, TraversalStatus::kDone) << TraversalStatusName(r->status);
  uint64_t sp0 = 0;
  ASSERT_GE(r->scratch.size(), 8u);
  std::memcpy(&sp0, r->scratch.data(), 8);
  EXPECT_EQ(sp0, 1u) << "the recorded answer";
  EXPECT_EQ(cell_value(), 1u) << "the retransmission ran again";
  EXPECT_EQ(rack.MemNodeStats(0)["counters"]["durable_answers"], 1) << rack.MemNodeStats(0).dump();
  r = answer(request(2));  // a new request runs
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(cell_value(), 2u);

  // One entry per engine pipeline (PULSE_PIPELINES when this test runs as
  // memnode_process_test_two_pipelines); the new process served request 2.
  const json stats = rack.MemNodeStats(0)["counters"];
  const char* env = std::getenv("PULSE_PIPELINES");
  ASSERT_TRUE(stats["pipelines"].is_array()) << stats.dump();
  EXPECT_EQ(stats["pipelines"].size(), env != nullptr ? std::stoul(env) : 1u) << stats.dump();
  uint64_t served = 0;
  for (const json& p : stats["pipelines"]) {
    EXPECT_EQ(p["active"], 0) << stats.dump();
    served += p["served"].get<uint64_t>();
  }
  EXPECT_EQ(served, 1u) << stats.dump();
}

}  // namespace
}  // namespace pulse::testing
