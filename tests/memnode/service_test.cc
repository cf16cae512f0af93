// Memory-node services and the switch's router wired together in one
// process (no network): distributed traversals, pulse-acc, program caching,
// duplicate suppression and protection across nodes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>

#include "engine/sum_list_program.h"
#include "engine/far_heap.h"
#include "engine/increment_pair_program.h"
#include "memnode/service.h"
#include "memnode/service_requests.h"
#include "memnode/store_record.h"
#include "pulse/assembler.h"
#include "pulse/cluster.h"
#include "switch/router.h"

namespace pulse {
namespace {

using testing::FarHeap;

using testing::Build;
using testing::Request;

// PULSE_PIPELINES=N runs every service of these tests on N pipeline threads
// (ctest runs this binary once more so: memnode_service_test_two_pipelines).
MemNodeServiceOptions WithTestPipelines(MemNodeServiceOptions o) {
  if (const char* env = std::getenv("PULSE_PIPELINES")) {
    Result<uint32_t> n = memnode::ParsePipelineCount(env);
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    if (n.ok()) o.pipelines = *n;
  }
  return o;
}

// Two memory nodes, each with one range, behind a router.  Messages travel
// through encode/decode like on the wire.
class MiniRack {
 public:
  explicit MiniRack(const MemNodeServiceOptions& node1_options = {}) {
    for (int n = 0; n < 2; ++n) {
      heaps_.push_back(std::make_unique<FarHeap>(Base(n), 1 << 20, /*owner=*/1));
      tables_.push_back(std::make_unique<RangeTable>());
      EXPECT_TRUE(tables_[n]->Add(heaps_[n]->range()).ok());
      EXPECT_TRUE(router_.AddRange(Base(n), 1 << 20, n).ok());
      services_.push_back(std::make_unique<MemNodeService>(
          tables_[n].get(), WithTestPipelines(n == 1 ? node1_options : MemNodeServiceOptions{})));
    }
  }
  // The real layout, so memory nodes can tell a continuation's destination.
  static uint64_t Base(int n) { return FarBase(static_cast<uint32_t>(n)); }
  FarHeap& heap(int n) { return *heaps_[n]; }
  MemNodeService& service(int n) { return *services_[n]; }
  const Router& router() const { return router_; }
  // Node n's process died and started again: a new service (nothing in
  // memory) over the same memory, recording into `record` (nullptr: none).
  void RestartService(int n, memnode::StoreRecord* record) {
    services_[n] = std::make_unique<MemNodeService>(tables_[n].get(), WithTestPipelines(MemNodeServiceOptions{}));
    services_[n]->set_store_record(record);
  }
  void AddForeignRange(int node, FarHeap* heap) {
    EXPECT_TRUE(services_[node]->AddRange(heap->range()).ok());
    EXPECT_TRUE(router_.AddRange(heap->base(), heap->bytes().size(), node).ok());
  }

  // Sends a request from the CPU node and runs the rack until answers stop
  // arriving; returns every response the CPU node received.
  std::vector<TraversalMessage> Send(const TraversalMessage& request) {
    in_flight_.push_back(Wire(request));
    std::vector<TraversalMessage> to_cpu;
    for (int guard = 0; guard < 10000 && !Quiet(); ++guard) {
      while (!in_flight_.empty()) {
        auto m = DecodeMessage(in_flight_.front(), 4096);
        in_flight_.pop_front();
        EXPECT_TRUE(m.ok()) << m.status().ToString();
        const bool continuation = m->kind == MessageKind::kResponse && m->status == TraversalStatus::kNotLocal &&
                                  !(m->flags & kFlagPulseAcc);
        RouteDecision d = router_.Route(&*m);
        if (continuation && d.to == RouteDecision::To::kMemoryNode) continuation_code_bytes.push_back(m->program.size());
        if (d.to == RouteDecision::To::kCpuNode) {
          to_cpu.push_back(std::move(*m));
        } else {
          services_[d.node]->Handle(std::move(*m), [&](TraversalMessage&& out) { in_flight_.push_back(Wire(out)); });
        }
      }
      for (auto& s : services_) s->Poll([&](TraversalMessage&& out) { in_flight_.push_back(Wire(out)); });
      // Pipeline threads still running: wait for one to finish something.
      if (in_flight_.empty())
        for (auto& s : services_)
          if (!s->Idle()) s->WaitForWork(std::chrono::seconds(10));
    }
    return to_cpu;
  }

  // Size of the code each forwarded continuation carried, in order.
  std::vector<size_t> continuation_code_bytes;

 private:
  static std::vector<uint8_t> Wire(const TraversalMessage& m) { return EncodeMessage(m); }
  bool Quiet() const {
    if (!in_flight_.empty()) return false;
    for (auto& s : services_)
      if (!s->Idle()) return false;
    return true;
  }
  std::vector<std::unique_ptr<FarHeap>> heaps_;
  std::vector<std::unique_ptr<RangeTable>> tables_;
  std::vector<std::unique_ptr<MemNodeService>> services_;
  Router router_;
  std::deque<std::vector<uint8_t>> in_flight_;
};

// A list whose nodes alternate between the two memory nodes every 8 hops.
// Node {next @0, value @8}.  Returns the head.
uint64_t BuildAlternatingList(MiniRack* rack, int hops, std::vector<uint64_t>* values) {
  std::vector<uint64_t> nodes;
  for (int i = 0; i < hops; ++i) nodes.push_back(rack->heap((i / 8) % 2).Alloc(16));
  for (int i = 0; i < hops; ++i) {
    const int n = (i / 8) % 2;
    rack->heap(n).Put<uint64_t>(nodes[i], i + 1 < hops ? nodes[i + 1] : 0);
    rack->heap(n).Put<uint64_t>(nodes[i] + 8, 1000 + i);
    values->push_back(1000 + i);
  }
  return nodes[0];
}

constexpr const char* kSum = testing::kSumListProgram;

uint64_t Sp0(const TraversalMessage& m) {
  uint64_t v;
  std::memcpy(&v, m.scratch.data(), 8);
  return v;
}

TEST(Rack, PulseContinuesAcrossNodesThroughTheSwitch) {
  MiniRack rack;
  std::vector<uint64_t> values;
  const uint64_t head = BuildAlternatingList(&rack, 64, &values);
  auto program = Build(kSum);
  auto answers = rack.Send(Request(program, head));
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].status, TraversalStatus::kDone);
  uint64_t sum = 0;
  for (auto v : values) sum += v;
  EXPECT_EQ(Sp0(answers[0]), sum);
  EXPECT_EQ(answers[0].iterations, 64u);
  EXPECT_EQ(rack.router().counters().forwards, 7u);  // 8 runs of 8 hops
}

TEST(Rack, PulseAccReturnsToTheCpuNodeAtEveryBoundary) {
  MiniRack rack;
  std::vector<uint64_t> values;
  const uint64_t head = BuildAlternatingList(&rack, 64, &values);
  auto program = Build(kSum);
  TraversalMessage m = Request(program, head, kFlagPulseAcc);
  int round_trips = 0;
  for (;;) {
    auto answers = rack.Send(m);
    ASSERT_EQ(answers.size(), 1u);
    ++round_trips;
    if (answers[0].status != TraversalStatus::kNotLocal) {
      EXPECT_EQ(answers[0].status, TraversalStatus::kDone);
      uint64_t sum = 0;
      for (auto v : values) sum += v;
      EXPECT_EQ(Sp0(answers[0]), sum);
      break;
    }
    // The CPU node re-issues from the returned state.
    m.cur_ptr = answers[0].cur_ptr;
    m.scratch = answers[0].scratch;
    m.iterations = answers[0].iterations;
    ASSERT_LT(round_trips, 100);
  }
  EXPECT_EQ(round_trips, 8);
  EXPECT_EQ(rack.router().counters().forwards, 0u);
}

TEST(Rack, ProgramIsCachedByHash) {
  MiniRack rack;
  std::vector<uint64_t> values;
  const uint64_t head = BuildAlternatingList(&rack, 4, &values);
  auto program = Build(kSum);
  auto unknown = rack.Send(Request(program, head, 0, /*with_program=*/false));
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].status, TraversalStatus::kUnknownProgram);
  EXPECT_EQ(rack.Send(Request(program, head))[0].status, TraversalStatus::kDone);
  auto cached = rack.Send(Request(program, head, 0, /*with_program=*/false));
  EXPECT_EQ(cached[0].status, TraversalStatus::kDone);
  EXPECT_EQ(Sp0(cached[0]), 1000u + 1001 + 1002 + 1003);
  EXPECT_EQ(rack.service(0).counters().programs_cached, 1u);
}

// A standing backlog far beyond the workspaces (the request FIFO keeps its
// storage and drops its consumed front now and then; admitted traversals
// reuse their slots): every request is answered once, with its own result,
// and programs sent by hash keep resolving while the backlog turns over.
TEST(Service, LongBacklogIsAnsweredOnceEachWithItsOwnResult) {
  FarHeap heap(FarBase(0), 1 << 16, /*owner=*/1);
  RangeTable table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  MemNodeServiceOptions options;
  options.engine.workspaces = 2;
  MemNodeService service(&table, WithTestPipelines(options));
  // A list of 4 nodes {next @0, value @8}; request i starts at node i % 4.
  std::vector<uint64_t> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(heap.Alloc(16));
  for (int i = 0; i < 4; ++i) {
    heap.Put<uint64_t>(nodes[i], i + 1 < 4 ? nodes[i + 1] : 0);
    heap.Put<uint64_t>(nodes[i] + 8, 1000 + i);
  }
  auto suffix_sum = [](int from) {
    uint64_t sum = 0;
    for (int i = from; i < 4; ++i) sum += 1000 + i;
    return sum;
  };
  auto program = Build(kSum);
  std::map<uint64_t, uint64_t> answered;  // request id -> sum
  uint64_t wrong = 0;
  const MemNodeService::SendFn send = [&](TraversalMessage&& out) {
    if (out.status != TraversalStatus::kDone || answered.count(out.request_id) != 0) ++wrong;
    answered[out.request_id] = Sp0(out);
  };
  constexpr uint64_t kRequests = 3000;
  uint64_t next = 0;
  auto handle = [&](uint64_t count) {
    for (uint64_t i = 0; i < count && next < kRequests; ++i, ++next) {
      TraversalMessage m = Request(program, nodes[next % 4], 0, /*with_program=*/next == 0);
      m.request_id = next + 1;
      service.Handle(std::move(m), send);
    }
  };
  // 2500 queued at once, then 50 more per poll: the queue's front moves
  // past 1024 while requests stand behind it.
  handle(2500);
  for (int guard = 0; guard < 100000 && answered.size() < kRequests; ++guard) {
    service.Poll(send);
    handle(50);
    if (!service.NeedsPoll() && !service.Idle()) service.WaitForWork(std::chrono::seconds(10));
  }
  EXPECT_EQ(wrong, 0u);
  ASSERT_EQ(answered.size(), kRequests);
  for (uint64_t id = 1; id <= kRequests; ++id) EXPECT_EQ(answered[id], suffix_sum(static_cast<int>((id - 1) % 4))) << id;
  EXPECT_TRUE(service.Idle());
  EXPECT_EQ(service.counters().unknown_programs, 0u);
  EXPECT_EQ(service.counters().programs_cached, 1u);
}

TEST(Rack, MalformedProgramOrWrongHashIsABadRequest) {
  MiniRack rack;
  auto program = Build(kSum);
  TraversalMessage m = Request(program, MiniRack::Base(0));
  m.program[20] = 0xee;  // an opcode byte
  EXPECT_EQ(rack.Send(m)[0].status, TraversalStatus::kFaultBadRequest);
  m = Request(program, MiniRack::Base(0));
  m.program_hash ^= 1;
  EXPECT_EQ(rack.Send(m)[0].status, TraversalStatus::kFaultBadRequest);
  EXPECT_EQ(rack.service(0).counters().bad_requests, 2u);
}

// A pad larger than the engine accepts is refused on arrival: answered at
// once, before any workspace is taken, and the answer names no fault
// location even when the request carried one in those fields.
TEST(Service, AnOversizedPadIsRefusedOnArrivalAndTheAnswerNamesNoFault) {
  FarHeap heap(FarBase(0), 1 << 16, /*owner=*/1);
  RangeTable table;
  ASSERT_TRUE(table.Add(heap.range()).ok());
  MemNodeServiceOptions options;
  MemNodeService service(&table, WithTestPipelines(options));
  auto program = Build(kSum);
  TraversalMessage m = Request(program, heap.Alloc(16));
  m.program_hash = 0;  // the code travels; the answer names its hash
  m.scratch.assign(options.engine.scratch_pad_bytes + 8, 0);
  m.fault_pc = 7;
  m.fault_addr = 0x80;
  std::vector<TraversalMessage> answers;
  service.Handle(std::move(m), [&](TraversalMessage&& r) { answers.push_back(std::move(r)); });
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].status, TraversalStatus::kFaultBadRequest);
  EXPECT_EQ(answers[0].kind, MessageKind::kResponse);
  EXPECT_EQ(answers[0].fault_pc, 0u);
  EXPECT_EQ(answers[0].fault_addr, 0u);
  EXPECT_EQ(answers[0].program_hash, program->hash());
  EXPECT_TRUE(answers[0].program.empty());
  EXPECT_TRUE(service.Idle());
  EXPECT_EQ(service.counters().bad_requests, 1u);
  EXPECT_EQ(service.counters().iterations, 0u);
}

TEST(Rack, RetransmittedStoreRunsOnce) {
  MiniRack rack;
  const uint64_t cell = rack.heap(1).Alloc(16);
  auto program = Build("LOAD data\nMOVE r1, cur_ptr\nADD sp[0], data[0]\nADD sp[0], 1\nSTORE [r1], sp[0]\nRETURN");
  TraversalMessage m = Request(program, cell);
  m.request_id = 42;
  auto first = rack.Send(m);
  auto again = rack.Send(m);  // a retransmission after the answer was lost
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(rack.heap(1).Get<uint64_t>(cell), 1u);  // incremented once
  EXPECT_EQ(Sp0(again[0]), Sp0(first[0]));
  EXPECT_EQ(rack.service(1).counters().duplicates, 1u);
  m.request_id = 43;  // a new request does run
  rack.Send(m);
  EXPECT_EQ(rack.heap(1).Get<uint64_t>(cell), 2u);
}

// The duplicate filter across a crash (StoreRecord in the pool's metadata):
// node 1 of a MiniRack records STORE-bearing visits in `area`, and
// `request` increments one of its cells.
struct RecordingRack {
  explicit RecordingRack(uint64_t request_id) {
    before.Format();
    rack.service(1).set_store_record(&before);
    cell = rack.heap(1).Alloc(16);
    request = Request(Build("LOAD data\nMOVE r1, cur_ptr\nADD sp[0], data[0]\nADD sp[0], 1\nSTORE [r1], sp[0]\nRETURN"),
                      cell);
    request.request_id = request_id;
  }
  // Node 1's process died and started again over the same pool.
  void Restart() {
    after = std::make_unique<memnode::StoreRecord>(area.data(), area.size(), 64, 1);
    ASSERT_TRUE(after->Recover());
    rack.RestartService(1, after.get());
  }
  uint64_t Cell() { return rack.heap(1).Get<uint64_t>(cell); }

  MiniRack rack;
  std::vector<uint8_t> area = std::vector<uint8_t>(memnode::StoreRecord::BytesFor(64));
  memnode::StoreRecord before{area.data(), area.size(), 64, 1};
  std::unique_ptr<memnode::StoreRecord> after;
  uint64_t cell = 0;
  TraversalMessage request;
};

TEST(Rack, StoreRetransmittedAfterARestartIsAnsweredFromTheRecordNotRunAgain) {
  RecordingRack r(42);
  TraversalMessage m = r.request;
  auto first = r.rack.Send(m);  // ran; say its answer was lost in the crash
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].status, TraversalStatus::kDone);
  EXPECT_EQ(r.Cell(), 1u);

  r.Restart();
  EXPECT_EQ(r.after->recovered(), 1u);
  auto again = r.rack.Send(m);  // the client's retransmission reaches the new process
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].status, TraversalStatus::kDone);
  EXPECT_EQ(Sp0(again[0]), Sp0(first[0]));
  EXPECT_EQ(again[0].request_id, 42u);
  EXPECT_EQ(r.Cell(), 1u) << "ran twice";
  EXPECT_EQ(r.rack.service(1).counters().durable_answers, 1u);
  m.request_id = 43;  // a new request runs
  EXPECT_EQ(Sp0(r.rack.Send(m)[0]), 2u);
  EXPECT_EQ(r.Cell(), 2u);

  // What the record prevents: the same retransmission to a node that
  // restarted without it runs again.
  r.rack.RestartService(1, nullptr);
  m.request_id = 42;
  r.rack.Send(m);
  EXPECT_EQ(r.Cell(), 3u);
}

// Issue 14: a STORE-bearing traversal crossing from node 0 to node 1,
// whose continuation ran on node 1 just before node 1 crashed (its answer
// lost).  The client re-sends the request to node 0, whose duplicate filter
// re-sends its continuation -- by hash, node 0 having sent node 1 the code
// earlier -- and the restarted node 1, which lost its program cache, answers
// "unknown program" with the continuation's state.  The CPU node resumes
// from that state with the code under the SAME id (TraversalTracker): the
// visit (id, iterations) is the one node 1 recorded, so it is answered from
// the record, not run again.  Under a fresh id it would have run twice.
TEST(Rack, AContinuationResumedAfterARestartUnderItsIdIsAnsweredFromTheRecord) {
  MiniRack rack;
  std::vector<uint8_t> area(memnode::StoreRecord::BytesFor(64));
  memnode::StoreRecord before(area.data(), area.size(), 64, 1);
  before.Format();
  rack.service(1).set_store_record(&before);
  // Each pair: {counter, next} on node 0 -> {counter, 0} on node 1.
  auto step = Build(testing::kIncrementPairProgram);
  uint64_t first[2], second[2];
  for (int i = 0; i < 2; ++i) {
    second[i] = rack.heap(1).Alloc(16);
    first[i] = rack.heap(0).Alloc(16);
    rack.heap(0).Put<uint64_t>(first[i] + 8, second[i]);
  }
  auto request = [&](int i, uint64_t id) {
    TraversalMessage m = Request(step, first[i], kFlagHasStore);
    m.request_id = id;
    m.scratch.assign(16, 0);
    return m;
  };
  ASSERT_EQ(rack.Send(request(0, 1))[0].status, TraversalStatus::kDone);  // node 1 gets the code
  ASSERT_EQ(rack.Send(request(1, 2))[0].status, TraversalStatus::kDone);  // its continuation: by hash
  ASSERT_EQ(rack.continuation_code_bytes.size(), 2u);
  EXPECT_EQ(rack.continuation_code_bytes[1], 0u);
  ASSERT_EQ(rack.heap(1).Get<uint64_t>(second[1]), 1u);

  // Node 1 crashed after running request 2's visit; its answer was lost.
  memnode::StoreRecord after(area.data(), area.size(), 64, 1);
  ASSERT_TRUE(after.Recover());
  rack.RestartService(1, &after);
  auto lacking = rack.Send(request(1, 2));  // the client's re-send, to node 0
  ASSERT_EQ(lacking.size(), 1u);
  ASSERT_EQ(lacking[0].status, TraversalStatus::kUnknownProgram) << TraversalStatusName(lacking[0].status);
  EXPECT_EQ(lacking[0].request_id, 2u);
  EXPECT_EQ(lacking[0].cur_ptr, second[1]);
  EXPECT_EQ(rack.heap(0).Get<uint64_t>(first[1]), 1u) << "node 0 answered from its duplicate filter";

  TraversalMessage resume = Request(step, lacking[0].cur_ptr, kFlagHasStore);
  resume.request_id = 2;  // what the CPU node does: the same visit
  resume.scratch = lacking[0].scratch;
  resume.iterations = lacking[0].iterations;
  auto answered = rack.Send(resume);
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_EQ(answered[0].status, TraversalStatus::kDone);
  EXPECT_EQ(rack.heap(1).Get<uint64_t>(second[1]), 1u) << "the visit ran twice";
  EXPECT_EQ(rack.service(1).counters().durable_answers, 1u);
  uint64_t sp[2];
  std::memcpy(sp, answered[0].scratch.data(), sizeof sp);
  EXPECT_EQ(sp[0], 1u);
  EXPECT_EQ(sp[1], 1u);

  // What the same id prevents: resumed as a new visit, it runs again.
  resume.request_id = 3;
  rack.Send(resume);
  EXPECT_EQ(rack.heap(1).Get<uint64_t>(second[1]), 2u);
}

TEST(Rack, StoreBegunBeforeARestartIsRefusedAsOutcomeUnknown) {
  RecordingRack r(77);
  // Accepted, then the process dies before the engine answers (it may have
  // stored already: the record cannot tell).
  r.rack.service(1).Handle(TraversalMessage(r.request), [](TraversalMessage&&) { ADD_FAILURE() << "answered early"; });
  r.Restart();
  auto again = r.rack.Send(r.request);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].status, TraversalStatus::kOutcomeUnknown) << TraversalStatusName(again[0].status);
  EXPECT_EQ(r.Cell(), 0u) << "refused, not run";
  EXPECT_EQ(r.rack.service(1).counters().outcome_unknown, 1u);
  // The same id at another point of a traversal (more iterations) is
  // another visit and runs.
  TraversalMessage later = r.request;
  later.iterations = 3;
  EXPECT_EQ(r.rack.Send(later)[0].status, TraversalStatus::kDone);
  EXPECT_EQ(r.Cell(), 1u);
}

TEST(Rack, StoreRecordKeepsTheNewestVisitsAndOnlyItsOwnNodes) {
  std::vector<uint8_t> area(memnode::StoreRecord::BytesFor(4));
  memnode::StoreRecord r(area.data(), area.size(), 4, 2);
  EXPECT_FALSE(r.Recover());  // never formatted
  r.Format();
  TraversalMessage m;
  m.kind = MessageKind::kResponse;
  for (uint64_t id = 1; id <= 6; ++id) {  // six visits through a ring of four
    m.request_id = id;
    r.Begin(m, /*program_hash=*/5);
    r.Finish(id, 0, m);
  }
  memnode::StoreRecord again(area.data(), area.size(), 4, 2);
  ASSERT_TRUE(again.Recover());
  EXPECT_EQ(again.recovered(), 4u);
  TraversalMessage out;
  m.request_id = 6;
  EXPECT_EQ(again.Lookup(m, 5, &out), memnode::StoreRecord::Earlier::kAnswered);
  EXPECT_EQ(out.request_id, 6u);
  EXPECT_EQ(again.Lookup(m, 4, &out), memnode::StoreRecord::Earlier::kNone) << "another program";
  m.request_id = 2;
  EXPECT_EQ(again.Lookup(m, 5, &out), memnode::StoreRecord::Earlier::kNone) << "overwritten by a newer visit";
  EXPECT_FALSE(memnode::StoreRecord(area.data(), area.size(), 4, 3).Recover()) << "another node's record";
}

TEST(Rack, ProtectionHoldsAfterAContinuation) {
  MiniRack rack;
  FarHeap foreign(uint64_t{7} << 32, 4096, /*owner=*/2);
  rack.AddForeignRange(1, &foreign);
  const uint64_t mine = rack.heap(0).Alloc(16);
  const uint64_t theirs = foreign.Alloc(16);
  rack.heap(0).Put<uint64_t>(mine, theirs);
  auto answers = rack.Send(Request(Build(kSum), mine));
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].status, TraversalStatus::kFaultProtection);
  EXPECT_EQ(answers[0].cur_ptr, theirs);
}

TEST(Rack, PointerOutsideEveryNodeIsAnErrorToTheCaller) {
  MiniRack rack;
  const uint64_t node = rack.heap(0).Alloc(16);
  rack.heap(0).Put<uint64_t>(node, 0x5555);
  auto answers = rack.Send(Request(Build(kSum), node));
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].status, TraversalStatus::kFaultInvalidPointer);
  EXPECT_EQ(answers[0].fault_addr, 0x5555u);
}

// A STORE-bearing traversal that leaves a node and comes back (node 0 ->
// node 1 -> node 0, as the chained-hash insert returns to its bucket) is a
// new visit, not a duplicate of its first one; a retransmission still runs
// nothing twice.
TEST(Rack, StoreTraversalRevisitingANodeIsNotADuplicate) {
  MiniRack rack;
  // Cells {counter @0, next @8}: a (node 0) -> b (node 1) -> c (node 0).
  const uint64_t a = rack.heap(0).Alloc(16), b = rack.heap(1).Alloc(16), c = rack.heap(0).Alloc(16);
  rack.heap(0).Put<uint64_t>(a + 8, b);
  rack.heap(1).Put<uint64_t>(b + 8, c);
  rack.heap(0).Put<uint64_t>(c + 8, 0);
  auto program = Build(R"(
  LOAD data
  MOVE r1, cur_ptr
  MOVE r2, data[0]
  ADD r2, 1
  STORE [r1], r2
  ADD sp[0], 1
  COMPARE data[8], 0
  JUMP_EQ done
  MOVE cur_ptr, data[8]
  NEXT_ITER
done:
  RETURN)");
  TraversalMessage m = Request(program, a);
  m.request_id = 77;
  for (int attempt = 0; attempt < 2; ++attempt) {  // the original, then a retransmission
    auto answers = rack.Send(m);
    ASSERT_EQ(answers.size(), 1u);
    EXPECT_EQ(answers[0].status, TraversalStatus::kDone);
    EXPECT_EQ(Sp0(answers[0]), 3u);
    EXPECT_EQ(rack.heap(0).Get<uint64_t>(a), 1u);
    EXPECT_EQ(rack.heap(1).Get<uint64_t>(b), 1u);
    EXPECT_EQ(rack.heap(0).Get<uint64_t>(c), 1u);
  }
  // The retransmission replays the recorded answer of each visit.
  EXPECT_EQ(rack.service(0).counters().duplicates, 2u);
  EXPECT_EQ(rack.service(1).counters().duplicates, 1u);
}

}  // namespace
}  // namespace pulse

namespace pulse {
namespace {

uint64_t SumOf(const std::vector<uint64_t>& values) {
  uint64_t sum = 0;
  for (auto v : values) sum += v;
  return sum;
}

TEST(Rack, ContinuationCarriesCodeOnlyOnTheFirstVisitToANode) {
  MiniRack rack;
  std::vector<uint64_t> values;
  const uint64_t head = BuildAlternatingList(&rack, 64, &values);
  auto program = Build(kSum);
  for (int run = 0; run < 2; ++run) {
    auto answers = rack.Send(Request(program, head));
    ASSERT_EQ(answers.size(), 1u);
    EXPECT_EQ(answers[0].status, TraversalStatus::kDone);
    EXPECT_EQ(Sp0(answers[0]), SumOf(values));
  }
  // 7 continuations per run: 0->1 and 1->0 first carry the code, every
  // later one (5 in the first run, 7 in the second) the hash only.
  ASSERT_EQ(rack.continuation_code_bytes.size(), 14u);
  for (size_t i = 0; i < rack.continuation_code_bytes.size(); ++i) {
    EXPECT_EQ(rack.continuation_code_bytes[i], i < 2 ? program->encoded().size() : 0u) << "continuation " << i;
  }
  EXPECT_EQ(rack.service(0).counters().continuations_with_code, 1u);
  EXPECT_EQ(rack.service(1).counters().continuations_with_code, 1u);
  EXPECT_EQ(rack.service(0).counters().continuations_by_hash + rack.service(1).counters().continuations_by_hash, 12u);
  EXPECT_EQ(rack.service(0).counters().unknown_programs + rack.service(1).counters().unknown_programs, 0u);
}

// Node 1 caches one program: a second program evicts the first, so the next
// continuation of the first, sent by hash, finds it unknown.  The answer
// carries the continuation's state, and resuming from it with the code (what
// the CPU node does) completes the traversal with the right result.
TEST(Rack, ContinuationToANodeThatLostTheProgramResumesWithTheCode) {
  MemNodeServiceOptions small;
  small.program_cache_entries = 1;
  MiniRack rack(small);
  std::vector<uint64_t> values;
  const uint64_t head = BuildAlternatingList(&rack, 16, &values);  // 8 hops on node 0, then 8 on node 1
  auto sum = Build(kSum);
  auto first = rack.Send(Request(sum, head));
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].status, TraversalStatus::kDone);

  std::string doubled = kSum;
  doubled.replace(doubled.find("ADD"), 0, "ADD sp[0], data[8]\n    ");
  auto other = Build(doubled);
  ASSERT_NE(other->hash(), sum->hash());
  const uint64_t on_node1 = first[0].cur_ptr;  // the last list node
  ASSERT_EQ(NodeOfFarAddress(on_node1), 1);
  ASSERT_EQ(rack.Send(Request(other, on_node1))[0].status, TraversalStatus::kDone);  // evicts `sum` on node 1

  auto lost = rack.Send(Request(sum, head));
  ASSERT_EQ(lost.size(), 1u);
  ASSERT_EQ(lost[0].status, TraversalStatus::kUnknownProgram);
  EXPECT_EQ(rack.service(1).counters().unknown_programs, 1u);
  EXPECT_EQ(NodeOfFarAddress(lost[0].cur_ptr), 1);
  EXPECT_EQ(lost[0].iterations, 8u);
  EXPECT_EQ(rack.continuation_code_bytes.back(), 0u);  // it travelled by hash

  TraversalMessage resume = Request(sum, lost[0].cur_ptr);
  resume.request_id = 2;
  resume.scratch = lost[0].scratch;
  resume.iterations = lost[0].iterations;
  auto done = rack.Send(resume);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, TraversalStatus::kDone);
  EXPECT_EQ(Sp0(done[0]), SumOf(values));
  EXPECT_EQ(done[0].iterations, 16u);
}

TEST(Cluster, NodeOfFarAddressInvertsFarBase) {
  EXPECT_EQ(NodeOfFarAddress(0), -1);
  EXPECT_EQ(NodeOfFarAddress(kFarSpan - 1), -1);
  for (uint32_t n : {0u, 1u, 7u}) {
    EXPECT_EQ(NodeOfFarAddress(FarBase(n)), static_cast<int64_t>(n));
    EXPECT_EQ(NodeOfFarAddress(FarBase(n) + kFarSpan - 1), static_cast<int64_t>(n));
  }
}

}  // namespace
}  // namespace pulse
