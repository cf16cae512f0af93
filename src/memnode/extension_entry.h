// A ring entry for a hosted service (extension.h) instead of the engine:
// how one memory node hands another a service's request by a one-sided
// write into its ring (the chain-replicated transactions of src/tx forward
// a logged transaction to the next replica this way, seed 002 IV-B)
// rather than by an active message.
//
//   u8 magic 0x65 ('e'), u8 reserved = 0, u16 am (the service's
//   request_am()), then the message that would have gone on that id.
//
// A traversal message starts with 0x70 (pulse/protocol.h), so the first
// byte tells the ring's two kinds of entry apart.  The memory node answers
// such an entry in its slot at once, with an empty payload and the status
// of the hand-over (OK: the service has the request, which it answers, if
// at all, by message as it would have; anything else: the service never
// saw it, and the sender may send it by message instead).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "pulse/status.h"

namespace pulse::memnode {

inline constexpr uint8_t kExtensionEntryMagic = 0x65;
inline constexpr size_t kExtensionEntryHeaderBytes = 4;

// A decoded entry: the service's id and its message (a view into the entry).
struct ExtensionEntry {
  uint16_t am = 0;
  std::span<const uint8_t> message;
};

// Whether `entry` is framed for a service (its first byte), not the engine.
inline bool IsExtensionEntry(std::span<const uint8_t> entry) {
  return !entry.empty() && entry[0] == kExtensionEntryMagic;
}

// Frames `message` for service `am` into `out` (replacing its contents).
void EncodeExtensionEntry(uint16_t am, std::span<const uint8_t> message, std::vector<uint8_t>* out);

// The entry's service and message.  Errors: InvalidArgument naming what is
// wrong (shorter than its header, bad magic, a reserved byte set).
Result<ExtensionEntry> DecodeExtensionEntry(std::span<const uint8_t> entry);

}  // namespace pulse::memnode
