#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "pulse/protocol.h"

namespace pulse {
namespace {

TraversalMessage Sample() {
  TraversalMessage m;
  m.kind = MessageKind::kResponse;
  m.status = TraversalStatus::kNotLocal;
  m.flags = kFlagPulseAcc | kFlagHasStore;
  m.request_id = (uint64_t{3} << 40) | 77;
  m.cpu_node = 3;
  m.tenant = 9;
  m.program_hash = 0x1234567890abcdefull;
  m.max_iterations = 100;
  m.iterations = 42;
  m.cur_ptr = 0xfeedface0000ull;
  m.fault_pc = 5;
  m.routing_version = 17;
  m.legs = 5;
  m.fault_addr = 0xdead;
  m.program = {1, 2, 3, 4};
  m.scratch.assign(64, 0xab);
  return m;
}

void ExpectEqual(const TraversalMessage& a, const TraversalMessage& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.flags | kFlagHasProgram, b.flags | kFlagHasProgram);
  EXPECT_EQ(a.request_id, b.request_id);
  EXPECT_EQ(a.cpu_node, b.cpu_node);
  EXPECT_EQ(a.tenant, b.tenant);
  EXPECT_EQ(a.program_hash, b.program_hash);
  EXPECT_EQ(a.max_iterations, b.max_iterations);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_EQ(a.cur_ptr, b.cur_ptr);
  EXPECT_EQ(a.fault_pc, b.fault_pc);
  EXPECT_EQ(a.routing_version, b.routing_version);
  EXPECT_EQ(a.legs, b.legs);
  EXPECT_EQ(a.fault_addr, b.fault_addr);
  EXPECT_EQ(a.program, b.program);
  EXPECT_EQ(a.scratch, b.scratch);
}

// The ring path encodes answers into a reused buffer and decodes entries
// into recycled messages: the same bytes and the same message as the
// allocating calls, whatever the buffer or the recycled message held.
TEST(Message, EncodeToAndDecodeIntoMatchTheAllocatingCalls) {
  const TraversalMessage m = Sample();
  const std::vector<uint8_t> bytes = EncodeMessage(m);
  ASSERT_EQ(EncodedMessageBytes(m), bytes.size());
  std::vector<uint8_t> buffer(bytes.size() + 10, 0xee);
  ASSERT_EQ(EncodeMessageTo(m, buffer), bytes.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), buffer.begin()));
  EXPECT_EQ(buffer.back(), 0xee);  // nothing past the message
  // The layout on the wire: magic, version, then request_id at byte 8.
  EXPECT_EQ(bytes[0], 0x70);
  EXPECT_EQ(bytes[1], 4);
  uint64_t id = 0;
  std::memcpy(&id, bytes.data() + 8, 8);
  EXPECT_EQ(id, m.request_id);
  // Too short: nothing written.
  std::vector<uint8_t> short_buffer(bytes.size() - 1, 0xee);
  EXPECT_EQ(EncodeMessageTo(m, short_buffer), 0u);
  EXPECT_TRUE(std::all_of(short_buffer.begin(), short_buffer.end(), [](uint8_t b) { return b == 0xee; }));

  // Into a message that held another one, with larger vectors.
  TraversalMessage other;
  other.request_id = 1;
  other.program.assign(300, 7);
  other.scratch.assign(900, 9);
  TraversalMessage recycled = other;
  ASSERT_TRUE(DecodeMessageInto(bytes, 4096, &recycled).ok());
  ExpectEqual(*DecodeMessage(bytes, 4096), recycled);
  // A message without a program leaves none behind either.
  TraversalMessage no_program = m;
  no_program.program.clear();
  recycled = other;
  ASSERT_TRUE(DecodeMessageInto(EncodeMessage(no_program), 4096, &recycled).ok());
  EXPECT_TRUE(recycled.program.empty());
  ExpectEqual(no_program, recycled);
  // Errors as DecodeMessage's.
  std::vector<uint8_t> bad = bytes;
  bad[0] = 0;
  EXPECT_EQ(DecodeMessageInto(bad, 4096, &recycled).code(), DecodeMessage(bad, 4096).status().code());
  EXPECT_EQ(DecodeMessageInto(bytes, 16, &recycled).code(), Status::Code::kInvalidArgument);
}

TEST(Message, RoundTrips) {
  TraversalMessage m = Sample();
  auto bytes = EncodeMessage(m);
  EXPECT_EQ(bytes.size(), kMessageHeaderBytes + 4 + 64);
  auto back = DecodeMessage(bytes, 4096);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectEqual(m, *back);
  EXPECT_TRUE(back->flags & kFlagHasProgram);
  m.program.clear();  // hash-only request
  back = DecodeMessage(EncodeMessage(m), 4096);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->flags & kFlagHasProgram);
}

TEST(Message, CarriesTheRoutingVersionAndTheRedirectFlag) {
  TraversalMessage m = Sample();
  m.flags |= kFlagRedirect;
  m.routing_version = 0xfffffffe;
  auto back = DecodeMessage(EncodeMessage(m), 4096);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->routing_version, 0xfffffffeu);
  EXPECT_TRUE(back->flags & kFlagRedirect);
}

// Version 3: the word after flags counts the messages the traversal has
// travelled (critical-path accounting), every value is valid.
TEST(Message, CarriesTheLegCountAndAddLegSaturates) {
  TraversalMessage m = Sample();
  m.legs = 0xfffe;
  auto back = DecodeMessage(EncodeMessage(m), 4096);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->legs, 0xfffe);
  AddLeg(&m);
  EXPECT_EQ(m.legs, 0xffff);
  AddLeg(&m);
  EXPECT_EQ(m.legs, 0xffff);
  const auto bytes = EncodeMessage(m);
  EXPECT_EQ(bytes[6], 0xff);
  EXPECT_EQ(bytes[7], 0xff);
}

struct Corruption {
  size_t offset;
  uint8_t value;
  const char* fragment;
};

TEST(Message, NamesTheBadField) {
  const auto good = EncodeMessage(Sample());
  for (const Corruption& c : {Corruption{0, 0x00, "magic"}, Corruption{1, 9, "version 9"},
                              Corruption{2, 7, "kind 7"}, Corruption{3, 200, "status 200"},
                              Corruption{4, 0x80, "flags"}, Corruption{1, 2, "version 2"},
                              Corruption{1, 1, "version 1"}, Corruption{1, 3, "version 3"},
                              Corruption{70, 1, "scratch_bytes"}, Corruption{67, 1, "program_bytes"},
                              Corruption{72, 65, "scratch_sent 65 exceeds scratch_bytes 64"},
                              Corruption{72, 63, "header announces 4 + 63"}}) {
    auto bad = good;
    bad[c.offset] = c.value;
    auto r = DecodeMessage(bad, 4096);
    ASSERT_FALSE(r.ok()) << "offset " << c.offset;
    EXPECT_NE(r.status().message().find(c.fragment), std::string::npos)
        << r.status().message() << " (wanted " << c.fragment << ")";
  }
}

// Version 4: a scratch pad travels up to its last nonzero byte and comes
// back whole, its tail zero, whatever the recycled message held there.
TEST(Message, AScratchPadTravelsWithoutItsZeroTail) {
  std::mt19937_64 rng(11);
  TraversalMessage recycled = Sample();
  recycled.scratch.assign(3000, 0xcd);
  for (size_t size : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{64}, size_t{2240}}) {
    for (int trial = 0; trial < 40; ++trial) {
      TraversalMessage m = Sample();
      m.scratch.assign(size, 0);
      // The last nonzero byte at a random place (or none).
      const size_t last = size == 0 ? 0 : rng() % (size + 1);
      for (size_t i = 0; i < last; ++i) m.scratch[i] = (rng() % 3 == 0) ? 0 : static_cast<uint8_t>(rng());
      if (last > 0) m.scratch[last - 1] = static_cast<uint8_t>(1 + rng() % 255);
      SCOPED_TRACE(testing::Message() << "size " << size << " last nonzero at " << last);
      EXPECT_EQ(ScratchBytesSent(m.scratch), last);
      const std::vector<uint8_t> bytes = EncodeMessage(m);
      EXPECT_EQ(bytes.size(), kMessageHeaderBytes + m.program.size() + last);
      EXPECT_EQ(EncodedMessageBytes(m), bytes.size());
      uint32_t scratch_bytes = 0, scratch_sent = 0;
      std::memcpy(&scratch_bytes, bytes.data() + 68, 4);
      std::memcpy(&scratch_sent, bytes.data() + 72, 4);
      EXPECT_EQ(scratch_bytes, size);
      EXPECT_EQ(scratch_sent, last);
      ASSERT_TRUE(DecodeMessageInto(bytes, 4096, &recycled).ok());
      ExpectEqual(m, recycled);
    }
  }
}

// Only the encoding EncodeMessage gives is accepted: a pad sent with a zero
// last byte would decode to the same message as a shorter one.
TEST(Message, RefusesAScratchPadSentWithAZeroLastByte) {
  TraversalMessage m = Sample();
  std::vector<uint8_t> bytes = EncodeMessage(m);
  bytes.back() = 0;
  auto r = DecodeMessage(bytes, 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("trailing zero"), std::string::npos) << r.status().message();
}

TEST(Message, RejectsTruncationAndOversizedScratch) {
  const auto good = EncodeMessage(Sample());
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = DecodeMessage(std::span<const uint8_t>(good.data(), n), 4096);
    EXPECT_FALSE(r.ok()) << n;
  }
  auto r = DecodeMessage(good, 32);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exceeds the scratch pad limit 32"), std::string::npos);
}

TEST(Message, RandomMutationsNeverCrashAndValidOnesRoundTrip) {
  std::mt19937_64 rng(5);
  const auto good = EncodeMessage(Sample());
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    auto bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0) bytes.resize(rng() % (bytes.size() + 16), 0);
    auto r = DecodeMessage(bytes, 4096);
    if (r.ok()) {
      ++accepted;
      EXPECT_EQ(EncodeMessage(*r), bytes);  // anything accepted re-encodes to the same bytes
    }
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace pulse
