// The mode names and the backend factory.
#include <gtest/gtest.h>

#include <filesystem>

#include "pulse/farmem/backends.h"

namespace pulse::farmem {
namespace {

TEST(BackendMode, NamesRoundTrip) {
  for (BackendMode m : {BackendMode::kMemServer, BackendMode::kProxy, BackendMode::kAgent, BackendMode::kSsd}) {
    auto parsed = ParseBackendMode(BackendModeName(m));
    ASSERT_TRUE(parsed.ok()) << BackendModeName(m);
    EXPECT_EQ(*parsed, m);
  }
  auto bad = ParseBackendMode("nvme");
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("nvme"), std::string::npos);
}

TEST(MakeBackend, MemServerWithoutAClusterIsUnavailable) {
  HostAgentOptions o;
  o.mode = BackendMode::kMemServer;
  o.client.switch_address = "127.0.0.1:1";  // nothing listens there
  o.client.connect_timeout = std::chrono::milliseconds(300);
  o.region_directory = ::testing::TempDir() + "/farmem_backends_test";
  auto b = MakeBackend(o);
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(b.status().code() == Status::Code::kUnavailable || b.status().code() == Status::Code::kTimeout)
      << b.status().ToString();
}

TEST(MakeBackend, SsdMakesItsDirectory) {
  HostAgentOptions o;
  o.mode = BackendMode::kSsd;
  o.ssd_directory = ::testing::TempDir() + "/farmem_backends_test_ssd/nested";
  auto b = MakeBackend(o);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto id = (*b)->CreateRegion("r", 10000, "", false);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_TRUE((*b)->DestroyRegion(*id).ok());
  EXPECT_EQ((*b)->DestroyRegion(*id).code(), Status::Code::kNotFound);
  std::filesystem::remove_all(::testing::TempDir() + "/farmem_backends_test_ssd");
}

}  // namespace
}  // namespace pulse::farmem
