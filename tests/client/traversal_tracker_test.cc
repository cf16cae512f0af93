// The client's traversal state machine driven by scripted answers, a fake
// path (no switch, no memory nodes, no processes) and a fake clock.
#include "client/traversal_tracker.h"

#include <map>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "engine/run_both.h"
#include "pulse/assembler.h"
#include "pulse/cluster.h"

namespace pulse {
namespace {

using std::chrono::milliseconds;
using testing::FakeClock;
using testing::MustBuild;

// Two memory nodes: node 0 owns [0x1000, 0x2000), node 1 [0x2000, 0x3000).
class FakePath final : public TraversalPath {
 public:
  Status SendToSwitch(const TraversalMessage& m) override {
    if (fail_sends) return Status::Unavailable("fake: the switch is gone");
    sent.push_back(m);
    return Status::Ok();
  }
  // Direct routing: straight to the owner (recorded in `direct`).
  Status Send(const TraversalMessage& m) override {
    if (!direct_routing) return SendToSwitch(m);
    direct.push_back(m);
    return Status::Ok();
  }
  uint32_t routing_version() const override { return 7; }
  void RefreshTable(uint32_t seen) override { refreshes.push_back(seen); }
  std::optional<uint32_t> NodeOf(uint64_t addr) const override {
    if (addr >= 0x1000 && addr < 0x2000) return 0;
    if (addr >= 0x2000 && addr < 0x3000) return 1;
    return std::nullopt;
  }
  bool switch_down() const override { return down; }
  Status EnsureSwitch() override {
    ++ensure_calls;
    if (!reconnects) return Status::Unavailable("the switch at fake is down (reconnecting failed)");
    down = false;
    return Status::Ok();
  }
  bool Unrouted(uint32_t node) const override { return unrouted.count(node) > 0; }
  uint32_t cpu_node() const override { return 3; }
  void StoresDone() override { ++stores_done; }

  std::vector<TraversalMessage> sent;
  std::vector<TraversalMessage> direct;
  std::vector<uint32_t> refreshes;  // RefreshTable's arguments
  bool direct_routing = false;
  bool fail_sends = false;
  bool down = false;
  bool reconnects = true;
  int ensure_calls = 0;
  int stores_done = 0;
  std::set<uint32_t> unrouted;
};

constexpr const char* kRead = "LOAD data, 8\nMOVE sp[0], data[0]\nRETURN";
constexpr const char* kIncrement =
    "LOAD data, 8\nMOVE r1, cur_ptr\nADD sp[0], data[0]\nADD sp[0], 1\nSTORE [r1], sp[0]\nRETURN";

class TraversalTrackerTest : public ::testing::Test {
 protected:
  TraversalTrackerTest() {
    options.request_timeout = milliseconds(100);
    options.max_attempts = 3;
  }

  // Starts a traversal of `program` from cur_ptr; its outcome lands in `out`.
  void Start(const ProgramRef& program, uint64_t cur_ptr, TraverseOptions topts = {}) {
    tracker.Start(program, cur_ptr, std::vector<uint8_t>(8, 0), 0, topts,
                  [this](Result<TraversalResult> r) { outcomes.push_back(std::move(r)); });
  }
  // The answer a memory node (or the switch) gives to `request`.
  TraversalMessage AnswerTo(const TraversalMessage& request, TraversalStatus status) {
    TraversalMessage m = request;
    m.kind = MessageKind::kResponse;
    m.status = status;
    m.program.clear();
    return m;
  }
  void Deliver(const TraversalMessage& m) {
    tracker.OnMessage(EncodeMessage(m));
    tracker.RunReady();
  }
  // Moves the fake clock on by `d`, servicing timers each millisecond.
  void Run(milliseconds d) {
    for (auto end = clock.Now() + d; clock.Now() < end;) {
      clock.Advance(milliseconds(1));
      tracker.CheckTimeouts();
      tracker.RunReady();
    }
  }

  ClientOptions options;
  ClientCounters counters;
  FakePath path;
  FakeClock clock;
  TraversalTracker tracker{&options, &path, &counters, &clock, 100};
  std::vector<Result<TraversalResult>> outcomes;
  ProgramRef read = MustBuild(kRead);
};

// Critical-path accounting: the client numbers each request one leg after
// the answer it follows and, when the traversal ends, counts the legs the
// last answer brought home and their bytes (each later leg at the size of
// the answer that came back).
TEST_F(TraversalTrackerTest, CountsTheLegsOfEveryAnswerOnTheWayToTheResult) {
  TraverseOptions acc;
  acc.pulse_acc = true;
  Start(read, 0x1008, acc);
  ASSERT_EQ(path.sent.size(), 1u);
  const TraversalMessage first = path.sent[0];
  EXPECT_EQ(first.legs, 1);
  const uint64_t first_bytes = EncodeMessage(first).size();
  // Node 0 answers "not local" after 1 more leg (via the switch: request in
  // and out, response in and out would be 4; here the switch added 2).
  TraversalMessage not_local = AnswerTo(first, TraversalStatus::kNotLocal);
  not_local.cur_ptr = 0x2008;
  not_local.legs = 3;
  Deliver(not_local);
  ASSERT_EQ(path.sent.size(), 2u);
  const TraversalMessage reissue = path.sent[1];
  EXPECT_NE(reissue.request_id, first.request_id);
  EXPECT_EQ(reissue.legs, 4) << "one more than the answer it re-issues from";
  EXPECT_EQ(counters.critical_path_messages, 0u) << "nothing is counted before the traversal ends";
  const uint64_t reissue_bytes = EncodeMessage(reissue).size();
  TraversalMessage done = AnswerTo(reissue, TraversalStatus::kDone);
  done.legs = 6;
  Deliver(done);
  ASSERT_EQ(outcomes.size(), 1u);
  ASSERT_TRUE(outcomes[0].ok()) << outcomes[0].status().ToString();
  EXPECT_EQ(counters.critical_path_messages, 6u);
  const uint64_t answer_bytes = EncodeMessage(done).size();
  EXPECT_EQ(counters.critical_path_bytes,
            first_bytes + 2 * EncodeMessage(not_local).size() + reissue_bytes + 2 * answer_bytes);
}

TEST_F(TraversalTrackerTest, ARedirectAndItsResendAreOnThePath) {
  path.direct_routing = true;
  Start(read, 0x1008);
  ASSERT_EQ(path.direct.size(), 1u);
  TraversalMessage redirect = AnswerTo(path.direct[0], TraversalStatus::kNotLocal);
  redirect.flags |= kFlagRedirect;
  redirect.legs = 2;
  Deliver(redirect);
  ASSERT_EQ(path.sent.size(), 1u);
  EXPECT_EQ(path.sent[0].legs, 3);
  TraversalMessage done = AnswerTo(path.sent[0], TraversalStatus::kDone);
  done.legs = 5;  // through the switch and on to the owner, back direct
  Deliver(done);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(counters.critical_path_messages, 5u);
}

TEST_F(TraversalTrackerTest, ARedirectIsResentThroughTheSwitchUnderTheSameId) {
  path.direct_routing = true;
  ProgramRef increment = MustBuild(kIncrement);
  Start(increment, 0x1008);
  ASSERT_EQ(path.direct.size(), 1u);
  ASSERT_TRUE(path.sent.empty());
  const TraversalMessage req = path.direct[0];
  EXPECT_EQ(req.routing_version, 7u);
  // The node did not own cur_ptr (our table was stale): back unrun.
  TraversalMessage redirect = AnswerTo(req, TraversalStatus::kNotLocal);
  redirect.flags |= kFlagRedirect;
  redirect.routing_version = 9;
  Deliver(redirect);
  EXPECT_TRUE(outcomes.empty());
  EXPECT_EQ(counters.redirects, 1u);
  EXPECT_EQ(path.refreshes, std::vector<uint32_t>{9}) << "the node's table (9) is newer than ours (7)";
  ASSERT_EQ(path.sent.size(), 1u) << "re-sent through the switch";
  EXPECT_EQ(path.sent[0].request_id, req.request_id) << "same id: a STORE-bearing request stays exactly-once";
  EXPECT_EQ(path.sent[0].cur_ptr, req.cur_ptr);
  EXPECT_EQ(path.sent[0].scratch, req.scratch);
  TraversalMessage done = AnswerTo(path.sent[0], TraversalStatus::kDone);
  done.iterations = 1;
  Deliver(done);
  ASSERT_EQ(outcomes.size(), 1u);
  ASSERT_TRUE(outcomes[0].ok()) << outcomes[0].status().ToString();
  EXPECT_EQ(outcomes[0]->status, TraversalStatus::kDone);
  EXPECT_EQ(path.stores_done, 1);
  Run(milliseconds(500));  // nothing left to re-send
  EXPECT_EQ(path.sent.size(), 1u);
  EXPECT_EQ(path.direct.size(), 1u);
}

// A redirect from a node whose table is not newer than ours (it lags, or
// the owner changed between its table and ours) asks for no table: only the
// re-send through the switch follows.
TEST_F(TraversalTrackerTest, ARedirectNamingNoNewerTableAsksForNone) {
  path.direct_routing = true;
  Start(read, 0x1008);
  ASSERT_EQ(path.direct.size(), 1u);
  for (uint32_t version : {7u, 5u}) {
    const size_t sent = path.sent.size();
    TraversalMessage redirect = AnswerTo(sent == 0 ? path.direct[0] : path.sent.back(), TraversalStatus::kNotLocal);
    redirect.flags |= kFlagRedirect;
    redirect.routing_version = version;
    Deliver(redirect);
    EXPECT_EQ(path.sent.size(), sent + 1) << "re-sent through the switch (version " << version << ")";
  }
  EXPECT_TRUE(path.refreshes.empty());
  EXPECT_EQ(counters.redirects, 2u);
}

// The client's wait polls longer while a traversal awaits its answer and
// sleeps at once when none does (EventSource::awaiting_replies).
TEST_F(TraversalTrackerTest, AwaitsRepliesExactlyWhileATraversalIsOutstanding) {
  EXPECT_FALSE(tracker.awaiting_replies());
  Start(read, 0x1008);
  EXPECT_TRUE(tracker.awaiting_replies());
  ASSERT_EQ(path.sent.size(), 1u);
  Deliver(AnswerTo(path.sent[0], TraversalStatus::kDone));
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_FALSE(tracker.awaiting_replies());
}

TEST_F(TraversalTrackerTest, DoneCompletesWithTheNodesState) {
  Start(read, 0x1008);
  ASSERT_EQ(path.sent.size(), 1u);
  const TraversalMessage& req = path.sent[0];
  EXPECT_EQ(req.request_id, MakeRequestId(3, 100));
  EXPECT_EQ(req.cur_ptr, 0x1008u);
  EXPECT_FALSE(req.program.empty()) << "the first request to a node carries the program";
  TraversalMessage done = AnswerTo(req, TraversalStatus::kDone);
  done.scratch = {7, 0, 0, 0, 0, 0, 0, 0};
  done.iterations = 5;
  Deliver(done);
  ASSERT_EQ(outcomes.size(), 1u);
  ASSERT_TRUE(outcomes[0].ok()) << outcomes[0].status().ToString();
  EXPECT_EQ(outcomes[0]->status, TraversalStatus::kDone);
  EXPECT_EQ(outcomes[0]->scratch[0], 7);
  EXPECT_EQ(outcomes[0]->iterations, 5u);
  EXPECT_EQ(outcomes[0]->issues, 1u);
  EXPECT_EQ(tracker.pending(), 0u);
  EXPECT_EQ(counters.traversal_iterations, 5u);
  EXPECT_EQ(path.stores_done, 0);
  // The node has the program now: the next request goes by hash only.
  Start(read, 0x1010);
  ASSERT_EQ(path.sent.size(), 2u);
  EXPECT_TRUE(path.sent[1].program.empty());
  // A second answer to the first request is stale.
  Deliver(done);
  EXPECT_EQ(counters.stale_responses, 1u);
  EXPECT_EQ(outcomes.size(), 1u);
}

TEST_F(TraversalTrackerTest, ContinueIsReissuedUnderAFreshIdFromWhereItStopped) {
  Start(read, 0x1008);
  TraversalMessage cont = AnswerTo(path.sent[0], TraversalStatus::kContinue);
  cont.cur_ptr = 0x2010;
  cont.iterations = 4096;
  cont.scratch = {1, 2, 3, 4, 5, 6, 7, 8};
  Deliver(cont);
  EXPECT_TRUE(outcomes.empty());
  ASSERT_EQ(path.sent.size(), 2u);
  const TraversalMessage& again = path.sent[1];
  EXPECT_NE(again.request_id, path.sent[0].request_id);
  EXPECT_EQ(again.cur_ptr, 0x2010u);
  EXPECT_EQ(again.iterations, 4096u);
  EXPECT_EQ(again.scratch, cont.scratch);
  EXPECT_FALSE(again.program.empty()) << "node 1 has not seen the program";
  EXPECT_EQ(counters.reissues, 1u);
  Deliver(AnswerTo(again, TraversalStatus::kDone));
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0]->issues, 2u);
  // The old id answered late: stale, nothing else happens.
  Deliver(AnswerTo(path.sent[0], TraversalStatus::kDone));
  EXPECT_EQ(counters.stale_responses, 1u);
  EXPECT_EQ(outcomes.size(), 1u);
}

TEST_F(TraversalTrackerTest, ContinueWithoutFollowingEndsThere) {
  TraverseOptions topts;
  topts.follow_continue = false;
  Start(read, 0x1008, topts);
  Deliver(AnswerTo(path.sent[0], TraversalStatus::kContinue));
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0]->status, TraversalStatus::kContinue);
}

TEST_F(TraversalTrackerTest, NotLocalIsFollowedOnlyInPulseAccMode) {
  Start(read, 0x1008);
  TraversalMessage not_local = AnswerTo(path.sent[0], TraversalStatus::kNotLocal);
  not_local.cur_ptr = 0x2000;
  Deliver(not_local);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0]->status, TraversalStatus::kFaultInvalidPointer);

  TraverseOptions acc;
  acc.pulse_acc = true;
  Start(read, 0x1008, acc);
  ASSERT_EQ(path.sent.size(), 2u);
  EXPECT_TRUE(path.sent[1].flags & kFlagPulseAcc);
  not_local = AnswerTo(path.sent[1], TraversalStatus::kNotLocal);
  not_local.cur_ptr = 0x2000;
  Deliver(not_local);
  ASSERT_EQ(path.sent.size(), 3u);
  EXPECT_EQ(path.sent[2].cur_ptr, 0x2000u);
  not_local = AnswerTo(path.sent[2], TraversalStatus::kNotLocal);
  not_local.cur_ptr = 0x9000;  // no node owns it: the end
  Deliver(not_local);
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[1]->status, TraversalStatus::kFaultInvalidPointer);
  EXPECT_EQ(outcomes[1]->cur_ptr, 0x9000u);
}

TEST_F(TraversalTrackerTest, UnknownProgramIsResentWithItsCode) {
  Start(read, 0x1008);
  Deliver(AnswerTo(path.sent[0], TraversalStatus::kDone));  // node 0 knows it now
  Start(read, 0x1010);
  ASSERT_TRUE(path.sent[1].program.empty());
  // Node 0 restarted and lost it: the same id again, code attached.
  Deliver(AnswerTo(path.sent[1], TraversalStatus::kUnknownProgram));
  ASSERT_EQ(path.sent.size(), 3u);
  EXPECT_EQ(path.sent[2].request_id, path.sent[1].request_id);
  EXPECT_FALSE(path.sent[2].program.empty());
  EXPECT_EQ(counters.unknown_programs, 1u);
  // A continuation that reached a node lacking it: resumed there, under
  // the same id (the same visit, id and iterations, as the continuation).
  TraversalMessage far = AnswerTo(path.sent[2], TraversalStatus::kUnknownProgram);
  far.cur_ptr = 0x2020;
  far.iterations = 3;
  Deliver(far);
  ASSERT_EQ(path.sent.size(), 4u);
  EXPECT_EQ(path.sent[3].request_id, path.sent[2].request_id);
  EXPECT_EQ(path.sent[3].cur_ptr, 0x2020u);
  EXPECT_EQ(path.sent[3].iterations, 3u);
  EXPECT_FALSE(path.sent[3].program.empty());
  Deliver(AnswerTo(path.sent[3], TraversalStatus::kDone));
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_TRUE(outcomes[1].ok());
}

// Issue 14: a STORE-bearing traversal whose continuation (id, 1 iteration)
// reached memory node 1 by hash after node 1 restarted.  The node answers
// "unknown program"; the client resumes there under the same id, so the
// visit keeps its identity (id, iterations): a copy of that continuation
// that ran on node 1 before the restart is answered from node 1's STORE
// record, and one still on its way from node 0 hits node 1's duplicate
// filter.  Under a fresh id either would have run the STORE again.  And the
// re-sends on silence after that go to node 1 with the continuation's
// state, never to node 0 (whose visit ran once).
TEST_F(TraversalTrackerTest, AContinuationResumedAfterUnknownProgramKeepsItsVisitIdentity) {
  ProgramRef increment = MustBuild(kIncrement);
  Start(increment, 0x1008);
  ASSERT_EQ(path.sent.size(), 1u);
  const uint64_t id = path.sent[0].request_id;
  TraversalMessage lacking = AnswerTo(path.sent[0], TraversalStatus::kUnknownProgram);
  lacking.cur_ptr = 0x2010;
  lacking.iterations = 1;
  lacking.scratch.assign(8, 0x5a);
  Deliver(lacking);
  ASSERT_EQ(path.sent.size(), 2u);
  EXPECT_EQ(path.sent[1].request_id, id);
  EXPECT_EQ(path.sent[1].cur_ptr, 0x2010u);
  EXPECT_EQ(path.sent[1].iterations, 1u);
  EXPECT_EQ(path.sent[1].scratch, lacking.scratch);
  EXPECT_FALSE(path.sent[1].program.empty());
  // Silence: the re-send is the resumed visit again.
  Run(milliseconds(150));
  ASSERT_EQ(path.sent.size(), 3u);
  EXPECT_EQ(path.sent[2].request_id, id);
  EXPECT_EQ(path.sent[2].cur_ptr, 0x2010u);
  EXPECT_EQ(path.sent[2].iterations, 1u);
  // Node 1 answers from its record (the visit ran before its restart).
  TraversalMessage done = AnswerTo(path.sent[2], TraversalStatus::kDone);
  done.iterations = 2;
  Deliver(done);
  ASSERT_EQ(outcomes.size(), 1u);
  ASSERT_TRUE(outcomes[0].ok()) << outcomes[0].status().ToString();
  EXPECT_EQ(outcomes[0]->iterations, 2u);
  EXPECT_EQ(counters.unknown_programs, 1u);
}

TEST_F(TraversalTrackerTest, FaultsAreResultsNotErrors) {
  Start(read, 0x1008);
  TraversalMessage fault = AnswerTo(path.sent[0], TraversalStatus::kFaultProtection);
  fault.fault_addr = 0x1ff8;
  fault.fault_pc = 2;
  Deliver(fault);
  ASSERT_EQ(outcomes.size(), 1u);
  ASSERT_TRUE(outcomes[0].ok());
  EXPECT_EQ(outcomes[0]->status, TraversalStatus::kFaultProtection);
  EXPECT_EQ(outcomes[0]->fault_addr, 0x1ff8u);
  EXPECT_EQ(outcomes[0]->fault_pc, 2u);
}

TEST_F(TraversalTrackerTest, InvalidPointerOnAnUnroutedNodeIsUnavailable) {
  path.unrouted = {1};
  Start(read, 0x1008);
  TraversalMessage fault = AnswerTo(path.sent[0], TraversalStatus::kFaultInvalidPointer);
  fault.fault_addr = 0x2008;
  Deliver(fault);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].status().code(), Status::Code::kUnavailable);
}

TEST_F(TraversalTrackerTest, UnavailableFailsAtOnceWithoutRideOut) {
  Start(read, 0x1008);
  Deliver(AnswerTo(path.sent[0], TraversalStatus::kNodeUnavailable));
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].status().code(), Status::Code::kUnavailable);
  EXPECT_EQ(path.sent.size(), 1u);
}

TEST_F(TraversalTrackerTest, UnavailableIsRiddenOutUnderTheSameId) {
  options.ride_out_unavailable = milliseconds(250);
  options.unavailable_retry_interval = milliseconds(40);
  Start(read, 0x1008);
  const uint64_t id = path.sent[0].request_id;
  Deliver(AnswerTo(path.sent[0], TraversalStatus::kNodeUnavailable));
  EXPECT_TRUE(outcomes.empty());
  Run(milliseconds(39));
  EXPECT_EQ(path.sent.size(), 1u);
  Run(milliseconds(1));
  ASSERT_EQ(path.sent.size(), 2u);
  EXPECT_EQ(path.sent[1].request_id, id);
  EXPECT_EQ(counters.unavailable_resends, 1u);
  // The node is back: it answers.
  Deliver(AnswerTo(path.sent[1], TraversalStatus::kDone));
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(outcomes[0].ok());
  EXPECT_EQ(outcomes[0]->issues, 2u);
}

TEST_F(TraversalTrackerTest, RideOutEndsInUnavailable) {
  options.ride_out_unavailable = milliseconds(100);
  options.unavailable_retry_interval = milliseconds(40);
  Start(read, 0x1008);
  for (int i = 0; i < 10 && outcomes.empty(); ++i) {
    Deliver(AnswerTo(path.sent.back(), TraversalStatus::kNodeUnavailable));
    Run(milliseconds(40));
  }
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].status().code(), Status::Code::kUnavailable);
  EXPECT_NE(outcomes[0].status().message().find("re-sent for 100 ms"), std::string::npos);
  // Re-sent at 40, 80 and 100 ms; the answer to the last ends it.
  EXPECT_EQ(path.sent.size(), 4u);
}

TEST_F(TraversalTrackerTest, OutcomeUnknownIsItsOwnError) {
  ProgramRef increment = MustBuild(kIncrement);
  Start(increment, 0x1008);
  EXPECT_TRUE(path.sent[0].flags & kFlagHasStore);
  Deliver(AnswerTo(path.sent[0], TraversalStatus::kOutcomeUnknown));
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].status().code(), Status::Code::kOutcomeUnknown);
  EXPECT_EQ(path.stores_done, 1) << "the cache must not keep what the node may have written";
}

TEST_F(TraversalTrackerTest, SilenceIsResentThenTimesOutNamingTheRequest) {
  Start(read, 0x1008);
  const uint64_t id = path.sent[0].request_id;
  Run(milliseconds(100));
  ASSERT_EQ(path.sent.size(), 2u);
  EXPECT_EQ(path.sent[1].request_id, id);
  EXPECT_FALSE(path.sent[1].program.empty()) << "a retransmission carries the program";
  Run(milliseconds(100));
  EXPECT_EQ(path.sent.size(), 3u);
  EXPECT_TRUE(outcomes.empty());
  Run(milliseconds(100));
  ASSERT_EQ(outcomes.size(), 1u);
  const Status& s = outcomes[0].status();
  EXPECT_EQ(s.code(), Status::Code::kTimeout);
  EXPECT_NE(s.message().find(fmt::format("{:#x}", id)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("memory node 0"), std::string::npos) << s.message();
  EXPECT_EQ(counters.retransmissions, 2u);
  EXPECT_EQ(counters.timeouts, 1u);
  EXPECT_EQ(counters.requests_sent, 3u);
  // Late answers after the timeout are stale.
  Deliver(AnswerTo(path.sent[0], TraversalStatus::kDone));
  EXPECT_EQ(counters.stale_responses, 1u);
  EXPECT_EQ(outcomes.size(), 1u);
}

TEST_F(TraversalTrackerTest, AnswerToAnEarlierCopyAfterARetransmissionCompletesOnce) {
  Start(read, 0x1008);
  Run(milliseconds(100));
  ASSERT_EQ(path.sent.size(), 2u);
  Deliver(AnswerTo(path.sent[0], TraversalStatus::kDone));
  Deliver(AnswerTo(path.sent[1], TraversalStatus::kDone));
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(outcomes[0].ok());
  EXPECT_EQ(outcomes[0]->retransmissions, 1u);
  EXPECT_EQ(counters.stale_responses, 1u);
}

TEST_F(TraversalTrackerTest, LostSwitchFailsPendingRequestsWhenItCannotBeRegained) {
  Start(read, 0x1008);
  Start(read, 0x2008);
  path.down = true;
  path.reconnects = false;
  tracker.OnSwitchLost();
  tracker.CheckTimeouts();
  tracker.RunReady();
  ASSERT_EQ(outcomes.size(), 2u);
  for (const auto& o : outcomes) {
    EXPECT_EQ(o.status().code(), Status::Code::kUnavailable);
    EXPECT_NE(o.status().message().find("traversal: the switch"), std::string::npos) << o.status().message();
  }
  EXPECT_EQ(path.ensure_calls, 1);
}

TEST_F(TraversalTrackerTest, LostSwitchRegainedResendsUnderTheSameId) {
  Start(read, 0x1008);
  path.down = true;
  tracker.OnSwitchLost();
  tracker.CheckTimeouts();
  ASSERT_EQ(path.sent.size(), 2u);
  EXPECT_EQ(path.sent[1].request_id, path.sent[0].request_id);
  Deliver(AnswerTo(path.sent[1], TraversalStatus::kDone));
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(outcomes[0].ok());
}

TEST_F(TraversalTrackerTest, FailedSendIsRetriedByTheTimerPath) {
  path.fail_sends = true;
  Start(read, 0x1008);
  EXPECT_TRUE(path.sent.empty());
  path.fail_sends = false;
  tracker.CheckTimeouts();  // due at once, not after request_timeout
  ASSERT_EQ(path.sent.size(), 1u);
  Deliver(AnswerTo(path.sent[0], TraversalStatus::kDone));
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(outcomes[0].ok());
}

TEST_F(TraversalTrackerTest, PingIsNotResent) {
  std::optional<Result<TraversalResult>> ping;
  ASSERT_TRUE(tracker.StartPing(0x1008, [&](Result<TraversalResult> r) { ping = std::move(r); }).ok());
  ASSERT_EQ(path.sent.size(), 1u);
  EXPECT_TRUE(path.sent[0].flags & kFlagNoop);
  Run(milliseconds(100));
  EXPECT_EQ(path.sent.size(), 1u);
  ASSERT_TRUE(ping.has_value());
  EXPECT_EQ(ping->status().code(), Status::Code::kTimeout);
}

TEST_F(TraversalTrackerTest, ManyInFlightAnsweredInReverseOrder) {
  for (uint64_t i = 0; i < 50; ++i) Start(read, 0x1000 + 8 * i);
  ASSERT_EQ(path.sent.size(), 50u);
  EXPECT_EQ(tracker.pending(), 50u);
  std::map<uint64_t, uint64_t> cur_of_id;
  for (auto it = path.sent.rbegin(); it != path.sent.rend(); ++it) {
    TraversalMessage done = AnswerTo(*it, TraversalStatus::kDone);
    done.scratch = {static_cast<uint8_t>(it->cur_ptr & 0xff), 0, 0, 0, 0, 0, 0, 0};
    Deliver(done);
  }
  ASSERT_EQ(outcomes.size(), 50u);
  for (const auto& o : outcomes) {
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(o->scratch[0], static_cast<uint8_t>(o->cur_ptr & 0xff)) << "each gets its own answer";
  }
}

}  // namespace
}  // namespace pulse
