#include "switch/swap_intake.h"

#include <fmt/format.h>

#include "node/node_control.h"

namespace pulse::switchd {

using nlohmann::json;

namespace {
Status NotBuilt(std::string_view step) {
  return Status::FailedPrecondition(
      fmt::format("swap: {} between racks is not built yet (docs/tier.md)", step));
}
}  // namespace

SwapIntake::SwapIntake(DirectoryHost* directory)
    : directory_(directory), coordinator_(directory->mutable_directory(), this) {}

Result<json> SwapIntake::Request(const json& body) {
  constexpr std::string_view op = "swap_request";
  PULSE_ASSIGN_OR_RETURN(uint64_t page, node::GetU64(body, "page", op));
  PULSE_ASSIGN_OR_RETURN(std::string rack, node::GetString(body, "rack", op));
  const tier::TierPush& state = directory_->state();
  auto r = state.racks.find(rack);
  if (r == state.racks.end()) return Status::InvalidArgument(fmt::format("swap_request: no rack '{}'", rack));
  if (state.directory.Find(page) == nullptr)
    return Status::NotFound(fmt::format("swap_request: page {} is not in the page directory", page));
  tier::PageHeat heat;
  auto number = [&](const char* key) { return body.contains(key) && body[key].is_number(); };
  if (!number("hotness") || !body.contains("reads") || !body["reads"].is_number_unsigned() ||
      !body.contains("writes") || !body["writes"].is_number_unsigned())
    return Status::InvalidArgument("swap_request: hotness (a number), reads and writes (u64) are required");
  heat.hotness = body["hotness"].get<double>();
  heat.reads = body["reads"].get<uint64_t>();
  heat.writes = body["writes"].get<uint64_t>();
  ++requests_;
  reported_[{r->second, page}] = heat;
  const bool queued = coordinator_.Submit(tier::SwapRequest{page, r->second});
  if (!queued) ++duplicates_;
  return json{{"queued", queued}};
}

json SwapIntake::StatsJson() const {
  return json{{"requests", requests_}, {"duplicates", duplicates_}, {"queued", coordinator_.queued()}};
}

tier::PageHeat SwapIntake::RackHeat(tier::RackId rack, tier::PageId page) {
  auto it = reported_.find({rack, page});
  return it != reported_.end() ? it->second : tier::PageHeat{};
}

Status SwapIntake::Invalidate(tier::RackId, tier::PageId) { return NotBuilt("page-table invalidation"); }
Status SwapIntake::Transfer(tier::Frame, tier::Frame) { return NotBuilt("the page transfer"); }
Status SwapIntake::Commit(const tier::PageDirectory&, std::span<const tier::PageId>) {
  return NotBuilt("publishing a moved page");
}

}  // namespace pulse::switchd
