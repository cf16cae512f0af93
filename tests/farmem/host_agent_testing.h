// Helpers and checks shared by the host agent's tests (each backend's).
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
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

// Maps region `name` of `bytes` (writable), writes a word pattern over all
// of it and reads it back (with `bytes` over the buffer, every page is
// faulted in, dirtied, written back, evicted and fetched again), sampling
// the process's resident memory every 512 KiB of the array.  Returns the
// peak sample; 0 (the test failed) if the region cannot be mapped or a
// word reads back wrong.
inline uint64_t PeakResidentWhileWritingAndReading(HostAgent* agent, const std::string& name, uint64_t bytes) {
  auto r = agent->MapAnonymous(name, bytes);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return 0;
  auto* words = static_cast<uint64_t*>((*r)->base);
  const uint64_t n = bytes / 8;
  uint64_t peak = 0;
  for (uint64_t i = 0; i < n; ++i) {
    words[i] = i * 0x9e3779b97f4a7c15ull;
    if (i % 65536 == 0) peak = std::max(peak, ResidentBytes());
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (words[i] != i * 0x9e3779b97f4a7c15ull) {
      ADD_FAILURE() << "region '" << name << "': word " << i << " did not survive the round trip";
      return 0;
    }
    if (i % 65536 == 0) peak = std::max(peak, ResidentBytes());
  }
  return peak;
}

}  // namespace pulse::farmem::testing
