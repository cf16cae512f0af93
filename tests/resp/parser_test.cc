// The RESP request parser against requests whose arguments are known: fed
// whole, byte by byte, and in random pieces, pipelined; and malformed or
// oversized input, which must give Redis's error and kill the parser.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "pulse/resp/parser.h"
#include "pulse/resp/reply.h"

namespace pulse::resp {
namespace {

std::string Encode(const Request& r) {
  std::string s = "*" + std::to_string(r.size()) + "\r\n";
  for (const auto& a : r) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

// Feeds `input` in pieces whose sizes `cut` chooses and collects requests.
std::vector<Request> ParseAll(const std::string& input, const std::function<size_t()>& cut,
                              RequestParser::State* last = nullptr, RequestParser* parser = nullptr) {
  RequestParser own;
  RequestParser& p = parser ? *parser : own;
  std::vector<Request> out;
  size_t at = 0;
  RequestParser::State s = RequestParser::State::kNeedMore;
  while (at < input.size() && s != RequestParser::State::kError) {
    const size_t n = std::min(cut(), input.size() - at);
    p.Feed(std::string_view(input).substr(at, n));
    at += n;
    Request r;
    while ((s = p.Next(&r)) == RequestParser::State::kRequest) out.push_back(r);
  }
  if (last) *last = s;
  return out;
}

std::vector<Request> SampleRequests() {
  std::mt19937 rng(7);
  std::vector<Request> reqs = {{"PING"}, {"SET", "k", ""}, {"SET", "key with\r\nCRLF", std::string(3, '\0')},
                               {"MSET", "a", "1", "b", "2"}};
  for (int i = 0; i < 50; ++i) {
    Request r;
    const int n = 1 + rng() % 5;
    for (int j = 0; j < n; ++j) {
      std::string a(rng() % (j == 0 ? 10 : 5000), 'x');
      for (char& c : a) c = static_cast<char>(rng());
      r.push_back(a);
    }
    reqs.push_back(r);
  }
  return reqs;
}

TEST(RespParser, PipelinedRequestsInAnyPieces) {
  const auto reqs = SampleRequests();
  std::string all;
  for (const auto& r : reqs) all += Encode(r);
  std::mt19937 rng(11);
  EXPECT_EQ(ParseAll(all, [&] { return all.size(); }), reqs);
  EXPECT_EQ(ParseAll(all, [] { return size_t{1}; }), reqs);
  for (int trial = 0; trial < 20; ++trial) EXPECT_EQ(ParseAll(all, [&] { return 1 + rng() % 700; }), reqs);
}

TEST(RespParser, InlineRequests) {
  auto got = ParseAll("PING\r\n\r\nSET k \"a b\" 'c'\nGET   k\r\n", [] { return size_t{3}; });
  EXPECT_EQ(got, (std::vector<Request>{{"PING"}, {"SET", "k", "a b", "c"}, {"GET", "k"}}));
  RequestParser::State s;
  ParseAll("SET k \"open\r\n", [] { return size_t{100}; }, &s);
  EXPECT_EQ(s, RequestParser::State::kError);
}

TEST(RespParser, EmptyAndNullArraysAreSkipped) {
  EXPECT_EQ(ParseAll("*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", [] { return size_t{2}; }),
            (std::vector<Request>{{"PING"}}));
}

struct BadInput {
  std::string bytes;
  std::string error;
};

TEST(RespParser, MalformedInputGivesRedisErrorsAndStops) {
  const std::vector<BadInput> cases = {
      {"*1\r\n$1073741824\r\n", "Protocol error: invalid bulk length"},
      {"*1\r\n$-5\r\n", "Protocol error: invalid bulk length"},
      {"*1\r\n$abc\r\n", "Protocol error: invalid bulk length"},
      {"*x\r\n", "Protocol error: invalid multibulk length"},
      {"*99999999\r\n", "Protocol error: invalid multibulk length"},
      {"*2\r\n$1\r\na\r\n:5\r\n", "Protocol error: expected '$', got ':'"},
      {"*1\r\n$" + std::string(70000, '1'), "Protocol error: too big bulk count string"},
      {std::string(70000, 'a'), "Protocol error: too big inline request"},
  };
  for (const auto& c : cases) {
    RequestParser p;
    RequestParser::State s;
    auto got = ParseAll(c.bytes, [] { return size_t{4096}; }, &s, &p);
    EXPECT_TRUE(got.empty()) << c.error;
    ASSERT_EQ(s, RequestParser::State::kError) << c.error;
    EXPECT_EQ(p.error(), c.error);
    // Dead from then on, whatever follows.
    p.Feed("*1\r\n$4\r\nPING\r\n");
    Request r;
    EXPECT_EQ(p.Next(&r), RequestParser::State::kError);
  }
}

TEST(RespParser, DeclaredLengthIsNotAllocatedUpFront) {
  RequestParser p;
  p.Feed("*1\r\n$60000000\r\nabc");
  Request r;
  EXPECT_EQ(p.Next(&r), RequestParser::State::kNeedMore);
  EXPECT_LT(p.buffered(), 100u);
}

TEST(RespParser, RandomBytesNeverCrash) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string junk(rng() % 200, '\0');
    for (char& c : junk) c = "*$\r\n0123456789-abc"[rng() % 18];
    RequestParser p({.max_bulk_bytes = 1000, .max_args = 100, .max_inline_bytes = 100});
    ParseAll(junk, [&] { return 1 + rng() % 16; }, nullptr, &p);
    EXPECT_LE(p.buffered(), junk.size());
  }
}

TEST(RespReply, Resp2AndResp3Encodings) {
  std::string out;
  ReplyWriter w(&out);
  w.Null();
  w.MapHeader(1);
  w.Double(1.5);
  w.set_protocol(3);
  w.Null();
  w.MapHeader(1);
  w.Double(1.5);
  w.Error("ERR a\r\nb");
  EXPECT_EQ(out, "$-1\r\n*2\r\n$3\r\n1.5\r\n_\r\n%1\r\n,1.5\r\n-ERR a  b\r\n");
}

}  // namespace
}  // namespace pulse::resp
