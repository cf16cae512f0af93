#include "pulse/ds/bimap.h"

#include "ds/chained_hash.h"

namespace pulse::ds {
namespace {

Result<std::optional<uint64_t>> FindIn(internal::ChainedHash& hash, uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto l, hash.Find(key));
  if (!l.found) return std::optional<uint64_t>();
  return std::optional<uint64_t>(l.value);
}

}  // namespace

Result<std::unique_ptr<Bimap>> Bimap::Create(Client* client, const BimapOptions& options) {
  const internal::ChainedHashOptions o = internal::ToChainedHashOptions(options);
  PULSE_ASSIGN_OR_RETURN(auto left, internal::ChainedHash::Create(client, o));
  PULSE_ASSIGN_OR_RETURN(auto right, internal::ChainedHash::Create(client, o));
  return std::unique_ptr<Bimap>(new Bimap(std::move(left), std::move(right)));
}

Bimap::Bimap(std::unique_ptr<internal::ChainedHash> left,
             std::unique_ptr<internal::ChainedHash> right)
    : left_(std::move(left)), right_(std::move(right)) {}
Bimap::~Bimap() = default;

Result<bool> Bimap::Insert(uint64_t left, uint64_t right) {
  // The right side first: the left insert is then the decisive step (it
  // fails without side effects if left is present), and the right insert
  // cannot find right present.
  PULSE_ASSIGN_OR_RETURN(auto r, right_->Find(right));
  if (r.found) return false;
  auto l = left_->Insert(left, right);
  if (!l.ok()) return l.status();
  if (!l->inserted) return false;
  auto rr = right_->Insert(right, left);
  if (!rr.ok()) return rr.status();
  if (!rr->inserted) return Status::Internal("Bimap::Insert: right value appeared during insert");
  return true;
}

Result<std::optional<uint64_t>> Bimap::FindByLeft(uint64_t left) { return FindIn(*left_, left); }
Result<std::optional<uint64_t>> Bimap::FindByRight(uint64_t right) {
  return FindIn(*right_, right);
}

Result<bool> Bimap::ErasePair(internal::ChainedHash& from, internal::ChainedHash& to,
                              uint64_t key) {
  PULSE_ASSIGN_OR_RETURN(auto other, from.Erase(key));
  if (!other.has_value()) return false;
  PULSE_ASSIGN_OR_RETURN(auto e, to.Erase(*other));
  if (!e.has_value()) return Status::Internal("Bimap: the two indexes disagree");
  return true;
}

Result<bool> Bimap::EraseByLeft(uint64_t left) { return ErasePair(*left_, *right_, left); }
Result<bool> Bimap::EraseByRight(uint64_t right) { return ErasePair(*right_, *left_, right); }

size_t Bimap::size() const { return left_->size(); }

RegionStats Bimap::region_stats() const {
  const RegionStats& a = left_->region_stats();
  const RegionStats& b = right_->region_stats();
  return RegionStats{a.exhausted + b.exhausted, a.allocated + b.allocated,
                     a.offloaded_inserts + b.offloaded_inserts};
}

void Bimap::set_mode(std::optional<ExecutionMode> mode) {
  left_->set_mode(mode);
  right_->set_mode(mode);
}

}  // namespace pulse::ds
