// The whole far-memory path through real processes: a switch and two memory
// nodes (LocalRack), `pulse agent` started by the test, and AgentBackends in
// the test process.  Data written through the agent reads back byte for
// byte (from several threads at once, concurrent reads of one page
// included); a file-backed region is preloaded at the memory node and served
// from the agent's static cache; a second writer is refused; the memory
// nodes count the traffic by class; the agent killed or stopped, or a
// memory node killed, mid-run gives clear errors (naming the agent / the
// memory node, and the region), never a hang; under the host agent's pager
// (AgentClusterDeathTest) such a fault ends the process with a message
// naming the region and the agent / the memory node.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cluster/launcher.h"
#include "cluster/process.h"
#include "farmem/host_agent_testing.h"
#include "pulse/farmem/agent_backend.h"
#include "pulse/farmem/host_agent.h"
#include "support/local_rack.h"
#include "support/node_process.h"

namespace pulse::farmem {
namespace {

using namespace std::chrono_literals;
using pulse::testing::NodeProcess;

constexpr uint32_t kPage = 64 << 10;

class AgentCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    pulse::testing::SetUcxTestEnvironment();
    ASSERT_TRUE(rack_.Start(2, /*pool_mib=*/64));
  }
  void TearDown() override {
    if (!port_file_.empty()) std::remove(port_file_.c_str());
  }

  // Starts `pulse agent` against the rack (2 MiB chunks: regions span both
  // memory nodes) and waits until it listens.
  void StartAgent(std::vector<std::string> extra = {}) {
    port_file_ = fmt::format("/tmp/pulse-agent-test-{}-{}.port", getpid(), pulse::testing::RandomNumber());
    std::vector<std::string> args = {"agent",        "--switch",          rack_.switch_address(),
                                     "--listen",     "127.0.0.1:0",       "--port-file",
                                     port_file_,     "--chunk-mib",       "2",
                                     "--memory-timeout-ms", "2000"};
    args.insert(args.end(), extra.begin(), extra.end());
    agent_ = std::make_unique<NodeProcess>(args);
    auto port = cluster::WaitForPortFile(agent_->id(), "agent", port_file_, agent_->log_path(), 20s);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    address_ = fmt::format("127.0.0.1:{}", *port);
  }

  std::unique_ptr<AgentBackend> Connect() {
    AgentBackendOptions o;
    o.agent_address = address_;
    o.request_timeout = 8000ms;
    auto b = AgentBackend::Connect(o);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::move(*b) : nullptr;
  }

  // The host agent's options for paging through this agent (agent mode:
  // AgentBackend, made by the backend factory), 64 KiB pages.
  HostAgentOptions PagerOptions(uint64_t buffer_bytes) const {
    HostAgentOptions o;
    o.mode = BackendMode::kAgent;
    o.agent_address = address_;
    o.page_bytes = kPage;
    o.buffer_bytes = buffer_bytes;
    return o;
  }

  // A memory-node counter of the memory agent, summed over both nodes.
  uint64_t FarmemCounter(const char* name) {
    uint64_t total = 0;
    for (uint32_t n = 0; n < 2; ++n) total += rack_.MemNodeStats(n)["counters"]["farmem"][name].get<uint64_t>();
    return total;
  }

  pulse::testing::LocalRack rack_;
  std::unique_ptr<NodeProcess> agent_;
  std::string port_file_;
  std::string address_;
};

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

TEST_F(AgentCluster, DataRoundTripsByteForByteFromManyThreads) {
  StartAgent();
  auto backend = Connect();
  ASSERT_NE(backend, nullptr);
  constexpr uint64_t kPages = 128;  // 8 MiB: four chunks over two memory nodes
  auto id = backend->CreateRegion("data", kPages * kPage, "", false);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  const std::vector<uint8_t> ref = RandomBytes(kPages * kPage, 1);
  // Four writers, each its own pages, runs of 1-3 pages.
  std::vector<std::thread> threads;
  std::vector<Status> failures(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t p = t * kPages / 4; p < (t + 1) * kPages / 4;) {
        const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(1 + p % 3, (t + 1) * kPages / 4 - p));
        Status s = backend->WritePages(*id, p, n, kPage, ref.data() + p * kPage);
        if (!s.ok()) failures[t] = s;
        p += n;
      }
    });
  for (auto& th : threads) th.join();
  threads.clear();
  for (const Status& s : failures) ASSERT_TRUE(s.ok()) << s.ToString();
  // Eight readers of everything, in different orders; all start on page 5.
  std::vector<int> mismatches(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<uint8_t> page(kPage);
      for (uint64_t i = 0; i < kPages; ++i) {
        const uint64_t p = (5 + i * (2 * t + 1)) % kPages;
        Status s = backend->ReadPages(*id, p, 1, kPage, page.data(), PageClass::kOnDemand);
        if (!s.ok()) {
          failures[t % 4] = s;
          return;
        }
        if (!std::equal(page.begin(), page.end(), ref.begin() + p * kPage)) ++mismatches[t];
      }
    });
  for (auto& th : threads) th.join();
  for (const Status& s : failures) ASSERT_TRUE(s.ok()) << s.ToString();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(mismatches[t], 0) << "reader " << t;
  // The memory nodes saw the write-backs and the reads, by class.
  EXPECT_EQ(FarmemCounter("write_back_bytes"), kPages * kPage);
  EXPECT_GT(FarmemCounter("on_demand_ops") + FarmemCounter("prefetch_ops"), 0u);
  EXPECT_EQ(FarmemCounter("preload_bytes"), kPages * kPage) << "reserved and zero-filled at the node";
  auto stats = backend->AgentStats();
  ASSERT_TRUE(stats.ok());
  auto j = nlohmann::json::parse(*stats);
  EXPECT_EQ(j["host_pages_read"].get<uint64_t>(), 8 * kPages);
  EXPECT_GT(j["cpu_seconds"].get<double>(), 0.0);
  // Every read went on a lane, straight into its page, and was timed by
  // the agent's stamps.
  const AgentHopStats hops = backend->hop_stats();
  EXPECT_EQ(hops.reads_timed, 8 * kPages);
  EXPECT_LE(hops.reads_slept, hops.reads_timed);
  EXPECT_LE(hops.from_agent_slept_ns, hops.from_agent_ns);
  EXPECT_GT(hops.agent_ns, 0u) << "the agent's part spans its memory operations";
  ASSERT_TRUE(backend->DestroyRegion(*id).ok());
}

TEST_F(AgentCluster, FileBackedRegionIsPreloadedAndServedFromTheStaticCache) {
  StartAgent();
  auto backend = Connect();
  ASSERT_NE(backend, nullptr);
  const std::string path = fmt::format("/tmp/pulse-agent-file-{}-{}.bin", getpid(), pulse::testing::RandomNumber());
  const std::vector<uint8_t> content = RandomBytes(3 * (1 << 20) + 12345, 2);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
  }
  auto id = backend->CreateRegion("graph.bin", content.size(), path, /*read_only=*/true);
  std::remove(path.c_str());
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(FarmemCounter("preload_file_bytes"), content.size());
  const uint64_t pages = (content.size() + kPage - 1) / kPage;
  std::vector<uint8_t> got(pages * kPage);
  for (uint64_t p = 0; p < pages; p += 4) {
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(4, pages - p));
    ASSERT_TRUE(backend->ReadPages(*id, p, n, kPage, got.data() + p * kPage, PageClass::kOnDemand).ok());
  }
  EXPECT_TRUE(std::equal(content.begin(), content.end(), got.begin()));
  EXPECT_TRUE(std::all_of(got.begin() + content.size(), got.end(), [](uint8_t b) { return b == 0; }))
      << "zeros past the file's end";
  // Loaded once by the agent (static load traffic at the nodes); a second
  // pass is served from the agent: counted hits, no new on-demand traffic.
  auto j = nlohmann::json::parse(*backend->AgentStats());
  EXPECT_EQ(j["static_regions"].get<uint64_t>(), 1u);
  const uint64_t on_demand = FarmemCounter("on_demand_ops");
  const uint64_t hits = j["static_hits"].get<uint64_t>();
  for (uint64_t p = 0; p < pages; ++p)
    ASSERT_TRUE(backend->ReadPages(*id, p, 1, kPage, got.data() + p * kPage, PageClass::kOnDemand).ok());
  EXPECT_TRUE(std::equal(content.begin(), content.end(), got.begin()));
  j = nlohmann::json::parse(*backend->AgentStats());
  EXPECT_EQ(j["static_hits"].get<uint64_t>(), hits + pages);
  EXPECT_EQ(FarmemCounter("on_demand_ops"), on_demand);
  EXPECT_GE(FarmemCounter("static_load_bytes"), content.size());
  // Read-only: a write-back is refused; a second process may share it.
  std::vector<uint8_t> page(kPage, 1);
  EXPECT_EQ(backend->WritePages(*id, 0, 1, kPage, page.data()).code(), Status::Code::kFailedPrecondition);
  auto other = Connect();
  ASSERT_NE(other, nullptr);
  auto shared = other->CreateRegion("graph.bin", content.size(), "", /*read_only=*/true);
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_EQ(*shared, *id);
}

TEST_F(AgentCluster, ASecondWriterIsRefused) {
  StartAgent();
  auto first = Connect();
  auto second = Connect();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  auto id = first->CreateRegion("owned", 1 << 20, "", false);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto again = second->CreateRegion("owned", 1 << 20, "", false);
  EXPECT_EQ(again.status().code(), Status::Code::kAlreadyExists) << again.status().ToString();
  EXPECT_NE(again.status().message().find("'owned'"), std::string::npos) << again.status().message();
  // Once the writer's process is gone, the name is free.
  first.reset();
  Result<uint64_t> later = Status::Internal("not tried");
  for (int attempt = 0; attempt < 50; ++attempt) {  // the agent learns of the disconnect asynchronously
    later = second->CreateRegion("owned", 1 << 20, "", false);
    if (later.ok() || later.status().code() != Status::Code::kAlreadyExists) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(later.ok()) << later.status().ToString();
}

TEST_F(AgentCluster, OnlyTheAgentsTenantIsServed) {
  StartAgent({"--tenant", "1"});
  const char* secret_file = getenv(net::kSecretFileEnvironmentVariable);
  ASSERT_NE(secret_file, nullptr);
  auto secret = net::ReadKeyFile(secret_file);
  ASSERT_TRUE(secret.ok()) << secret.status().ToString();
  auto as_tenant = [&](uint32_t tenant) {
    AgentBackendOptions o;
    o.agent_address = address_;
    o.request_timeout = 8000ms;
    o.worker.credentials = net::Credentials{.tenant = tenant, .tenant_key = net::DeriveTenantKey(*secret, tenant)};
    auto b = AgentBackend::Connect(o);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::move(*b) : nullptr;
  };
  auto own = as_tenant(1);
  auto other = as_tenant(2);
  ASSERT_NE(own, nullptr);
  ASSERT_NE(other, nullptr);
  auto id = own->CreateRegion("tenant-one", 1 << 20, "", false);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  std::vector<uint8_t> page(64 << 10, 0x5a);
  ASSERT_TRUE(own->WritePages(*id, 0, 1, 64 << 10, page.data()).ok());
  std::vector<uint8_t> read(64 << 10, 0);
  Status s = other->ReadPages(*id, 0, 1, 64 << 10, read.data(), PageClass::kOnDemand);
  EXPECT_EQ(s.code(), Status::Code::kPermissionDenied) << s.ToString();
  EXPECT_EQ(read, std::vector<uint8_t>(64 << 10, 0)) << "tenant 2 got tenant 1's bytes";
  EXPECT_EQ(other->WritePages(*id, 0, 1, 64 << 10, read.data()).code(), Status::Code::kPermissionDenied);
  EXPECT_EQ(other->CreateRegion("tenant-two", 1 << 20, "", false).status().code(), Status::Code::kPermissionDenied);
  ASSERT_TRUE(own->ReadPages(*id, 0, 1, 64 << 10, read.data(), PageClass::kOnDemand).ok());
  EXPECT_EQ(read, page) << "tenant 2's refused write changed the page";
}

TEST_F(AgentCluster, TheAgentKilledMidRunGivesAClearErrorNotAHang) {
  StartAgent();
  auto backend = Connect();
  ASSERT_NE(backend, nullptr);
  auto id = backend->CreateRegion("doomed", 4 << 20, "", false);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  std::vector<uint8_t> page(kPage);
  ASSERT_TRUE(backend->ReadPages(*id, 0, 1, kPage, page.data(), PageClass::kOnDemand).ok());
  // Readers in flight while the agent dies.
  std::vector<Status> results(4);
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&, t] {
      std::vector<uint8_t> buf(kPage);
      for (uint64_t p = 0;; p = (p + 1) % 64) {
        Status s = backend->ReadPages(*id, p, 1, kPage, buf.data(), PageClass::kOnDemand);
        if (!s.ok()) {
          results[t] = s;
          return;
        }
      }
    });
  agent_->Kill();
  for (auto& r : readers) r.join();
  for (const Status& s : results) {
    EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
    EXPECT_NE(s.message().find(address_), std::string::npos) << "names the agent: " << s.message();
  }
  EXPECT_EQ(backend->ReadPages(*id, 0, 1, kPage, page.data(), PageClass::kOnDemand).code(),
            Status::Code::kUnavailable);
}

TEST_F(AgentCluster, AHungAgentTimesOutNamingItAndTheRegion) {
  StartAgent();
  AgentBackendOptions o;
  o.agent_address = address_;
  o.request_timeout = 1500ms;
  auto backend = AgentBackend::Connect(o);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  auto id = (*backend)->CreateRegion("stalled", 1 << 20, "", false);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  std::vector<uint8_t> page(kPage);
  agent_->Signal(SIGSTOP);
  Status s = (*backend)->ReadPages(*id, 3, 1, kPage, page.data(), PageClass::kOnDemand);
  agent_->Signal(SIGCONT);
  EXPECT_EQ(s.code(), Status::Code::kTimeout) << s.ToString();
  EXPECT_NE(s.message().find(address_), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(fmt::format("region {}", *id)), std::string::npos) << s.message();
  // Its late answer is dropped; the next request is served.
  EXPECT_TRUE((*backend)->ReadPages(*id, 3, 1, kPage, page.data(), PageClass::kOnDemand).ok());
}

TEST_F(AgentCluster, AMemoryNodeKilledMidRunGivesAnErrorNamingIt) {
  StartAgent({"--mode", "proxy"});
  auto backend = Connect();
  ASSERT_NE(backend, nullptr);
  constexpr uint64_t kPages = 128;  // four 2 MiB chunks, spread over both nodes
  auto id = backend->CreateRegion("spread", kPages * kPage, "", false);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  rack_.memnode(1).Kill();
  std::vector<uint8_t> page(kPage);
  int failed = 0, served = 0;
  for (uint64_t p = 0; p < kPages; p += 8) {
    Status s = backend->ReadPages(*id, p, 1, kPage, page.data(), PageClass::kOnDemand);
    if (s.ok()) {
      ++served;
      continue;
    }
    ++failed;
    EXPECT_TRUE(s.code() == Status::Code::kUnavailable || s.code() == Status::Code::kTimeout) << s.ToString();
    EXPECT_NE(s.message().find("memory node 1"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("region"), std::string::npos) << s.message();
  }
  EXPECT_GT(failed, 0) << "some chunks were on memory node 1";
  EXPECT_GT(served, 0) << "memory node 0 still serves its chunks";
}

// The host agent's pager over AgentBackend on a region four times its
// buffer, written and read whole: the process's resident memory grows by at
// most the buffer plus a fixed overhead, 8 MiB as for the SSD baseline
// (LocalFileBackendTest's test of the same name): the pager's per-page
// state, the backend's buffers, and the lanes' UCX buffers, which grow with
// the traffic after the sample taken before it (1.6-2.8 MiB measured with
// an 8 or 32 MiB buffer; docs/graph.md has `pulse bench graph`'s figures).
// Not under AddressSanitizer: its quarantine keeps every freed request
// buffer (one per write-back) resident, so RSS measures the quarantine.
TEST_F(AgentCluster, ResidentMemoryStaysWithinTheBuffer) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's quarantine keeps freed buffers resident";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer's quarantine keeps freed buffers resident";
#endif
#endif
  StartAgent();
  constexpr uint64_t kBuffer = 32 << 20, kOverhead = 8 << 20;
  auto host = HostAgent::Create(PagerOptions(kBuffer));
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  const uint64_t before = ResidentBytes();
  ASSERT_GT(before, 0u);
  const uint64_t peak = testing::PeakResidentWhileWritingAndReading(host->get(), "big", 4 * kBuffer);
  ASSERT_GT(peak, 0u);
  EXPECT_LE(peak, before + kBuffer + kOverhead) << "before " << before << " peak " << peak;
  EXPECT_GT((*host)->stats().pages_written_back, 0u);
}

// The same failures end to end: the host agent's pager over AgentBackend
// against the fixture's agent.  A fault the pager cannot serve cannot be
// reported to the faulting thread, which waits in the kernel, so the
// process must end with exit code 70 and a message naming the region and
// the agent or the memory node, never hang.
// The scenario runs in the death test's child ("threadsafe" style re-runs
// the test there, SetUp included, so it kills the child's own agent and
// memory node; they die with the child through PR_SET_PDEATHSIG).
class AgentClusterDeathTest : public AgentCluster {
 protected:
  // Maps region 'victim' of `pages` pages through a host agent in agent
  // mode, a buffer of 8 pages.  Exits with a code of its own (not 70) when
  // the setup fails, so that failure cannot pass for the one tested.
  char* MapVictim(uint64_t pages) {
    auto host = HostAgent::Create(PagerOptions(8 * kPage));
    if (!host.ok()) std::_Exit(2);
    host_ = std::move(*host);
    auto r = host_->MapAnonymous("victim", pages * kPage);
    if (!r.ok()) std::_Exit(3);
    return static_cast<char*>((*r)->base);
  }

  // A fault in the victim's page `page` (a read: the page is not resident).
  static char Touch(const char* base, uint64_t page) { return static_cast<const volatile char*>(base)[page * kPage]; }

  std::unique_ptr<HostAgent> host_;
};

TEST_F(AgentClusterDeathTest, TheAgentKilledEndsTheProcessNamingTheRegionAndTheAgent) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  StartAgent();
  EXPECT_EXIT(
      {
        char* base = MapVictim(32);
        // Paging works: a write fault, then the byte reads back.
        base[0] = 42;
        if (Touch(base, 0) != 42) std::_Exit(4);
        agent_->Kill();
        Touch(base, 16);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(70), "cannot serve a fault in region 'victim'.*pulse agent at 127\\.0\\.0\\.1:[0-9]+");
}

TEST_F(AgentClusterDeathTest, AMemoryNodeKilledEndsTheProcessNamingTheRegionAndTheNode) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // Proxy: no cache or prefetch can serve a page without the memory node.
  StartAgent({"--mode", "proxy"});
  EXPECT_EXIT(
      {
        // 128 pages: four 2 MiB chunks, spread over both memory nodes.
        char* base = MapVictim(128);
        base[0] = 42;
        if (Touch(base, 0) != 42) std::_Exit(4);
        rack_.memnode(1).Kill();
        // One page of each chunk: the first on memory node 1 cannot be served.
        for (uint64_t page = 1; page < 128; page += 32) Touch(base, page);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(70), "cannot serve a fault in region 'victim'.*memory node 1");
}

}  // namespace
}  // namespace pulse::farmem
