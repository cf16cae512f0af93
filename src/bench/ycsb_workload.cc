// YCSB streams for `pulse bench ycsb` (ycsb_workload.h).
#include "bench/ycsb_workload.h"

#include <cctype>

#include <fmt/format.h>

namespace pulse::bench {

namespace ycsb = apps::ycsb;

Status CheckYcsbWorkloadOptions(const YcsbWorkloadOptions& o) {
  const char w = static_cast<char>(std::toupper(static_cast<unsigned char>(o.workload)));
  if (w != 'A' && w != 'B' && w != 'C' && w != 'D' && w != 'F')
    return Status::InvalidArgument(fmt::format("ycsb: --workload {} is none of A, B, C, D, F (E scans: a hash table has none)", o.workload));
  if (o.distribution != "zipfian" && o.distribution != "uniform")
    return Status::InvalidArgument("ycsb: --distribution " + o.distribution + " is none of zipfian, uniform");
  if (o.records == 0) return Status::InvalidArgument("ycsb: --records must be > 0");
  if (o.key_bytes < 16) return Status::InvalidArgument(fmt::format("ycsb: --key-bytes {} is below 16", o.key_bytes));
  if (o.value_bytes == 0) return Status::InvalidArgument("ycsb: --value-bytes must be > 0");
  return Status::Ok();
}

const char* YcsbOpName(YcsbOpKind kind) {
  switch (kind) {
    case YcsbOpKind::kRead: return "read";
    case YcsbOpKind::kUpdate: return "update";
    case YcsbOpKind::kInsert: return "insert";
    case YcsbOpKind::kReadModifyWrite: return "read-modify-write";
  }
  return "?";
}

std::string YcsbKey(uint64_t keynum, uint32_t key_bytes) {
  std::string k = fmt::format("u{:015x}", ycsb::FnvHash64(keynum) & 0x0fff'ffff'ffff'ffffull);
  k.resize(std::max<size_t>(key_bytes, k.size()), '.');
  return k;
}

std::string YcsbValue(uint64_t keynum, uint64_t version, uint32_t value_bytes) {
  std::string s(value_bytes, '\0');
  uint64_t x = keynum * 0x9e3779b97f4a7c15ull + version * 0xd1b54a32d192ed03ull + 1;
  for (char& c : s) {
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    c = static_cast<char>(x >> 56);
  }
  return s;
}

Result<std::unique_ptr<YcsbStream>> YcsbStream::Create(const YcsbWorkloadOptions& o, uint32_t client) {
  PULSE_RETURN_IF_ERROR(CheckYcsbWorkloadOptions(o));
  // The operation count only sizes the Zipfian over future inserts (D);
  // YCSB's default ratio is enough for the runs here.
  PULSE_ASSIGN_OR_RETURN(ycsb::WorkloadSpec spec, ycsb::CoreWorkload(o.workload, o.records, o.records));
  if (spec.request_distribution != ycsb::Distribution::kLatest)
    spec.request_distribution = o.distribution == "uniform" ? ycsb::Distribution::kUniform : ycsb::Distribution::kZipfian;
  const uint64_t seed = o.seed * 0x9e3779b97f4a7c15ull + client;
  PULSE_ASSIGN_OR_RETURN(std::unique_ptr<ycsb::Workload> w, ycsb::Workload::Create(spec, seed));
  return std::unique_ptr<YcsbStream>(new YcsbStream(std::move(w)));
}

YcsbOp YcsbStream::Next() {
  const ycsb::Operation op = workload_->Next();
  YcsbOp out;
  out.keynum = op.keynum;
  switch (op.op) {
    case ycsb::Op::kUpdate: out.kind = YcsbOpKind::kUpdate; break;
    case ycsb::Op::kInsert: out.kind = YcsbOpKind::kInsert; break;
    case ycsb::Op::kReadModifyWrite: out.kind = YcsbOpKind::kReadModifyWrite; break;
    default: out.kind = YcsbOpKind::kRead; break;  // A-D and F have no scan or delete
  }
  return out;
}

}  // namespace pulse::bench
