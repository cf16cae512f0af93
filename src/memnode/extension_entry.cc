// Ring entries for hosted services (extension_entry.h).
#include "memnode/extension_entry.h"

#include <string>

#include "protocol/byte_codec.h"

namespace pulse::memnode {

void EncodeExtensionEntry(uint16_t am, std::span<const uint8_t> message, std::vector<uint8_t>* out) {
  out->resize(kExtensionEntryHeaderBytes + message.size());
  protocol::SpanWriter w(*out);
  w.Put<uint8_t>(kExtensionEntryMagic);
  w.Put<uint8_t>(0);
  w.Put<uint16_t>(am);
  w.Append(message);
}

Result<ExtensionEntry> DecodeExtensionEntry(std::span<const uint8_t> entry) {
  protocol::ByteReader r(entry);
  const uint8_t magic = r.Get<uint8_t>();
  const uint8_t reserved = r.Get<uint8_t>();
  ExtensionEntry e;
  e.am = r.Get<uint16_t>();
  if (!r.ok())
    return Status::InvalidArgument("service ring entry: " + std::to_string(entry.size()) +
                                   " bytes, shorter than its 4-byte header");
  if (magic != kExtensionEntryMagic)
    return Status::InvalidArgument("service ring entry: bad magic " + std::to_string(magic));
  if (reserved != 0) return Status::InvalidArgument("service ring entry: reserved byte is " + std::to_string(reserved));
  e.message = entry.subspan(kExtensionEntryHeaderBytes);
  return e;
}

}  // namespace pulse::memnode
