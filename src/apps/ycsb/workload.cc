// CoreWorkload's standard workloads and its operation stream; see
// include/pulse/apps/ycsb.h.
#include <cctype>

#include <fmt/format.h>

#include "pulse/apps/ycsb.h"

namespace pulse::apps::ycsb {

const char* OpName(Op op) {
  switch (op) {
    case Op::kRead: return "READ";
    case Op::kUpdate: return "UPDATE";
    case Op::kInsert: return "INSERT";
    case Op::kScan: return "SCAN";
    case Op::kReadModifyWrite: return "READMODIFYWRITE";
    case Op::kDelete: return "DELETE";
  }
  return "?";
}

const char* DistributionName(Distribution d) {
  switch (d) {
    case Distribution::kUniform: return "uniform";
    case Distribution::kZipfian: return "zipfian";
    case Distribution::kLatest: return "latest";
  }
  return "?";
}

Result<WorkloadSpec> CoreWorkload(char letter, uint64_t record_count, uint64_t operation_count) {
  WorkloadSpec s;
  s.name = static_cast<char>(std::toupper(static_cast<unsigned char>(letter)));
  s.record_count = record_count;
  s.operation_count = operation_count;
  switch (s.name) {
    case 'A': s.read = 0.5; s.update = 0.5; break;
    case 'B': s.read = 0.95; s.update = 0.05; break;
    case 'C': s.read = 1.0; break;
    case 'D': s.read = 0.95; s.insert = 0.05; s.request_distribution = Distribution::kLatest; break;
    case 'E': s.scan = 0.95; s.insert = 0.05; break;
    case 'F': s.read = 0.5; s.read_modify_write = 0.5; break;
    default:
      return Status::InvalidArgument(fmt::format("ycsb: workload '{}' is not one of A-F", letter));
  }
  return s;
}

Result<std::unique_ptr<Workload>> Workload::Create(const WorkloadSpec& spec, uint64_t seed) {
  const double p[] = {spec.read, spec.update, spec.insert, spec.scan, spec.read_modify_write};
  double total = 0;
  for (double x : p) {
    if (x < 0) return Status::InvalidArgument("ycsb: operation proportions must be >= 0");
    total += x;
  }
  if (total <= 0) return Status::InvalidArgument("ycsb: operation proportions sum to 0");
  if (spec.record_count == 0) return Status::InvalidArgument("ycsb: record_count must be > 0");
  if (spec.min_scan_length == 0 || spec.min_scan_length > spec.max_scan_length)
    return Status::InvalidArgument(fmt::format("ycsb: scan lengths [{}, {}] must satisfy 1 <= min <= max",
                                               spec.min_scan_length, spec.max_scan_length));
  if (spec.zipfian_constant <= 0 || spec.zipfian_constant >= 1)
    return Status::InvalidArgument("ycsb: zipfian_constant must be in (0, 1)");
  return std::unique_ptr<Workload>(new Workload(spec, seed));
}

// CoreWorkload.init(): the zipfian chooser also covers the keys the run is
// expected to insert (twice the expected count), so new keys get picked.
Workload::Workload(const WorkloadSpec& spec, uint64_t seed)
    : spec_(spec),
      rng_(seed),
      inserts_(spec.record_count),
      uniform_(0, spec.record_count - 1),
      scrambled_(0, spec.record_count +
                        static_cast<uint64_t>(static_cast<double>(spec.operation_count) * spec.insert * 2.0),
                 spec.zipfian_constant),
      latest_(&inserts_),
      scan_length_(spec.min_scan_length, spec.max_scan_length) {
  double sum = 0;
  const std::pair<double, Op> weights[] = {{spec.read, Op::kRead},
                                           {spec.update, Op::kUpdate},
                                           {spec.insert, Op::kInsert},
                                           {spec.scan, Op::kScan},
                                           {spec.read_modify_write, Op::kReadModifyWrite}};
  for (const auto& [w, op] : weights) {
    if (w <= 0) continue;
    sum += w;
    cumulative_.emplace_back(sum, op);
  }
}

uint64_t Workload::NextKeynum() {
  // A key number beyond the last acknowledged insert is drawn again.
  for (;;) {
    uint64_t k = 0;
    switch (spec_.request_distribution) {
      case Distribution::kUniform: k = uniform_.Next(rng_); break;
      case Distribution::kZipfian: k = scrambled_.Next(rng_); break;
      case Distribution::kLatest: k = latest_.Next(rng_); break;
    }
    if (k <= inserts_.Last()) return k;
  }
}

Operation Workload::Next() {
  const double x = rng_.NextDouble() * cumulative_.back().first;
  Op op = cumulative_.back().second;
  for (const auto& [c, o] : cumulative_) {
    if (x < c) {
      op = o;
      break;
    }
  }
  Operation out;
  out.op = op;
  out.keynum = op == Op::kInsert ? inserts_.Next() : NextKeynum();
  out.key = KeyOf(out.keynum);
  if (op == Op::kScan) out.scan_length = static_cast<uint32_t>(scan_length_.Next(rng_));
  return out;
}

}  // namespace pulse::apps::ycsb
