// The host agent's pager over a fake in-memory backend (no network): faults
// at page boundaries, concurrent faults on one page, dirty eviction round
// trips checked byte for byte against a plain copy, file-backed regions,
// and a fault the backend cannot serve (the process ends with a message).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "farmem/fake_page_backend.h"
#include "farmem/host_agent_testing.h"
#include "pulse/farmem/host_agent.h"

namespace pulse::farmem {
namespace {

using testing::FakePageBackend;
using testing::RandomBytes;
using testing::WriteAndReadBackFourBuffers;
using namespace std::chrono_literals;

constexpr uint32_t kPage = 64 << 10;

struct Agent {
  std::unique_ptr<HostAgent> agent;
  FakePageBackend* backend = nullptr;  // owned by agent
};

Agent MakeAgent(uint64_t buffer_pages, uint32_t page_bytes = kPage, double evict_high = 0.95,
                double evict_low = 0.9) {
  auto fake = std::make_unique<FakePageBackend>();
  Agent a;
  a.backend = fake.get();
  HostAgentOptions o;
  o.page_bytes = page_bytes;
  o.buffer_bytes = buffer_pages * page_bytes;
  o.evict_high = evict_high;
  o.evict_low = evict_low;
  auto created = HostAgent::Create(o, std::move(fake));
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  if (created.ok()) a.agent = std::move(*created);
  return a;
}

TEST(HostAgent, RejectsBadOptions) {
  HostAgentOptions o;
  o.page_bytes = 1000;
  EXPECT_EQ(HostAgent::Create(o, std::make_unique<FakePageBackend>()).status().code(),
            Status::Code::kInvalidArgument);
  o.page_bytes = 4096;
  o.buffer_bytes = 4096;  // one page, four fetch threads
  EXPECT_EQ(HostAgent::Create(o, std::make_unique<FakePageBackend>()).status().code(),
            Status::Code::kInvalidArgument);
  o.buffer_bytes = 1 << 20;
  o.evict_low = 0.99;  // above evict_high
  EXPECT_EQ(HostAgent::Create(o, std::make_unique<FakePageBackend>()).status().code(),
            Status::Code::kInvalidArgument);
}

TEST(HostAgent, AnonymousRegionReadsZeros) {
  Agent a = MakeAgent(8);
  auto r = a.agent->MapAnonymous("zeros", 3 * kPage + 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const char* p = static_cast<const char*>((*r)->base);
  for (uint64_t i = 0; i < (*r)->bytes; i += 997) ASSERT_EQ(p[i], 0) << i;
  ASSERT_EQ(p[(*r)->bytes - 1], 0);
  EXPECT_EQ(a.agent->stats().faults, 4u);  // each page once
  EXPECT_EQ(a.agent->stats().write_faults, 0u);
}

TEST(HostAgent, FindsTheRegionHoldingAnAddress) {
  Agent a = MakeAgent(8);
  auto r1 = a.agent->MapAnonymous("one", 100);
  auto r2 = a.agent->MapAnonymous("two", 3 * kPage);
  ASSERT_TRUE(r1.ok() && r2.ok());
  const char* b2 = static_cast<const char*>((*r2)->base);
  EXPECT_EQ(a.agent->Find((*r1)->base), *r1);
  EXPECT_EQ(a.agent->Find(static_cast<const char*>((*r1)->base) + 99), *r1);
  EXPECT_EQ(a.agent->Find(static_cast<const char*>((*r1)->base) + 100), nullptr);
  EXPECT_EQ(a.agent->Find(b2 + 3 * kPage - 1), *r2);
  int local = 0;
  EXPECT_EQ(a.agent->Find(&local), nullptr);
  ASSERT_TRUE(a.agent->Unmap(*r2).ok());
  EXPECT_EQ(a.agent->Find(b2), nullptr);
}

// An 8-byte value straddling pages 0 and 1 is written and read back whole,
// and reaches both far pages.
TEST(HostAgent, AccessStraddlingTwoPages) {
  Agent a = MakeAgent(8);
  auto r = a.agent->MapAnonymous("straddle", 2 * kPage);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  char* p = static_cast<char*>((*r)->base);
  const uint64_t value = 0x1122334455667788ull;
  std::memcpy(p + kPage - 3, &value, 8);
  uint64_t back = 0;
  std::memcpy(&back, p + kPage - 3, 8);
  EXPECT_EQ(back, value);
  ASSERT_TRUE(a.agent->Flush(*r).ok());
  std::vector<char> far = a.backend->contents(a.backend->id_of("straddle"));
  EXPECT_EQ(std::memcmp(far.data() + kPage - 3, &value, 8), 0);
  HostAgentStats s = a.agent->stats();
  EXPECT_EQ(s.faults, 2u);
  EXPECT_EQ(s.pages_written_back, 2u);
}

// Eight threads touch one page while the backend holds its read: one read.
TEST(HostAgent, ConcurrentFaultsOnOnePageMakeOneRequest) {
  Agent a = MakeAgent(8);
  auto r = a.agent->MapAnonymous("hot", 4 * kPage);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  char* p = static_cast<char*>((*r)->base);
  p[2 * kPage + 5] = 42;  // page 2 resident and dirty; page 3 never touched
  const uint64_t id = a.backend->id_of("hot");
  a.backend->CloseGate();
  std::atomic<int> seen_zero{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      if (p[3 * kPage + t] == 0) seen_zero.fetch_add(1);
    });
  }
  ASSERT_TRUE(a.backend->WaitForReads(2, 10s));  // the first fault's read arrived
  // Let the other threads fault too: their faults queue in the kernel while
  // the page is being fetched (wait until the agent has seen them all, or
  // give up after a while: the count asserted below holds either way).
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (a.agent->stats().coalesced_faults < 7 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  a.backend->OpenGate();
  for (auto& t : threads) t.join();
  EXPECT_EQ(seen_zero.load(), 8);
  EXPECT_EQ(a.backend->reads(id, 3), 1u);
  EXPECT_EQ(p[2 * kPage + 5], 42);
  HostAgentStats s = a.agent->stats();
  EXPECT_EQ(s.faults, 2u);  // pages 2 and 3
  EXPECT_EQ(s.coalesced_faults, 7u) << "the kernel reported fewer queued faults";
}

TEST(HostAgent, DirtyEvictionRoundTrip) {
  Agent a = MakeAgent(16);
  auto [region, pattern] = WriteAndReadBackFourBuffers(a.agent.get(), "roundtrip");
  ASSERT_NE(region, nullptr);
  EXPECT_TRUE(a.backend->contents(a.backend->id_of("roundtrip")) == pattern);
  ASSERT_TRUE(a.agent->Unmap(region).ok());
}

TEST(HostAgent, DirtyEvictionRoundTripWithSmallPages) {
  Agent a = MakeAgent(32, 4096);
  auto [region, pattern] = WriteAndReadBackFourBuffers(a.agent.get(), "roundtrip");
  ASSERT_NE(region, nullptr);
  EXPECT_TRUE(a.backend->contents(a.backend->id_of("roundtrip")) == pattern);
}

// Above the high watermark the evictor works in the background, down to
// the low one, while the buffer still has room.
TEST(HostAgent, EvictionStartsBeforeTheBufferIsFull) {
  Agent a = MakeAgent(20, 4096, /*evict_high=*/0.5, /*evict_low=*/0.25);
  auto r = a.agent->MapAnonymous("watermarks", 11 * 4096);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  char* p = static_cast<char*>((*r)->base);
  for (int page = 0; page < 11; ++page) p[page * 4096] = static_cast<char>(page + 1);  // 11 of 20 slots
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (a.agent->stats().resident_pages > 5 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  HostAgentStats s = a.agent->stats();
  EXPECT_EQ(s.resident_pages, 5u);
  EXPECT_EQ(s.evictions, 6u);
  EXPECT_EQ(s.pages_written_back, 6u);  // the oldest six, all dirty
  for (int page = 0; page < 11; ++page) EXPECT_EQ(p[page * 4096], static_cast<char>(page + 1));
}

// Random reads and writes over two regions sharing a small buffer, against
// a plain copy in local memory.
TEST(HostAgent, DifferentialAgainstLocalArrays) {
  Agent a = MakeAgent(6, 8192);
  const uint64_t sizes[2] = {40 * 8192 + 17, 25 * 8192};
  char* far[2];
  std::vector<char> ref[2];
  for (int i = 0; i < 2; ++i) {
    auto r = a.agent->MapAnonymous("diff" + std::to_string(i), sizes[i]);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    far[i] = static_cast<char*>((*r)->base);
    ref[i].assign(sizes[i], 0);
  }
  std::mt19937_64 rng(99);
  for (int op = 0; op < 20000; ++op) {
    const int i = static_cast<int>(rng() % 2);
    const uint64_t len = 1 + rng() % 300;
    const uint64_t off = rng() % (sizes[i] - len);
    if (rng() % 3 == 0) {
      std::vector<char> data = RandomBytes(len, static_cast<uint32_t>(op));
      std::memcpy(far[i] + off, data.data(), len);
      std::memcpy(ref[i].data() + off, data.data(), len);
    } else {
      ASSERT_EQ(std::memcmp(far[i] + off, ref[i].data() + off, len), 0) << "op " << op;
    }
  }
  for (int i = 0; i < 2; ++i) EXPECT_EQ(std::memcmp(far[i], ref[i].data(), sizes[i]), 0);
  EXPECT_LE(a.agent->stats().peak_resident_pages, 6u);
  EXPECT_GT(a.agent->stats().evictions, 0u);
}

// Four threads share every page (thread t owns the 64-byte lines i with
// i % 4 == t) and read and write their lines at random against their own
// plain copies, through a buffer of 8 small pages: faults, write-protect
// faults, write-backs and evictions of one page race each other.  No write
// may be lost.
TEST(HostAgent, ConcurrentDifferentialOnSharedPages) {
  Agent a = MakeAgent(8, 4096);
  constexpr uint64_t kBytes = 48 * 4096, kLine = 64, kThreads = 4;
  auto r = a.agent->MapAnonymous("shared-pages", kBytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  char* far = static_cast<char*>((*r)->base);
  std::vector<std::vector<char>> ref(kThreads, std::vector<char>(kBytes, 0));
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      for (int op = 0; op < 5000; ++op) {
        const uint64_t line = (rng() % (kBytes / kLine / kThreads)) * kThreads + t;
        const uint64_t off = line * kLine + rng() % 32, len = 1 + rng() % 32;
        if (rng() % 2 == 0) {
          const char v = static_cast<char>(rng());
          std::memset(far + off, v, len);
          std::memset(ref[t].data() + off, v, len);
        } else if (std::memcmp(far + off, ref[t].data() + off, len) != 0) {
          mismatches.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  for (uint64_t line = 0; line < kBytes / kLine; ++line) {
    ASSERT_EQ(std::memcmp(far + line * kLine, ref[line % kThreads].data() + line * kLine, kLine), 0) << line;
  }
  EXPECT_GT(a.agent->stats().evictions, 0u);
  EXPECT_LE(a.agent->stats().peak_resident_pages, 8u);
}

TEST(HostAgent, FileBackedRegionHoldsTheFile) {
  const std::string path = std::filesystem::temp_directory_path() / ("farmem_file_" + std::to_string(getpid()));
  const std::vector<char> content = RandomBytes(5 * kPage + 321, 3);
  std::ofstream(path, std::ios::binary).write(content.data(), static_cast<std::streamsize>(content.size()));
  Agent a = MakeAgent(4);
  // The fake backend does not read files: the host agent hands it the path
  // and the file's size, which is what is checked here.
  auto r = a.agent->MapFile("file", path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->bytes, content.size());
  EXPECT_EQ(a.agent->MapFile("missing", path + ".none").status().code(), Status::Code::kInvalidArgument);
  std::filesystem::remove(path);
}

TEST(HostAgent, MarkReadOnlyWritesBackAndProtects) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child runs the test again, its own agent included
  Agent a = MakeAgent(8);
  auto r = a.agent->MapAnonymous("ro", 2 * kPage);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  char* p = static_cast<char*>((*r)->base);
  std::memset(p, 7, 2 * kPage);
  ASSERT_TRUE(a.agent->MarkReadOnly(*r).ok());
  EXPECT_TRUE((*r)->read_only);
  std::vector<char> far = a.backend->contents(a.backend->id_of("ro"));
  EXPECT_EQ(far, std::vector<char>(2 * kPage, 7));
  EXPECT_EQ(p[kPage + 1], 7);
  EXPECT_DEATH(p[0] = 1, "");  // a write is a SIGSEGV
}

// A fault the backend cannot serve ends the process with a message naming
// the region and the node (exit code 70), never a hang.
TEST(HostAgentDeathTest, UnservableFaultEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Agent a = MakeAgent(8);
        auto r = a.agent->MapAnonymous("doomed", 4 * kPage);
        if (!r.ok()) std::_Exit(1);
        a.backend->Kill(3);
        volatile char c = static_cast<char*>((*r)->base)[kPage];
        (void)c;
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(70), "region 'doomed'.*memory node 3 is dead");
}

}  // namespace
}  // namespace pulse::farmem
