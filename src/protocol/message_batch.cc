#include "pulse/message_batch.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "protocol/byte_codec.h"

namespace pulse {
namespace {

using protocol::ByteReader;
using protocol::ByteWriter;

constexpr uint8_t kMagic = 0x62;  // 'b'
constexpr uint8_t kVersion = 1;
constexpr char kEnvironmentVariable[] = "PULSE_BATCH";

Status Bad(const std::string& what) { return Status::InvalidArgument("batch envelope: " + what); }

// A decimal number in [1, max]; nullopt otherwise.
std::optional<uint32_t> ParseCount(std::string_view text, uint32_t max) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v == 0 || v > max) return std::nullopt;
  return static_cast<uint32_t>(v);
}

}  // namespace

BatchLimits BatchLimits::Clamped() const {
  BatchLimits out = *this;
  out.max_messages = std::min(out.max_messages, kMaxBatchMessages);
  out.max_bytes = std::min(out.max_bytes, kMaxBatchBytes);
  return out;
}

Result<BatchLimits> BatchLimitsFromEnvironment(BatchLimits configured) {
  BatchLimits limits = configured;
  const char* env = std::getenv(kEnvironmentVariable);
  if (env == nullptr || *env == '\0') return limits;
  const std::string_view spec(env);
  if (spec == "off") {
    limits.max_messages = 1;
    return limits;
  }
  size_t at = 0;
  while (at <= spec.size()) {
    const size_t comma = std::min(spec.find(',', at), spec.size());
    const std::string_view part = spec.substr(at, comma - at);
    const size_t eq = part.find('=');
    const std::string_view key = part.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    std::optional<uint32_t> n;
    if (key == "messages" && (n = ParseCount(value, kMaxBatchMessages))) {
      limits.max_messages = *n;
    } else if (key == "bytes" && (n = ParseCount(value, kMaxBatchBytes))) {
      limits.max_bytes = *n;
    } else {
      return Status::InvalidArgument(fmt::format(
          "${}: '{}' is not off, messages=N (1..{}) or bytes=B (1..{})", kEnvironmentVariable, part,
          kMaxBatchMessages, kMaxBatchBytes));
    }
    at = comma + 1;
  }
  return limits;
}

size_t BatchEnvelopeBytes(std::span<const std::vector<uint8_t>> messages) {
  size_t n = kBatchHeaderBytes;
  for (const auto& m : messages) n += sizeof(uint32_t) + m.size();
  return n;
}

std::vector<uint8_t> EncodeBatch(uint16_t inner_am, std::span<const std::vector<uint8_t>> messages) {
  ByteWriter w(BatchEnvelopeBytes(messages));
  w.Put<uint8_t>(kMagic);
  w.Put<uint8_t>(kVersion);
  w.Put<uint16_t>(inner_am);
  w.Put<uint32_t>(static_cast<uint32_t>(messages.size()));
  for (const auto& m : messages) w.PutBytes(m);
  return w.Take();
}

Result<DecodedBatch> DecodeBatch(std::span<const uint8_t> bytes) {
  if (bytes.size() < kBatchHeaderBytes)
    return Bad(fmt::format("{} bytes is shorter than the {}-byte header", bytes.size(), kBatchHeaderBytes));
  if (bytes.size() > kMaxBatchBytes)
    return Bad(fmt::format("{} bytes exceeds the limit {}", bytes.size(), kMaxBatchBytes));
  ByteReader r(bytes);
  if (r.Get<uint8_t>() != kMagic) return Bad("bad magic (not a pulse batch envelope)");
  const uint8_t version = r.Get<uint8_t>();
  if (version != kVersion) return Bad(fmt::format("unsupported version {} (this build speaks {})", version, kVersion));
  DecodedBatch out;
  out.inner_am = r.Get<uint16_t>();
  const uint32_t count = r.Get<uint32_t>();
  if (count < 2 || count > kMaxBatchMessages)
    return Bad(fmt::format("count {} outside [2, {}]", count, kMaxBatchMessages));
  // Each inner message takes at least 5 bytes (its length and one byte): a
  // count the bytes cannot hold is a lie, refused before anything is sized by it.
  if (uint64_t{count} * (sizeof(uint32_t) + 1) > r.remaining())
    return Bad(fmt::format("count {} cannot fit in the {} bytes that follow", count, r.remaining()));
  out.messages.reserve(count);
  size_t at = kBatchHeaderBytes;
  for (uint32_t i = 0; i < count; ++i) {
    ByteReader length_reader(bytes.subspan(at));
    const uint32_t length = length_reader.Get<uint32_t>();
    if (!length_reader.ok()) return Bad(fmt::format("message {} of {}: truncated length", i, count));
    at += sizeof(uint32_t);
    if (length == 0) return Bad(fmt::format("message {} of {} is empty", i, count));
    if (length > bytes.size() - at)
      return Bad(fmt::format("message {} of {} announces {} bytes but {} follow", i, count, length,
                             bytes.size() - at));
    out.messages.push_back(bytes.subspan(at, length));
    at += length;
  }
  if (at != bytes.size()) return Bad(fmt::format("{} bytes left after message {}", bytes.size() - at, count));
  return out;
}

}  // namespace pulse
