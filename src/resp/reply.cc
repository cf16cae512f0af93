// RESP2/RESP3 encoding (include/pulse/resp/reply.h).
#include "pulse/resp/reply.h"

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace pulse::resp {

void ReplyWriter::Simple(std::string_view text) {
  out_->push_back('+');
  out_->append(text);
  out_->append("\r\n");
}

void ReplyWriter::Error(std::string_view text) {
  out_->push_back('-');
  // A reply line must not hold a newline (Redis replaces them too).
  for (char c : text) out_->push_back(c == '\r' || c == '\n' ? ' ' : c);
  out_->append("\r\n");
}

void ReplyWriter::Integer(int64_t v) { fmt::format_to(std::back_inserter(*out_), ":{}\r\n", v); }

void ReplyWriter::Bulk(std::string_view bytes) {
  fmt::format_to(std::back_inserter(*out_), "${}\r\n", bytes.size());
  out_->append(bytes);
  out_->append("\r\n");
}

void ReplyWriter::Null() { out_->append(protocol_ >= 3 ? "_\r\n" : "$-1\r\n"); }
void ReplyWriter::NullArray() { out_->append(protocol_ >= 3 ? "_\r\n" : "*-1\r\n"); }
void ReplyWriter::ArrayHeader(uint64_t n) { fmt::format_to(std::back_inserter(*out_), "*{}\r\n", n); }

void ReplyWriter::MapHeader(uint64_t pairs) {
  if (protocol_ >= 3) fmt::format_to(std::back_inserter(*out_), "%{}\r\n", pairs);
  else ArrayHeader(2 * pairs);
}

void ReplyWriter::SetHeader(uint64_t n) {
  if (protocol_ >= 3) fmt::format_to(std::back_inserter(*out_), "~{}\r\n", n);
  else ArrayHeader(n);
}

void ReplyWriter::Double(double v) {
  if (protocol_ >= 3) {
    out_->push_back(',');
    out_->append(FormatDouble(v));
    out_->append("\r\n");
  } else {
    Bulk(FormatDouble(v));
  }
}

std::string FormatDouble(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Redis 7.0's addReplyDouble: %.17g ("0.10000000000000001", "1e+20").
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace pulse::resp
