// Several pipelines on several threads over one shared RangeTable and one
// shared program, as `pulse bench engine --pipelines P` runs them: the table
// and VerifiedProgram are documented as safe to read concurrently.  Each
// thread's results must equal the reference interpreter's, and the STOREs
// each thread makes into its own range must be exactly its own.  Runs under
// ThreadSanitizer in scripts/sanitize.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

#include "engine/run_both.h"
#include "engine/sum_list_program.h"

namespace pulse {
namespace {

using testing::FarHeap;
using testing::MustBuild;
using testing::StateAt;

constexpr int kThreads = 4;
constexpr int kNodes = 2048;
constexpr int kTraversalsPerThread = 300;

// Sums the list like kSumListProgram and also STOREs each node's value into
// its shadow slot in the thread's own range (sp[8] holds the range's base):
// the same bytes whatever order the traversals interleave in.
constexpr const char* kSumAndRecord = R"(
    LOAD data, 24
    ADD sp[0], data[8]
    MOVE r1, data[16]
    ADD r1, sp[8]
    STORE [r1], data[8]
    COMPARE data[0], 0
    JUMP_EQ end
    MOVE cur_ptr, data[0]
    NEXT_ITER
  end:
    RETURN)";

TEST(ConcurrentPipelines, ThreadsSharingATableAndProgramsMatchTheInterpreter) {
  // Shared, read-only: a random list forest of {next, value, shadow offset}.
  FarHeap shared(0x100000, kNodes * 24, /*owner=*/1, kPermRead);
  std::mt19937_64 rng(7);
  std::vector<uint64_t> nodes;
  for (int i = 0; i < kNodes; ++i) nodes.push_back(shared.Alloc(24));
  for (int i = 0; i < kNodes; ++i) {
    // Mostly a pointer to a later node (lists end), sometimes the end.
    const uint64_t next = (i + 1 < kNodes && rng() % 16 != 0) ? nodes[i + 1 + rng() % std::min(8, kNodes - i - 1)] : 0;
    shared.Put<uint64_t>(nodes[i], next);
    shared.Put<uint64_t>(nodes[i] + 8, rng() % 1000);
    shared.Put<uint64_t>(nodes[i] + 16, static_cast<uint64_t>(i) * 8);
  }
  // One private range per thread for the STOREs.
  std::vector<FarHeap> own;
  own.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) own.emplace_back(0x10000000 + t * 0x100000, kNodes * 8);
  std::vector<FarHeap> expected_own = own;

  RangeTable table;
  ASSERT_TRUE(table.Add(shared.range()).ok());
  for (auto& h : own) ASSERT_TRUE(table.Add(h.range()).ok());
  const ProgramRef sum = MustBuild(testing::kSumListProgram);
  const ProgramRef record = MustBuild(kSumAndRecord);
  ASSERT_TRUE(sum && record);

  // Each thread's requests, and what the interpreter says about them.
  struct Job {
    ProgramRef program;
    TraversalState start;
    TraversalState want;
    TraversalOutcome want_out;
    TraversalState got;
    TraversalOutcome got_out;
  };
  std::vector<std::vector<Job>> jobs(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    RangeTable ref_table;
    ASSERT_TRUE(ref_table.Add(shared.range()).ok());
    ASSERT_TRUE(ref_table.Add(expected_own[t].range()).ok());
    for (int k = 0; k < kTraversalsPerThread; ++k) {
      Job j;
      j.program = k % 2 == 0 ? sum : record;
      j.start = StateAt(nodes[rng() % kNodes], 16);
      const uint64_t base = own[t].base();
      std::memcpy(j.start.scratch.data() + 8, &base, 8);
      j.want = j.start;
      j.want_out = InterpretTraversal(*j.program, ref_table, 1, 64, &j.want);
      jobs[t].push_back(std::move(j));
    }
  }

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&table, &jobs, t] {
      EngineOptions options;
      options.workspaces = 8;
      options.max_iterations = 64;
      Pipeline pipeline(&table, options);
      size_t next = 0;
      std::vector<Job>& mine = jobs[t];
      auto admit = [&] {
        while (next < mine.size() && pipeline.HasFreeWorkspace()) {
          TraversalRequest req;
          req.id = next;
          req.program = mine[next].program;  // shared_ptr copies race-free across threads
          req.tenant = 1;
          req.state = mine[next].start;
          pipeline.Admit(std::move(req));
          ++next;
        }
      };
      admit();
      pipeline.Run([&](TraversalRequest&& done, const TraversalOutcome& out) {
        mine[done.id].got = std::move(done.state);
        mine[done.id].got_out = out;
        admit();
      });
    });
  }
  for (auto& th : threads) th.join();

  for (int t = 0; t < kThreads; ++t) {
    for (const Job& j : jobs[t]) {
      EXPECT_EQ(static_cast<int>(j.got_out.status), static_cast<int>(j.want_out.status));
      EXPECT_EQ(j.got_out.iterations, j.want_out.iterations);
      EXPECT_EQ(j.got.cur_ptr, j.want.cur_ptr);
      EXPECT_EQ(j.got.scratch, j.want.scratch);
    }
    // Each thread's STOREs landed in its own range only, as the interpreter's did.
    EXPECT_TRUE(own[t].bytes() == expected_own[t].bytes()) << "thread " << t;
    EXPECT_GT(std::count_if(own[t].bytes().begin(), own[t].bytes().end(), [](uint8_t b) { return b != 0; }), 100)
        << "thread " << t << " stored almost nothing: the test would prove little";
  }
}

}  // namespace
}  // namespace pulse
