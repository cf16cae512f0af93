// pulse::resp::RequestParser: an incremental parser of Redis client
// requests (RESP2 arrays of bulk strings, and the inline form "PING\r\n"
// that telnet users type), for the `pulse kv serve` front end.
//
// Bytes are fed as they arrive from a socket (Feed), in pieces of any size:
// a request may be split anywhere, and one piece may hold many pipelined
// requests.  Next() returns each complete request in order.  A bulk string's
// buffer grows only as its bytes arrive, never to its declared length, so
// a client declaring 1 GB and sending nothing costs nothing.
//
// Limits (ParserLimits) follow Redis's: a bulk string longer than
// max_bulk_bytes, an array of more than max_args elements or an inline line
// longer than max_inline_bytes is a protocol error.  After a protocol
// error the parser is dead: Next() keeps returning the same error, and the
// server replies with it and closes the connection (as Redis does).
//
// Thread-safety: not thread-safe; one parser per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pulse::resp {

struct ParserLimits {
  uint64_t max_bulk_bytes = 64ull << 20;     // one argument (so one value): 64 MiB
  uint64_t max_args = 1024 * 1024;           // arguments of one request
  uint64_t max_inline_bytes = 64 * 1024;     // one inline request line
};

// One request: its arguments, the command name first.
using Request = std::vector<std::string>;

class RequestParser {
 public:
  enum class State { kNeedMore, kRequest, kError };

  explicit RequestParser(const ParserLimits& limits = {}) : limits_(limits) {}

  // Appends bytes received from the connection.
  void Feed(std::string_view bytes);
  // kRequest: a complete request was moved into *out.  kNeedMore: the bytes
  // fed so far end inside a request (or hold none).  kError: the input is
  // malformed or over a limit; error() holds Redis's message ("Protocol
  // error: invalid bulk length", ...), without the "ERR " prefix.  An empty
  // inline line is skipped, as Redis does.
  State Next(Request* out);
  const std::string& error() const { return error_; }
  // Bytes fed but not yet consumed by a complete request.
  size_t buffered() const { return buffer_.size() - pos_ + current_bulk_.size(); }

 private:
  State Fail(std::string message);
  // Finds "\r\n" at or after pos_; the line's end, or nullopt.
  std::optional<size_t> LineEnd() const;
  // One inline request line; nullopt if it was empty (skipped).
  std::optional<State> ParseInline(Request* out);
  void Compact();

  ParserLimits limits_;
  std::string buffer_;  // unconsumed input starts at pos_
  size_t pos_ = 0;
  // The array being read: its declared count, the arguments read so far,
  // the declared length of the bulk string being read (-1: none) and the
  // bytes of it read so far.
  int64_t expected_args_ = -1;
  Request args_;
  int64_t bulk_length_ = -1;
  std::string current_bulk_;
  std::string error_;
};

}  // namespace pulse::resp
