// `pulse cluster status` shows pool use per tenant (session and durable) and
// reports a full pool as a problem (`--check` exits 1); `pulse cluster drop`
// frees a root's or a tenant's memory.  A real cluster (the launcher), the
// real command line.
#include <stdlib.h>
#include <sys/wait.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "cluster/launcher.h"
#include "pulse/client.h"

namespace pulse {
namespace {

using namespace std::chrono_literals;

// Runs `pulse <args>`; its exit code, with stdout and stderr in *out.
int Pulse(const std::string& args, std::string* out) {
  out->clear();
  FILE* f = popen(fmt::format("{} {} 2>&1", PULSE_BINARY, args).c_str(), "r");
  if (f == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out->append(buf, n);
  const int status = pclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ClusterStatus, ShowsPoolUsePerTenantChecksAFullPoolAndDropsIt) {
  char dir[] = "/tmp/pulse-status-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  cluster::ClusterConfig config = cluster::LocalClusterConfig("status", 1, 4, dir);
  config.binary = PULSE_BINARY;
  auto state = cluster::StartCluster(config, {.die_with_parent = true});
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  cluster::ClusterGuard guard(*state, 5s);
  cluster::ApplyTransportEnvironment(config);
  const std::string at = "--state " + state->state_file;
  std::string out;
  EXPECT_EQ(Pulse("cluster status --check " + at, &out), 0) << out;
  EXPECT_EQ(out.find("problem:"), std::string::npos) << out;

  {
    // Tenant 2 fills the 4 MiB pool with a durable root.
    ClientOptions o;
    o.switch_address = state->switch_address;
    o.tenant = 2;
    auto c = Client::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    auto first = (*c)->Allocate(1 << 20);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_TRUE((*c)->PublishRoot("big", *first).ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*c)->Allocate(1 << 20).ok()) << i;
    EXPECT_EQ((*c)->Allocate(1 << 20).status().code(), Status::Code::kResourceExhausted);
  }
  // The client is gone; its durable memory is not.
  EXPECT_EQ(Pulse("cluster status --check " + at, &out), 1) << out;
  EXPECT_NE(out.find("problem: memnode-0: pool full (4.0 MiB of 4.0 MiB used"), std::string::npos) << out;
  EXPECT_NE(out.find("memnode-0 tenant 2: 0 B session, 4.0 MiB durable (4 allocations)"), std::string::npos) << out;
  // Without --check a full pool is reported, and the exit code says the nodes answer.
  EXPECT_EQ(Pulse("cluster status " + at, &out), 0) << out;
  EXPECT_NE(out.find("pool full"), std::string::npos) << out;
  EXPECT_EQ(Pulse("cluster status --json " + at, &out), 0) << out;
  EXPECT_NE(out.find("\"durable_bytes\": 4194304"), std::string::npos) << out;

  // Dropping another tenant's root of that name finds nothing.
  EXPECT_EQ(Pulse("cluster drop --tenant 1 --root big " + at, &out), 1) << out;
  EXPECT_EQ(Pulse("cluster status --check " + at, &out), 1) << out;
  EXPECT_EQ(Pulse("cluster drop --tenant 2 --root big " + at, &out), 0) << out;
  EXPECT_NE(out.find("freed 4.0 MiB (4 allocations)"), std::string::npos) << out;
  EXPECT_EQ(Pulse("cluster status --check " + at, &out), 0) << out;
  EXPECT_EQ(out.find("tenant 2"), std::string::npos) << out;
  EXPECT_EQ(Pulse("cluster drop --help", &out), 0) << out;
  for (const char* flag : {"--tenant", "--root", "--state", "--config"})
    EXPECT_NE(out.find(flag), std::string::npos) << flag << " missing in:\n" << out;

  ASSERT_TRUE(guard.Stop().ok());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace pulse
