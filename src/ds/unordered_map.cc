#include "pulse/ds/unordered_map.h"

#include <cstddef>
#include <vector>

#include "ds/ds_common.h"
#include "ds/iterators/ds_nodes.h"
#include "pulse/iterators/ds_umap_find.h"

namespace pulse::ds {
namespace {

using internal::ReadObject;
using internal::WriteObject;
using Node = pulse_ds_umap_node;

Result<ProgramRef> FindProgram() {
  static const Result<ProgramRef> program =
      internal::LoadProgram(iterators::ds_umap_find(), "ds_umap_find");
  return program;
}

// A 64-bit mixer (splitmix64's finalizer): consecutive keys spread evenly.
uint64_t Hash(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

Result<std::unique_ptr<UnorderedMap>> UnorderedMap::Create(Client* client,
                                                           const UnorderedMapOptions& options) {
  if (client == nullptr) return Status::InvalidArgument("UnorderedMap: no client");
  if (options.buckets == 0) return Status::InvalidArgument("UnorderedMap: buckets must be > 0");
  auto program = FindProgram();
  if (!program.ok()) return program.status();
  auto array = client->Allocate(options.buckets * 8);
  if (!array.ok()) return array.status();
  std::vector<uint64_t> zero(options.buckets, 0);
  PULSE_RETURN_IF_ERROR(client->Write(*array, zero.data(), zero.size() * 8));
  return std::unique_ptr<UnorderedMap>(
      new UnorderedMap(client, *array, options.buckets, options.mode));
}

UnorderedMap::UnorderedMap(Client* client, uint64_t bucket_array, uint64_t buckets,
                           std::optional<ExecutionMode> mode)
    : client_(client), bucket_array_(bucket_array), buckets_(buckets), mode_(mode) {}

uint64_t UnorderedMap::SlotOf(uint64_t key) const {
  return bucket_array_ + (Hash(key) % buckets_) * 8;
}

Result<UnorderedMap::Lookup> UnorderedMap::FindNode(uint64_t key) {
  uint64_t head = 0;  // init(): the bucket's first node
  PULSE_RETURN_IF_ERROR(ReadObject(client_, SlotOf(key), head));
  if (head == 0) return Lookup{};
  auto program = FindProgram();
  if (!program.ok()) return program.status();
  pulse_ds_umap_find_state st{key, 0, 0, 0};
  PULSE_RETURN_IF_ERROR(
      internal::RunTraversal(client_, *program, head, st, mode_, "UnorderedMap::Find"));
  return Lookup{st.found != 0, st.value, st.node};
}

Result<std::optional<uint64_t>> UnorderedMap::Find(uint64_t key) {
  auto l = FindNode(key);
  if (!l.ok()) return l.status();
  if (!l->found) return std::optional<uint64_t>();
  return std::optional<uint64_t>(l->value);
}

Result<bool> UnorderedMap::Insert(uint64_t key, uint64_t value) {
  auto l = FindNode(key);
  if (!l.ok()) return l.status();
  if (l->found) return false;
  const uint64_t slot = SlotOf(key);
  uint64_t head = 0;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, slot, head));
  auto addr = client_->Allocate(sizeof(Node));
  if (!addr.ok()) return addr.status();
  const Node n{key, value, head};
  PULSE_RETURN_IF_ERROR(WriteObject(client_, *addr, n));
  PULSE_RETURN_IF_ERROR(WriteObject(client_, slot, *addr));  // publish after the node
  ++size_;
  return true;
}

Result<bool> UnorderedMap::InsertOrAssign(uint64_t key, uint64_t value) {
  auto l = FindNode(key);
  if (!l.ok()) return l.status();
  if (!l->found) return Insert(key, value);
  PULSE_RETURN_IF_ERROR(WriteObject(client_, l->node + offsetof(Node, value), value));
  return false;
}

Result<bool> UnorderedMap::Erase(uint64_t key) {
  const uint64_t slot = SlotOf(key);
  uint64_t link = slot;  // the far word pointing at cur
  uint64_t cur = 0;
  PULSE_RETURN_IF_ERROR(ReadObject(client_, slot, cur));
  while (cur != 0) {
    Node n;
    PULSE_RETURN_IF_ERROR(ReadObject(client_, cur, n));
    if (n.key == key) {
      PULSE_RETURN_IF_ERROR(WriteObject(client_, link, n.next));
      PULSE_RETURN_IF_ERROR(client_->Free(cur));
      --size_;
      return true;
    }
    link = cur + offsetof(Node, next);
    cur = n.next;
  }
  return false;
}

}  // namespace pulse::ds
