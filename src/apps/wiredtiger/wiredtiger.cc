// The WiredTiger-like application (include/pulse/apps/wiredtiger.h).
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "apps/apps_common.h"
#include "ds/ds_common.h"

#include "apps/wiredtiger/iterators/wt_nodes.h"
#include "pulse/apps/wiredtiger.h"
#include "pulse/iterators/wt_scan.h"

namespace pulse::apps {
namespace {

static_assert(kWiredTigerMaxScan == PULSE_WT_MAX_SCAN);

Result<ProgramRef> ScanProgram() {
  static const Result<ProgramRef> program = LoadEmbeddedProgram(iterators::wt_scan(), "wt_scan");
  return program;
}

}  // namespace

std::vector<uint64_t> WiredTigerValue(uint64_t key, uint64_t version) {
  std::vector<uint64_t> v(PULSE_WT_VALUE_WORDS);
  for (uint64_t i = 0; i < v.size(); ++i) v[i] = internal::Mix64(key * 31 + version * 1000003 + i);
  return v;
}

uint64_t WiredTigerChecksum(const std::vector<uint64_t>& value) {
  uint64_t s = 0;
  for (uint64_t w : value) s += w;
  return s;
}

Result<std::vector<ScanRecord>> OffloadedScan(Client* client, uint64_t root, uint64_t start, uint32_t count,
                                              std::optional<ExecutionMode> mode, uint32_t* iterations) {
  if (count == 0 || count > kWiredTigerMaxScan)
    return Status::InvalidArgument(fmt::format("wiredtiger scan: count {} outside [1, {}]", count, kWiredTigerMaxScan));
  auto program = ScanProgram();
  if (!program.ok()) return program.status();
  pulse_wt_scan_state st;
  std::memset(&st, 0, sizeof st);
  st.start = start;
  st.limit = count;
  std::vector<uint8_t> scratch(std::max<size_t>(sizeof st, (*program)->info().scratch_bytes), 0);
  std::memcpy(scratch.data(), &st, sizeof st);
  TraverseOptions options;
  options.mode = mode;
  auto r = client->Traverse(*program, root, std::move(scratch), options);
  if (!r.ok()) return r.status();
  if (iterations != nullptr) *iterations = r->iterations;
  // Formatted only on a fault: this runs once per request.
  if (r->status != TraversalStatus::kDone) {
    return TraversalStatusError(r->status, fmt::format("wiredtiger scan from {}", start), r->fault_addr, r->fault_pc);
  }
  if (r->scratch.size() < sizeof st) return Status::Internal("wiredtiger scan: short scratch pad");
  std::memcpy(&st, r->scratch.data(), sizeof st);
  if (st.count > count) return Status::Internal(fmt::format("wiredtiger scan: {} records for {} asked", st.count, count));
  std::vector<ScanRecord> out;
  for (uint64_t i = 0; i < st.count; ++i) out.push_back(ScanRecord{st.out[i].key, st.out[i].checksum});
  return out;
}

Result<std::unique_ptr<WiredTiger>> WiredTiger::Load(AppSystem* system, const WiredTigerOptions& options) {
  auto spec = ycsb::CoreWorkload('E', options.records, options.operations);
  if (!spec.ok()) return spec.status();
  spec->max_scan_length = std::min<uint32_t>(spec->max_scan_length, kWiredTigerMaxScan);
  auto workload = ycsb::Workload::Create(*spec, options.seed);
  if (!workload.ok()) return workload.status();
  ds::BTreeOptions to;
  to.partition = options.partition;
  auto tree = ds::BTree::Create(system->client(), to);
  if (!tree.ok()) return tree.status();
  std::unique_ptr<WiredTiger> app(new WiredTiger());
  app->partition_ = options.partition;
  app->system_ = system;
  app->tree_ = std::move(*tree);
  app->workload_ = std::move(*workload);
  for (uint64_t i = 0; i < options.records; ++i) PULSE_RETURN_IF_ERROR(app->InsertRecord(app->workload_->LoadKey(i)));
  return app;
}

Status WiredTiger::InsertRecord(uint64_t key) {
  Client* client = system_->client();
  std::optional<uint32_t> node;
  if (partition_) node = key < partition_->split_key ? partition_->low_node : partition_->high_node;
  auto slot = client->Allocate(PULSE_WT_SLOT_BYTES, node);
  if (!slot.ok()) return slot.status();
  std::vector<uint64_t> value = WiredTigerValue(key, 0);
  value.resize(PULSE_WT_SLOT_BYTES / 8, 0);
  PULSE_RETURN_IF_ERROR(system_->WriteObject(*slot, value.data(), PULSE_WT_SLOT_BYTES));
  auto inserted = tree_->Insert(key, *slot);
  if (!inserted.ok()) return inserted.status();
  if (!*inserted) return client->Free(*slot);  // the key exists already: keep its record
  checksums_[key] = WiredTigerChecksum(WiredTigerValue(key, 0));
  return Status::Ok();
}

Result<std::vector<ScanRecord>> WiredTiger::Serve(const ycsb::Operation& op) {
  switch (op.op) {
    case ycsb::Op::kScan:
      return system_->BTreeScan(*tree_, op.key, std::min<uint32_t>(op.scan_length, kWiredTigerMaxScan));
    case ycsb::Op::kInsert: {
      PULSE_RETURN_IF_ERROR(InsertRecord(op.key));
      workload_->Acknowledge(op.keynum);
      return std::vector<ScanRecord>();
    }
    default:
      return Status::InvalidArgument(fmt::format("wiredtiger: operation {} is not part of workload E", ycsb::OpName(op.op)));
  }
}

std::vector<ScanRecord> WiredTiger::NativeScan(uint64_t start, uint32_t count) const {
  std::vector<ScanRecord> out;
  for (auto it = checksums_.lower_bound(start); it != checksums_.end() && out.size() < count; ++it)
    out.push_back(ScanRecord{it->first, it->second});
  return out;
}

}  // namespace pulse::apps
