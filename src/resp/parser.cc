// The incremental request parser (include/pulse/resp/parser.h).  The error
// texts are Redis's (networking.c), which clients and tests compare.
#include "pulse/resp/parser.h"

#include <charconv>

namespace pulse::resp {
namespace {

// A decimal integer filling the whole of `text`, or nullopt.
std::optional<int64_t> ParseInt(std::string_view text) {
  int64_t v = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

void RequestParser::Feed(std::string_view bytes) {
  if (!error_.empty()) return;
  buffer_.append(bytes);
}

RequestParser::State RequestParser::Fail(std::string message) {
  error_ = std::move(message);
  buffer_.clear();
  pos_ = 0;
  current_bulk_.clear();
  args_.clear();
  return State::kError;
}

std::optional<size_t> RequestParser::LineEnd() const {
  size_t at = buffer_.find("\r\n", pos_);
  if (at == std::string::npos) return std::nullopt;
  return at;
}

void RequestParser::Compact() {
  // Drop consumed bytes once they are a good part of the buffer, so a long
  // pipeline does not make every append copy the whole history.
  if (pos_ > 0 && (pos_ == buffer_.size() || pos_ >= 4096)) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
}

std::optional<RequestParser::State> RequestParser::ParseInline(Request* out) {
  auto end = LineEnd();
  if (!end) {
    // Redis also ends an inline request at a bare "\n".
    size_t nl = buffer_.find('\n', pos_);
    if (nl == std::string::npos) {
      if (buffer_.size() - pos_ > limits_.max_inline_bytes) return Fail("Protocol error: too big inline request");
      return State::kNeedMore;
    }
    end = nl;
  }
  if (*end - pos_ > limits_.max_inline_bytes) return Fail("Protocol error: too big inline request");
  std::string_view line(buffer_.data() + pos_, *end - pos_);
  pos_ = *end + (buffer_[*end] == '\r' ? 2 : 1);
  Request args;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    std::string arg;
    if (line[i] == '"' || line[i] == '\'') {
      // Quoted argument; the backslash escapes only the quote and itself.
      const char quote = line[i++];
      bool closed = false;
      while (i < line.size()) {
        char c = line[i++];
        if (c == '\\' && i < line.size()) { arg.push_back(line[i++]); continue; }
        if (c == quote) { closed = true; break; }
        arg.push_back(c);
      }
      if (!closed || (i < line.size() && line[i] != ' ' && line[i] != '\t'))
        return Fail("Protocol error: unbalanced quotes in request");
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') arg.push_back(line[i++]);
    }
    args.push_back(std::move(arg));
  }
  Compact();
  if (args.empty()) return std::nullopt;
  *out = std::move(args);
  return State::kRequest;
}

RequestParser::State RequestParser::Next(Request* out) {
  if (!error_.empty()) return State::kError;
  for (;;) {
    if (expected_args_ < 0) {
      if (pos_ == buffer_.size()) { Compact(); return State::kNeedMore; }
      if (buffer_[pos_] != '*') {
        auto s = ParseInline(out);
        if (!s) continue;  // an empty line, skipped
        return *s;
      }
      auto end = LineEnd();
      if (!end) {
        if (buffer_.size() - pos_ > limits_.max_inline_bytes) return Fail("Protocol error: too big mbulk count string");
        return State::kNeedMore;
      }
      auto count = ParseInt(std::string_view(buffer_).substr(pos_ + 1, *end - pos_ - 1));
      if (!count || *count > static_cast<int64_t>(limits_.max_args))
        return Fail("Protocol error: invalid multibulk length");
      pos_ = *end + 2;
      if (*count <= 0) continue;  // "*0" / "*-1": nothing to run, as in Redis
      expected_args_ = *count;
      args_.clear();
      args_.reserve(static_cast<size_t>(std::min<int64_t>(*count, 1024)));
    }
    while (static_cast<int64_t>(args_.size()) < expected_args_) {
      if (bulk_length_ < 0) {
        if (pos_ == buffer_.size()) { Compact(); return State::kNeedMore; }
        if (buffer_[pos_] != '$')
          return Fail(std::string("Protocol error: expected '$', got '") + buffer_[pos_] + "'");
        auto end = LineEnd();
        if (!end) {
          if (buffer_.size() - pos_ > limits_.max_inline_bytes) return Fail("Protocol error: too big bulk count string");
          return State::kNeedMore;
        }
        auto length = ParseInt(std::string_view(buffer_).substr(pos_ + 1, *end - pos_ - 1));
        if (!length || *length < 0 || static_cast<uint64_t>(*length) > limits_.max_bulk_bytes)
          return Fail("Protocol error: invalid bulk length");
        pos_ = *end + 2;
        bulk_length_ = *length;
        current_bulk_.clear();
      }
      // The bulk's bytes, then its CRLF (skipped unchecked, like Redis).
      const size_t want = static_cast<size_t>(bulk_length_) - current_bulk_.size();
      const size_t take = std::min(want, buffer_.size() - pos_);
      if (current_bulk_.empty() && take == want && buffer_.size() - pos_ >= want + 2) {
        args_.emplace_back(buffer_.data() + pos_, want);
        pos_ += want + 2;
        bulk_length_ = -1;
        continue;
      }
      current_bulk_.append(buffer_.data() + pos_, take);
      pos_ += take;
      if (current_bulk_.size() < static_cast<size_t>(bulk_length_) || buffer_.size() - pos_ < 2) {
        Compact();
        return State::kNeedMore;
      }
      pos_ += 2;
      args_.push_back(std::move(current_bulk_));
      current_bulk_.clear();
      bulk_length_ = -1;
    }
    *out = std::move(args_);
    args_.clear();
    expected_args_ = -1;
    Compact();
    return State::kRequest;
  }
}

}  // namespace pulse::resp
