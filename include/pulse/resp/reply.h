// pulse::resp::ReplyWriter: encodes replies in RESP2 or RESP3 (the version a
// connection chose with HELLO) into a connection's output buffer.
//
// The RESP3-only types degrade as Redis degrades them for RESP2: a null is
// "$-1" (or "*-1" for a null array), a double is a bulk string, a map is a
// flat array of key, value, key, value...
//
// Thread-safety: not thread-safe; one per connection.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pulse::resp {

class ReplyWriter {
 public:
  explicit ReplyWriter(std::string* out) : out_(out) {}

  void set_protocol(int version) { protocol_ = version; }
  int protocol() const { return protocol_; }

  void Simple(std::string_view text);        // +text
  void Error(std::string_view text);         // -text (text starts with its code: "ERR ...")
  void Integer(int64_t v);                   // :v
  void Bulk(std::string_view bytes);         // $len bytes
  void Null();                               // a missing bulk string
  void NullArray();                          // a missing array (e.g. SET ... GET)
  void ArrayHeader(uint64_t n);              // *n, then n replies
  void MapHeader(uint64_t pairs);            // %pairs (RESP3) or *2*pairs
  void SetHeader(uint64_t n);                // ~n (RESP3) or *n
  void Double(double v);                     // ,v (RESP3) or a bulk string, Redis's formatting

 private:
  std::string* out_;
  int protocol_ = 2;
};

// Redis 7.0's text of a double (as in ZSCORE): %.17g ("1.5", "3",
// "0.10000000000000001", "1e+20"), "inf", "-inf".
std::string FormatDouble(double v);

}  // namespace pulse::resp
