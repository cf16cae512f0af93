// pulse::apps::ycsb: a YCSB workload generator that follows YCSB's own
// (site.ycsb.generator and site.ycsb.workloads.CoreWorkload), and a reader
// of YCSB-format trace files.
//
// The generators reproduce YCSB's algorithms, not its random streams (YCSB
// uses Java's ThreadLocalRandom; these draw from a seeded mt19937_64, so a
// run is repeatable for a given seed):
//   UniformGenerator          lb + |random long| mod (ub - lb + 1)
//   ZipfianGenerator          Gray et al.'s "Quickly generating billion-record
//                             synthetic databases" method with YCSB's zeta,
//                             eta and alpha, theta 0.99 by default; item 0 is
//                             the most popular; zeta is extended incrementally
//                             when the item count grows (SkewedLatest)
//   ScrambledZipfianGenerator a Zipfian over 10^10 items (zeta precomputed as
//                             YCSB does for theta 0.99), FNV-1 64 hashed into
//                             [min, max]: popular items are spread out
//   SkewedLatestGenerator     last - Zipfian(last): favours recent inserts
//   CounterGenerator          0, 1, 2, ... (insert key numbers)
//   AcknowledgedCounterGenerator  a counter whose Last() only advances over
//                             acknowledged (completed) inserts
//
// Workloads A-F are CoreWorkload's standard property files:
//   A read 0.5 / update 0.5, zipfian       B read 0.95 / update 0.05, zipfian
//   C read 1.0, zipfian                    D read 0.95 / insert 0.05, latest
//   E scan 0.95 / insert 0.05, zipfian, scan length uniform in [1, 100]
//   F read 0.5 / read-modify-write 0.5, zipfian
// Keys follow insertorder=hashed: key number n is the record "user<h>" with
// h = FnvHash64(n); Operation::key is h.  As in CoreWorkload, the zipfian
// chooser covers record_count + 2 * operation_count * insert_proportion
// items and a key number beyond the last acknowledged insert is drawn again.
//
// Trace files (ReadTrace / ParseTraceLine) are what YCSB prints with its
// basic DB (`-db site.ycsb.BasicDB`, `-p basicdb.verbose=true`), one
// operation per line:
//   READ   <table> <key> [ <field names or <all fields>> ]
//   UPDATE <table> <key> [ field=value ... ]
//   INSERT <table> <key> [ field=value ... ]
//   SCAN   <table> <start key> <record count> [ <field names> ]
//   DELETE <table> <key>
// <key> is "user" followed by a decimal number below 2^64 (YCSB's key
// format; the number becomes Operation::key).  The bracketed field list is
// optional and ignored.  Empty lines and lines starting with '#' are
// skipped, and so are the lines YCSB itself prints around the operations
// (its banner, "Loading workload...", "Starting test.", "DBWrapper: ...",
// "[OVERALL]"-style measurement lines and "Command line:").  Anything else is
// an error naming the file's line number and the bad field.
//
// Thread-safety: generators and workloads are not thread-safe; the free
// functions are.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "pulse/status.h"

namespace pulse::apps::ycsb {

// YCSB's Utils.fnvhash64: FNV-1 over the 8 bytes of `v`, least significant
// first, made non-negative as Java's Math.abs does.
uint64_t FnvHash64(uint64_t v);

// The random source of the generators: a seeded mt19937_64.
class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  uint64_t NextU64() { return rng_(); }
  // Uniform in [0, 1) with 53 random bits.
  double NextDouble() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 rng_;
};

// Uniform integers in [lb, ub].
class UniformGenerator {
 public:
  UniformGenerator(uint64_t lb, uint64_t ub) : lb_(lb), interval_(ub - lb + 1) {}
  uint64_t Next(Random& r);

 private:
  uint64_t lb_, interval_;  // interval_ 0 means the full 2^64 range
};

// YCSB's ZipfianGenerator over [min, max].
class ZipfianGenerator {
 public:
  static constexpr double kZipfianConstant = 0.99;
  // zetan < 0: computed (O(items)); otherwise taken as zeta(items, theta).
  ZipfianGenerator(uint64_t min, uint64_t max, double theta = kZipfianConstant, double zetan = -1);
  // A value in [min, max].
  uint64_t Next(Random& r) { return NextLong(r, items_); }
  // A value in [min, min + item_count) (YCSB's nextLong(itemcount)); zeta is
  // extended (or recomputed when item_count shrinks) first.
  uint64_t NextLong(Random& r, uint64_t item_count);

  // zeta(n, theta) = sum_{i=1..n} 1 / i^theta.
  static double Zeta(uint64_t n, double theta);
  double zetan() const { return zetan_; }
  double theta() const { return theta_; }

 private:
  void SetItemCount(uint64_t n);
  uint64_t items_, base_;
  double theta_, zeta2theta_, alpha_, zetan_, eta_;
  uint64_t count_for_zeta_;
};

// YCSB's ScrambledZipfianGenerator over [min, max].
class ScrambledZipfianGenerator {
 public:
  static constexpr uint64_t kItemCount = 10'000'000'000ull;
  static constexpr double kZetan = 26.46902820178302;  // zeta(10^10, 0.99)
  ScrambledZipfianGenerator(uint64_t min, uint64_t max, double theta = ZipfianGenerator::kZipfianConstant);
  uint64_t Next(Random& r);

 private:
  uint64_t min_, item_count_;
  ZipfianGenerator gen_;
};

// 0-based counters for insert key numbers.
class CounterGenerator {
 public:
  explicit CounterGenerator(uint64_t start) : next_(start) {}
  uint64_t Next() { return next_++; }
  // The last value handed out (start - 1 before the first Next()).
  uint64_t Last() const { return next_ - 1; }

 private:
  uint64_t next_;
};

// A counter whose Last() is the highest value v such that every value up to
// v has been acknowledged: readers never pick a key still being inserted.
class AcknowledgedCounterGenerator {
 public:
  explicit AcknowledgedCounterGenerator(uint64_t start) : counter_(start), limit_(start - 1) {}
  uint64_t Next() { return counter_.Next(); }
  // Marks value as inserted.  Values may be acknowledged out of order.
  void Acknowledge(uint64_t value);
  uint64_t Last() const { return limit_; }

 private:
  CounterGenerator counter_;
  uint64_t limit_;
  std::vector<uint64_t> pending_;  // acknowledged values above limit_ + 1 (a min-heap)
};

// YCSB's SkewedLatestGenerator: with last = basis.Last(), last - z where z
// is Zipfian in [0, last) (so values fall in (0, last]; 0 while last is 0).
class SkewedLatestGenerator {
 public:
  explicit SkewedLatestGenerator(const AcknowledgedCounterGenerator* basis);
  uint64_t Next(Random& r);

 private:
  const AcknowledgedCounterGenerator* basis_;
  ZipfianGenerator zipfian_;
};

enum class Op { kRead, kUpdate, kInsert, kScan, kReadModifyWrite, kDelete };
const char* OpName(Op op);

enum class Distribution { kUniform, kZipfian, kLatest };
const char* DistributionName(Distribution d);

// A CoreWorkload property set (the subset the applications use).
struct WorkloadSpec {
  char name = 'A';  // 'A'..'F', or '?' for a custom mix
  double read = 0, update = 0, insert = 0, scan = 0, read_modify_write = 0;
  Distribution request_distribution = Distribution::kZipfian;
  double zipfian_constant = ZipfianGenerator::kZipfianConstant;
  uint64_t record_count = 1000;
  uint64_t operation_count = 1000;
  uint32_t min_scan_length = 1;
  uint32_t max_scan_length = 100;  // scan length uniform in [min, max] (scanlengthdistribution=uniform)
  bool hashed_keys = true;         // insertorder=hashed
};

// The standard workload `letter` ('A'..'F', either case) with the given
// record and operation counts.  InvalidArgument for another letter.
Result<WorkloadSpec> CoreWorkload(char letter, uint64_t record_count, uint64_t operation_count);

// One operation of a run.
struct Operation {
  Op op = Op::kRead;
  uint64_t keynum = 0;       // the key number (generated operations)
  uint64_t key = 0;          // the record's key: FnvHash64(keynum) or keynum
  uint32_t scan_length = 0;  // kScan: records to read
};

// A stream of operations following a WorkloadSpec.
class Workload {
 public:
  // InvalidArgument if the proportions are negative or sum to 0, or
  // record_count is 0, or the scan lengths are 0 or reversed.
  static Result<std::unique_ptr<Workload>> Create(const WorkloadSpec& spec, uint64_t seed);
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;
  // The key of the i-th record of the load phase (i < record_count).
  uint64_t LoadKey(uint64_t i) const { return KeyOf(i); }
  uint64_t KeyOf(uint64_t keynum) const { return spec_.hashed_keys ? FnvHash64(keynum) : keynum; }
  // The next operation.  An insert's key is new; it counts for reads (and
  // "latest") once Acknowledge(op.keynum) is called.
  Operation Next();
  void Acknowledge(uint64_t keynum) { inserts_.Acknowledge(keynum); }
  const WorkloadSpec& spec() const { return spec_; }

 private:
  explicit Workload(const WorkloadSpec& spec, uint64_t seed);
  uint64_t NextKeynum();

  WorkloadSpec spec_;
  Random rng_;
  std::vector<std::pair<double, Op>> cumulative_;
  AcknowledgedCounterGenerator inserts_;
  UniformGenerator uniform_;
  ScrambledZipfianGenerator scrambled_;
  SkewedLatestGenerator latest_;
  UniformGenerator scan_length_;
};

// Parses one trace line (see the header comment).  Returns the operation, or
// nullopt-like "skip" through *skipped for blank and YCSB status lines.
// Errors: InvalidArgument naming `line_number` and the bad field.
Result<Operation> ParseTraceLine(std::string_view line, uint64_t line_number, bool* skipped);
// Every operation of a trace file.  IoError if it cannot be read;
// InvalidArgument (with the path and line) for a malformed line, or if it is
// no regular file or larger than 4 GiB (common/bounded_file.h).
Result<std::vector<Operation>> ReadTrace(const std::string& path);

}  // namespace pulse::apps::ycsb
