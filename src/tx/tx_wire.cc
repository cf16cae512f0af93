// The transactions' wire (tx_wire.h).
#include "tx/tx_wire.h"

#include <cstring>

#include <fmt/format.h>

namespace pulse::tx {
namespace {

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>* out) : out_(out) {}
  template <typename T>
  void Put(T v) {
    const size_t at = out_->size();
    out_->resize(at + sizeof(T));
    std::memcpy(out_->data() + at, &v, sizeof(T));
  }
  void Bytes(std::span<const uint8_t> b) { out_->insert(out_->end(), b.begin(), b.end()); }

 private:
  std::vector<uint8_t>* out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() - at_ < sizeof(T)) return false;
    std::memcpy(v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  bool Bytes(size_t n, std::span<const uint8_t>* out) {
    if (in_.size() - at_ < n) return false;
    *out = in_.subspan(at_, n);
    at_ += n;
    return true;
  }
  size_t left() const { return in_.size() - at_; }
  size_t used() const { return at_; }
  std::span<const uint8_t> rest() const { return in_.subspan(at_); }

 private:
  std::span<const uint8_t> in_;
  size_t at_ = 0;
};

Status Bad(Malformed* error, Malformed what, std::string msg) {
  if (error != nullptr) *error = what;
  return Status::InvalidArgument("tx: " + std::move(msg));
}

void PutHeader(Writer& w, const Header& h) {
  w.Put(static_cast<uint8_t>(h.kind));
  w.Put(h.flags);
  w.Put(uint16_t{0});
  w.Put(h.tenant);
  w.Put(h.request_id);
  w.Put(h.chain);
}

// `n` tuples of writes: {u64 offset, u32 len, data}.
Result<std::vector<WriteOp>> GetWrites(Reader& r, uint32_t n, Malformed* error) {
  if (n > kMaxTuples) return Bad(error, Malformed::kCount, fmt::format("bad n: {} writes (at most {})", n, kMaxTuples));
  std::vector<WriteOp> out;
  for (uint32_t i = 0; i < n; ++i) {
    WriteOp w;
    uint32_t len = 0;
    if (!r.Get(&w.offset) || !r.Get(&len))
      return Bad(error, Malformed::kLength, fmt::format("write {} of {}: its header is past the end", i, n));
    if (len == 0 || len > kMaxValueBytes)
      return Bad(error, Malformed::kLength, fmt::format("write {}: length {} is outside [1, {}]", i, len, kMaxValueBytes));
    std::span<const uint8_t> data;
    if (!r.Bytes(len, &data))
      return Bad(error, Malformed::kLength,
                 fmt::format("write {}: length {} runs past the end ({} bytes left)", i, len, r.left()));
    w.data.assign(data.begin(), data.end());
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace

void AppendRecord(const std::vector<WriteOp>& writes, std::vector<uint8_t>* out) {
  Writer w(out);
  w.Put(static_cast<uint32_t>(writes.size()));
  for (const WriteOp& op : writes) {
    w.Put(op.offset);
    w.Put(static_cast<uint32_t>(op.data.size()));
    w.Bytes(op.data);
  }
}

void AppendValues(const Values& values, std::vector<uint8_t>* out) {
  Writer w(out);
  w.Put(static_cast<uint32_t>(values.size()));
  for (const auto& v : values) {
    w.Put(static_cast<uint32_t>(v.size()));
    w.Bytes(v);
  }
}

Result<Values> DecodeValues(std::span<const uint8_t> in, size_t* used) {
  Reader r(in);
  uint32_t n = 0;
  if (!r.Get(&n)) return Status::InvalidArgument("tx: bad n: no value count");
  if (n > kMaxTuples) return Status::InvalidArgument(fmt::format("tx: bad n: {} values (at most {})", n, kMaxTuples));
  Values out;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t len = 0;
    std::span<const uint8_t> v;
    if (!r.Get(&len) || len > kMaxValueBytes || !r.Bytes(len, &v))
      return Status::InvalidArgument(fmt::format("tx: value {} of {}: its length runs past the end", i, n));
    out.emplace_back(v.begin(), v.end());
  }
  *used = r.used();
  return out;
}

std::vector<uint8_t> EncodeExecute(const Header& h, const ExecuteBody& b) {
  std::vector<uint8_t> out;
  Writer w(&out);
  PutHeader(w, h);
  w.Put(static_cast<uint32_t>(b.reads.size()));
  for (const ReadOp& r : b.reads) {
    w.Put(r.offset);
    w.Put(r.length);
  }
  AppendRecord(b.writes, &out);
  return out;
}

std::vector<uint8_t> EncodeForward(const Header& h, const ForwardBody& b) {
  std::vector<uint8_t> out;
  Writer w(&out);
  PutHeader(w, h);
  w.Put(b.seq);
  w.Put(b.request_id);
  w.Put(b.stable);
  AppendValues(b.values, &out);
  AppendRecord(b.writes, &out);
  return out;
}

std::vector<uint8_t> EncodeAck(const Header& h, const AckBody& b) {
  std::vector<uint8_t> out;
  Writer w(&out);
  PutHeader(w, h);
  w.Put(b.seq);
  w.Put(b.code);
  return out;
}

std::vector<uint8_t> EncodeConfigure(const Header& h, const ConfigureBody& b) {
  std::vector<uint8_t> out;
  Writer w(&out);
  PutHeader(w, h);
  w.Put(b.epoch);
  w.Put(b.region_bytes);
  w.Put(b.joiner);
  w.Put(b.joiner_seq);
  w.Put(static_cast<uint32_t>(b.members.size()));
  for (const Member& m : b.members) {
    w.Put(m.node);
    w.Put(m.region);
  }
  return out;
}

std::vector<uint8_t> EncodeStatus(const Header& h) {
  std::vector<uint8_t> out;
  Writer w(&out);
  PutHeader(w, h);
  return out;
}

std::vector<uint8_t> EncodeReply(const Reply& r) {
  std::vector<uint8_t> out;
  Writer w(&out);
  w.Put(r.request_id);
  w.Put(r.code);
  w.Put(r.seq);
  AppendValues(r.values, &out);
  w.Put(static_cast<uint32_t>(r.message.size()));
  w.Bytes({reinterpret_cast<const uint8_t*>(r.message.data()), r.message.size()});
  return out;
}

Result<Header> DecodeHeader(std::span<const uint8_t> in, std::span<const uint8_t>* rest) {
  Reader r(in);
  Header h;
  uint8_t kind = 0;
  uint16_t reserved = 0;
  if (!r.Get(&kind) || !r.Get(&h.flags) || !r.Get(&reserved) || !r.Get(&h.tenant) || !r.Get(&h.request_id) ||
      !r.Get(&h.chain))
    return Status::InvalidArgument(fmt::format("tx: a header of {} bytes (needs 24)", in.size()));
  if (kind < 1 || kind > 5) return Status::InvalidArgument(fmt::format("tx: unknown kind {}", kind));
  h.kind = static_cast<Kind>(kind);
  *rest = r.rest();
  return h;
}

Result<ExecuteBody> DecodeExecute(std::span<const uint8_t> body, Malformed* error) {
  Reader r(body);
  ExecuteBody b;
  uint32_t n = 0;
  if (!r.Get(&n)) return Bad(error, Malformed::kCount, "bad n: no read count");
  if (n > kMaxTuples) return Bad(error, Malformed::kCount, fmt::format("bad n: {} reads (at most {})", n, kMaxTuples));
  for (uint32_t i = 0; i < n; ++i) {
    ReadOp op;
    if (!r.Get(&op.offset) || !r.Get(&op.length))
      return Bad(error, Malformed::kLength, fmt::format("read {} of {} is past the end", i, n));
    if (op.length == 0 || op.length > kMaxValueBytes)
      return Bad(error, Malformed::kLength,
                 fmt::format("read {}: length {} is outside [1, {}]", i, op.length, kMaxValueBytes));
    b.reads.push_back(op);
  }
  uint32_t m = 0;
  if (!r.Get(&m)) return Bad(error, Malformed::kCount, "bad n: no write count");
  PULSE_ASSIGN_OR_RETURN(b.writes, GetWrites(r, m, error));
  if (r.left() != 0) return Bad(error, Malformed::kTrailing, fmt::format("{} bytes after the last write", r.left()));
  return b;
}

Result<std::vector<WriteOp>> DecodeRecord(std::span<const uint8_t> in, size_t* used, Malformed* error) {
  Reader r(in);
  uint32_t n = 0;
  if (!r.Get(&n)) return Bad(error, Malformed::kCount, "bad n: no record count");
  PULSE_ASSIGN_OR_RETURN(std::vector<WriteOp> w, GetWrites(r, n, error));
  *used = r.used();
  return w;
}

Result<ForwardBody> DecodeForward(std::span<const uint8_t> body, Malformed* error) {
  Reader r(body);
  ForwardBody b;
  if (!r.Get(&b.seq) || !r.Get(&b.request_id) || !r.Get(&b.stable))
    return Bad(error, Malformed::kHeader, "forward without its sequence number, request id and stable point");
  size_t values_used = 0;
  Result<Values> values = DecodeValues(r.rest(), &values_used);
  if (!values.ok()) return Bad(error, Malformed::kLength, values.status().message());
  b.values = std::move(values).value();
  std::span<const uint8_t> record = r.rest().subspan(values_used);
  size_t used = 0;
  PULSE_ASSIGN_OR_RETURN(b.writes, DecodeRecord(record, &used, error));
  if (record.size() != used) return Bad(error, Malformed::kTrailing, "bytes after the forwarded record");
  return b;
}

Result<AckBody> DecodeAck(std::span<const uint8_t> body) {
  Reader r(body);
  AckBody b;
  if (!r.Get(&b.seq) || !r.Get(&b.code) || r.left() != 0) return Status::InvalidArgument("tx: a malformed ack");
  return b;
}

Result<ConfigureBody> DecodeConfigure(std::span<const uint8_t> body) {
  Reader r(body);
  ConfigureBody b;
  uint32_t n = 0;
  if (!r.Get(&b.epoch) || !r.Get(&b.region_bytes) || !r.Get(&b.joiner) || !r.Get(&b.joiner_seq) || !r.Get(&n))
    return Status::InvalidArgument("tx: configure: a short header");
  if (n == 0 || n > kMaxMembers)
    return Status::InvalidArgument(fmt::format("tx: configure: bad n: {} members (1..{})", n, kMaxMembers));
  for (uint32_t i = 0; i < n; ++i) {
    Member m;
    if (!r.Get(&m.node) || !r.Get(&m.region))
      return Status::InvalidArgument(fmt::format("tx: configure: member {} of {} is past the end", i, n));
    b.members.push_back(m);
  }
  if (r.left() != 0) return Status::InvalidArgument("tx: configure: bytes after the last member");
  return b;
}

Result<Reply> DecodeReply(std::span<const uint8_t> in) {
  Reader r(in);
  Reply out;
  if (!r.Get(&out.request_id) || !r.Get(&out.code) || !r.Get(&out.seq))
    return Status::InvalidArgument("tx: a short reply");
  size_t used = 0;
  PULSE_ASSIGN_OR_RETURN(out.values, DecodeValues(r.rest(), &used));
  std::span<const uint8_t> skip;
  (void)r.Bytes(used, &skip);
  uint32_t mlen = 0;
  std::span<const uint8_t> m;
  if (!r.Get(&mlen) || !r.Bytes(mlen, &m) || r.left() != 0) return Status::InvalidArgument("tx: a reply's message");
  out.message.assign(m.begin(), m.end());
  return out;
}

}  // namespace pulse::tx
