// Sorted sets on far B+trees (src/resp/zset.h).
//
// A sorted set's record (in the keyspace, type kZSet) holds ZSetHead:
//  - `by_score`: a pulse::ds::BTree from the score, mapped to a uint64 that
//    sorts as the double does (SortableScore), to a score bucket: the
//    members with that score, sorted by their bytes — so (score, member)
//    order is the tree's order, then the bucket's;
//  - `by_member`: a BTree from a member's 64-bit hash to a member node
//    {next, score, live, len, bytes}, colliding members chained by `next`;
//  - the cardinality.
// As in the keyspace, tree entries are never erased (an erase may free tree
// nodes another server allocated): an emptied bucket stays with count 0 and
// a removed member's node stays as a tombstone (live 0) that a later ZADD of
// a member with that hash reuses if it fits.  Ranges (ZRANGE, ZCOUNT,
// ZRANK) walk the score tree's leaf chain (BTree::Scan) and read the
// buckets; point lookups are the trees' offloaded LowerBound traversals.
#include "resp/zset.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "pulse/ds/btree.h"

namespace pulse::resp {
namespace {

constexpr const char* kNotFloat = "ERR value is not a valid float";
constexpr const char* kNotInteger = "ERR value is not an integer or out of range";
constexpr const char* kSyntax = "ERR syntax error";

struct ZSetHead {
  uint64_t by_score;
  uint64_t by_member;
  uint64_t card;
};

struct MemberNode {
  uint64_t next;
  double score;
  uint32_t live;
  uint32_t len;
  uint64_t room;  // bytes after this header
};
static_assert(sizeof(MemberNode) == 32);

uint64_t Pad8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

ds::BTreeOptions TreeOptions() {
  ds::BTreeOptions options;
  options.mode = ExecutionMode::kOffload;
  return options;
}

// A uint64 that orders as the double does (-0 and 0 are one score).
uint64_t SortableScore(double d) {
  if (d == 0) d = 0;
  const uint64_t bits = std::bit_cast<uint64_t>(d);
  return (bits >> 63) ? ~bits : bits | (uint64_t{1} << 63);
}
double ScoreOf(uint64_t key) {
  const uint64_t bits = (key >> 63) ? key & ~(uint64_t{1} << 63) : ~key;
  return std::bit_cast<double>(bits);
}

// Redis's score syntax: a strtod number or [+-]inf; NaN is refused.
std::optional<double> ParseScore(std::string_view s) {
  const std::string t(s);
  const std::string l = Lower(t);
  if (l == "inf" || l == "+inf") return std::numeric_limits<double>::infinity();
  if (l == "-inf") return -std::numeric_limits<double>::infinity();
  if (t.empty() || std::isspace(static_cast<unsigned char>(t[0]))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || std::isnan(v) || (errno == ERANGE && std::isinf(v))) return std::nullopt;
  return v;
}

// A score-range end: "(1.5" is exclusive.
struct ScoreBound {
  double value;
  bool exclusive;
};
// Redis parses range ends with a bare strtod: "" reads as 0, leading
// spaces are skipped, NaN is refused.
std::optional<ScoreBound> ParseBound(std::string_view s) {
  const bool ex = !s.empty() && s[0] == '(';
  const std::string t(ex ? s.substr(1) : s);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || std::isnan(v)) return std::nullopt;
  return ScoreBound{v, ex};
}
bool AboveMin(double v, const ScoreBound& b) { return b.exclusive ? v > b.value : v >= b.value; }
bool BelowMax(double v, const ScoreBound& b) { return b.exclusive ? v < b.value : v <= b.value; }

// One sorted set, opened for a command.
class ZSet {
 public:
  explicit ZSet(Client* client) : client_(client) {}

  static Result<ZSet> Create(Client* client) {
    ZSet z(client);
    PULSE_ASSIGN_OR_RETURN(z.by_score_, ds::BTree::Create(client, TreeOptions()));
    PULSE_ASSIGN_OR_RETURN(z.by_member_, ds::BTree::Create(client, TreeOptions()));
    z.head_ = ZSetHead{z.by_score_->header_address(), z.by_member_->header_address(), 0};
    return z;
  }
  static Result<ZSet> Open(Client* client, const std::string& value) {
    ZSet z(client);
    if (value.size() != sizeof(ZSetHead)) return Status::Internal("sorted set record of the wrong size");
    std::memcpy(&z.head_, value.data(), sizeof z.head_);
    PULSE_ASSIGN_OR_RETURN(z.by_score_, ds::BTree::Open(client, z.head_.by_score, TreeOptions()));
    PULSE_ASSIGN_OR_RETURN(z.by_member_, ds::BTree::Open(client, z.head_.by_member, TreeOptions()));
    return z;
  }

  std::string Value() const { return std::string(reinterpret_cast<const char*>(&head_), sizeof head_); }
  uint64_t card() const { return head_.card; }

  // The live node of a member: its address and header.
  struct Found {
    uint64_t addr = 0;
    MemberNode node{};
  };
  Result<std::optional<Found>> FindMember(std::string_view member) {
    PULSE_ASSIGN_OR_RETURN(auto head, by_member_->Find(Hash(member)));
    for (uint64_t addr = head.value_or(0); addr != 0;) {
      Found f;
      f.addr = addr;
      PULSE_RETURN_IF_ERROR(client_->Read(addr, &f.node, sizeof f.node));
      if (f.node.live && f.node.len == member.size()) {
        std::string bytes(member.size(), '\0');
        PULSE_RETURN_IF_ERROR(client_->Read(addr + sizeof f.node, bytes.data(), bytes.size()));
        if (bytes == member) return std::optional<Found>(f);
      }
      addr = f.node.next;
    }
    return std::optional<Found>();
  }

  // Adds or moves a member; returns (added, changed).
  Result<std::pair<bool, bool>> Add(std::string_view member, double score, bool nx, bool xx, bool gt, bool lt) {
    PULSE_ASSIGN_OR_RETURN(auto f, FindMember(member));
    if (f) {
      if (nx) return std::pair{false, false};
      const double old = f->node.score;
      if ((gt && !(score > old)) || (lt && !(score < old)) || old == score) return std::pair{false, false};
      PULSE_RETURN_IF_ERROR(BucketRemove(old, member));
      PULSE_RETURN_IF_ERROR(BucketAdd(score, member));
      PULSE_RETURN_IF_ERROR(client_->Write(f->addr + offsetof(MemberNode, score), &score, sizeof score));
      return std::pair{false, true};
    }
    if (xx) return std::pair{false, false};
    PULSE_RETURN_IF_ERROR(NewMember(member, score));
    PULSE_RETURN_IF_ERROR(BucketAdd(score, member));
    ++head_.card;
    return std::pair{true, true};
  }

  Result<bool> Remove(std::string_view member) {
    PULSE_ASSIGN_OR_RETURN(auto f, FindMember(member));
    if (!f) return false;
    const uint32_t dead = 0;
    PULSE_RETURN_IF_ERROR(client_->Write(f->addr + offsetof(MemberNode, live), &dead, sizeof dead));
    PULSE_RETURN_IF_ERROR(BucketRemove(f->node.score, member));
    --head_.card;
    return true;
  }

  // Members with scores in [min, max] (all with nullopt), in order, each
  // with its score.
  Result<std::vector<std::pair<std::string, double>>> Range(std::optional<ScoreBound> min,
                                                            std::optional<ScoreBound> max) {
    const uint64_t lo = min ? SortableScore(min->value) : 0;
    const uint64_t hi = max ? SortableScore(max->value) : ~uint64_t{0};
    std::vector<std::pair<std::string, double>> out;
    if (lo > hi) return out;
    PULSE_ASSIGN_OR_RETURN(auto entries, by_score_->Scan(lo, hi));
    for (const auto& [key, bucket] : entries) {
      const double score = ScoreOf(key);
      if ((min && !AboveMin(score, *min)) || (max && !BelowMax(score, *max))) continue;
      PULSE_ASSIGN_OR_RETURN(auto members, ReadBucket(bucket));
      for (auto& m : members) out.emplace_back(std::move(m), score);
    }
    return out;
  }

 private:
  static uint64_t Hash(std::string_view member) { return KeyHash(member); }

  Status NewMember(std::string_view member, double score) {
    const uint64_t hash = Hash(member);
    PULSE_ASSIGN_OR_RETURN(auto head, by_member_->Find(hash));
    uint64_t tail = 0;
    for (uint64_t addr = head.value_or(0); addr != 0;) {
      MemberNode n{};
      PULSE_RETURN_IF_ERROR(client_->Read(addr, &n, sizeof n));
      if (!n.live && Pad8(member.size()) <= n.room) return WriteMember(addr, member, score, n.next, n.room);
      tail = addr;
      addr = n.next;
    }
    const uint64_t room = std::max<uint64_t>(Pad8(member.size()), 8);
    PULSE_ASSIGN_OR_RETURN(uint64_t addr, client_->Allocate(sizeof(MemberNode) + room));
    PULSE_RETURN_IF_ERROR(WriteMember(addr, member, score, 0, room));
    if (tail != 0) return client_->Write(tail + offsetof(MemberNode, next), &addr, sizeof addr);
    PULSE_ASSIGN_OR_RETURN(bool inserted, by_member_->Insert(hash, addr));
    if (!inserted) return Status::Internal("sorted set member index: hash appeared");
    return Status::Ok();
  }

  Status WriteMember(uint64_t addr, std::string_view member, double score, uint64_t next, uint64_t room) {
    MemberNode n{next, score, 1, static_cast<uint32_t>(member.size()), room};
    std::string buf(sizeof n + member.size(), '\0');
    std::memcpy(buf.data(), &n, sizeof n);
    std::memcpy(buf.data() + sizeof n, member.data(), member.size());
    return client_->Write(addr, buf.data(), buf.size());
  }

  // A bucket is a fixed 24-byte head {count, room, body} that the score
  // tree points at (it never moves, so the tree entry never changes) and a
  // body of `room` bytes: per member {len u32, bytes}, sorted by bytes.  A
  // body that outgrows its room is reallocated.
  struct BucketHead {
    uint64_t count;
    uint64_t room;
    uint64_t body;
  };

  Result<std::vector<std::string>> ReadBucket(uint64_t addr) {
    BucketHead h{};
    PULSE_RETURN_IF_ERROR(client_->Read(addr, &h, sizeof h));
    std::vector<std::string> members;
    if (h.count == 0) return members;
    std::string body(h.room, '\0');
    PULSE_RETURN_IF_ERROR(client_->Read(h.body, body.data(), body.size()));
    size_t at = 0;
    for (uint64_t i = 0; i < h.count; ++i) {
      uint32_t len = 0;
      if (at + 4 > body.size()) return Status::Internal("sorted set bucket overruns its room");
      std::memcpy(&len, body.data() + at, 4);
      members.push_back(body.substr(at + 4, len));
      at += 4 + len;
    }
    return members;
  }

  Status PutBucket(double score, const std::optional<uint64_t>& addr, const std::vector<std::string>& members) {
    std::string body;
    for (const auto& m : members) {
      const uint32_t len = static_cast<uint32_t>(m.size());
      body.append(reinterpret_cast<const char*>(&len), 4);
      body += m;
    }
    BucketHead h{0, 0, 0};
    if (addr) {
      PULSE_RETURN_IF_ERROR(client_->Read(*addr, &h, sizeof h));
    }
    if (body.size() > h.room) {
      if (h.body != 0) (void)client_->Free(h.body);  // another server's: stays allocated
      h.room = std::max<uint64_t>(Pad8(body.size()) * 2, 64);
      PULSE_ASSIGN_OR_RETURN(h.body, client_->Allocate(h.room));
    }
    h.count = members.size();
    if (!body.empty()) PULSE_RETURN_IF_ERROR(client_->Write(h.body, body.data(), body.size()));
    if (addr) return client_->Write(*addr, &h, sizeof h);
    PULSE_ASSIGN_OR_RETURN(uint64_t head, client_->Allocate(sizeof h));
    PULSE_RETURN_IF_ERROR(client_->Write(head, &h, sizeof h));
    PULSE_ASSIGN_OR_RETURN(bool inserted, by_score_->Insert(SortableScore(score), head));
    if (!inserted) return Status::Internal("sorted set score index: score appeared");
    return Status::Ok();
  }

  Status BucketAdd(double score, std::string_view member) {
    PULSE_ASSIGN_OR_RETURN(auto addr, by_score_->Find(SortableScore(score)));
    std::vector<std::string> members;
    if (addr) {
      PULSE_ASSIGN_OR_RETURN(members, ReadBucket(*addr));
    }
    members.insert(std::lower_bound(members.begin(), members.end(), member), std::string(member));
    return PutBucket(score, addr, members);
  }

  Status BucketRemove(double score, std::string_view member) {
    PULSE_ASSIGN_OR_RETURN(auto addr, by_score_->Find(SortableScore(score)));
    if (!addr) return Status::Internal("sorted set: member's score has no bucket");
    PULSE_ASSIGN_OR_RETURN(auto members, ReadBucket(*addr));
    auto it = std::lower_bound(members.begin(), members.end(), member);
    if (it == members.end() || *it != member) return Status::Internal("sorted set: member missing from its bucket");
    members.erase(it);
    return PutBucket(score, addr, members);
  }

  Client* client_;
  ZSetHead head_{};
  std::unique_ptr<ds::BTree> by_score_;
  std::unique_ptr<ds::BTree> by_member_;
};

// The sorted set at `key`: nullopt (no key), or an open ZSet; on WRONGTYPE
// or a far error replies and returns false.
bool OpenZSet(CommandContext& c, std::string_view key, std::optional<Entry>* e, std::optional<ZSet>* z) {
  std::optional<std::string> value;
  if (!ReadTyped(c, key, ValueType::kZSet, e, &value)) return false;
  if (!value) return true;
  auto opened = ZSet::Open(c.keyspace->client(), *value);
  if (!opened.ok()) {
    FarError(c, opened.status());
    return false;
  }
  z->emplace(std::move(*opened));
  return true;
}

// The member r[2] of the sorted set r[1]: false if a reply was sent (an
// error, or a null reply when the set or the member does not exist).
bool OpenMember(CommandContext& c, const Request& r, std::optional<ZSet>* z, std::optional<ZSet::Found>* f) {
  std::optional<Entry> e;
  if (!OpenZSet(c, r[1], &e, z)) return false;
  if (!*z) {
    c.reply->Null();
    return false;
  }
  auto found = (*z)->FindMember(r[2]);
  if (!found.ok()) {
    FarError(c, found.status());
    return false;
  }
  if (!*found) {
    c.reply->Null();
    return false;
  }
  *f = **found;
  return true;
}

// Writes the set's head back (its cardinality), or removes the key when
// the set became empty, as Redis does.
Status Save(CommandContext& c, std::string_view key, const std::optional<Entry>& e, const ZSet& z) {
  if (z.card() == 0) return e ? c.keyspace->Remove(key, *e) : Status::Ok();
  return c.keyspace->Put(key, e, z.Value(), ValueType::kZSet, e ? e->expire_ms : 0);
}

void ReplyScored(CommandContext& c, const std::vector<std::pair<std::string, double>>& items, bool withscores) {
  if (withscores && c.reply->protocol() >= 3) {
    c.reply->ArrayHeader(items.size());
    for (const auto& [m, s] : items) {
      c.reply->ArrayHeader(2);
      c.reply->Bulk(m);
      c.reply->Double(s);
    }
    return;
  }
  c.reply->ArrayHeader(items.size() * (withscores ? 2 : 1));
  for (const auto& [m, s] : items) {
    c.reply->Bulk(m);
    if (withscores) c.reply->Double(s);
  }
}

// ZRANGE's engine: index or score range, optionally reversed and limited.
void RangeGeneric(CommandContext& c, std::string_view key, std::string_view a, std::string_view b, bool byscore,
                  bool rev, bool withscores, std::optional<std::pair<int64_t, int64_t>> limit) {
  std::optional<ScoreBound> min, max;
  int64_t start = 0, stop = 0;
  if (byscore) {
    min = ParseBound(rev ? b : a);
    max = ParseBound(rev ? a : b);
    if (!min || !max) return c.reply->Error("ERR min or max is not a float");
  } else {
    auto x = ParseRedisInt(a), y = ParseRedisInt(b);
    if (!x || !y) return c.reply->Error(kNotInteger);
    start = *x;
    stop = *y;
  }
  std::optional<Entry> e;
  std::optional<ZSet> z;
  if (!OpenZSet(c, key, &e, &z)) return;
  if (!z) return ReplyScored(c, {}, withscores);
  auto items = byscore ? z->Range(min, max) : z->Range(std::nullopt, std::nullopt);
  if (!items.ok()) return FarError(c, items.status());
  auto& v = *items;
  if (rev) std::reverse(v.begin(), v.end());
  if (!byscore) {
    const int64_t n = static_cast<int64_t>(v.size());
    if (start < 0) start += n;
    if (stop < 0) stop += n;
    if (start < 0) start = 0;
    if (start > stop || start >= n) return ReplyScored(c, {}, withscores);
    if (stop >= n) stop = n - 1;
    v = std::vector<std::pair<std::string, double>>(v.begin() + start, v.begin() + stop + 1);
  } else if (limit) {
    auto [offset, count] = *limit;
    if (offset < 0 || offset >= static_cast<int64_t>(v.size())) return ReplyScored(c, {}, withscores);
    v.erase(v.begin(), v.begin() + offset);
    if (count >= 0 && count < static_cast<int64_t>(v.size())) v.resize(count);
  }
  ReplyScored(c, v, withscores);
}

}  // namespace

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
void ZAdd(CommandContext& c, const Request& r) {
  bool nx = false, xx = false, gt = false, lt = false, ch = false, incr = false;
  size_t i = 2;
  for (; i < r.size(); ++i) {
    const std::string o = Lower(r[i]);
    if (o == "nx") nx = true;
    else if (o == "xx") xx = true;
    else if (o == "gt") gt = true;
    else if (o == "lt") lt = true;
    else if (o == "ch") ch = true;
    else if (o == "incr") incr = true;
    else break;
  }
  const size_t pairs_at = i;
  if ((r.size() - pairs_at) % 2 != 0 || r.size() == pairs_at) return c.reply->Error(kSyntax);
  if (nx && xx) return c.reply->Error("ERR XX and NX options at the same time are not compatible");
  if ((gt && nx) || (lt && nx) || (gt && lt))
    return c.reply->Error("ERR GT, LT, and/or NX options at the same time are not compatible");
  if (incr && r.size() - pairs_at != 2)
    return c.reply->Error("ERR INCR option supports a single increment-element pair");
  std::vector<double> scores;
  for (size_t k = pairs_at; k < r.size(); k += 2) {
    auto sc = ParseScore(r[k]);
    if (!sc) return c.reply->Error(kNotFloat);
    scores.push_back(*sc);
  }
  std::optional<Entry> e;
  std::optional<ZSet> z;
  if (!OpenZSet(c, r[1], &e, &z)) return;
  if (!z) {
    if (xx) return incr ? c.reply->Null() : c.reply->Integer(0);
    auto created = ZSet::Create(c.keyspace->client());
    if (!created.ok()) return FarError(c, created.status());
    z.emplace(std::move(*created));
  }
  int64_t added = 0, changed = 0;
  std::optional<double> incr_result;
  for (size_t k = 0; k < scores.size(); ++k) {
    const std::string& member = r[pairs_at + 2 * k + 1];
    double score = scores[k];
    if (incr) {
      auto f = z->FindMember(member);
      if (!f.ok()) return FarError(c, f.status());
      const bool exists = f->has_value();
      const double old = exists ? (*f)->node.score : 0;
      if (exists) score += old;
      if (std::isnan(score)) return c.reply->Error("ERR resulting score is not a number (NaN)");
      const bool performed = !(nx && exists) && !(xx && !exists) && !(exists && gt && !(score > old)) &&
                             !(exists && lt && !(score < old));
      if (performed) incr_result = score;
    }
    auto res = z->Add(member, score, nx, xx, gt, lt);
    if (!res.ok()) return FarError(c, res.status());
    added += res->first;
    changed += res->second;
  }
  Status s = Save(c, r[1], e, *z);
  if (!s.ok()) return FarError(c, s);
  if (incr) return incr_result ? c.reply->Double(*incr_result) : c.reply->Null();
  c.reply->Integer(ch ? changed : added);
}

void ZRem(CommandContext& c, const Request& r) {
  std::optional<Entry> e;
  std::optional<ZSet> z;
  if (!OpenZSet(c, r[1], &e, &z)) return;
  if (!z) return c.reply->Integer(0);
  int64_t removed = 0;
  for (size_t i = 2; i < r.size(); ++i) {
    auto res = z->Remove(r[i]);
    if (!res.ok()) return FarError(c, res.status());
    removed += *res;
  }
  Status s = Save(c, r[1], e, *z);
  if (!s.ok()) return FarError(c, s);
  c.reply->Integer(removed);
}

void ZScore(CommandContext& c, const Request& r) {
  std::optional<ZSet> z;
  std::optional<ZSet::Found> f;
  if (!OpenMember(c, r, &z, &f)) return;
  c.reply->Double(f->node.score);
}

void ZCard(CommandContext& c, const Request& r) {
  std::optional<Entry> e;
  std::optional<ZSet> z;
  if (!OpenZSet(c, r[1], &e, &z)) return;
  c.reply->Integer(z ? static_cast<int64_t>(z->card()) : 0);
}

void ZCount(CommandContext& c, const Request& r) {
  auto min = ParseBound(r[2]), max = ParseBound(r[3]);
  if (!min || !max) return c.reply->Error("ERR min or max is not a float");
  std::optional<Entry> e;
  std::optional<ZSet> z;
  if (!OpenZSet(c, r[1], &e, &z)) return;
  if (!z) return c.reply->Integer(0);
  auto items = z->Range(min, max);
  if (!items.ok()) return FarError(c, items.status());
  c.reply->Integer(static_cast<int64_t>(items->size()));
}

void ZRank(CommandContext& c, const Request& r) {
  std::optional<ZSet> z;
  std::optional<ZSet::Found> f;
  if (!OpenMember(c, r, &z, &f)) return;
  // Members up to its score, in order; its position among them.
  auto items = z->Range(std::nullopt, ScoreBound{f->node.score, false});
  if (!items.ok()) return FarError(c, items.status());
  for (size_t i = 0; i < items->size(); ++i)
    if ((*items)[i].first == r[2]) return c.reply->Integer(static_cast<int64_t>(i));
  FarError(c, Status::Internal("sorted set: member missing from the score order"));
}

namespace {

struct RangeOptions {
  bool byscore = false, bylex = false, rev = false, withscores = false;
  std::optional<std::pair<int64_t, int64_t>> limit;
};

// The options after "key a b": WITHSCORES and LIMIT, and with `zrange`
// also BYSCORE, BYLEX and REV.  On a bad option replies and returns false.
bool ParseRangeOptions(CommandContext& c, const Request& r, bool zrange, RangeOptions* o) {
  for (size_t i = 4; i < r.size(); ++i) {
    const std::string w = Lower(r[i]);
    if (zrange && w == "byscore") o->byscore = true;
    else if (zrange && w == "bylex") o->bylex = true;
    else if (zrange && w == "rev") o->rev = true;
    else if (w == "withscores") o->withscores = true;
    else if (w == "limit" && i + 2 < r.size()) {
      auto off = ParseRedisInt(r[i + 1]), cnt = ParseRedisInt(r[i + 2]);
      if (!off || !cnt) {
        c.reply->Error(kNotInteger);
        return false;
      }
      o->limit = std::pair{*off, *cnt};
      i += 2;
    } else {
      c.reply->Error(kSyntax);
      return false;
    }
  }
  return true;
}

}  // namespace

// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]
void ZRange(CommandContext& c, const Request& r) {
  RangeOptions o;
  if (!ParseRangeOptions(c, r, true, &o)) return;
  if (o.limit && !o.byscore && !o.bylex)
    return c.reply->Error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
  if (o.bylex) return c.reply->Error("ERR ZRANGE BYLEX is not supported by pulse kv serve");
  RangeGeneric(c, r[1], r[2], r[3], o.byscore, o.rev, o.withscores, o.limit);
}

// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
void ZRangeByScore(CommandContext& c, const Request& r) {
  RangeOptions o;
  if (!ParseRangeOptions(c, r, false, &o)) return;
  RangeGeneric(c, r[1], r[2], r[3], true, false, o.withscores, o.limit);
}

Status ZSetDestroy(Client*, const std::string&) {
  // The set's trees, buckets and member nodes are not reclaimed (BTree has
  // no destroy, and part of them may be another server's allocations):
  // docs/resp.md, "Memory not reclaimed".
  return Status::Ok();
}

}  // namespace pulse::resp
