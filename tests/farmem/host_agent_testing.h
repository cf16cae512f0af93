// Helpers and checks shared by the host agent's tests (each backend's).
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pulse/farmem/host_agent.h"

namespace pulse::farmem::testing {

// A directory for this test's files (not created): the temp directory,
// `prefix`, this process and the test's name.
inline std::string TestDirectory(const std::string& prefix) {
  return std::filesystem::temp_directory_path() /
         (prefix + std::to_string(getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

// HostAgent::Create, failing the test (and returning null) on an error.
inline std::unique_ptr<HostAgent> CreateAgent(const HostAgentOptions& options) {
  auto a = HostAgent::Create(options);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? std::move(*a) : nullptr;
}

inline std::vector<char> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<char> v(n);
  for (auto& c : v) c = static_cast<char>(rng());
  return v;
}

// Maps region `name` of four times the agent's buffer (plus a partial
// page), writes a pattern from four threads (disjoint quarters, interleaved
// faults) and reads it all back byte for byte: every byte survives
// eviction and write-back, and the buffer is never exceeded.  Leaves the
// region mapped and flushed; returns it and the pattern.
inline std::pair<Region*, std::vector<char>> WriteAndReadBackFourBuffers(HostAgent* agent, const std::string& name) {
  const HostAgentOptions& o = agent->options();
  const uint64_t buffer_pages = o.buffer_bytes / o.page_bytes;
  const uint64_t bytes = 4 * buffer_pages * o.page_bytes + 12345;
  auto r = agent->MapAnonymous(name, bytes);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {nullptr, {}};
  char* p = static_cast<char*>((*r)->base);
  std::vector<char> pattern = RandomBytes(bytes, 7);
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      const uint64_t lo = bytes * t / 4, hi = bytes * (t + 1) / 4;
      std::memcpy(p + lo, pattern.data() + lo, hi - lo);
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(std::memcmp(p, pattern.data(), bytes), 0);
  const HostAgentStats s = agent->stats();
  EXPECT_GT(s.evictions, 0u);
  EXPECT_GT(s.pages_written_back, 0u);
  EXPECT_LE(s.peak_resident_pages, buffer_pages);
  EXPECT_TRUE(agent->Flush(*r).ok());
  return {*r, std::move(pattern)};
}

}  // namespace pulse::farmem::testing
