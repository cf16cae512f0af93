// The batch envelope (issue 14, message aggregation): several traversal
// messages that are ready at once for the same destination travel in one
// active message, kAmTraversalBatch (include/pulse/cluster.h).  A sender
// never waits to fill an envelope: it coalesces what is already queued for
// one destination when it next sends (the end of a memory node's engine
// pass, a CPU node's next turn of its event loop, a switch's network pass;
// docs/architecture.md section 6).  A single ready message travels alone
// as a plain kAmTraversal message, so nothing changes when nothing is
// batched.
//
// Encoding, version 1, little-endian:
//   u8  magic 0x62 ('b'), u8 version = 1,
//   u16 inner_am: the active-message id every inner message would have
//       travelled on alone (kAmTraversal; receivers refuse any other),
//   u32 count, then count x (u32 length, length bytes of one message as
//   EncodeMessage wrote it).
// Decoding checks every length against the bytes that are there (a count is
// never trusted to size anything), requires 2 <= count <= kMaxBatchMessages,
// non-empty inner messages that fill the envelope exactly, and at most
// kMaxBatchBytes in all.  A malformed envelope is refused as a whole
// (nothing in it is handled); the inner messages of a good one are then
// decoded and handled one by one, exactly as if each had arrived alone.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "pulse/status.h"

namespace pulse {

inline constexpr size_t kBatchHeaderBytes = 8;
// What any receiver accepts; BatchLimits must stay within these.
inline constexpr uint32_t kMaxBatchMessages = 256;
inline constexpr uint32_t kMaxBatchBytes = 1024 * 1024;

// How much one envelope may carry (the sender's choice).  Defaults: 16
// messages and 8 KiB, so an envelope stays within UCX's eager protocol
// over TCP (a larger payload goes by rendezvous, one more round trip).
struct BatchLimits {
  // 0 or 1: no batching (every message travels alone).
  uint32_t max_messages = 16;
  // Envelope bytes, header included; a message larger than this travels
  // alone.
  uint32_t max_bytes = 8 * 1024;

  bool enabled() const { return max_messages > 1; }
  // The limits clamped to what receivers accept.
  BatchLimits Clamped() const;
};

// `configured`, or what $PULSE_BATCH says over it (for benchmarks and
// tests across processes): "off" (no batching), or "messages=N,bytes=B"
// (either part may be left out; it keeps the configured value).
// InvalidArgument naming the bad part for anything else.
Result<BatchLimits> BatchLimitsFromEnvironment(BatchLimits configured);

// Bytes an envelope holding messages of these sizes takes.
size_t BatchEnvelopeBytes(std::span<const std::vector<uint8_t>> messages);

// Serializes `messages` (each as EncodeMessage wrote it, at least two,
// at most kMaxBatchMessages) into one envelope for `inner_am`.
std::vector<uint8_t> EncodeBatch(uint16_t inner_am, std::span<const std::vector<uint8_t>> messages);

struct DecodedBatch {
  uint16_t inner_am = 0;
  // Views into the decoded bytes: valid while they are.
  std::vector<std::span<const uint8_t>> messages;
};

// Parses an envelope.  InvalidArgument naming the bad field on a bad magic
// or version, a count outside [2, kMaxBatchMessages], an empty or
// truncated inner message, bytes left over, or more than kMaxBatchBytes.
Result<DecodedBatch> DecodeBatch(std::span<const uint8_t> bytes);

}  // namespace pulse
