// The wire format of the far-memory agents (issue 17, seed 003 III-IV): one
// request and one reply layout for both hops,
//   host agent (AgentBackend) --kAmAgentRequest/kAmAgentReply--> `pulse agent`
//   `pulse agent` --kAmMemAgentRequest/kAmMemAgentReply--> memory agent
//                                       (a memory node extension, src/agent)
// Each op uses the fields its comment lists; the others travel as zero.
// Little-endian fixed header, then the variable parts (name, file, data),
// each length-prefixed.  A reply carries the request's id, a Status (code
// via StatusCodeToWire, and message), one integer and bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pulse/farmem/page_backend.h"
#include "pulse/net.h"
#include "pulse/status.h"

namespace pulse::farmem {

// Active-message ids (the others are in include/pulse/cluster.h: 1-3, 20-21).
inline constexpr uint16_t kAmAgentRequest = 30;
inline constexpr uint16_t kAmAgentReply = 31;
inline constexpr uint16_t kAmMemAgentRequest = 32;
inline constexpr uint16_t kAmMemAgentReply = 33;

enum class AgentOp : uint8_t {
  // host -> pulse agent
  kCreateRegion = 1,   // name, bytes, file, read_only -> value: region id
  kReadPages = 2,      // region, first, count, page_bytes, cls -> data
  kWritePages = 3,     // region, first, count, page_bytes, data
  kMarkReadOnly = 4,   // region
  kDestroyRegion = 5,  // region
  kStats = 6,          // -> data: JSON text of the agent's counters
  // pulse agent -> memory agent (addresses are far addresses of `tenant`)
  kMemPreload = 16,    // addr, bytes, file, first (= file offset): fill [addr, addr+bytes) from
                       // the file (zeros past its end; all zeros without a file) -> value: file bytes
  kMemRead = 17,       // addr, bytes, cls -> data
  kMemWrite = 18,      // addr, cls, data
};

struct AgentRequest {
  AgentOp op = AgentOp::kStats;
  uint64_t request_id = 0;
  uint64_t region = 0;
  uint64_t first = 0;
  uint32_t count = 0;
  uint32_t page_bytes = 0;
  PageClass cls = PageClass::kOnDemand;
  bool read_only = false;
  uint32_t tenant = 0;
  uint64_t addr = 0;
  uint64_t bytes = 0;
  std::string name;
  std::string file;
  std::vector<uint8_t> data;
};

// The offload agent's stamps on a reply to a host, in nanoseconds of the
// steady clock (CLOCK_MONOTONIC: one clock for every process of the
// machine, so the host can subtract its own stamps): when the request
// reached the agent's core and when the agent began sending the reply.
// 0 when not stamped (the memory agent's replies, refusals).  They split a
// host's request into its hop to the agent, the agent's part and the hop
// back (AgentHopStats, include/pulse/farmem/agent_backend.h).
struct AgentStamps {
  uint64_t received_ns = 0;
  uint64_t replied_ns = 0;
};

struct AgentReply {
  uint64_t request_id = 0;
  Status status;
  uint64_t value = 0;
  AgentStamps stamps;
  std::vector<uint8_t> data;
};

// A decoded reply whose bytes stay in the message (valid while it is): a
// page read's receiver copies them once, straight to their destination.
struct AgentReplyView {
  uint64_t request_id = 0;
  Status status;
  uint64_t value = 0;
  AgentStamps stamps;
  std::span<const uint8_t> data;
};

// Now on the clock of AgentStamps.
uint64_t AgentClockNanos();

// The longest name or file path a request may carry.
inline constexpr uint32_t kMaxAgentStringBytes = 4096;

std::vector<uint8_t> EncodeAgentRequest(const AgentRequest& request);
std::vector<uint8_t> EncodeAgentReply(const AgentReply& reply);
// Errors: InvalidArgument naming what is malformed (short, bad magic or
// version, an unknown op, a length past the end).
Result<AgentRequest> DecodeAgentRequest(std::span<const uint8_t> bytes);
Result<AgentReply> DecodeAgentReply(std::span<const uint8_t> bytes);
Result<AgentReplyView> DecodeAgentReplyView(std::span<const uint8_t> bytes);
// The reply a view shows, with a copy of its data or (with_data false)
// without it.
AgentReply ReplyOf(AgentReplyView view, bool with_data = true);

// The largest message of the host<->agent hop that goes eagerly: UCX copies
// it through the receiver's shared-memory FIFO at once.  Above UCX's default
// (8256 bytes here) it went by rendezvous, which between these processes
// has no zero-copy lane and runs as messages: the receiver's
// ready-to-receive has to wake the sender before the data moves.  Two pages
// of 64 KiB and their headers fit (docs/farmem_agent.md, "Where a fault's
// time goes").
inline constexpr uint64_t kAgentEagerBytes = 128 << 10;

// Sets `worker`'s UCX rendezvous threshold (RNDV_THRESH) to
// kAgentEagerBytes, unless UCX_RNDV_THRESH is in the environment or the
// worker's ucx_config already has one.  For the agent's request thread,
// whose replies go to lanes that each await one answer, so that a reply
// always fits the lane's FIFO.  Not for the lanes: the agent's FIFO is
// shared by every lane of every host on the machine, and an eager message
// that does not fit would wait in its sender until progress retries it,
// while a rendezvous' small request fits.
void SendPagesEagerly(net::WorkerOptions* worker);

// "on_demand", "prefetch", "write_back", "static_load".
const char* PageClassName(PageClass cls);

}  // namespace pulse::farmem
