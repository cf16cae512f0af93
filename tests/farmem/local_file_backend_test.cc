// The SSD baseline's backend (a file per region with O_DIRECT) under the host
// agent: eviction round trips through the file, file-backed regions, and
// region names: one writer, then read-only sharing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "farmem/host_agent_testing.h"
#include "pulse/farmem/backends.h"
#include "pulse/farmem/host_agent.h"

namespace pulse::farmem {
namespace {

using testing::RandomBytes;

class LocalFileBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TestDirectory("farmem_ssd_");
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<HostAgent> MakeAgent(uint64_t buffer_pages = 8, uint32_t page_bytes = 16384) {
    HostAgentOptions o;
    o.mode = BackendMode::kSsd;
    o.ssd_directory = dir_;
    o.page_bytes = page_bytes;
    o.buffer_bytes = buffer_pages * page_bytes;
    return testing::CreateAgent(o);
  }
  std::vector<char> FileContents(const std::string& region) {
    std::ifstream in(dir_ + "/" + region + ".pages", std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
  }

  std::string dir_;
};

TEST_F(LocalFileBackendTest, DirtyEvictionRoundTripThroughTheFile) {
  auto agent = MakeAgent();
  ASSERT_NE(agent, nullptr);
  auto [region, pattern] = testing::WriteAndReadBackFourBuffers(agent.get(), "trip");
  ASSERT_NE(region, nullptr);
  std::vector<char> file = FileContents("trip");
  ASSERT_GE(file.size(), pattern.size());
  EXPECT_EQ(std::memcmp(file.data(), pattern.data(), pattern.size()), 0);
  ASSERT_TRUE(agent->Unmap(region).ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/trip.pages"));  // a writer's region goes with it
}

TEST_F(LocalFileBackendTest, FileBackedRegionEqualsTheFile) {
  std::filesystem::create_directories(dir_);
  const std::string path = dir_ + "/input.bin";
  const std::vector<char> content = RandomBytes(10 * 16384 + 777, 5);
  std::ofstream(path, std::ios::binary).write(content.data(), static_cast<std::streamsize>(content.size()));
  auto agent = MakeAgent(4);
  ASSERT_NE(agent, nullptr);
  auto r = agent->MapFile("loaded", path, /*read_only=*/true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ((*r)->bytes, content.size());
  EXPECT_EQ(std::memcmp((*r)->base, content.data(), content.size()), 0);
  EXPECT_GT(agent->stats().evictions, 0u);  // 11 pages through a 4-page buffer
}

TEST_F(LocalFileBackendTest, OneWriterThenReadOnlySharing) {
  auto writer = MakeAgent();
  auto other = MakeAgent();
  ASSERT_NE(writer, nullptr);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->MapShared("shared", 16384).status().code(), Status::Code::kNotFound);
  auto w = writer->MapAnonymous("shared", 3 * 16384);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(other->MapAnonymous("shared", 16384).status().code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(other->MapShared("shared", 16384).status().code(), Status::Code::kFailedPrecondition);
  std::memset((*w)->base, 0x5a, 3 * 16384);
  ASSERT_TRUE(writer->MarkReadOnly(*w).ok());
  auto r1 = other->MapShared("shared", 3 * 16384);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  auto r2 = other->MapShared("shared", 16384);  // a second reader
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(static_cast<const char*>((*r1)->base)[3 * 16384 - 1], 0x5a);
  EXPECT_EQ(static_cast<const char*>((*r2)->base)[0], 0x5a);
  EXPECT_EQ(other->MapShared("shared", 4 * 16384).status().code(), Status::Code::kInvalidArgument);
  // Readers hold the name: no new writer while they are there.
  EXPECT_EQ(other->MapAnonymous("shared", 16384).status().code(), Status::Code::kAlreadyExists);
}

// A region four times the buffer, written and read whole: the process's
// resident memory grows by at most the buffer plus a fixed overhead (the
// pager's per-page state and the backend's buffers: 8 MiB stated here).
TEST_F(LocalFileBackendTest, ResidentMemoryStaysWithinTheBuffer) {
  constexpr uint64_t kBuffer = 32 << 20, kOverhead = 8 << 20;
  auto agent = MakeAgent(kBuffer / (64 << 10), 64 << 10);
  ASSERT_NE(agent, nullptr);
  const uint64_t before = ResidentBytes();
  ASSERT_GT(before, 0u);
  const uint64_t peak = testing::PeakResidentWhileWritingAndReading(agent.get(), "big", 4 * kBuffer);
  ASSERT_GT(peak, 0u);
  EXPECT_LE(peak, before + kBuffer + kOverhead) << "before " << before << " peak " << peak;
  EXPECT_GT(agent->stats().pages_written_back, 0u);
}

}  // namespace
}  // namespace pulse::farmem
