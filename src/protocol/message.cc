#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "protocol/byte_codec.h"
#include "pulse/protocol.h"

namespace pulse {
namespace {

using protocol::ByteReader;

constexpr uint8_t kMagic = 0x70;
constexpr uint8_t kVersion = 4;

Status Bad(const std::string& what) { return Status::InvalidArgument("message: " + what); }

}  // namespace

size_t ScratchBytesSent(std::span<const uint8_t> scratch) {
  size_t n = scratch.size();
  // A word at a time over the zero tail, then the bytes of the last word.
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, scratch.data() + n - 8, 8);
    if (word != 0) break;
    n -= 8;
  }
  while (n > 0 && scratch[n - 1] == 0) --n;
  return n;
}

namespace {

size_t EncodedBytes(const TraversalMessage& m, size_t scratch_sent) {
  return kMessageHeaderBytes + m.program.size() + scratch_sent;
}

// EncodeMessageTo with the pad's sent length already known (the pad is
// scanned once per encoding).
size_t Encode(const TraversalMessage& m, size_t scratch_sent, std::span<uint8_t> out) {
  const size_t bytes = EncodedBytes(m, scratch_sent);
  if (out.size() < bytes) return 0;
  // Field widths are the decoder's, written out so that a change of a
  // member's C++ type cannot change the wire.
  protocol::SpanWriter w(out);
  w.Put<uint8_t>(kMagic);
  w.Put<uint8_t>(kVersion);
  w.Put<uint8_t>(static_cast<uint8_t>(m.kind));
  w.Put<uint8_t>(static_cast<uint8_t>(m.status));
  w.Put<uint16_t>(static_cast<uint16_t>(m.program.empty() ? m.flags & ~kFlagHasProgram : m.flags | kFlagHasProgram));
  w.Put<uint16_t>(m.legs);
  w.Put<uint64_t>(m.request_id);
  w.Put<uint32_t>(m.cpu_node);
  w.Put<uint32_t>(m.tenant);
  w.Put<uint64_t>(m.program_hash);
  w.Put<uint32_t>(m.max_iterations);
  w.Put<uint32_t>(m.iterations);
  w.Put<uint64_t>(m.cur_ptr);
  w.Put<uint32_t>(m.fault_pc);
  w.Put<uint32_t>(m.routing_version);
  w.Put<uint64_t>(m.fault_addr);
  w.Put<uint32_t>(static_cast<uint32_t>(m.program.size()));
  w.Put<uint32_t>(static_cast<uint32_t>(m.scratch.size()));
  w.Put<uint32_t>(static_cast<uint32_t>(scratch_sent));
  w.Append(m.program);
  w.Append(std::span<const uint8_t>(m.scratch).first(scratch_sent));
  assert(w.written() == bytes);
  return bytes;
}

}  // namespace

size_t EncodedMessageBytes(const TraversalMessage& m) { return EncodedBytes(m, ScratchBytesSent(m.scratch)); }

size_t EncodeMessageTo(const TraversalMessage& m, std::span<uint8_t> out) {
  return Encode(m, ScratchBytesSent(m.scratch), out);
}

std::vector<uint8_t> EncodeMessage(const TraversalMessage& m) {
  const size_t scratch_sent = ScratchBytesSent(m.scratch);
  std::vector<uint8_t> out(EncodedBytes(m, scratch_sent));
  Encode(m, scratch_sent, out);
  return out;
}

Status DecodeMessageInto(std::span<const uint8_t> bytes, uint32_t max_scratch_bytes, TraversalMessage* out) {
  if (bytes.size() < kMessageHeaderBytes)
    return Bad(fmt::format("{} bytes is shorter than the {}-byte header", bytes.size(), kMessageHeaderBytes));
  ByteReader r(bytes);
  if (r.Get<uint8_t>() != kMagic) return Bad("bad magic (not a pulse traversal message)");
  const uint8_t version = r.Get<uint8_t>();
  if (version != kVersion) return Bad(fmt::format("unsupported version {} (this build speaks {})", version, kVersion));
  TraversalMessage& m = *out;
  const uint8_t kind = r.Get<uint8_t>();
  if (kind != static_cast<uint8_t>(MessageKind::kRequest) && kind != static_cast<uint8_t>(MessageKind::kResponse))
    return Bad(fmt::format("unknown kind {}", kind));
  m.kind = static_cast<MessageKind>(kind);
  const uint8_t status = r.Get<uint8_t>();
  if (status > static_cast<uint8_t>(TraversalStatus::kOutcomeUnknown))
    return Bad(fmt::format("unknown status {}", status));
  m.status = static_cast<TraversalStatus>(status);
  m.flags = r.Get<uint16_t>();
  if (m.flags & ~kKnownMessageFlags)
    return Bad(fmt::format("unknown flags {:#x}", m.flags));
  m.legs = r.Get<uint16_t>();
  m.request_id = r.Get<uint64_t>();
  m.cpu_node = r.Get<uint32_t>();
  m.tenant = r.Get<uint32_t>();
  m.program_hash = r.Get<uint64_t>();
  m.max_iterations = r.Get<uint32_t>();
  m.iterations = r.Get<uint32_t>();
  m.cur_ptr = r.Get<uint64_t>();
  m.fault_pc = r.Get<uint32_t>();
  m.routing_version = r.Get<uint32_t>();
  m.fault_addr = r.Get<uint64_t>();
  const uint32_t program_bytes = r.Get<uint32_t>();
  const uint32_t scratch_bytes = r.Get<uint32_t>();
  const uint32_t scratch_sent = r.Get<uint32_t>();
  if (program_bytes > kMaxMessageProgramBytes)
    return Bad(fmt::format("program_bytes {} exceeds the limit {}", program_bytes, kMaxMessageProgramBytes));
  if (scratch_bytes > max_scratch_bytes)
    return Bad(fmt::format("scratch_bytes {} exceeds the scratch pad limit {}", scratch_bytes, max_scratch_bytes));
  if (scratch_sent > scratch_bytes)
    return Bad(fmt::format("scratch_sent {} exceeds scratch_bytes {}", scratch_sent, scratch_bytes));
  if (((m.flags & kFlagHasProgram) != 0) != (program_bytes != 0))
    return Bad("program_bytes disagrees with the has-program flag");
  if (r.remaining() != uint64_t{program_bytes} + scratch_sent)
    return Bad(fmt::format("header announces {} + {} payload bytes but {} follow", program_bytes, scratch_sent,
                           r.remaining()));
  // The vectors' capacity is reused (the header was read).
  const std::span<const uint8_t> program = bytes.subspan(kMessageHeaderBytes, program_bytes);
  const std::span<const uint8_t> scratch = bytes.subspan(kMessageHeaderBytes + program_bytes, scratch_sent);
  if (!scratch.empty() && scratch.back() == 0)
    return Bad("scratch_sent includes a trailing zero byte (the pad is sent without its zero tail)");
  m.program.assign(program.begin(), program.end());
  // One allocation at most: the whole pad, zero, then the bytes sent.
  m.scratch.assign(scratch_bytes, 0);
  std::copy(scratch.begin(), scratch.end(), m.scratch.begin());
  return Status::Ok();
}

Result<TraversalMessage> DecodeMessage(std::span<const uint8_t> bytes, uint32_t max_scratch_bytes) {
  TraversalMessage m;
  PULSE_RETURN_IF_ERROR(DecodeMessageInto(bytes, max_scratch_bytes, &m));
  return m;
}

}  // namespace pulse
