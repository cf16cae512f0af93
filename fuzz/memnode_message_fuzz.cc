// Fuzz target: a traversal message as the memory node handles it: decode
// (the limits of MemNodeServerOptions), then MemNodeService::Handle and Poll
// over TenantMemory.  Every answer is predicted: a malformed program, a wrong
// hash or a response sent as a request is a bad request, a missing program
// is unknown, a probe is answered at once, and anything else must end
// exactly as the reference interpreter ends the same traversal.  The same
// message sent again must get the same answer (STOREs take effect once), and
// no tenant may touch what it does not own.
#include "fuzz_check.h"
#include "memnode/memnode_server.h"
#include "memnode/service.h"
#include "message_equal.h"
#include "pulse/protocol.h"
#include "tenant_memory.h"

namespace pulse::fuzz {
namespace {

class ServiceUnderTest {
 public:
  explicit ServiceUnderTest(const MemNodeServiceOptions& options)
      : table_(memory_.Table()), service_(&table_, options) {}

  // Handles one message and runs the engine until idle; returns the answers.
  std::vector<TraversalMessage> Send(const TraversalMessage& m) {
    std::vector<TraversalMessage> out;
    auto send = [&](TraversalMessage&& r) { out.push_back(std::move(r)); };
    service_.Handle(TraversalMessage(m), send);
    // Requests run at most 64 iterations (see below): one Poll suffices; a
    // few more rounds leave room for the scheduler's admission order.
    for (int round = 0; round < 8 && !service_.Idle(); ++round) service_.Poll(send, 4096);
    PULSE_FUZZ_CHECK(service_.Idle(), "the service is still busy ({} active, {} queued)", service_.active(),
                     service_.queued());
    return out;
  }
  const TenantMemory& memory() const { return memory_; }

 private:
  TenantMemory memory_;
  RangeTable table_;
  MemNodeService service_;
};

void CheckResponse(const TraversalMessage& request, const TraversalMessage& r, uint32_t max_scratch) {
  PULSE_FUZZ_CHECK(r.kind == MessageKind::kResponse, "an answer of kind {}", static_cast<int>(r.kind));
  PULSE_FUZZ_CHECK(r.request_id == request.request_id && r.cpu_node == request.cpu_node &&
                       r.tenant == request.tenant,
                   "the answer names another request, CPU node or tenant");
  auto again = DecodeMessage(EncodeMessage(r), max_scratch);
  PULSE_FUZZ_CHECK(again.ok(), "the answer does not decode: {}", again.status().ToString());
  PULSE_FUZZ_CHECK(SameMessage(*again, r), "the answer changes on the wire");
}

// What the memory node must answer to `m` on a fresh service.
TraversalMessage Predict(const TraversalMessage& m, const MemNodeServiceOptions& options, TenantMemory* memory) {
  TraversalMessage want = m;
  want.kind = MessageKind::kResponse;
  want.program.clear();
  auto answer = [&](TraversalStatus st) {  // answered without running
    want.status = st;
    want.fault_pc = 0;
    want.fault_addr = 0;
    return want;
  };
  if (m.kind != MessageKind::kRequest) return answer(TraversalStatus::kFaultBadRequest);
  if (m.flags & kFlagNoop) return answer(TraversalStatus::kDone);
  if (m.program.empty()) return answer(TraversalStatus::kUnknownProgram);
  VerifierOptions vo;
  vo.scratch_pad_bytes = options.engine.scratch_pad_bytes;
  auto p = VerifiedProgram::FromBytes(m.program, vo);
  if (!p.ok() || (m.program_hash != 0 && (*p)->hash() != m.program_hash))
    return answer(TraversalStatus::kFaultBadRequest);
  if ((*p)->info().has_store) want.flags |= kFlagHasStore;
  want.program_hash = (*p)->hash();
  if (m.scratch.size() > options.engine.scratch_pad_bytes) return answer(TraversalStatus::kFaultBadRequest);
  RangeTable table = memory->Table();
  CheckedMemory checked(table, m.tenant);
  TraversalState state;
  state.cur_ptr = m.cur_ptr;
  state.scratch = m.scratch;
  state.iterations = m.iterations;
  const TraversalOutcome out = InterpretTraversal(**p, checked, m.max_iterations, &state);
  want.status = out.status;
  want.cur_ptr = state.cur_ptr;
  want.iterations = state.iterations;
  want.scratch = state.scratch;
  want.fault_pc = out.fault_pc;
  want.fault_addr = out.fault_addr;
  // A continuation carries its program to the next node, unless the CPU
  // node re-issues it itself (pulse-acc).
  if (out.status == TraversalStatus::kNotLocal && !(m.flags & kFlagPulseAcc)) want.program = (*p)->encoded();
  return want;
}

}  // namespace

void FuzzMemNodeMessage(std::span<const uint8_t> data) {
  const memnode::MemNodeServerOptions server;
  auto decoded = DecodeMessage(data, server.max_scratch_bytes);
  if (!decoded.ok()) return;
  TraversalMessage m = std::move(decoded).value();
  // Bounded work per input: at most 64 iterations (0 would mean the engine's
  // default of 4096).
  if (m.max_iterations == 0 || m.max_iterations > 64) m.max_iterations = m.max_iterations % 64 + 1;

  MemNodeServiceOptions options = server.service;
  options.engine.workspaces = 2;
  const TenantMemory original;
  TenantMemory predicted_memory;
  const TraversalMessage want = Predict(m, options, &predicted_memory);

  ServiceUnderTest node(options);
  std::vector<TraversalMessage> first = node.Send(m);
  PULSE_FUZZ_CHECK(first.size() == 1, "{} answers to one request", first.size());
  CheckResponse(m, first[0], server.max_scratch_bytes);
  PULSE_FUZZ_CHECK(SameAnswer(first[0], want),
                   "answer status {} (cur_ptr {:#x}, {} iterations, fault pc {} addr {:#x}) but the reference "
                   "says {} (cur_ptr {:#x}, {} iterations, fault pc {} addr {:#x})",
                   TraversalStatusName(first[0].status), first[0].cur_ptr, first[0].iterations, first[0].fault_pc,
                   first[0].fault_addr, TraversalStatusName(want.status), want.cur_ptr, want.iterations,
                   want.fault_pc, want.fault_addr);
  node.memory().CheckUntouched(original, m.tenant, "memory node");
  node.memory().CheckSame(predicted_memory, "memory node vs interpreter");

  // A retransmission: the same answer, and STOREs do not happen twice.
  std::vector<TraversalMessage> second = node.Send(m);
  PULSE_FUZZ_CHECK(second.size() == 1, "{} answers to a retransmission", second.size());
  PULSE_FUZZ_CHECK(SameAnswer(second[0], first[0]), "a retransmission got a different answer ({} then {})",
                   TraversalStatusName(first[0].status), TraversalStatusName(second[0].status));
  node.memory().CheckSame(predicted_memory, "memory node after a retransmission");

  // The program by hash only, as a later request would send it.
  if (!m.program.empty()) {
    TraversalMessage by_hash = m;
    by_hash.program.clear();
    by_hash.flags &= ~kFlagHasProgram;
    by_hash.request_id = m.request_id + 1;
    by_hash.program_hash = first[0].program_hash;
    std::vector<TraversalMessage> third = node.Send(by_hash);
    PULSE_FUZZ_CHECK(third.size() == 1, "{} answers to a request by program hash", third.size());
    CheckResponse(by_hash, third[0], server.max_scratch_bytes);
    node.memory().CheckUntouched(original, m.tenant, "memory node, request by hash");
  }
}

}  // namespace pulse::fuzz
