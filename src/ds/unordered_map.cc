#include "pulse/ds/unordered_map.h"

#include "ds/chained_hash.h"

namespace pulse::ds {

Result<std::unique_ptr<UnorderedMap>> UnorderedMap::Create(Client* client,
                                                           const UnorderedMapOptions& options) {
  PULSE_ASSIGN_OR_RETURN(auto hash, internal::ChainedHash::Create(client, internal::ToChainedHashOptions(options)));
  return std::unique_ptr<UnorderedMap>(new UnorderedMap(std::move(hash)));
}

UnorderedMap::UnorderedMap(std::unique_ptr<internal::ChainedHash> hash) : hash_(std::move(hash)) {}
UnorderedMap::~UnorderedMap() = default;

Result<std::optional<uint64_t>> UnorderedMap::Find(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto l, hash_->Find(key));
  if (!l.found) return std::optional<uint64_t>();
  return std::optional<uint64_t>(l.value);
}

Result<bool> UnorderedMap::Insert(uint64_t key, uint64_t value) {
  auto r = hash_->Insert(key, value);
  if (!r.ok()) return r.status();
  return r->inserted;
}

Result<bool> UnorderedMap::InsertOrAssign(uint64_t key, uint64_t value) {
  auto r = hash_->Insert(key, value);
  if (!r.ok()) return r.status();
  if (!r->inserted) PULSE_RETURN_IF_ERROR(hash_->Assign(r->node, value));
  return r->inserted;
}

Result<bool> UnorderedMap::Erase(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto r, hash_->Erase(key));
  return r.has_value();
}

Status UnorderedMap::Rehash(uint64_t buckets) { return hash_->Rehash(buckets); }
size_t UnorderedMap::size() const { return hash_->size(); }
uint64_t UnorderedMap::bucket_count() const { return hash_->bucket_count(); }
uint64_t UnorderedMap::BucketAddress(uint64_t key) const { return hash_->SlotOf(key); }
double UnorderedMap::max_load_factor() const { return hash_->max_load_factor(); }
void UnorderedMap::set_max_load_factor(double f) { hash_->set_max_load_factor(f); }
void UnorderedMap::set_mode(std::optional<ExecutionMode> mode) { hash_->set_mode(mode); }
std::optional<ExecutionMode> UnorderedMap::mode() const { return hash_->mode(); }

const RegionStats& UnorderedMap::region_stats() const { return hash_->region_stats(); }

}  // namespace pulse::ds
