// A memory node's service on several pipeline threads (--pipelines N):
// many concurrent STORE-bearing traversals leave the far memory a serial run
// of the reference interpreter leaves, they all run on the writer lane
// (pipeline 0) so read-modify-writes of one word lose nothing while readers
// run on the other pipelines, retransmissions still run once, the
// range table can change while the pipelines are busy, and the per-pipeline
// counts add up.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "engine/far_heap.h"
#include "engine/sum_list_program.h"
#include "memnode/pipeline_threads.h"
#include "memnode/service.h"
#include "memnode/service_requests.h"
#include "pulse/cluster.h"

namespace pulse {
namespace {

using testing::FarHeap;

using testing::Build;

// The sum-list walk that also, at each node, STOREs value * 3 + (the sum
// so far) into the node's value before adding the old value to sp[0]:
// every node's new value depends on the order of the walk.
std::string ScrambleListProgram() {
  std::string text = testing::kSumListProgram;
  text.insert(text.find("ADD sp[0]"),
              "MOVE r1, cur_ptr\n    MOVE r2, data[8]\n    MUL r2, 3\n    ADD r2, sp[0]\n    STORE [r1+8], r2\n    ");
  return text;
}

constexpr uint64_t kHeapBytes = 1 << 20;

// `lists` lists of `length` nodes, their nodes interleaved in the heap.
// Returns the heads.
std::vector<uint64_t> BuildLists(FarHeap* heap, int lists, int length) {
  std::vector<std::vector<uint64_t>> nodes(lists);
  for (int i = 0; i < length; ++i)
    for (int l = 0; l < lists; ++l) nodes[l].push_back(heap->Alloc(16));
  std::vector<uint64_t> heads;
  for (int l = 0; l < lists; ++l) {
    for (int i = 0; i < length; ++i) {
      heap->Put<uint64_t>(nodes[l][i], i + 1 < length ? nodes[l][i + 1] : 0);
      heap->Put<uint64_t>(nodes[l][i] + 8, 1000 * l + i);
    }
    heads.push_back(nodes[l][0]);
  }
  return heads;
}

TraversalMessage Request(const ProgramRef& p, uint64_t id, uint64_t cur_ptr, uint32_t max_iterations) {
  TraversalMessage m = testing::Request(p, cur_ptr);
  m.request_id = id;
  m.max_iterations = max_iterations;
  return m;
}

// Handles every message, polls until every admitted request is answered;
// returns the answers by request id.
std::map<uint64_t, TraversalMessage> RunAll(MemNodeService* service, std::vector<TraversalMessage> messages) {
  std::map<uint64_t, TraversalMessage> answers;
  const MemNodeService::SendFn send = [&](TraversalMessage&& m) {
    EXPECT_TRUE(answers.emplace(m.request_id, std::move(m)).second) << "answered twice";
  };
  for (TraversalMessage& m : messages) service->Handle(std::move(m), send);
  for (int guard = 0; guard < 100000 && !service->Idle(); ++guard) {
    service->Poll(send);
    service->WaitForWork(std::chrono::seconds(10));
  }
  EXPECT_TRUE(service->Idle());
  return answers;
}

TEST(Pipelines, ConcurrentStoresLeaveTheFarMemoryOfASerialRun) {
  constexpr int kLists = 96, kLength = 40;
  const uint64_t base = FarBase(0);
  FarHeap heap(base, kHeapBytes);
  const std::vector<uint64_t> heads = BuildLists(&heap, kLists, kLength);
  FarHeap reference_heap = heap;  // the same lists, for the serial run
  const FarHeap initial = heap;
  RangeTable table, reference_table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  ASSERT_TRUE(reference_table.Add(reference_heap.range()).ok());

  MemNodeServiceOptions options;
  options.pipelines = 2;
  options.engine.workspaces = 4;  // 8 in flight, the rest queued
  options.slice_iterations = 16;  // many slices: admissions and completions interleave
  MemNodeService service(&table, options);
  ASSERT_EQ(service.capacity(), 8u);

  const ProgramRef program = Build(ScrambleListProgram());
  std::vector<TraversalMessage> messages;
  for (int l = 0; l < kLists; ++l) {
    // Some stop at the iteration limit (kContinue), most run to the end.
    const uint32_t limit = l % 3 == 0 ? 1 + l % 17 : 1000;
    messages.push_back(Request(program, 100 + l, heads[l], limit));
    // A retransmission while the original is queued or running: dropped.
    if (l % 5 == 0) messages.push_back(Request(program, 100 + l, heads[l], limit));
  }
  std::map<uint64_t, TraversalMessage> answers = RunAll(&service, messages);
  ASSERT_EQ(answers.size(), static_cast<size_t>(kLists));
  EXPECT_EQ(service.counters().duplicates, static_cast<uint64_t>((kLists + 4) / 5));

  for (int l = 0; l < kLists; ++l) {
    const uint32_t limit = l % 3 == 0 ? 1 + l % 17 : 1000;
    TraversalState state;
    state.cur_ptr = heads[l];
    state.scratch.assign(8, 0);
    const TraversalOutcome want = InterpretTraversal(*program, reference_table, 1, limit, &state);
    const TraversalMessage& got = answers.at(100 + l);
    SCOPED_TRACE(l);
    EXPECT_EQ(got.status, want.status);
    EXPECT_EQ(got.cur_ptr, state.cur_ptr);
    EXPECT_EQ(got.iterations, state.iterations);
    EXPECT_EQ(got.scratch, state.scratch);
    EXPECT_EQ(got.fault_pc, want.fault_pc);
    EXPECT_EQ(got.fault_addr, want.fault_addr);
  }
  EXPECT_TRUE(heap.bytes() == reference_heap.bytes()) << "far memory differs from the serial run";
  EXPECT_FALSE(heap.bytes() == initial.bytes()) << "the traversals stored nothing";

  // Every STORE-bearing traversal ran on the writer lane.
  const std::vector<memnode::PipelineLoad> loads = service.pipeline_loads();
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[0].served, static_cast<uint64_t>(kLists));
  EXPECT_EQ(loads[1].served, 0u);
  for (const memnode::PipelineLoad& l : loads) EXPECT_EQ(l.active, 0u);
  EXPECT_EQ(service.active(), 0u);
}

// Adds 1 to the word at cur_ptr + 8 at every iteration, staying on the same
// node until the iteration limit: a read-modify-write that loses updates if
// two threads run such iterations at once.
constexpr const char* kIncrementProgram = R"(
    LOAD data
    MOVE r1, cur_ptr
    MOVE r2, data[8]
    ADD r2, 1
    STORE [r1+8], r2
    NEXT_ITER)";

TEST(Pipelines, WritersShareOneLaneAndReadersUseTheOthers) {
  constexpr int kWriters = 48, kIterations = 100, kReaders = 48, kLength = 200;
  FarHeap heap(FarBase(0), kHeapBytes);
  const uint64_t counter = heap.Alloc(16);
  heap.Put<uint64_t>(counter, 0);
  heap.Put<uint64_t>(counter + 8, 0);
  const std::vector<uint64_t> heads = BuildLists(&heap, kReaders, kLength);
  RangeTable table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  MemNodeServiceOptions options;
  options.pipelines = 2;
  options.engine.workspaces = 8;
  options.slice_iterations = 8;  // short slices: the two threads' iterations interleave finely
  MemNodeService service(&table, options);

  const ProgramRef increment = Build(kIncrementProgram);
  const ProgramRef sum = Build(testing::kSumListProgram);
  std::vector<TraversalMessage> messages;
  for (int i = 0; i < kWriters; ++i) {
    messages.push_back(Request(increment, 1 + i, counter, kIterations));
    messages.push_back(Request(sum, 1000 + i, heads[i], 1000));
  }
  std::map<uint64_t, TraversalMessage> answers = RunAll(&service, messages);
  ASSERT_EQ(answers.size(), static_cast<size_t>(kWriters + kReaders));
  for (int i = 0; i < kWriters; ++i) EXPECT_EQ(answers.at(1 + i).iterations, static_cast<uint32_t>(kIterations)) << i;
  for (int i = 0; i < kReaders; ++i) {
    uint64_t want = 0, got = 0;
    for (int k = 0; k < kLength; ++k) want += 1000 * i + k;
    std::memcpy(&got, answers.at(1000 + i).scratch.data(), 8);
    EXPECT_EQ(answers.at(1000 + i).status, TraversalStatus::kDone) << i;
    EXPECT_EQ(got, want) << i;
  }
  EXPECT_EQ(heap.Get<uint64_t>(counter + 8), static_cast<uint64_t>(kWriters * kIterations))
      << "increments were lost: STORE-bearing iterations ran on two threads at once";
  const std::vector<memnode::PipelineLoad> loads = service.pipeline_loads();
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_GE(loads[0].served, static_cast<uint64_t>(kWriters));
  EXPECT_GT(loads[1].served, 0u) << "no reader ran beside the writers";
  EXPECT_EQ(loads[0].served + loads[1].served, static_cast<uint64_t>(kWriters + kReaders));
}

TEST(Pipelines, RangeTableChangesWhilePipelinesRun) {
  const uint64_t base = FarBase(0);
  FarHeap heap(base, kHeapBytes);
  const std::vector<uint64_t> heads = BuildLists(&heap, 64, 200);
  RangeTable table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  MemNodeServiceOptions options;
  options.pipelines = 2;
  options.engine.workspaces = 8;
  options.slice_iterations = 64;
  MemNodeService service(&table, options);
  const ProgramRef sum = Build(testing::kSumListProgram);

  std::map<uint64_t, TraversalMessage> answers;
  const MemNodeService::SendFn send = [&](TraversalMessage&& m) { answers.emplace(m.request_id, std::move(m)); };
  for (int l = 0; l < 64; ++l) service.Handle(Request(sum, 1 + l, heads[l], 1000), send);
  // Ranges come and go while the traversals run; theirs stays.
  FarHeap other(base + kHeapBytes, 4096);
  for (int round = 0; round < 200 && !service.Idle(); ++round) {
    ASSERT_TRUE(service.AddRange(other.range()).ok());
    service.Poll(send);
    ASSERT_TRUE(service.RemoveRange(other.base()).ok());
    EXPECT_EQ(service.RemoveRange(other.base()).code(), Status::Code::kNotFound);
  }
  for (int guard = 0; guard < 100000 && !service.Idle(); ++guard) {
    service.Poll(send);
    service.WaitForWork(std::chrono::seconds(10));
  }
  ASSERT_EQ(answers.size(), 64u);
  for (int l = 0; l < 64; ++l) {
    uint64_t want = 0;
    for (int i = 0; i < 200; ++i) want += 1000 * l + i;
    uint64_t got = 0;
    std::memcpy(&got, answers.at(1 + l).scratch.data(), 8);
    EXPECT_EQ(answers.at(1 + l).status, TraversalStatus::kDone);
    EXPECT_EQ(got, want) << l;
  }
}

TEST(Pipelines, DestroyedWhileTraversalsRunIsClean) {
  FarHeap heap(FarBase(0), kHeapBytes);
  const std::vector<uint64_t> heads = BuildLists(&heap, 16, 1000);
  RangeTable table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  MemNodeServiceOptions options;
  options.pipelines = 3;
  auto service = std::make_unique<MemNodeService>(&table, options);
  const ProgramRef program = Build(ScrambleListProgram());
  for (int l = 0; l < 16; ++l) service->Handle(Request(program, 1 + l, heads[l], 100000), [](TraversalMessage&&) {});
  service->Poll([](TraversalMessage&&) {});
  service.reset();  // joins its threads; must not hang or crash
}

// The list sum hinting the next node (PREFETCH [data[0]]) on every
// iteration: a null address (ignored: no range holds it) on the last.
std::string PrefetchingSumListProgram() {
  std::string text = testing::kSumListProgram;
  text.insert(text.find("COMPARE"), "MOVE r1, data[0]\n    PREFETCH [r1]\n    ");
  return text;
}

// Each lane's PREFETCH counts reach stats (pipeline_loads), and they add up
// to what the traversals hinted: one hint per node, the last one ignored.
TEST(Pipelines, PrefetchCountsReachTheLoads) {
  constexpr int kLists = 24, kLength = 30;
  FarHeap heap(FarBase(0), kHeapBytes);
  const std::vector<uint64_t> heads = BuildLists(&heap, kLists, kLength);
  RangeTable table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  for (uint32_t pipelines : {1u, 2u}) {
    SCOPED_TRACE(pipelines);
    MemNodeServiceOptions options;
    options.pipelines = pipelines;
    options.engine.workspaces = 4;
    options.slice_iterations = 16;
    MemNodeService service(&table, options);
    const ProgramRef program = Build(PrefetchingSumListProgram());
    std::vector<TraversalMessage> messages;
    for (int l = 0; l < kLists; ++l) messages.push_back(Request(program, 1 + l, heads[l], 1000));
    std::map<uint64_t, TraversalMessage> answers = RunAll(&service, messages);
    ASSERT_EQ(answers.size(), static_cast<size_t>(kLists));
    for (const auto& [id, m] : answers) EXPECT_EQ(m.status, TraversalStatus::kDone) << id;
    uint64_t issued = 0, ignored = 0;
    for (const memnode::PipelineLoad& l : service.pipeline_loads()) {
      issued += l.prefetches_issued;
      ignored += l.prefetches_ignored;
    }
    EXPECT_EQ(issued, static_cast<uint64_t>(kLists * (kLength - 1)));
    EXPECT_EQ(ignored, static_cast<uint64_t>(kLists));
  }
}

TEST(Pipelines, CountIsAWholeNumberInRange) {
  EXPECT_EQ(*memnode::ParsePipelineCount("1"), 1u);
  EXPECT_EQ(*memnode::ParsePipelineCount("2"), 2u);
  EXPECT_EQ(*memnode::ParsePipelineCount("64"), 64u);
  for (const char* bad : {"0", "65", "abc", "", "-1", "2.5", " 2", "1e1", "99999999999999999999"}) {
    Result<uint32_t> n = memnode::ParsePipelineCount(bad);
    ASSERT_FALSE(n.ok()) << bad;
    EXPECT_EQ(n.status().code(), Status::Code::kInvalidArgument);
  }
}

}  // namespace
}  // namespace pulse
