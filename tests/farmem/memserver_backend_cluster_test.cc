// The MemServer backend under the host agent against real `pulse switch` and
// `pulse memnode` processes (LocalRack): pages round-trip through a memory
// node byte for byte, file-backed regions, one writer then read-only
// sharing, and a memory node killed under a fault (the process ends with a
// message naming the region and the node; no hang).
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "farmem/host_agent_testing.h"
#include "pulse/farmem/host_agent.h"
#include "support/local_rack.h"

namespace pulse::farmem {
namespace {

using pulse::testing::LocalRack;
using testing::RandomBytes;

constexpr uint32_t kPage = 64 << 10;

HostAgentOptions Options(const LocalRack& rack, const std::string& dir, uint64_t buffer_pages) {
  HostAgentOptions o;
  o.mode = BackendMode::kMemServer;
  o.client.switch_address = rack.switch_address();
  o.region_directory = dir;
  o.page_bytes = kPage;
  o.buffer_bytes = buffer_pages * kPage;
  return o;
}

class MemServerBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pulse::testing::SetUcxTestEnvironment();
    ASSERT_TRUE(rack_.Start(1, /*pool_mib=*/64));
    dir_ = testing::TestDirectory("farmem_ms_");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<HostAgent> MakeAgent(uint64_t buffer_pages = 16) {
    return testing::CreateAgent(Options(rack_, dir_, buffer_pages));
  }

  LocalRack rack_;
  std::string dir_;
};

// Written through a 16-page buffer, read back here, then read by a second
// agent from far memory alone (its buffer is empty): the same bytes.
TEST_F(MemServerBackendTest, RoundTripThroughTheMemoryNode) {
  auto writer = MakeAgent();
  ASSERT_NE(writer, nullptr);
  auto [region, pattern] = testing::WriteAndReadBackFourBuffers(writer.get(), "trip");
  ASSERT_NE(region, nullptr);
  ASSERT_TRUE(writer->MarkReadOnly(region).ok());
  auto reader = MakeAgent(8);
  ASSERT_NE(reader, nullptr);
  auto shared = reader->MapShared("trip", pattern.size());
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_EQ(std::memcmp((*shared)->base, pattern.data(), pattern.size()), 0);
  EXPECT_GT(reader->stats().evictions, 0u);
  // The writer lets go while the reader reads: the memory stays the reader's
  // (a region of the same size allocated next is elsewhere).
  ASSERT_TRUE(writer->Unmap(region).ok());
  auto next = writer->MapAnonymous("next", pattern.size());
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  std::memset((*next)->base, 0, pattern.size());
  ASSERT_TRUE(writer->Flush(*next).ok());
  ASSERT_TRUE(reader->Unmap(*shared).ok());
  shared = reader->MapShared("trip", pattern.size());
  EXPECT_EQ(shared.status().code(), Status::Code::kOk);
  if (shared.ok()) EXPECT_EQ(std::memcmp((*shared)->base, pattern.data(), pattern.size()), 0);
}

TEST_F(MemServerBackendTest, FileBackedRegionEqualsTheFile) {
  std::filesystem::create_directories(dir_);
  const std::string path = dir_ + "/input.bin";
  const std::vector<char> content = RandomBytes(3 * (1 << 20) + 4321, 9);  // crosses load chunks
  std::ofstream(path, std::ios::binary).write(content.data(), static_cast<std::streamsize>(content.size()));
  auto agent = MakeAgent(8);
  ASSERT_NE(agent, nullptr);
  auto r = agent->MapFile("file", path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(std::memcmp((*r)->base, content.data(), content.size()), 0);
  // Writable: a change survives eviction.
  static_cast<char*>((*r)->base)[5] ^= 1;
  auto [other, pattern] = testing::WriteAndReadBackFourBuffers(agent.get(), "evicts-the-file");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(static_cast<char*>((*r)->base)[5], static_cast<char>(content[5] ^ 1));
}

TEST_F(MemServerBackendTest, SecondWriterIsRefused) {
  auto first = MakeAgent();
  auto second = MakeAgent();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  auto w = first->MapAnonymous("contended", 4 * kPage);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(second->MapAnonymous("contended", 4 * kPage).status().code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(second->MapShared("contended", 4 * kPage).status().code(), Status::Code::kFailedPrecondition);
  ASSERT_TRUE(first->Unmap(*w).ok());
  // The name is free again once its writer lets go.
  auto again = second->MapAnonymous("contended", 4 * kPage);
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

// Unmap frees the region's far memory (allocated and freed through the same
// connection of the pool): a region of three quarters of the pool fits
// again and again.  The memory comes back with the old bytes in it; an
// anonymous region still reads as zeros, here and, once read-only, in
// another process.
TEST_F(MemServerBackendTest, UnmapReturnsTheFarMemoryAndReusedMemoryReadsAsZeros) {
  constexpr uint64_t kBytes = 48 << 20, kFar = 40 << 20;
  auto agent = MakeAgent();
  ASSERT_NE(agent, nullptr);
  for (int round = 0; round < 3; ++round) {
    auto r = agent->MapAnonymous("big", kBytes);
    ASSERT_TRUE(r.ok()) << "round " << round << ": " << r.status().ToString();
    char* p = static_cast<char*>((*r)->base);
    EXPECT_EQ(p[12345], 0) << "round " << round;
    EXPECT_EQ(p[kFar], 0) << "round " << round;
    p[12345] = 1;
    p[kFar] = 1;
    ASSERT_TRUE(agent->Flush(*r).ok());
    ASSERT_TRUE(agent->Unmap(*r).ok());
  }
  auto r = agent->MapAnonymous("zeros", kBytes);  // the same memory again, 1s at both places
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  static_cast<char*>((*r)->base)[0] = 2;
  ASSERT_TRUE(agent->MarkReadOnly(*r).ok());
  auto reader = MakeAgent();
  ASSERT_NE(reader, nullptr);
  auto shared = reader->MapShared("zeros", kBytes);
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  const char* q = static_cast<const char*>((*shared)->base);
  EXPECT_EQ(q[0], 2);
  EXPECT_EQ(q[12345], 0);
  EXPECT_EQ(q[kFar], 0);
}

// A memory node dies (SIGKILL) or hangs (SIGSTOP: the fabric's timeout)
// under a fault.  The whole scenario runs in a child process (a death test
// re-running this test in "threadsafe" style), which must end with exit
// code 70 and a message naming the region and the node, never hang.
void FaultOnAFailedMemoryNode(int signal) {
  pulse::testing::SetUcxTestEnvironment();
  LocalRack rack;
  if (!rack.Start(1, 64)) std::_Exit(1);
  auto agent = HostAgent::Create(Options(rack, testing::TestDirectory("farmem_ms_"), 8));
  if (!agent.ok()) std::_Exit(2);
  auto r = (*agent)->MapAnonymous("victim", 32 * kPage);
  if (!r.ok()) std::_Exit(3);
  std::memset((*r)->base, 1, 32 * kPage);  // page 0 is evicted to far memory
  rack.memnode(0).Signal(signal);
  volatile char c = static_cast<char*>((*r)->base)[0];
  (void)c;
  std::_Exit(0);
}

TEST(MemServerBackendDeathTest, DeadMemoryNodeEndsTheProcessWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(FaultOnAFailedMemoryNode(SIGKILL), ::testing::ExitedWithCode(70), "region 'victim'.*memory node 0");
}

TEST(MemServerBackendDeathTest, HungMemoryNodeEndsTheProcessWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(FaultOnAFailedMemoryNode(SIGSTOP), ::testing::ExitedWithCode(70),
              "region 'victim'.*timeout.*memory node 0");
}

}  // namespace
}  // namespace pulse::farmem
