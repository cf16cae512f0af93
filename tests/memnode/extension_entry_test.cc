// Ring entries for hosted services (memnode/extension_entry.h): the frame
// round-trips, and every header that cannot be right is refused by name.
#include "memnode/extension_entry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pulse::memnode {
namespace {

TEST(ExtensionEntry, RoundTripsAndIsToldApartFromATraversal) {
  const std::vector<uint8_t> message = {9, 8, 7, 6, 5};
  std::vector<uint8_t> entry = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // replaced, not appended to
  EncodeExtensionEntry(50, message, &entry);
  ASSERT_EQ(entry.size(), kExtensionEntryHeaderBytes + message.size());
  EXPECT_TRUE(IsExtensionEntry(entry));
  auto e = DecodeExtensionEntry(entry);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->am, 50);
  EXPECT_EQ(std::vector<uint8_t>(e->message.begin(), e->message.end()), message);
  // An empty message is a valid entry; a traversal message (0x70 first) is
  // not a service entry, nor is nothing.
  EncodeExtensionEntry(65535, {}, &entry);
  auto empty = DecodeExtensionEntry(entry);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->am, 65535);
  EXPECT_TRUE(empty->message.empty());
  EXPECT_FALSE(IsExtensionEntry(std::vector<uint8_t>{0x70, 4, 1}));
  EXPECT_FALSE(IsExtensionEntry(std::vector<uint8_t>{}));
}

TEST(ExtensionEntry, EveryBadHeaderIsRefusedByName) {
  std::vector<uint8_t> entry;
  EncodeExtensionEntry(7, std::vector<uint8_t>{1, 2}, &entry);
  for (size_t n = 0; n < kExtensionEntryHeaderBytes; ++n) {
    auto e = DecodeExtensionEntry(std::span<const uint8_t>(entry.data(), n));
    ASSERT_FALSE(e.ok()) << n << " bytes";
    EXPECT_EQ(e.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(e.status().message().find("shorter than its 4-byte header"), std::string::npos) << e.status().ToString();
  }
  std::vector<uint8_t> bad_magic = entry;
  bad_magic[0] = 0x70;
  auto m = DecodeExtensionEntry(bad_magic);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("bad magic 112"), std::string::npos) << m.status().ToString();
  std::vector<uint8_t> reserved = entry;
  reserved[1] = 3;
  auto r = DecodeExtensionEntry(reserved);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("reserved byte is 3"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace pulse::memnode
