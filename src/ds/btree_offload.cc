// BTree inserts with the leaf split offloaded (src/ds/btree_offload.h).
#include "ds/btree_offload.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "ds/ds_common.h"
#include "pulse/iterators/ds_btree_insert.h"

namespace pulse::ds::internal {

SpareNodes::~SpareNodes() {
  for (auto& [node, spares] : by_node_)
    for (uint64_t addr : spares) (void)client_->Free(addr);
}

Result<uint64_t> SpareNodes::Take(uint32_t node) {
  std::vector<uint64_t>& here = by_node_[node];
  // The client's allocation policy picks the memory node (uniform: in
  // turn), so a few allocations find one on `node`; the others wait here.
  for (uint32_t tries = 0; here.empty() && tries <= client_->memory_nodes(); ++tries) {
    PULSE_ASSIGN_OR_RETURN(uint64_t addr, client_->Allocate(sizeof(pulse_ds_btree_node)));
    const std::optional<uint32_t> owner = client_->NodeOf(addr);
    if (!owner) {
      (void)client_->Free(addr);
      break;
    }
    by_node_[*owner].push_back(addr);
  }
  if (here.empty()) return uint64_t{0};
  const uint64_t addr = here.back();
  here.pop_back();
  return addr;
}

void SpareNodes::Give(uint64_t addr) {
  if (auto owner = client_->NodeOf(addr)) {
    by_node_[*owner].push_back(addr);
  } else {
    (void)client_->Free(addr);
  }
}

Result<ProgramRef> BTreeInsertProgram() {
  static const Result<ProgramRef> program = LoadProgram(iterators::ds_btree_insert(), "ds_btree_insert");
  return program;
}

std::vector<uint8_t> BTreeInsertScratch(const ProgramRef& program, uint64_t key, uint64_t value, uint64_t spare,
                                        uint64_t parent) {
  pulse_ds_btree_insert_state st{};
  st.key = key;
  st.value = value;
  st.spare = spare;
  st.parent = parent;  // its count is checked when the split gets there

  std::vector<uint8_t> scratch(std::max<size_t>(sizeof st, program->info().scratch_bytes), 0);
  std::memcpy(scratch.data(), &st, sizeof st);
  return scratch;
}

Result<pulse_ds_btree_insert_state> BTreeInsertState(const TraversalResult& result) {
  PULSE_RETURN_IF_ERROR(
      TraversalStatusError(result.status, "BTree insert near memory", result.fault_addr, result.fault_pc));
  pulse_ds_btree_insert_state st{};
  if (result.scratch.size() < sizeof st)
    return Status::Internal(fmt::format("BTree insert near memory: scratch pad of {} bytes returned, {} expected",
                                        result.scratch.size(), sizeof st));
  std::memcpy(&st, result.scratch.data(), sizeof st);
  return st;
}

Result<bool> InsertNearMemory(Client* client, BTree& tree, SpareNodes& spares, uint64_t key, uint64_t value,
                              uint64_t leaf, OffloadInsertStats* stats) {
  OffloadInsertStats ignored;
  OffloadInsertStats& tally = stats != nullptr ? *stats : ignored;
  PULSE_ASSIGN_OR_RETURN(ProgramRef program, BTreeInsertProgram());
  if (tree.repair_needed()) {
    ++tally.at_cpu;
    return tree.Insert(key, value);
  }
  TraverseOptions offload;
  offload.mode = ExecutionMode::kOffload;
  for (int attempt = 0; attempt < 2; ++attempt) {
    uint64_t spare = 0;
    if (auto owner = leaf != 0 ? client->NodeOf(leaf) : std::nullopt; owner) {
      PULSE_ASSIGN_OR_RETURN(spare, spares.Take(*owner));
    }
    PULSE_ASSIGN_OR_RETURN(TraversalResult r,
                           client->Traverse(program, tree.root(), BTreeInsertScratch(program, key, value, spare),
                                            offload));
    auto st = BTreeInsertState(r);
    if (!st.ok()) {
      // A spare on another memory node than the key's leaf (it changed
      // since `leaf` was learnt) faults before anything is written; other
      // faults are the tree's or the cluster's: BTree::Insert finds out.
      if (spare != 0 && r.status == TraversalStatus::kFaultInvalidPointer && r.fault_addr == spare)
        spares.Give(spare);
      break;
    }
    switch (st->result) {
      case PULSE_DS_BTREE_INS_INSERTED:
        ++tally.in_place;
        return true;
      case PULSE_DS_BTREE_INS_SPLIT:
        ++tally.splits;
        return true;
      case PULSE_DS_BTREE_INS_PRESENT:
        return false;
      default:
        break;
    }
    // Declined.  The spare is unwritten unless the traversal got to the
    // parent, which no longer had room (then it is not reused).
    if (spare != 0 && st->phase != PULSE_DS_BTREE_INS_LINKING) spares.Give(spare);
    // Without a spare for this leaf: again with one on its memory node, if
    // a split here is possible at all.
    const bool splittable = st->parent != 0 && st->parent_count < PULSE_DS_BTREE_MAX_KEYS;
    if (!splittable || st->leaf == leaf) break;
    leaf = st->leaf;
  }
  ++tally.at_cpu;
  return tree.Insert(key, value);
}

}  // namespace pulse::ds::internal
