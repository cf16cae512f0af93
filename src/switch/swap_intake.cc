#include "switch/swap_intake.h"

#include <fmt/format.h>

#include "node/node_control.h"

namespace pulse::switchd {

using nlohmann::json;

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
  const bool queued = pending_.insert(page).second;
  if (!queued) {
    ++duplicates_;
  } else if (driver_ != nullptr) {
    driver_->Submit(tier::SwapRequest{page, r->second}, reported_);
  }
  return json{{"queued", queued}};
}

void SwapIntake::Finished(const SwapResult& result) {
  pending_.erase(result.request.page);
  ++finished_;
  if (result.report.ok()) {
    ++outcomes_[std::string(tier::SwapOutcomeName(result.report->outcome))];
  } else {
    ++failed_;
    last_failure_ = result.report.status();
  }
}

json SwapIntake::StatsJson() const {
  json outcomes = json::object();
  for (const auto& [name, n] : outcomes_) outcomes[name] = n;
  json last = json::object();
  if (!last_failure_.ok())
    last = json{{"code", StatusCodeToWire(last_failure_.code())}, {"message", last_failure_.message()}};
  return json{{"requests", requests_},     {"duplicates", duplicates_}, {"queued", pending_.size()},
              {"finished", finished_},     {"outcomes", std::move(outcomes)},
              {"failed", failed_},         {"last_failure", std::move(last)},
              {"driver", driver_ != nullptr}};
}

}  // namespace pulse::switchd
