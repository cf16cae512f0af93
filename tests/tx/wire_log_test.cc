// The transactions' wire and durable log without a cluster: strict
// decoding (every count and length checked against the bytes present,
// nothing left over) and the log's replay (whole records in order, a torn
// tail cut off and appended after).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "pulse/cluster.h"
#include "tx/tx_log.h"
#include "tx/tx_wire.h"

namespace pulse::tx {
namespace {

ExecuteBody SampleBody() {
  ExecuteBody b;
  b.reads = {ReadOp{0, 64}, ReadOp{128, 8}};
  b.writes = {WriteOp{64, std::vector<uint8_t>(64, 0xab)}, WriteOp{4096, std::vector<uint8_t>{1, 2, 3}}};
  return b;
}

TEST(TxWire, ExecuteRoundTripsAndEveryTruncationIsRejected) {
  const Header h{Kind::kExecute, 0, 7, 99, 0x1000};
  const std::vector<uint8_t> bytes = EncodeExecute(h, SampleBody());
  std::span<const uint8_t> body;
  auto header = DecodeHeader(bytes, &body);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->tenant, 7u);
  EXPECT_EQ(header->request_id, 99u);
  Malformed why{};
  auto decoded = DecodeExecute(body, &why);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->writes.size(), 2u);
  EXPECT_EQ(decoded->writes[1].data, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(decoded->reads[1].offset, 128u);
  // Every shorter body is malformed, and so is one with a byte more.
  for (size_t n = 0; n < body.size(); ++n)
    EXPECT_FALSE(DecodeExecute(body.first(n), &why).ok()) << "a body cut to " << n << " bytes was accepted";
  std::vector<uint8_t> longer(body.begin(), body.end());
  longer.push_back(0);
  auto trailing = DecodeExecute(longer, &why);
  EXPECT_FALSE(trailing.ok());
  EXPECT_EQ(why, Malformed::kTrailing);
}

// A forward carries the client's request id, the stable point and the
// transaction's result (so any member can answer a retry after the head
// died); decoding stays strict over the new fields.
TEST(TxWire, ForwardRoundTripsWithItsResultAndEveryTruncationIsRejected) {
  ForwardBody f;
  f.seq = 12;
  f.request_id = MakeRequestId(3, 77);
  f.stable = 9;
  f.values = {std::vector<uint8_t>(64, 0x5a), std::vector<uint8_t>{}, std::vector<uint8_t>{7}};
  f.writes = SampleBody().writes;
  const std::vector<uint8_t> bytes = EncodeForward(Header{Kind::kForward, 0, 1, 0, 0x2000}, f);
  std::span<const uint8_t> body;
  ASSERT_TRUE(DecodeHeader(bytes, &body).ok());
  Malformed why{};
  auto d = DecodeForward(body, &why);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->seq, 12u);
  EXPECT_EQ(d->request_id, MakeRequestId(3, 77));
  EXPECT_EQ(d->stable, 9u);
  EXPECT_EQ(d->values, f.values);
  ASSERT_EQ(d->writes.size(), 2u);
  EXPECT_EQ(d->writes[0].data, f.writes[0].data);
  for (size_t n = 0; n < body.size(); ++n)
    EXPECT_FALSE(DecodeForward(body.first(n), &why).ok()) << "a forward cut to " << n << " bytes was accepted";
  std::vector<uint8_t> longer(body.begin(), body.end());
  longer.push_back(0);
  EXPECT_FALSE(DecodeForward(longer, &why).ok());
  EXPECT_EQ(why, Malformed::kTrailing);
  // A value count beyond the limit is named.
  std::vector<uint8_t> mutated(body.begin(), body.end());
  const uint32_t huge = kMaxTuples + 1;
  std::memcpy(mutated.data() + 24, &huge, 4);  // after seq, request id, stable
  auto bad = DecodeForward(mutated, &why);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad n"), std::string::npos) << bad.status().ToString();
}

TEST(TxWire, CountsAndLengthsBeyondTheLimitsAreNamed) {
  ExecuteBody b;
  b.writes.push_back(WriteOp{0, std::vector<uint8_t>(8, 1)});
  std::vector<uint8_t> bytes = EncodeExecute(Header{}, b);
  std::span<const uint8_t> body;
  ASSERT_TRUE(DecodeHeader(bytes, &body).ok());
  std::vector<uint8_t> mutated(body.begin(), body.end());
  // reads count (first u32) too large
  const uint32_t huge = kMaxTuples + 1;
  std::memcpy(mutated.data(), &huge, 4);
  Malformed why{};
  auto r = DecodeExecute(mutated, &why);
  EXPECT_EQ(why, Malformed::kCount);
  EXPECT_NE(r.status().message().find("bad n"), std::string::npos) << r.status().ToString();
  // a write of length 0
  mutated.assign(body.begin(), body.end());
  const uint32_t zero = 0;
  std::memcpy(mutated.data() + 4 + 4 + 8, &zero, 4);
  r = DecodeExecute(mutated, &why);
  EXPECT_EQ(why, Malformed::kLength) << r.status().ToString();
}

TEST(TxWire, ConfigureAndReplyRoundTrip) {
  ConfigureBody c;
  c.epoch = 3;
  c.region_bytes = 1 << 20;
  c.members = {Member{0, 0x10000}, Member{2, 0x20000}};
  c.joiner = 2;
  c.joiner_seq = 41;
  std::vector<uint8_t> bytes = EncodeConfigure(Header{Kind::kConfigure, 0, 1, 5, 9}, c);
  std::span<const uint8_t> body;
  ASSERT_TRUE(DecodeHeader(bytes, &body).ok());
  auto d = DecodeConfigure(body);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->members.size(), 2u);
  EXPECT_EQ(d->members[1].region, 0x20000u);
  EXPECT_EQ(d->joiner_seq, 41u);
  Reply r{5, 3, 17, {{1, 2}, {}}, "why"};
  auto back = DecodeReply(EncodeReply(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->values.size(), 2u);
  EXPECT_EQ(back->message, "why");
  EXPECT_EQ(back->seq, 17u);
}

TEST(TxLog, ReplaysWholeRecordsAndCutsATornTail) {
  char dir[] = "/tmp/pulse-txlog-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/log";
  auto none = [](std::span<const uint8_t>) { ADD_FAILURE() << "a fresh log replayed something"; };
  {
    auto log = TxLog::Open(path, /*keep=*/false, none);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (uint8_t i = 1; i <= 3; ++i) ASSERT_TRUE((*log)->Append(std::vector<uint8_t>(10 * i, i)).ok());
    ASSERT_TRUE((*log)->Sync().ok());
    EXPECT_EQ((*log)->counters().syncs, 1u);
    EXPECT_FALSE((*log)->dirty());
  }
  // A crash mid-append: half a frame at the end.
  {
    std::ofstream f(path, std::ios::binary | std::ios::app);
    const uint32_t len = 100;
    f.write(reinterpret_cast<const char*>(&len), 4);
    f.write("torn", 4);
  }
  std::vector<std::vector<uint8_t>> seen;
  auto collect = [&](std::span<const uint8_t> p) { seen.emplace_back(p.begin(), p.end()); };
  {
    auto log = TxLog::Open(path, /*keep=*/true, collect);
    ASSERT_TRUE(log.ok());
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[2], std::vector<uint8_t>(30, 3));
    ASSERT_TRUE((*log)->Append(std::vector<uint8_t>{9}).ok());
    ASSERT_TRUE((*log)->Sync().ok());
  }
  seen.clear();
  {
    auto log = TxLog::Open(path, /*keep=*/true, collect);
    ASSERT_TRUE(log.ok());
    ASSERT_EQ(seen.size(), 4u) << "the record after the cut-off tail must replay";
    EXPECT_EQ(seen[3], std::vector<uint8_t>{9});
  }
  // A fresh pool empties it.
  {
    auto log = TxLog::Open(path, /*keep=*/false, none);
    ASSERT_TRUE(log.ok());
  }
  std::remove(path.c_str());
  ::rmdir(dir);
}

// Truncation: a compaction keeps exactly the records the predicate keeps,
// in order; appends continue after them; a reopened log replays the kept
// and the new records (and still cuts a torn tail off after a compaction).
TEST(TxLog, ReplaysAcrossACompaction) {
  char dir[] = "/tmp/pulse-txlog-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/log";
  auto none = [](std::span<const uint8_t>) { ADD_FAILURE() << "a fresh log replayed something"; };
  auto record = [](uint8_t i) { return std::vector<uint8_t>(5 + i, i); };
  {
    auto log = TxLog::Open(path, /*keep=*/false, none);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (uint8_t i = 1; i <= 10; ++i) ASSERT_TRUE((*log)->Append(record(i)).ok());
    const uint64_t before = (*log)->size();
    // Drop records 1..6 (their first byte is their number).
    ASSERT_TRUE((*log)->Compact([](std::span<const uint8_t> p) { return p[0] > 6; }).ok());
    EXPECT_EQ((*log)->counters().compactions, 1u);
    EXPECT_EQ((*log)->counters().dropped, 6u);
    EXPECT_LT((*log)->size(), before);
    // Nothing to drop: the file is left alone.
    ASSERT_TRUE((*log)->Compact([](std::span<const uint8_t>) { return true; }).ok());
    EXPECT_EQ((*log)->counters().compactions, 1u);
    ASSERT_TRUE((*log)->Append(record(11)).ok());
    ASSERT_TRUE((*log)->Sync().ok());
  }
  {
    std::ofstream f(path, std::ios::binary | std::ios::app);
    const uint32_t len = 100;
    f.write(reinterpret_cast<const char*>(&len), 4);
    f.write("torn", 4);
  }
  std::vector<std::vector<uint8_t>> seen;
  auto log = TxLog::Open(path, /*keep=*/true, [&](std::span<const uint8_t> p) { seen.emplace_back(p.begin(), p.end()); });
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(seen.size(), 5u);
  for (uint8_t i = 7; i <= 11; ++i) EXPECT_EQ(seen[i - 7], record(i)) << "record " << int{i};
  EXPECT_EQ(::access((path + ".compact").c_str(), F_OK), -1) << "the compaction's new file was renamed over the log";
  log->reset();
  std::remove(path.c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace pulse::tx
