// The traversal message: one format for requests, responses and the
// continuations the switch forwards between memory nodes (seed 000 4.2
// "Network Stack": the response may be re-routed as a request).
//
// Encoding, version 4, little-endian:
//   u8  magic 0x70 ('p'), u8 version = 4, u8 kind (MessageKind),
//   u8  status (TraversalStatus), u16 flags, u16 legs,
//   u64 request_id, u32 cpu_node, u32 tenant,
//   u64 program_hash, u32 max_iterations, u32 iterations,
//   u64 cur_ptr, u32 fault_pc, u32 routing_version, u64 fault_addr,
//   u32 program_bytes, u32 scratch_bytes, u32 scratch_sent,
//   program (program_bytes, present iff kFlagHasProgram),
//   the scratch pad's first scratch_sent bytes.
// A scratch pad travels without its trailing zero bytes: scratch_bytes is
// the pad's size, scratch_sent <= scratch_bytes the bytes that follow (the
// last of them nonzero), and the receiver restores the zeros.  Scratch pads
// are mostly zero at the end (a scan's empty result array in its request,
// the unused part of it in the answer), so this is what keeps a 2 KB scan
// state from crossing the fabric twice per request.
// Decoding checks every field and names the first bad one.  Version 2 (the
// direct data path, docs/architecture.md section 6) gave the reserved word
// after fault_pc to routing_version and added kFlagRedirect.  Version 3
// (critical-path accounting, docs/evaluation.md) gave the reserved word after
// flags to legs.  Version 4 added scratch_sent.  Earlier versions are refused.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "pulse/status.h"
#include "pulse/traversal.h"

namespace pulse {

enum class MessageKind : uint8_t {
  kRequest = 1,   // CPU node -> switch -> memory node, or a forwarded continuation
  kResponse = 2,  // memory node -> switch -> CPU node (or back to a memory node)
};

enum MessageFlags : uint16_t {
  kFlagHasProgram = 1,  // the program's encoding travels in the message
  kFlagPulseAcc = 2,    // pulse-acc mode: "not local" returns to the CPU node
  kFlagHasStore = 4,    // the program writes: memory nodes suppress duplicates
  kFlagNoop = 8,        // answer at once without running (path round-trip probe)
  // A redirect (direct routing): a memory node got a request for a cur_ptr
  // it does not own and returns it unrun (status kNotLocal, state intact,
  // routing_version = its table's version); the sender refreshes its table
  // and re-sends through the switch, which routes by the authoritative one.
  kFlagRedirect = 16,
};
inline constexpr uint16_t kKnownMessageFlags = kFlagHasProgram | kFlagPulseAcc | kFlagHasStore | kFlagNoop | kFlagRedirect;

inline constexpr size_t kMessageHeaderBytes = 76;
inline constexpr uint32_t kMaxMessageProgramBytes = 64 * 1024;

struct TraversalMessage {
  MessageKind kind = MessageKind::kRequest;
  TraversalStatus status = TraversalStatus::kDone;
  uint16_t flags = 0;
  uint64_t request_id = 0;  // (cpu_node << 40) | per-node counter
  uint32_t cpu_node = 0;    // where the response goes
  TenantId tenant = 0;
  uint64_t program_hash = 0;
  uint32_t max_iterations = 0;
  uint32_t iterations = 0;  // completed so far, over all legs
  uint64_t cur_ptr = 0;
  uint32_t fault_pc = 0;
  // The version of the routing table (protocol/routing_table.h) the sender
  // routed this message with; 0: unknown (switch routing).
  uint32_t routing_version = 0;
  uint64_t fault_addr = 0;
  // Messages this traversal has travelled so far, this one included: the
  // CPU node sends a request with 1 (or one more than the answer it re-issues
  // from), and every memory node and the switch add 1 to each message they
  // send on (a continuation, a response, a redirect; via the switch a hop is
  // two).  The response brings the count home (AddLeg saturates).
  uint16_t legs = 0;
  std::vector<uint8_t> program;  // encoded program when kFlagHasProgram
  std::vector<uint8_t> scratch;
};

// Counts one more message sent on for `message` (legs, saturating at
// UINT16_MAX).
inline void AddLeg(TraversalMessage* message) {
  if (message->legs != UINT16_MAX) ++message->legs;
}

// Serializes a message.
std::vector<uint8_t> EncodeMessage(const TraversalMessage& message);
// The number of bytes EncodeMessage(message) has (the header, the program
// and the scratch pad up to its last nonzero byte).
size_t EncodedMessageBytes(const TraversalMessage& message);
// The bytes of `scratch` a message carries: up to and including its last
// nonzero byte (0 for an all-zero pad).
size_t ScratchBytesSent(std::span<const uint8_t> scratch);
// Serializes `message` into the first EncodedMessageBytes(message) bytes of
// `out`, the same bytes as EncodeMessage, without allocating (the ring path
// encodes an answer straight into its slot).  Returns the bytes written, or
// 0 (nothing written) if `out` is too short.
size_t EncodeMessageTo(const TraversalMessage& message, std::span<uint8_t> out);

// Parses a message; the scratch pad comes back at its full size
// (scratch_bytes), its untransmitted tail zero.  InvalidArgument naming the
// field on malformed or truncated input; scratch pads over max_scratch_bytes
// are rejected, and so is a scratch pad sent with a zero last byte (not the
// encoding EncodeMessage gives, which is the only one accepted).
Result<TraversalMessage> DecodeMessage(std::span<const uint8_t> bytes, uint32_t max_scratch_bytes);
// The same into `*out`, whose program and scratch vectors keep their
// capacity (no allocation when it suffices: the ring path decodes into
// recycled messages).  On error `*out` holds a partial message.
Status DecodeMessageInto(std::span<const uint8_t> bytes, uint32_t max_scratch_bytes, TraversalMessage* out);

}  // namespace pulse
