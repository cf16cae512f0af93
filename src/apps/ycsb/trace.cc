// Reading YCSB-format traces (the lines YCSB's BasicDB prints); the accepted
// format is documented in include/pulse/apps/ycsb.h.
#include <charconv>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "common/bounded_file.h"
#include "pulse/apps/ycsb.h"

namespace pulse::apps::ycsb {
namespace {

// Lines YCSB prints around the operations of a run.
constexpr std::string_view kYcsbStatusPrefixes[] = {
    "YCSB Client", "Loading workload", "Starting test", "DBWrapper:", "Command line:", "[", "***",
    "Using shards", "SLF4J",
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Splits off the next whitespace-separated token of `rest`.
std::string_view NextToken(std::string_view& rest) {
  size_t i = 0;
  while (i < rest.size() && IsSpace(rest[i])) ++i;
  size_t j = i;
  while (j < rest.size() && !IsSpace(rest[j])) ++j;
  std::string_view tok = rest.substr(i, j - i);
  rest = rest.substr(j);
  return tok;
}

Result<uint64_t> ParseU64(std::string_view s, uint64_t line, const char* what) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size())
    return Status::InvalidArgument(fmt::format("line {}: {} '{}' is not a decimal number below 2^64", line, what, s));
  return v;
}

Result<uint64_t> ParseKey(std::string_view key, uint64_t line) {
  if (key.empty()) return Status::InvalidArgument(fmt::format("line {}: missing key", line));
  if (key.substr(0, 4) != "user")
    return Status::InvalidArgument(fmt::format("line {}: key '{}' does not start with 'user'", line, key));
  return ParseU64(key.substr(4), line, "key number");
}

}  // namespace

Result<Operation> ParseTraceLine(std::string_view line, uint64_t n, bool* skipped) {
  *skipped = false;
  std::string_view rest = line;
  while (!rest.empty() && IsSpace(rest.front())) rest.remove_prefix(1);
  if (rest.empty() || rest.front() == '#') {
    *skipped = true;
    return Operation{};
  }
  for (std::string_view prefix : kYcsbStatusPrefixes) {
    if (rest.substr(0, prefix.size()) == prefix) {
      *skipped = true;
      return Operation{};
    }
  }
  const std::string_view verb = NextToken(rest);
  Operation op;
  if (verb == "READ") {
    op.op = Op::kRead;
  } else if (verb == "UPDATE") {
    op.op = Op::kUpdate;
  } else if (verb == "INSERT") {
    op.op = Op::kInsert;
  } else if (verb == "SCAN") {
    op.op = Op::kScan;
  } else if (verb == "DELETE") {
    op.op = Op::kDelete;
  } else {
    return Status::InvalidArgument(fmt::format(
        "line {}: unknown operation '{}' (expected READ, UPDATE, INSERT, SCAN or DELETE)", n, verb));
  }
  if (NextToken(rest).empty()) return Status::InvalidArgument(fmt::format("line {}: missing table name", n));
  auto key = ParseKey(NextToken(rest), n);
  if (!key.ok()) return key.status();
  op.key = *key;
  op.keynum = *key;
  if (op.op == Op::kScan) {
    const std::string_view count = NextToken(rest);
    if (count.empty()) return Status::InvalidArgument(fmt::format("line {}: SCAN without a record count", n));
    auto c = ParseU64(count, n, "SCAN record count");
    if (!c.ok()) return c.status();
    if (*c == 0 || *c > UINT32_MAX)
      return Status::InvalidArgument(fmt::format("line {}: SCAN record count {} out of range [1, 2^32)", n, *c));
    op.scan_length = static_cast<uint32_t>(*c);
  }
  while (!rest.empty() && IsSpace(rest.front())) rest.remove_prefix(1);
  if (!rest.empty() && rest.front() != '[')
    return Status::InvalidArgument(
        fmt::format("line {}: unexpected '{}' after the key (a field list starts with '[')", n, NextToken(rest)));
  return op;
}

Result<std::vector<Operation>> ReadTrace(const std::string& path) {
  // Read line by line, so the whole text is never held; bounded all the same.
  // A file that is missing stays IoError (the documented contract).
  if (auto checked = CheckInputFile(path, kMaxTraceFileBytes, "ycsb trace"); !checked.ok())
    return checked.status().code() == Status::Code::kNotFound ? Status::IoError(checked.status().message())
                                                              : checked.status();
  std::ifstream in(path);
  if (!in) return Status::IoError(fmt::format("ycsb trace {}: cannot open", path));
  std::vector<Operation> ops;
  std::string line;
  uint64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    bool skipped = false;
    auto op = ParseTraceLine(line, n, &skipped);
    if (!op.ok()) return Status::InvalidArgument(fmt::format("ycsb trace {}: {}", path, op.status().message()));
    if (!skipped) ops.push_back(*op);
  }
  if (in.bad()) return Status::IoError(fmt::format("ycsb trace {}: read error after line {}", path, n));
  return ops;
}

}  // namespace pulse::apps::ycsb
