// Message ids and data shared by the net tests and the net_peer helper.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pulse::net::testing {

inline constexpr uint16_t kEcho = 1;       // reply with the same payload as kEchoReply
inline constexpr uint16_t kEchoReply = 2;
inline constexpr uint16_t kDescribe = 3;   // reply kDescribeReply: the peer's endpoint info
inline constexpr uint16_t kDescribeReply = 4;
inline constexpr uint16_t kRegion = 10;    // peer -> us: u64 address, u64 size, rkey bytes

// Size of net_peer's registered region in "rma" mode.
inline constexpr size_t kPeerRegionSize = 1 << 20;

// The byte at offset i of net_peer's RMA region (and of the tests' regions).
inline uint8_t PatternByte(size_t i) { return static_cast<uint8_t>(i * 7 + 3); }

}  // namespace pulse::net::testing
