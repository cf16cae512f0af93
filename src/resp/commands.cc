// Handlers of the Redis commands `pulse kv serve` implements, with Redis
// 7.0's reply types and error texts (src/resp/commands.h).
#include "resp/commands.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "resp/glob.h"
#include "resp/zset.h"

namespace pulse::resp {
namespace {

constexpr const char* kNotInteger = "ERR value is not an integer or out of range";
constexpr const char* kSyntax = "ERR syntax error";

bool Is(std::string_view arg, std::string_view word) { return Lower(arg) == word; }

}  // namespace

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

void FarError(CommandContext& c, const Status& s) { c.reply->Error("ERR pulse: " + s.ToString()); }

bool ReadTyped(CommandContext& c, std::string_view key, ValueType type, std::optional<Entry>* e,
               std::optional<std::string>* value) {
  auto found = c.keyspace->Find(key, c.now_ms);
  if (!found.ok()) {
    FarError(c, found.status());
    return false;
  }
  *e = std::move(*found);
  value->reset();
  if (!*e) return true;
  if ((*e)->type != type) {
    c.reply->Error(kWrongType);
    return false;
  }
  auto v = c.keyspace->ReadValue(**e);
  if (!v.ok()) {
    FarError(c, v.status());
    return false;
  }
  *value = std::move(*v);
  return true;
}

// Redis's string2ll: an optional '-', then digits without a leading zero
// ("0" alone excepted), no spaces, within int64.
std::optional<int64_t> ParseRedisInt(std::string_view s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  size_t i = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    i = 1;
    if (s.size() == 1) return std::nullopt;
  }
  if (s.size() == 1 && s[0] == '0') return 0;
  if (s[i] < '1' || s[i] > '9') return std::nullopt;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    if (v > (std::numeric_limits<uint64_t>::max() - (s[i] - '0')) / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(s[i] - '0');
  }
  if (negative) {
    if (v > uint64_t{1} << 63) return std::nullopt;
    return static_cast<int64_t>(0 - v);
  }
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(v);
}

namespace {

// Looks a key up; on a far error replies and returns false.
bool Lookup(CommandContext& c, std::string_view key, std::optional<Entry>* out) {
  auto r = c.keyspace->Find(key, c.now_ms);
  if (!r.ok()) {
    FarError(c, r.status());
    return false;
  }
  *out = std::move(*r);
  return true;
}

// A string key's value (nullopt: absent); replies WRONGTYPE / far errors
// and returns false.
bool ReadString(CommandContext& c, std::string_view key, std::optional<Entry>* e,
                std::optional<std::string>* value) {
  return ReadTyped(c, key, ValueType::kString, e, value);
}

// Removes a key of any type (a sorted set's trees too).
Status RemoveKey(CommandContext& c, std::string_view key, const Entry& e) {
  if (e.type == ValueType::kZSet) {
    auto v = c.keyspace->ReadValue(e);
    if (!v.ok()) return v.status();
    PULSE_RETURN_IF_ERROR(ZSetDestroy(c.keyspace->client(), *v));
  }
  return c.keyspace->Remove(key, e);
}

// ---- connection and server -------------------------------------------------

void Ping(CommandContext& c, const Request& r) {
  if (r.size() > 2) return c.reply->Error("ERR wrong number of arguments for 'ping' command");
  if (r.size() == 1) c.reply->Simple("PONG");
  else c.reply->Bulk(r[1]);
}

void Echo(CommandContext& c, const Request& r) { c.reply->Bulk(r[1]); }

void Hello(CommandContext& c, const Request& r) {
  int version = *c.protocol;
  size_t i = 1;
  if (r.size() > 1) {
    auto v = ParseRedisInt(r[1]);
    if (!v) return c.reply->Error("ERR Protocol version is not an integer or out of range");
    if (*v != 2 && *v != 3) return c.reply->Error("NOPROTO unsupported protocol version");
    version = static_cast<int>(*v);
    i = 2;
  }
  for (; i < r.size(); ++i) {
    if (Is(r[i], "auth") && i + 2 < r.size()) i += 2;         // no passwords: any is accepted
    else if (Is(r[i], "setname") && i + 1 < r.size()) i += 1;  // names are not kept
    else return c.reply->Error(fmt::format("ERR Syntax error in HELLO option '{}'", r[i]));
  }
  *c.protocol = version;
  c.reply->set_protocol(version);
  c.reply->MapHeader(7);
  c.reply->Bulk("server");
  c.reply->Bulk("redis");
  c.reply->Bulk("version");
  c.reply->Bulk("7.0.0");
  c.reply->Bulk("proto");
  c.reply->Integer(version);
  c.reply->Bulk("id");
  c.reply->Integer(static_cast<int64_t>(c.connection_id));
  c.reply->Bulk("mode");
  c.reply->Bulk("standalone");
  c.reply->Bulk("role");
  c.reply->Bulk("master");
  c.reply->Bulk("modules");
  c.reply->ArrayHeader(0);
}

void Select(CommandContext& c, const Request& r) {
  auto v = ParseRedisInt(r[1]);
  if (!v) return c.reply->Error(kNotInteger);
  if (*v != 0) return c.reply->Error("ERR DB index is out of range");
  c.reply->Simple("OK");
}

void Quit(CommandContext& c, const Request&) {
  c.reply->Simple("OK");
  *c.close_after = true;
}

void Info(CommandContext& c, const Request&) {
  std::string text = c.info(c.server);
  text += fmt::format("# Keyspace\r\ndb0:keys={},expires=0,avg_ttl=0\r\n", c.keyspace->size());
  c.reply->Bulk(text);
}

void DbSize(CommandContext& c, const Request&) { c.reply->Integer(static_cast<int64_t>(c.keyspace->size())); }

void FlushDb(CommandContext& c, const Request& r) {
  if (r.size() > 2 || (r.size() == 2 && !Is(r[1], "async") && !Is(r[1], "sync"))) return c.reply->Error(kSyntax);
  Status s = c.keyspace->Flush();
  if (!s.ok()) return FarError(c, s);
  c.reply->Simple("OK");
}

void CommandInfo(CommandContext& c, const CommandSpec& spec);

void Command(CommandContext& c, const Request& r);

void Config(CommandContext& c, const Request& r) {
  const std::string sub = Lower(r[1]);
  if (sub == "get") {
    if (r.size() < 3) return c.reply->Error("ERR wrong number of arguments for 'config|get' command");
    // What redis-benchmark and common clients ask for.
    static const std::pair<const char*, const char*> kParams[] = {
        {"save", ""}, {"appendonly", "no"}, {"databases", "1"}, {"maxmemory", "0"},
        {"proto-max-bulk-len", "67108864"}};
    std::vector<std::pair<std::string, std::string>> found;
    for (size_t i = 2; i < r.size(); ++i)
      for (const auto& param : kParams)  // not a structured binding: clang 14 cannot capture one
        if (GlobMatch(Lower(r[i]), param.first) &&
            std::none_of(found.begin(), found.end(), [&](const auto& p) { return p.first == param.first; }))
          found.emplace_back(param.first, param.second);
    c.reply->MapHeader(found.size());
    for (const auto& [name, value] : found) {
      c.reply->Bulk(name);
      c.reply->Bulk(value);
    }
  } else if (sub == "resetstat") {
    c.reply->Simple("OK");
  } else if (sub == "set") {
    c.reply->Error("ERR CONFIG SET is not supported by pulse kv serve");
  } else {
    c.reply->Error(fmt::format("ERR unknown subcommand '{}'. Try CONFIG HELP.", r[1].substr(0, 128)));
  }
}

// ---- strings ---------------------------------------------------------------

void Get(CommandContext& c, const Request& r) {
  std::optional<Entry> e;
  std::optional<std::string> v;
  if (!ReadString(c, r[1], &e, &v)) return;
  if (v) c.reply->Bulk(*v);
  else c.reply->Null();
}

// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]
void Set(CommandContext& c, const Request& r) {
  // A plain SET the batch's prefetch already wrote (Keyspace::Prefetch).
  if (r.size() == 3 && c.keyspace->TakeFusedSet(r[1])) return c.reply->Simple("OK");
  bool nx = false, xx = false, get = false, keepttl = false;
  std::optional<int64_t> expire_ms;
  for (size_t i = 3; i < r.size(); ++i) {
    const std::string opt = Lower(r[i]);
    const bool has_next = i + 1 < r.size();
    if (opt == "nx" && !xx) nx = true;
    else if (opt == "xx" && !nx) xx = true;
    else if (opt == "get") get = true;
    else if (opt == "keepttl" && !expire_ms) keepttl = true;
    else if ((opt == "ex" || opt == "px" || opt == "exat" || opt == "pxat") && !keepttl && !expire_ms && has_next) {
      auto v = ParseRedisInt(r[++i]);
      if (!v) return c.reply->Error(kNotInteger);
      if (*v <= 0) return c.reply->Error("ERR invalid expire time in 'set' command");
      const bool seconds = opt == "ex" || opt == "exat";
      const bool absolute = opt == "exat" || opt == "pxat";
      if (seconds && *v > std::numeric_limits<int64_t>::max() / 1000)
        return c.reply->Error("ERR invalid expire time in 'set' command");
      int64_t ms = seconds ? *v * 1000 : *v;
      if (!absolute) {
        if (ms > std::numeric_limits<int64_t>::max() - c.now_ms)
          return c.reply->Error("ERR invalid expire time in 'set' command");
        ms += c.now_ms;
      }
      expire_ms = ms;
    } else {
      return c.reply->Error(kSyntax);
    }
  }
  std::optional<Entry> e;
  if (!Lookup(c, r[1], &e)) return;
  std::optional<std::string> old;
  if (get && e) {
    if (e->type != ValueType::kString) return c.reply->Error(kWrongType);
    auto v = c.keyspace->ReadValue(*e);
    if (!v.ok()) return FarError(c, v.status());
    old = std::move(*v);
  }
  const bool apply = !(nx && e) && !(xx && !e);
  if (apply) {
    if (e && e->type != ValueType::kString) {
      Status s = RemoveKey(c, r[1], *e);
      if (!s.ok()) return FarError(c, s);
      e.reset();
    }
    const int64_t expire = expire_ms ? *expire_ms : (keepttl && e ? e->expire_ms : 0);
    Status s = expire_ms && *expire_ms <= c.now_ms
                   ? (e ? c.keyspace->Remove(r[1], *e) : Status::Ok())  // already past: gone at once
                   : c.keyspace->Put(r[1], e, r[2], ValueType::kString, expire);
    if (!s.ok()) {
      if (s.code() == Status::Code::kInvalidArgument) return c.reply->Error("ERR " + s.message());
      return FarError(c, s);
    }
  }
  if (get) {
    if (old) c.reply->Bulk(*old);
    else c.reply->Null();
  } else if (apply) {
    c.reply->Simple("OK");
  } else {
    c.reply->Null();
  }
}

void SetNx(CommandContext& c, const Request& r) {
  std::optional<Entry> e;
  if (!Lookup(c, r[1], &e)) return;
  if (e) return c.reply->Integer(0);
  Status s = c.keyspace->Put(r[1], e, r[2], ValueType::kString, 0);
  if (!s.ok()) return FarError(c, s);
  c.reply->Integer(1);
}

void MGet(CommandContext& c, const Request& r) {
  std::vector<std::optional<std::string>> values;
  for (size_t i = 1; i < r.size(); ++i) {
    std::optional<Entry> e;
    if (!Lookup(c, r[i], &e)) return;
    if (!e || e->type != ValueType::kString) {
      values.emplace_back();
      continue;
    }
    auto v = c.keyspace->ReadValue(*e);
    if (!v.ok()) return FarError(c, v.status());
    values.emplace_back(std::move(*v));
  }
  c.reply->ArrayHeader(values.size());
  for (const auto& v : values) {
    if (v) c.reply->Bulk(*v);
    else c.reply->Null();
  }
}

void MSet(CommandContext& c, const Request& r) {
  if (r.size() % 2 == 0) return c.reply->Error("ERR wrong number of arguments for 'mset' command");
  for (size_t i = 1; i + 1 < r.size(); i += 2) {
    std::optional<Entry> e;
    if (!Lookup(c, r[i], &e)) return;
    if (e && e->type != ValueType::kString) {
      Status s = RemoveKey(c, r[i], *e);
      if (!s.ok()) return FarError(c, s);
      e.reset();
    }
    Status s = c.keyspace->Put(r[i], e, r[i + 1], ValueType::kString, 0);
    if (!s.ok()) return FarError(c, s);
  }
  c.reply->Simple("OK");
}

void Del(CommandContext& c, const Request& r) {
  int64_t n = 0;
  for (size_t i = 1; i < r.size(); ++i) {
    std::optional<Entry> e;
    if (!Lookup(c, r[i], &e)) return;
    if (!e) continue;
    Status s = RemoveKey(c, r[i], *e);
    if (!s.ok()) return FarError(c, s);
    ++n;
  }
  c.reply->Integer(n);
}

void Exists(CommandContext& c, const Request& r) {
  int64_t n = 0;
  for (size_t i = 1; i < r.size(); ++i) {
    std::optional<Entry> e;
    if (!Lookup(c, r[i], &e)) return;
    if (e) ++n;
  }
  c.reply->Integer(n);
}

void IncrBy(CommandContext& c, std::string_view key, int64_t delta) {
  std::optional<Entry> e;
  std::optional<std::string> v;
  if (!ReadString(c, key, &e, &v)) return;
  int64_t current = 0;
  if (v) {
    auto n = ParseRedisInt(*v);
    if (!n) return c.reply->Error(kNotInteger);
    current = *n;
  }
  if ((delta > 0 && current > std::numeric_limits<int64_t>::max() - delta) ||
      (delta < 0 && current < std::numeric_limits<int64_t>::min() - delta))
    return c.reply->Error("ERR increment or decrement would overflow");
  const int64_t next = current + delta;
  Status s = c.keyspace->Put(key, e, std::to_string(next), ValueType::kString, e ? e->expire_ms : 0);
  if (!s.ok()) return FarError(c, s);
  c.reply->Integer(next);
}

void Incr(CommandContext& c, const Request& r) { IncrBy(c, r[1], 1); }
void Decr(CommandContext& c, const Request& r) { IncrBy(c, r[1], -1); }
void IncrByCommand(CommandContext& c, const Request& r) {
  auto d = ParseRedisInt(r[2]);
  if (!d) return c.reply->Error(kNotInteger);
  IncrBy(c, r[1], *d);
}
void DecrByCommand(CommandContext& c, const Request& r) {
  auto d = ParseRedisInt(r[2]);
  if (!d) return c.reply->Error(kNotInteger);
  if (*d == std::numeric_limits<int64_t>::min()) return c.reply->Error("ERR decrement would overflow");
  IncrBy(c, r[1], -*d);
}

void Append(CommandContext& c, const Request& r) {
  std::optional<Entry> e;
  std::optional<std::string> v;
  if (!ReadString(c, r[1], &e, &v)) return;
  std::string next = v ? *v + r[2] : r[2];
  Status s = c.keyspace->Put(r[1], e, next, ValueType::kString, e ? e->expire_ms : 0);
  if (!s.ok()) {
    if (s.code() == Status::Code::kInvalidArgument) return c.reply->Error("ERR string exceeds maximum allowed size");
    return FarError(c, s);
  }
  c.reply->Integer(static_cast<int64_t>(next.size()));
}

void StrLen(CommandContext& c, const Request& r) {
  std::optional<Entry> e;
  if (!Lookup(c, r[1], &e)) return;
  if (e && e->type != ValueType::kString) return c.reply->Error(kWrongType);
  c.reply->Integer(e ? static_cast<int64_t>(e->val_len) : 0);
}

void GetDel(CommandContext& c, const Request& r) {
  std::optional<Entry> e;
  std::optional<std::string> v;
  if (!ReadString(c, r[1], &e, &v)) return;
  if (!v) return c.reply->Null();
  Status s = c.keyspace->Remove(r[1], *e);
  if (!s.ok()) return FarError(c, s);
  c.reply->Bulk(*v);
}

// ---- expiry ----------------------------------------------------------------

void ExpireGeneric(CommandContext& c, const Request& r, bool seconds, const char* name) {
  auto v = ParseRedisInt(r[2]);
  if (!v) return c.reply->Error(kNotInteger);
  bool nx = false, xx = false, gt = false, lt = false;
  for (size_t i = 3; i < r.size(); ++i) {
    const std::string opt = Lower(r[i]);
    if (opt == "nx") nx = true;
    else if (opt == "xx") xx = true;
    else if (opt == "gt") gt = true;
    else if (opt == "lt") lt = true;
    else return c.reply->Error(fmt::format("ERR Unsupported option {}", r[i]));
  }
  if (nx && (xx || gt || lt))
    return c.reply->Error("ERR NX and XX, GT or LT options at the same time are not compatible");
  if (gt && lt) return c.reply->Error("ERR GT and LT options at the same time are not compatible");
  int64_t ms = *v;
  if (seconds) {
    if (ms > std::numeric_limits<int64_t>::max() / 1000 || ms < std::numeric_limits<int64_t>::min() / 1000)
      return c.reply->Error(fmt::format("ERR invalid expire time in '{}' command", name));
    ms *= 1000;
  }
  if ((ms > 0 && ms > std::numeric_limits<int64_t>::max() - c.now_ms))
    return c.reply->Error(fmt::format("ERR invalid expire time in '{}' command", name));
  const int64_t when = ms + c.now_ms;
  std::optional<Entry> e;
  if (!Lookup(c, r[1], &e)) return;
  if (!e) return c.reply->Integer(0);
  // No TTL counts as an infinite one for GT and LT.
  const bool has = e->expire_ms != 0;
  if ((nx && has) || (xx && !has) || (gt && (!has || when <= e->expire_ms)) || (lt && has && when >= e->expire_ms))
    return c.reply->Integer(0);
  Status s = when <= c.now_ms ? RemoveKey(c, r[1], *e) : c.keyspace->SetExpire(*e, when);
  if (!s.ok()) return FarError(c, s);
  c.reply->Integer(1);
}

void Expire(CommandContext& c, const Request& r) { ExpireGeneric(c, r, true, "expire"); }
void PExpire(CommandContext& c, const Request& r) { ExpireGeneric(c, r, false, "pexpire"); }

void TtlGeneric(CommandContext& c, const Request& r, bool seconds) {
  std::optional<Entry> e;
  if (!Lookup(c, r[1], &e)) return;
  if (!e) return c.reply->Integer(-2);
  if (e->expire_ms == 0) return c.reply->Integer(-1);
  const int64_t left = std::max<int64_t>(e->expire_ms - c.now_ms, 0);
  c.reply->Integer(seconds ? (left + 500) / 1000 : left);
}
void Ttl(CommandContext& c, const Request& r) { TtlGeneric(c, r, true); }
void PTtl(CommandContext& c, const Request& r) { TtlGeneric(c, r, false); }

void Persist(CommandContext& c, const Request& r) {
  std::optional<Entry> e;
  if (!Lookup(c, r[1], &e)) return;
  if (!e || e->expire_ms == 0) return c.reply->Integer(0);
  Status s = c.keyspace->SetExpire(*e, 0);
  if (!s.ok()) return FarError(c, s);
  c.reply->Integer(1);
}

// ---- keyspace --------------------------------------------------------------

// SCAN cursor [MATCH pattern] [COUNT n] [TYPE t]: the cursor is the next
// index hash to visit, in decimal.
void Scan(CommandContext& c, const Request& r) {
  uint64_t cursor = 0;
  {
    const std::string& s = r[1];
    if (s.empty() || s.size() > 20 || !std::all_of(s.begin(), s.end(), ::isdigit))
      return c.reply->Error("ERR invalid cursor");
    errno = 0;
    cursor = std::strtoull(s.c_str(), nullptr, 10);
    if (errno != 0) return c.reply->Error("ERR invalid cursor");
  }
  std::optional<std::string> pattern, type;
  int64_t count = 10;
  for (size_t i = 2; i < r.size(); ++i) {
    const std::string opt = Lower(r[i]);
    if (i + 1 >= r.size()) return c.reply->Error(kSyntax);
    if (opt == "match") {
      pattern = r[++i];
    } else if (opt == "count") {
      auto n = ParseRedisInt(r[++i]);
      if (!n) return c.reply->Error(kNotInteger);
      if (*n < 1) return c.reply->Error(kSyntax);
      count = *n;
    } else if (opt == "type") {
      type = Lower(r[++i]);
    } else {
      return c.reply->Error(kSyntax);
    }
  }
  auto page = c.keyspace->Scan(cursor, static_cast<uint64_t>(count), c.now_ms);
  if (!page.ok()) return FarError(c, page.status());
  std::vector<std::string> keys;
  for (auto& k : page->keys) {
    if (pattern && !GlobMatch(k, *pattern)) continue;
    if (type) {
      std::optional<Entry> e;
      if (!Lookup(c, k, &e)) return;
      if (!e || (e->type == ValueType::kString ? "string" : "zset") != *type) continue;
    }
    keys.push_back(std::move(k));
  }
  c.reply->ArrayHeader(2);
  c.reply->Bulk(std::to_string(page->next_cursor));
  c.reply->ArrayHeader(keys.size());
  for (const auto& k : keys) c.reply->Bulk(k);
}

void Type(CommandContext& c, const Request& r) {
  std::optional<Entry> e;
  if (!Lookup(c, r[1], &e)) return;
  c.reply->Simple(!e ? "none" : e->type == ValueType::kString ? "string" : "zset");
}

// clang-format off
const CommandSpec kCommands[] = {
    {"ping", -1, false, Ping, 0, 0, 0},
    {"echo", 2, false, Echo, 0, 0, 0},
    {"hello", -1, false, Hello, 0, 0, 0},
    {"select", 2, false, Select, 0, 0, 0},
    {"quit", -1, false, Quit, 0, 0, 0},
    {"info", -1, true, Info, 0, 0, 0},
    {"dbsize", 1, true, DbSize, 0, 0, 0},
    {"flushdb", -1, true, FlushDb, 0, 0, 0},
    {"command", -1, false, Command, 0, 0, 0},
    {"config", -2, false, Config, 0, 0, 0},
    {"get", 2, true, Get, 1, 1, 1},
    {"set", -3, true, Set, 1, 1, 1},
    {"setnx", 3, true, SetNx, 1, 1, 1},
    {"mget", -2, true, MGet, 1, -1, 1},
    {"mset", -3, true, MSet, 1, -1, 2},
    {"del", -2, true, Del, 1, -1, 1},
    {"exists", -2, true, Exists, 1, -1, 1},
    {"incr", 2, true, Incr, 1, 1, 1},
    {"decr", 2, true, Decr, 1, 1, 1},
    {"incrby", 3, true, IncrByCommand, 1, 1, 1},
    {"decrby", 3, true, DecrByCommand, 1, 1, 1},
    {"append", 3, true, Append, 1, 1, 1},
    {"strlen", 2, true, StrLen, 1, 1, 1},
    {"getdel", 2, true, GetDel, 1, 1, 1},
    {"expire", -3, true, Expire, 1, 1, 1},
    {"pexpire", -3, true, PExpire, 1, 1, 1},
    {"ttl", 2, true, Ttl, 1, 1, 1},
    {"pttl", 2, true, PTtl, 1, 1, 1},
    {"persist", 2, true, Persist, 1, 1, 1},
    {"scan", -2, true, Scan, 0, 0, 0},
    {"type", 2, true, Type, 1, 1, 1},
    {"zadd", -4, true, ZAdd, 1, 1, 1},
    {"zrem", -3, true, ZRem, 1, 1, 1},
    {"zscore", 3, true, ZScore, 1, 1, 1},
    {"zcard", 2, true, ZCard, 1, 1, 1},
    {"zcount", 4, true, ZCount, 1, 1, 1},
    {"zrank", 3, true, ZRank, 1, 1, 1},
    {"zrange", -4, true, ZRange, 1, 1, 1},
    {"zrangebyscore", -4, true, ZRangeByScore, 1, 1, 1},
};
// clang-format on

void CommandInfo(CommandContext& c, const CommandSpec& spec) {
  c.reply->ArrayHeader(6);
  c.reply->Bulk(spec.name);
  c.reply->Integer(spec.arity);
  c.reply->SetHeader(0);
  c.reply->Integer(spec.first_key);
  c.reply->Integer(spec.last_key);
  c.reply->Integer(spec.step);
}

// COMMAND, COMMAND COUNT, COMMAND INFO name..., COMMAND DOCS (empty: the
// documentation redis-cli shows as hints is optional).
void Command(CommandContext& c, const Request& r) {
  if (r.size() == 1) {
    c.reply->ArrayHeader(std::size(kCommands));
    for (const auto& spec : kCommands) CommandInfo(c, spec);
    return;
  }
  const std::string sub = Lower(r[1]);
  if (sub == "count") return c.reply->Integer(std::size(kCommands));
  if (sub == "docs") return c.reply->MapHeader(0);
  if (sub == "info") {
    c.reply->ArrayHeader(r.size() - 2);
    for (size_t i = 2; i < r.size(); ++i) {
      if (const CommandSpec* spec = FindCommand(r[i])) CommandInfo(c, *spec);
      else c.reply->NullArray();
    }
    return;
  }
  c.reply->Error(fmt::format("ERR unknown subcommand '{}'. Try COMMAND HELP.", r[1].substr(0, 128)));
}

}  // namespace

const CommandSpec* FindCommand(std::string_view name) {
  const std::string lower = Lower(name);
  for (const auto& spec : kCommands)
    if (lower == spec.name) return &spec;
  return nullptr;
}

void CollectKeys(const Request& r, std::vector<std::string_view>* keys) {
  const CommandSpec* spec = FindCommand(r[0]);
  if (spec == nullptr || spec->first_key == 0) return;
  const int n = static_cast<int>(r.size());
  if ((spec->arity > 0 && n != spec->arity) || (spec->arity < 0 && n < -spec->arity)) return;
  const int last = spec->last_key < 0 ? n + spec->last_key : spec->last_key;
  for (int i = spec->first_key; i <= last && i < n; i += spec->step) keys->push_back(r[i]);
}

bool NeedsKeyspace(const Request& r) {
  const CommandSpec* spec = FindCommand(r[0]);
  return spec != nullptr && spec->keyspace;
}

void Dispatch(CommandContext& c, const Request& r) {
  const CommandSpec* spec = FindCommand(r[0]);
  if (spec == nullptr) {
    // Redis 7.0's text, argument list included (server.c processCommand).
    std::string args;
    for (size_t i = 1; i < r.size() && args.size() < 128; ++i)
      args += fmt::format("'{}' ", std::string_view(r[i]).substr(0, 128 - args.size()));
    return c.reply->Error(fmt::format("ERR unknown command '{}', with args beginning with: {}",
                                      std::string_view(r[0]).substr(0, 128), args));
  }
  const int n = static_cast<int>(std::min<size_t>(r.size(), 1 << 30));
  if ((spec->arity > 0 && n != spec->arity) || (spec->arity < 0 && n < -spec->arity))
    return c.reply->Error(fmt::format("ERR wrong number of arguments for '{}' command", spec->name));
  spec->run(c, r);
}

}  // namespace pulse::resp
