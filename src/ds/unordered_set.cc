#include "pulse/ds/unordered_set.h"

#include "ds/chained_hash.h"

namespace pulse::ds {

Result<std::unique_ptr<UnorderedSet>> UnorderedSet::Create(Client* client,
                                                           const UnorderedSetOptions& options) {
  PULSE_ASSIGN_OR_RETURN(auto hash, internal::ChainedHash::Create(client, internal::ToChainedHashOptions(options)));
  return std::unique_ptr<UnorderedSet>(new UnorderedSet(std::move(hash)));
}

UnorderedSet::UnorderedSet(std::unique_ptr<internal::ChainedHash> hash) : hash_(std::move(hash)) {}
UnorderedSet::~UnorderedSet() = default;

Result<bool> UnorderedSet::Insert(uint64_t key) {
  auto r = hash_->Insert(key, 0);
  if (!r.ok()) return r.status();
  return r->inserted;
}

Result<bool> UnorderedSet::Erase(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto r, hash_->Erase(key));
  return r.has_value();
}

Result<bool> UnorderedSet::Contains(uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto l, hash_->Find(key));
  return l.found;
}

Status UnorderedSet::Rehash(uint64_t buckets) { return hash_->Rehash(buckets); }
size_t UnorderedSet::size() const { return hash_->size(); }
uint64_t UnorderedSet::bucket_count() const { return hash_->bucket_count(); }
const RegionStats& UnorderedSet::region_stats() const { return hash_->region_stats(); }
void UnorderedSet::set_mode(std::optional<ExecutionMode> mode) { hash_->set_mode(mode); }

}  // namespace pulse::ds
